"""Child processes that cannot outlive the driver or a timeout: each in its own process group."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from typing import Any


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the driver dies (a `kill -9` of the driver
    must not leave a hyperfine running that would disturb a resumed run)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def run_group(argv: list[str], timeout: float, stdout: Any = subprocess.PIPE) -> tuple[int | None, str, str]:
    """Run in its own process group; on timeout kill the group. Returns (rc|None, out, err)."""
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True, text=True, preexec_fn=_die_with_parent)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out or "", err or ""
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        return None, out or "", err or ""
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
