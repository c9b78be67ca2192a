"""Where a run keeps its lock and the system-settings state: a private directory nobody else can plant in.

`ringsum run` runs as root, so a fixed name in a world-writable directory (the old /tmp/ringsum-*)
lets any local user point it at another file with a symlink, or hold its lock forever. Instead:

- root: /run/ringsum (created 0700; /run is root's);
- others: $XDG_RUNTIME_DIR/ringsum, or ~/.cache/ringsum without one (each user their own);
- $RINGSUM_STATE_DIR overrides both (tests, or a machine where /run is not usable).

The directory must be owned by us and closed to group and others, files in it are opened with
O_NOFOLLOW and must be our own regular files: anything else is refused with the reason, never used.
A lock held by another process is announced ("waiting for pid N: <its command line>") before waiting.

`python -m harness.machine.state lock-path` prints the run lock's path (the Makefile's `fuzz` takes it with flock).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

RUN_LOCK = "run.lock"
SETTINGS_STATE = "system-settings.json"


class StateError(Exception):
    """The state directory or a file in it is not safe to use (exit 2)."""


def state_dir() -> Path:
    if os.environ.get("RINGSUM_STATE_DIR"):
        return Path(os.environ["RINGSUM_STATE_DIR"])
    if os.geteuid() == 0:
        return Path("/run/ringsum")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and _private(Path(runtime)):
        return Path(runtime) / "ringsum"
    return Path.home() / ".cache" / "ringsum"


def _private(path: Path) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


def _check_owned(path: Path, st: os.stat_result, kind: str) -> None:
    if st.st_uid != os.geteuid():
        raise StateError(f"refusing to use {path}: owned by uid {st.st_uid}, not {os.geteuid()} "
                         "(someone else created it; remove it)")
    if st.st_mode & 0o022:
        raise StateError(f"refusing to use {path}: {kind} is writable by group or others "
                         f"(mode {stat.S_IMODE(st.st_mode):04o}); remove it or chmod go-w it")


def open_dir(path: Path) -> int:
    """The directory as an fd, created 0700 if missing; refused unless it is ours and private."""
    path = path.absolute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise StateError(f"cannot create the state directory {path}: {e.strerror} "
                         "(set RINGSUM_STATE_DIR to a private directory)") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise StateError(f"refusing to use {path}: not a directory but a symlink or a file; remove it") from None
        raise StateError(f"cannot use the state directory {path}: {e.strerror} "
                         "(set RINGSUM_STATE_DIR to a private directory of yours)") from None
    try:
        st = os.fstat(fd)
        _check_owned(path, st, "the directory")
        if st.st_mode & 0o077:
            raise StateError(f"refusing to use {path}: the directory is open to group or others "
                             f"(mode {stat.S_IMODE(st.st_mode):04o}); chmod 700 it")
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_private(path: Path) -> IO[str]:
    """Open (creating 0600) a file for reading and writing without following a symlink; its directory
    and the file itself must be ours and closed to writers other than us."""
    dir_fd = open_dir(path.parent)
    try:
        try:
            fd = os.open(path.name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
        except OSError as e:
            raise StateError(f"refusing to use {path}: {e.strerror} (a symlink planted there?); remove it") from None
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StateError(f"refusing to use {path}: not a regular file; remove it")
        _check_owned(path, st, "the file")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "r+", encoding="utf-8")


def holder(f: IO[str]) -> str:
    """Who holds a lock on this open file: 'pid N: <command line>' from /proc/locks, or 'unknown'."""
    st = os.fstat(f.fileno())
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return "unknown"
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (a blocked waiter has "->" after the number)
        if "->" in parts or len(parts) < 6 or parts[5] != want:
            continue
        pid = parts[4]
        try:  # one line, however the command was written
            cmd = " ".join(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").replace("\0", " ").split())[:300]
        except OSError:
            cmd = ""
        return f"pid {pid}" + (f": {cmd}" if cmd else "")
    return "unknown"


@contextmanager
def locked(path: Path, log: Callable[[str], None], what: str) -> Iterator[IO[str]]:
    """Exclusive flock on a private file; says who holds it before waiting for them."""
    f = open_private(path)
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"ringsum: waiting for {what} to finish ({holder(f)} holds {path})")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield f
    finally:
        f.close()


def alive(pid: int) -> bool:
    """Whether a recorded owner (of a state file's settings or conditions) still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_lock_path() -> Path:
    """$RINGSUM_LOCK (tests give each run its own lock), else the state directory's run.lock."""
    return Path(os.environ["RINGSUM_LOCK"]) if os.environ.get("RINGSUM_LOCK") else state_dir() / RUN_LOCK


def settings_state_path() -> Path:
    return state_dir() / SETTINGS_STATE


def preflight() -> None:
    """Refuse an unsafe lock or settings state before a run starts anything."""
    for path in (run_lock_path(), settings_state_path()):
        open_private(path).close()


def main(argv: list[str]) -> int:
    if argv != ["lock-path"]:
        print("usage: python -m harness.machine.state lock-path", file=sys.stderr)
        return 2
    path = run_lock_path()
    try:
        open_private(path).close()  # created safely here, so that flock(1) only opens it
    except StateError as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
