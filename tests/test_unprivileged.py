"""What a user without root runs, run by one (issue 40): a warm run, its report, compare, saving a run
as a baseline and checking a run against it all work; a cold run says in one line that it needs root.

The user is made here (useradd) and removed at the end, also when a test fails; what a test run killed
before its clean-up left (user, directory) is removed at the next start. Neither the user nor its
python needs to reach the checkout or root's home: ringsum is installed for it, offline from
build/wheels (`make wheels`), into a venv of Debian's python in a directory of its own (mkdtemp, 0755),
with the hashers and b3sum copied beside it. The user writes only in its home there. No verdict
here depends on timing: the check compares a saved run with the run it was saved from. In the
machine's line of tests (tests/conftest.py): a warm run counts on its file staying cached.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.catalog.variants import manifest, names

REPO = Path(__file__).resolve().parent.parent
WHEELS = REPO / "build" / "wheels"
PREFIX = "ringsum-unpriv-"  # the user and its directory: PREFIX<pid of the test run>
# Debian's python of the tests' version: the wheels are built for it, and any user may run it.
SYSTEM_PYTHON = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
CONFIG = """
[run]
rounds = 3
cache = "cold"
file_size = "8M"
timeout_s = 30

[[hashers]]
variant = "uring_b3sum"
block_size = ["512K"]
queue_depth = [4]

[baselines]
cat = true
b3sum = { num_threads = [1] }
limit = false
"""
COLD_NEEDS_ROOT = "ringsum: cold mode needs root to drop the page cache; run as root or pass --warm"


def _sh(*argv: str, check: bool = True, timeout: float = 60, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=check, **kw)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _remove(name: str, *directories: Path) -> None:
    """The user (its processes first: userdel refuses a user still running) and its directories."""
    if _sh("getent", "passwd", name, check=False).returncode == 0:
        _sh("pkill", "-KILL", "-U", name, check=False)
        _sh("userdel", name)
    for d in directories:
        shutil.rmtree(d)  # never follows a symlink in it


def _remove_leftovers() -> None:
    """Users and directories of test runs whose process is gone (killed before their clean-up)."""
    users = [line.split(":", 1)[0] for line in _sh("getent", "passwd", check=False).stdout.splitlines()]
    dirs = list(Path(tempfile.gettempdir()).glob(f"{PREFIX}*"))
    for name in {*users, *(d.name.rsplit("-", 1)[0] for d in dirs)}:
        m = re.fullmatch(rf"{PREFIX}(\d+)", name)
        if m and not _alive(int(m.group(1))):
            _remove(name, *(d for d in dirs if d.name.startswith(f"{name}-")))


@dataclass
class User:
    name: str
    root: Path  # the 0755 directory: venv/, bin/ and share/ (the hashers), tools/ (b3sum), the config
    home: Path  # the user's own, the only place it writes

    @property
    def config(self) -> Path:
        return self.root / "c.toml"

    def ringsum(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """The installed ringsum as the user, in its home, with nothing of root's environment."""
        env = {"HOME": self.home, "PATH": f"{self.root / 'tools'}:/usr/local/bin:/usr/bin:/bin",
               "RINGSUM_BIN_DIR": self.root / "bin", "TMPDIR": self.home / "tmp", "LANG": "C.UTF-8"}
        return _sh("setpriv", f"--reuid={self.name}", f"--regid={self.name}", "--init-groups", "env", "-i",
                   *(f"{k}={v}" for k, v in env.items()), str(self.root / "venv" / "bin" / "ringsum"), *args,
                   check=False, timeout=timeout, cwd=self.home)

    def warm_run(self, out: str) -> Path:
        p = self.ringsum("run", str(self.config), "--warm", "--size", "8M", "--dir", str(self.home / "data"),
                         "--out", str(self.home / out))
        assert p.returncode == 0, p.stderr
        (run_dir,) = re.findall(r"^run directory: (.+)$", p.stdout, re.M)
        return Path(run_dir)


def _install(root: Path, bin_dir: Path, b3sum: Path) -> None:
    """ringsum from this checkout's source (a copy: pip builds in it) into root/venv, offline; the
    hashers and their list as the Makefile lays them out; b3sum."""
    src = root / "src"
    for package in ("harness", "analysis"):
        shutil.copytree(REPO / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", src)
    _sh(str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(root / "venv"))
    (pip,) = WHEELS.glob("pip-*.whl")  # pip runs from its wheel: the locked one, and none in the venv
    _sh(str(root / "venv" / "bin" / "python"), str(pip / "pip"), "install", "--quiet", "--no-index", "--no-cache-dir",
        "--disable-pip-version-check", "--find-links", str(WHEELS), str(src), timeout=300,
        env={**os.environ, "PIP_CONSTRAINT": str(REPO / "harness" / "requirements.lock")})
    (root / "bin").mkdir()
    for program in names(bin_dir):
        shutil.copy2(bin_dir / program, root / "bin")
    (root / "share" / "ringsum").mkdir(parents=True)
    shutil.copy(manifest(bin_dir), root / "share" / "ringsum")
    (root / "tools").mkdir()
    shutil.copy2(b3sum, root / "tools" / "b3sum")
    (root / "c.toml").write_text(CONFIG)


@pytest.fixture(scope="module")
def user(bin_dir: Path, b3sum_path: Path) -> Iterator[User]:
    if os.geteuid() != 0:
        pytest.skip("making a user needs root")
    for tool in ("useradd", "userdel", "setpriv", "pkill"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} missing")
    if not SYSTEM_PYTHON.is_file():
        pytest.skip(f"{SYSTEM_PYTHON} missing: the wheels are for this python's version")
    if not any(WHEELS.glob("pip-*.whl")):
        pytest.skip(f"{WHEELS}: no wheels (make wheels)")
    _remove_leftovers()
    name = f"{PREFIX}{os.getpid()}"
    root = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    home = root / "home"
    try:
        root.chmod(0o755)
        _sh("useradd", "--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name)
        umask = os.umask(0o022)  # what is installed, every user can read
        try:
            _install(root, bin_dir, b3sum_path)
        finally:
            os.umask(umask)
        (home / "tmp").mkdir(parents=True)
        for d in (home, home / "tmp"):
            shutil.chown(d, name, name)
        yield User(name, root, home)
    finally:
        _remove(name, root)


@pytest.fixture(scope="module")
def runs(user: User) -> tuple[Path, Path]:
    return user.warm_run("out"), user.warm_run("out")


def test_a_warm_run_keeps_its_run_directory_and_state_in_the_users_home(user: User, runs: tuple[Path, Path]):
    for run_dir in runs:
        assert run_dir.parent == user.home / "out"
        assert {"runs.csv", "meta.json", "summary.json"} <= {p.name for p in run_dir.iterdir()}
    state = os.lstat(user.home / ".cache" / "ringsum")  # its run lock and settings state
    assert state.st_uid == os.lstat(user.home).st_uid != 0 and state.st_mode & 0o777 == 0o700


def test_report_and_compare(user: User, runs: tuple[Path, Path]):
    p = user.ringsum("report", str(runs[0]))
    assert p.returncode == 0, p.stderr
    assert f"report: {runs[0] / 'report.html'}" in p.stdout
    p = user.ringsum("compare", *map(str, runs))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"A: {runs[0]}: ")


def test_a_saved_run_is_checked(user: User, runs: tuple[Path, Path]):
    """Saved in the user's data directory (this ringsum is installed: no checkout's results/ beside
    it), found as `latest`; checked against the run it was saved from, nothing changed: exit 0."""
    p = user.ringsum("baseline", "save", str(runs[0]))
    assert p.returncode == 0, p.stderr
    saved = Path(p.stdout.strip())
    assert saved.parent.parent == user.home / ".local" / "share" / "ringsum" / "baselines"
    assert saved.name == runs[0].name
    p = user.ringsum("baseline", "list")
    assert p.returncode == 0 and str(saved) in p.stdout, p.stderr
    p = user.ringsum("check", "--baseline", "latest", "--current", str(runs[0]))
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"baseline: {saved} " in p.stdout


@pytest.mark.parametrize("check", [False, True], ids=["run", "check --config"])
def test_a_cold_run_says_in_one_line_that_it_needs_root(user: User, runs: tuple[Path, Path], check: bool):
    """The config is cold: a run, or a check that runs it, says what it needs and runs nothing."""
    command = ["check", "--baseline", str(runs[0]), "--config"] if check else ["run"]
    p = user.ringsum(*command, str(user.config), "--size", "8M", "--dir", str(user.home / "data"),
                     "--out", str(user.home / "cold"))
    assert (p.returncode, p.stderr) == (2, COLD_NEEDS_ROOT + "\n")
    assert not (user.home / "cold").exists()
