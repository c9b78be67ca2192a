"""Shared fixtures (generic: the hasher tests may use them too)."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from hashers_support import beside_the_line_env

REPO_ROOT = Path(__file__).resolve().parent.parent
INDEPENDENT = "pytest.mark.independent"
TOGETHER = "pytest.mark.together"

# uring_b3sum reads the machine's wisdom (hashers/wisdom.c); no test depends on what this machine's
# user installed: every hasher a test runs has it off unless the test names a wisdom file itself.
os.environ["URING_B3SUM_WISDOM"] = os.devnull


@functools.cache
def _source(module: str) -> str:
    """A test module's text: the scheduler runs in the controller, which never imports the test modules."""
    return (REPO_ROOT / module).read_text(encoding="utf-8")


def independent(module: str) -> bool:
    """Whether a test module says `pytestmark = pytest.mark.independent`."""
    return INDEPENDENT in _source(module)


def together(module: str) -> bool:
    """Whether an independent module's tests share a costly module fixture, so that they go to one
    worker (`pytestmark = [pytest.mark.independent, pytest.mark.together]`): each worker would make it."""
    return TOGETHER in _source(module)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`-n N --dist loadgroup` (make test): a module that drops the page cache, counts on it, changes a
    system setting, takes the run lock or judges wall time would see the others do the same, so all
    such modules run as one unit, in file order, on one worker; a module that touches only its own
    files says so (`pytestmark = pytest.mark.independent`) and its tests run beside that line, on any
    worker; one whose tests share a costly module fixture also says `pytest.mark.together`, and they
    run on one worker. A new module is in the line until it says otherwise. (pytest-xdist's own
    loadgroup names a group by rewriting node ids, which pytest 9 no longer lets it do.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class MachineLine(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            if not independent(module):
                return "machine"
            return module if together(module) else nodeid

    return MachineLine(config, log)


@pytest.fixture
def own_run_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's runs take a lock of their own: they neither wait for nor block a real sweep on the
    machine, nor each other."""
    monkeypatch.setenv("RINGSUM_LOCK", str(tmp_path / "ringsum.lock"))


@pytest.fixture
def beside_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """For a module beside the machine line whose tests start warm runs: each test's runs take a lock
    of their own and leave the system settings alone (RINGSUM_SYSTEM_SETTINGS=leave)."""
    for name, value in beside_the_line_env(tmp_path / "run.lock").items():
        monkeypatch.setenv(name, value)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def bin_dir() -> Path:
    """Directory of the built hashers: $RINGSUM_BIN_DIR, default build/bin (relative to the repo)."""
    d = Path(os.environ.get("RINGSUM_BIN_DIR", "build/bin"))
    return d if d.is_absolute() else REPO_ROOT / d


@pytest.fixture(scope="session")
def b3sum_path() -> Path:
    """The official b3sum: <repo>/.tools/bin first, then PATH."""
    import shutil

    local = REPO_ROOT / ".tools" / "bin" / "b3sum"
    if local.is_file():
        return local
    found = shutil.which("b3sum")
    if not found:
        pytest.skip("b3sum not installed (run `make deps`)")
    return Path(found)


@pytest.fixture
def random_file(tmp_path: Path):
    """Factory: random_file(size, name="data.bin") -> Path of a file of random bytes."""

    def make(size: int, name: str = "data.bin") -> Path:
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(os.urandom(size))
        return p

    return make
