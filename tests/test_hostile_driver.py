"""The driver under hostile users, signals and mistakes (issue 15), each case with the real tools.

Users other than root come from a throwaway account (useradd, removed afterwards); their python
is the one running the tests, bind-mounted in a private mount namespace where its home (/root) is
closed to them. Cases that need root (other users, a full filesystem) skip with the reason otherwise.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.machine.settings import Tunable, timing_settings
from harness.judge.results import RunsWriter, read_runs

REPO = Path(__file__).resolve().parent.parent
IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root (other users, mounts)")
CAT_TOML = "[run]\nrounds = 1\n[baselines]\ncat = true\n"


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own state directory and run lock: it neither waits for nor blocks a real sweep."""
    monkeypatch.setenv("RINGSUM_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("RINGSUM_LOCK", raising=False)
    return tmp_path / "state"


def ringsum(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def config(tmp_path: Path, text: str = CAT_TOML, name: str = "c.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    p.chmod(0o644)
    return p


def run_dirs(out: Path) -> list[Path]:
    return sorted(d for d in out.iterdir() if (d / "meta.json").exists()) if out.is_dir() else []


def one_error_line(p: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ringsum: "), p.stderr
    return lines[0]


# --- a throwaway user ---

@dataclass
class User:
    name: str
    uid: int
    home: Path
    python_root: Path  # where the tests' python is bind-mounted for it

    def run(self, argv: list[str], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """argv[0] == "python": this python, as the user, with the harness and its packages importable."""
        base = Path(sys.base_prefix)
        py = self.python_root / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
        paths = [str(REPO), *site.getsitepackages()]
        full = {"PATH": os.environ["PATH"], "HOME": str(self.home), "PYTHONPATH": os.pathsep.join(paths), **env}
        inner = ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "env", "-i",
                 *(f"{k}={v}" for k, v in full.items()), str(py), *argv[1:]]
        return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                               'mount --bind "$1" "$2" && shift 2 && exec "$@"', "sh", str(base),
                               str(self.python_root), *inner],
                              capture_output=True, text=True, cwd=REPO, timeout=timeout)


@pytest.fixture(scope="module")
def user() -> Iterator[User]:
    if not IS_ROOT:
        pytest.skip("creating a throwaway user needs root")
    for tool in ("useradd", "userdel", "setpriv", "unshare"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} missing")
    d = Path(tempfile.mkdtemp(prefix="rs15-"))  # pytest's own temp directories are closed to others
    d.chmod(0o755)
    name = f"rs15-{secrets.token_hex(3)}"
    home = d / "home"
    subprocess.run(["useradd", "--home-dir", str(home), "--no-create-home", "--user-group",
                    "--shell", "/usr/sbin/nologin", name], check=True, capture_output=True)
    try:
        uid = int(subprocess.run(["id", "-u", name], check=True, capture_output=True, text=True).stdout)
        home.mkdir()
        os.chown(home, uid, uid)
        (d / "python").mkdir()
        u = User(name, uid, home, d / "python")
        probe = u.run(["python", "-c", "import harness.pipeline.run, pandas"], {})
        if probe.returncode != 0:
            pytest.skip(f"the tests' python cannot run as another user: {probe.stderr.strip()[-200:]}")
        yield u
    finally:
        subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(d)


# --- state and locks ---

def test_planted_symlinks_are_refused_and_nothing_is_written_through_them(tmp_path: Path, private_state: Path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    private_state.mkdir(mode=0o700)
    cfg = config(tmp_path)
    for name in ("run.lock", "system-settings.json"):
        (private_state / name).unlink(missing_ok=True)
        (private_state / name).symlink_to(victim)
        p = ringsum("run", str(cfg), "--size", "4K", "--dir", str(tmp_path), "--out", str(tmp_path / "r"), "--warm")
        assert p.returncode == 2
        assert one_error_line(p) == (f"ringsum: refusing to use {private_state / name}: Too many levels of "
                                     "symbolic links (a symlink planted there?); remove it")
        (private_state / name).unlink()
    assert victim.read_text() == "precious\n" and not (tmp_path / "r").exists()
    # the directory itself planted as a symlink, or left open to others
    shutil.rmtree(private_state)
    private_state.symlink_to(tmp_path)
    p = ringsum("run", str(cfg), "--size", "4K", "--dir", str(tmp_path), "--out", str(tmp_path / "r"), "--warm")
    assert p.returncode == 2 and "not a directory but a symlink" in one_error_line(p)
    private_state.unlink()
    private_state.mkdir(mode=0o777)
    private_state.chmod(0o777)
    p = ringsum("run", str(cfg), "--size", "4K", "--dir", str(tmp_path), "--out", str(tmp_path / "r"), "--warm")
    assert p.returncode == 2 and "is writable by group or others (mode 0777)" in one_error_line(p)


@needs_root
def test_root_state_lives_in_a_private_run_directory(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("RINGSUM_STATE_DIR")
    p = subprocess.run([sys.executable, "-m", "harness.machine.state", "lock-path"], capture_output=True, text=True,
                       cwd=REPO, timeout=30)
    assert p.returncode == 0 and p.stdout == "/run/ringsum/run.lock\n", p.stderr
    st = os.lstat("/run/ringsum")
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o700)


@needs_root
def test_a_directory_of_another_user_is_refused(tmp_path: Path, private_state: Path, user: User):
    private_state.mkdir(mode=0o700)
    os.chown(private_state, user.uid, user.uid)
    p = ringsum("run", str(config(tmp_path)), "--size", "4K", "--dir", str(tmp_path), "--out", str(tmp_path / "r"),
                "--warm")
    assert p.returncode == 2
    assert one_error_line(p).startswith(f"ringsum: refusing to use {private_state}: owned by uid {user.uid}, not 0")


def hold_lock(path: Path) -> subprocess.Popen[str]:
    """Another process holding the lock, as a user's process (or a stuck run) would."""
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time\n"
                               "f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True)\n"
                               "time.sleep(60)", str(path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


@pytest.mark.parametrize("name,what", [("run.lock", "another ringsum run"),
                                       ("system-settings.json", "another run's settings change")])
def test_a_held_lock_names_its_holder_then_waits(tmp_path: Path, private_state: Path, name: str, what: str):
    private_state.mkdir(mode=0o700)
    (private_state / name).touch(mode=0o600)
    holder = hold_lock(private_state / name)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "harness", "run", str(config(tmp_path)), "--size", "4K",
                                 "--dir", str(tmp_path), "--out", str(tmp_path / "r"), "--warm"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        assert proc.stderr is not None
        seen = []
        while not any("waiting for" in ln for ln in seen):
            line = proc.stderr.readline()
            assert line, "".join(seen)
            seen.append(line)
        assert seen[-1] == (f"ringsum: waiting for {what} to finish (pid {holder.pid}: {sys.executable} -c "
                            f"import fcntl, sys, time f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
                            f"print('held', flush=True) time.sleep(60) {private_state / name} holds "
                            f"{private_state / name})\n")
        time.sleep(0.3)
        assert proc.poll() is None
    finally:
        holder.kill()
        holder.wait()
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


def test_a_planted_or_corrupt_restore_value_never_reaches_the_setting(tmp_path: Path):
    knob, state = tmp_path / "knob", tmp_path / "state.json"
    tunable = Tunable(name="test knob", path=knob, for_timing="11", why="a test")
    notes: list[str] = []
    for planted in ('{"users": [], "restore": {"test knob": "0; echo planted"}}',
                    '{"users": [], "restore": {"test knob": ["9"]}}', '{"users": "x"', "\x00garbage"):
        knob.write_text("9\n")
        state.write_text(planted)
        state.chmod(0o600)
        with timing_settings(notes.append, (tunable,), state):
            pass
        assert knob.read_text() == "9\n", planted  # applied, and put back as read: never the planted text
        assert json.loads(state.read_text()) == {"users": [], "restore": {}}
    assert any("ignoring the recorded value '0; echo planted' for test knob" in n for n in notes)
    assert any("is corrupt; starting it afresh" in n for n in notes)
    knob.write_text("9; whatever\n")  # a value read that could not be written back as it is
    with timing_settings(notes.append, (tunable,), state) as settings:
        assert knob.read_text() == "9; whatever\n" and settings[0]["note"] == "left as is: unexpected value"


@needs_root
def test_a_user_runs_warm_with_their_own_state_and_is_refused_root_s_clearly(tmp_path: Path, user: User):
    work = user.home / tmp_path.name
    work.mkdir()
    os.chown(work, user.uid, user.uid)
    cfg = config(work)
    common = ["python", "-m", "harness", "run", str(cfg), "--size", "4K", "--dir", str(work), "--warm"]
    p = user.run([*common, "--out", str(work / "r")], {})
    assert p.returncode == 0, p.stderr
    st = os.lstat(user.home / ".cache" / "ringsum")
    assert (st.st_uid, st.st_mode & 0o777) == (user.uid, 0o700)
    assert len(run_dirs(work / "r")) == 1
    # root's state directory (0700) is not theirs: one line, no traceback
    root_state = user.home.parent / f"root-state-{tmp_path.name}"
    root_state.mkdir(mode=0o700)
    try:
        p = user.run([*common, "--out", str(work / "r2")], {"RINGSUM_STATE_DIR": str(root_state)})
    finally:
        root_state.rmdir()
    assert p.returncode == 2
    assert one_error_line(p) == (f"ringsum: cannot use the state directory {root_state}: Permission denied "
                                 "(set RINGSUM_STATE_DIR to a private directory of yours)")


# --- the user's files ---

def test_an_existing_file_is_never_rewritten(tmp_path: Path):
    mine = tmp_path / "mine.bin"
    data = os.urandom(10000)
    mine.write_bytes(data)
    cfg = config(tmp_path)
    plan = ringsum("plan", str(cfg), "--file", str(mine), "--size", "8K")
    run = ringsum("run", str(cfg), "--file", str(mine), "--size", "8K", "--out", str(tmp_path / "r"), "--warm")
    for p in (plan, run):
        assert p.returncode == 2
        assert one_error_line(p) == (f"ringsum: test file {mine} is 10000 bytes, not the 8192 of --size; ringsum "
                                     "never rewrites a file it did not create: drop --size to use it as it is, "
                                     "or name a new path")
    assert mine.read_bytes() == data and not (tmp_path / "r").exists()
    # without --size, or with its own size, it is read as it is
    plan = ringsum("plan", str(cfg), "--file", str(mine))
    assert plan.returncode == 0 and f"file: {mine} (10000, exists)" in plan.stdout, plan.stdout + plan.stderr
    # a missing file is generated, and plan says so; one of ringsum's own of the wrong size is made again
    new = tmp_path / "new.bin"
    plan = ringsum("plan", str(cfg), "--file", str(new), "--size", "8K")
    assert f"file: {new} (8K, missing: generated)" in plan.stdout
    owned = tmp_path / "ringsum-8K.bin"
    owned.write_bytes(b"cut short")
    plan = ringsum("plan", str(cfg), "--size", "8K", "--dir", str(tmp_path))
    assert f"file: {owned} (8K, is 9 bytes: generated again)" in plan.stdout
    run = ringsum("run", str(cfg), "--file", str(new), "--size", "8K", "--out", str(tmp_path / "r"), "--warm")
    assert run.returncode == 0, run.stderr
    assert new.stat().st_size == 8192 and mine.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir() if ".partial" in p.name) == []


@needs_root
def test_disk_full_while_generating_names_the_file_and_leaves_nothing(tmp_path: Path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2M", "tmpfs", str(mnt)], capture_output=True, text=True)
    if m.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs: {m.stderr.strip()}")
    try:
        p = ringsum("run", str(config(tmp_path)), "--size", "8M", "--dir", str(mnt), "--out", str(tmp_path / "r"),
                    "--warm")
        assert p.returncode == 2
        assert p.stderr.startswith(f"generating 8M of random data in {mnt / 'ringsum-8M.bin'}\n")
        line = p.stderr.splitlines()[-1]
        assert line.startswith(f"ringsum: no space left to generate the 8M test file {mnt / 'ringsum-8M.bin'} (")
        assert line.endswith("free on its filesystem); free some or pass --dir/--file elsewhere")
        assert list(mnt.iterdir()) == [] and not (tmp_path / "r").exists()
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


# --- signals ---

SLOW_HASHER = """#!/bin/sh
# rs15-slow: takes its time, then hashes with b3sum (the file is the last argument)
for a; do f="$a"; done
sleep 1
exec "{b3sum}" -- "$f"
"""


def b3sum_exe() -> str:
    local = REPO / ".tools" / "bin" / "b3sum"
    found = str(local) if local.is_file() else shutil.which("b3sum")
    if not found:
        pytest.skip("b3sum not installed (make deps)")
    return found


def slow_config(tmp_path: Path, rounds: int = 3) -> Path:
    hasher = tmp_path / f"rs15-slow-{secrets.token_hex(3)}"
    hasher.write_text(SLOW_HASHER.format(b3sum=b3sum_exe()))
    hasher.chmod(0o755)
    return config(tmp_path, f'[run]\nrounds = {rounds}\ntrace = false\n[[hashers]]\nname = "slow"\n'
                            f'variant = "slow"\npath = "{hasher}"\n[baselines]\nlimit = false\ncat = true\n', "slow.toml")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_ends_the_run_cleanly_and_resumably(tmp_path: Path, private_state: Path, sig: signal.Signals):
    """The knob itself is shared with every other run on the machine (their own state files until
    they run this code), so the test follows the state file: the run registered as a user of the
    settings, and left having restored what it applied and forgotten itself."""
    cfg = slow_config(tmp_path)
    out = tmp_path / "r"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", str(cfg), "--size", "64K", "--dir",
                             str(tmp_path), "--out", str(out), "--warm"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    deadline = time.monotonic() + 30
    while not (run_dirs(out) and "system_settings" in (run_dirs(out)[0] / "meta.json").read_text()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    state = json.loads((private_state / "system-settings.json").read_text())
    assert [u[0] for u in state["users"]] == [proc.pid]
    time.sleep(1.5)  # inside a hyperfine execution of the slow hasher
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    (run_dir,) = run_dirs(out)
    assert f"interrupted ({sig.name}); finish with: ringsum run --resume {run_dir}" in err
    assert "could not restore" not in err
    state = json.loads((private_state / "system-settings.json").read_text())
    assert state == {"users": [], "restore": {}}  # restored, and released
    deadline = time.monotonic() + 5
    while subprocess.run(["pgrep", "-f", f"{tmp_path.name}/rs15-slow"], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "the running command outlived the run"
        time.sleep(0.1)
    if sig == signal.SIGTERM:
        done = len(read_runs(run_dir))
        p = ringsum("run", "--resume", str(run_dir))
        assert p.returncode == 0, p.stderr
        assert done < len(read_runs(run_dir)) == 3 * 2  # slow and cat (limit = false: no readers, no b3sum)


class SignalledWhileApplying(Tunable):
    """Its first write (applying the setting) gets a SIGTERM delivered to this very process."""

    def write(self, value: str) -> None:
        super().write(value)
        if value == self.for_timing:
            os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.parametrize("other_thread", [False, True])
def test_a_signal_while_a_setting_is_applied_still_restores_it(tmp_path: Path, other_thread: bool):
    """With another thread alive (tqdm's monitor, say) the kernel hands the signal to it while the
    main thread blocks it, and Python raises it in the main thread at once, mid-update."""
    import threading

    from harness.machine.signals import Ended, ending_signals_raise

    knob, state = tmp_path / "knob", tmp_path / "state.json"
    knob.write_text("9\n")
    tunable = SignalledWhileApplying(name="test knob", path=knob, for_timing="11", why="a test")
    done = threading.Event()
    thread = threading.Thread(target=done.wait)
    if other_thread:
        thread.start()
    try:
        with ending_signals_raise():
            with pytest.raises(Ended):
                with timing_settings(print, (tunable,), state):
                    pytest.fail("the signal is raised before the run measures anything")
    finally:
        done.set()
    assert knob.read_text() == "9\n" and json.loads(state.read_text()) == {"users": [], "restore": {}}


# --- paths handed to other tools ---

@pytest.mark.skipif(shutil.which("fio") is None or shutil.which("xxhsum") is None, reason="fio or xxhsum missing")
def test_a_hostile_path_reaches_every_tool_intact(tmp_path: Path):
    d = tmp_path / "-we;ird #dir, x:y\\z"
    d.mkdir()
    f = d / "-a;b#c:d,e f\\g{TRACE}{FIO_JSON}'q\".bin"  # and the argv placeholders, and quotes
    f.write_bytes(os.urandom(256 << 10))
    cfg = config(tmp_path, '[run]\nrounds = 1\n[[hashers]]\nvariant = "uring_b3sum"\nblock_size = "64K"\n'
                           '[baselines]\ncat = true\ndd = { bs = ["64K"] }\nb3sum = { num_threads = [1] }\n'
                           'xxhsum = { algo = ["xxh64"] }\nfio = { bs = ["64K"], iodepth = [2], direct = [false] }\n')
    out = tmp_path / "r"
    p = ringsum("run", str(cfg), "--file", str(f), "--out", str(out), "--warm")
    assert p.returncode == 0, p.stderr
    assert list(d.iterdir()) == [f]  # fio created nothing beside it
    df = read_runs(run_dirs(out)[0])
    assert set(df["tool"]) == {"hasher", "cat", "dd", "b3sum", "xxhsum", "fio"}
    assert (df["exit_code"] == 0).all() and (df["error"].fillna("") == "").all(), df[["label", "error"]]
    assert df[df["tool"].isin(["hasher", "b3sum"])]["hash_ok"].all()
    fio = next((run_dirs(out)[0] / "raw").glob("*.fio.json")).read_text()
    assert f'"io_bytes" : {256 << 10}' in fio and '"filename" : "/proc/' in fio


# --- configs the hashers reject, empty and huge plans ---

@pytest.mark.parametrize("knobs,says", [
    ('block_size = "2G"', "uring_b3sum: the block size 2147483648 is larger than the 1G maximum"),
    ("queue_depth = 100000", "uring_b3sum: the queue depth 100000 exceeds the kernel limit of 32768"),
    ('block_size = "3K"\ndirect = true', "uring_b3sum: O_DIRECT needs a block size that is a multiple of 4096"),
    # Allocated whole before the first file: a small probe file shows it as well as the full size.
    ('block_size = "1G"\nbuffers = 64', "uring_b3sum: --block-size 1073741824 x --buffers 64 is 65536 MiB of buffers, "
                                        "more than this machine's"),
])
def test_knobs_a_hasher_rejects_are_config_errors(tmp_path: Path, knobs: str, says: str):
    if not (REPO / "build" / "bin" / "uring_b3sum").is_file():
        pytest.skip("hashers not built (make)")
    cfg = config(tmp_path, f'[run]\nrounds = 1\n[[hashers]]\nvariant = "uring_b3sum"\n{knobs}\n')
    runs = [["run", "--out", str(tmp_path / "r")]] if "2G" in knobs else []  # run validates as plan does
    for cmd in (["plan"], *runs):
        p = ringsum(*cmd, str(cfg), "--size", "64K", "--dir", str(tmp_path), "--warm")
        assert p.returncode == 2, p.stdout + p.stderr
        line = one_error_line(p)
        assert line.startswith(f"ringsum: {cfg}: uring_b3sum: uring_b3sum bs=") and says in line, line
    assert not (tmp_path / "r").exists()


def test_constraints_that_exclude_everything_are_an_error(tmp_path: Path):
    cfg = config(tmp_path, '[run]\nrounds = 1\n[[hashers]]\nvariant = "uring_b3sum"\n'
                           'constraints = ["block_size > 1G"]\n')
    for cmd in (["plan"], ["run", "--out", str(tmp_path / "r")]):
        p = ringsum(*cmd, str(cfg), "--size", "64K", "--dir", str(tmp_path), "--warm")
        assert p.returncode == 2
        assert one_error_line(p) == f"ringsum: {cfg}: the exclude/constraints rules leave no command to run"


def test_a_hasher_group_emptied_beside_baselines_is_an_error(tmp_path: Path):
    cfg = config(tmp_path, '[run]\nrounds = 1\n[[hashers]]\nname = "ours"\nvariant = "uring_b3sum"\n'
                           'constraints = ["block_size > 1G"]\n[baselines]\ncat = true\n')
    for cmd in (["plan"], ["run", "--out", str(tmp_path / "r")]):
        p = ringsum(*cmd, str(cfg), "--size", "64K", "--dir", str(tmp_path), "--warm")
        assert p.returncode == 2, p.stdout + p.stderr
        assert one_error_line(p) == (f"ringsum: {cfg}: group ours: the exclude/constraints rules leave it no "
                                     "command to run; loosen them or remove the group")
    assert not (tmp_path / "r").exists()


def test_a_plan_over_an_hour_needs_yes(tmp_path: Path):
    # A tiny real run whose nominal read speed makes the estimate long.
    cfg = config(tmp_path, '[run]\nrounds = 1\n[run.nominal]\nread = "10"\n[baselines]\ncat = true\n')
    plan = ringsum("plan", str(cfg), "--size", "64K", "--dir", str(tmp_path))
    assert plan.returncode == 0 and "over an hour: `ringsum run` starts it only with --yes" in plan.stdout
    args = ["run", str(cfg), "--size", "64K", "--dir", str(tmp_path), "--out", str(tmp_path / "r"), "--warm"]
    p = ringsum(*args)
    assert p.returncode == 2
    assert one_error_line(p).startswith(f"ringsum: {cfg}: the plan is estimated at ")
    assert one_error_line(p).endswith("pass --yes to start it (see `ringsum plan`)")
    assert not (tmp_path / "r").exists()
    assert ringsum(*args, "--yes").returncode == 0


# --- check and resume ---

def fake_run(path: Path, labels: dict[str, str]) -> Path:
    """A finished run directory with 5 rounds of each label (label -> tool)."""
    from harness.judge.results import RunRecord

    path.mkdir(parents=True)
    with RunsWriter(path / "runs.csv") as w:
        for label, tool in labels.items():
            for rnd in range(1, 6):
                w.append(RunRecord(
                    label=label, tool=tool, variant=tool, group=tool, block_size=None, queue_depth=None,
                    buffers=None, direct=None, knobs={}, num_threads=None, mmap=None, extra="",
                    file="/data/f.bin", file_size=1 << 20, cache="cold", round=rnd, position=0, wall_s=0.01,
                    user_s=0.0, sys_s=0.0, bytes=1 << 20, throughput_Bps=1e8, exit_code=0, resident_before=0.0,
                    hash_ok=True if tool in ("hasher", "b3sum") else None, fio_bw_Bps=None, fio_runtime_s=None,
                    started_at="2026-01-01T00:00:00.000Z"))  # type: ignore[arg-type]
    (path / "meta.json").write_text(json.dumps({"fingerprint": {"fingerprint_id": "fp"},
                                                "started_at": "2026-01-01T00:00:00Z",
                                                "finished_at": "2026-01-01T00:01:00Z"}))
    return path


def test_check_with_no_hasher_in_common_has_nothing_to_judge(tmp_path: Path):
    base = fake_run(tmp_path / "b", {"cat": "cat", "b3sum": "b3sum", "uring_b3sum bs=64K": "hasher"})
    cur = fake_run(tmp_path / "c", {"cat": "cat", "b3sum": "b3sum", "uring_b3sum bs=128K": "hasher"})
    p = ringsum("check", "--baseline", str(base), "--current", str(cur))
    assert p.returncode == 2, p.stdout + p.stderr
    assert "note: no hasher command is common to both runs: nothing to judge (exit 2)" in p.stdout
    same = ringsum("check", "--baseline", str(base), "--current", str(base))
    assert same.returncode == 0, same.stdout


def test_resume_of_a_finished_run_changes_nothing(tmp_path: Path):
    out = tmp_path / "r"
    p = ringsum("run", str(config(tmp_path)), "--size", "4K", "--dir", str(tmp_path), "--out", str(out), "--warm")
    assert p.returncode == 0, p.stderr
    (run_dir,) = run_dirs(out)
    before = {f: (f.read_bytes(), f.stat().st_mtime_ns) for f in run_dir.rglob("*") if f.is_file()}
    p = ringsum("run", "--resume", str(run_dir))
    assert p.returncode == 0
    finished = json.loads((run_dir / "meta.json").read_text())["finished_at"]
    assert one_error_line(p) == f"ringsum: {run_dir} finished at {finished}; nothing to resume (it is left as it is)"
    assert {f: (f.read_bytes(), f.stat().st_mtime_ns) for f in run_dir.rglob("*") if f.is_file()} == before


def test_the_lock_file_is_flock_compatible_for_the_makefile(tmp_path: Path, private_state: Path):
    """`make fuzz` takes the run lock with flock(1) on the path harness.machine.state prints."""
    p = subprocess.run([sys.executable, "-m", "harness.machine.state", "lock-path"], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0 and p.stdout.strip() == str(private_state / "run.lock")
    with open(p.stdout.strip()) as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
