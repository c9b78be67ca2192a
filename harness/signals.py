"""SIGTERM and SIGHUP end a run the way Ctrl-C does.

A timeout, a CI cancellation or systemd stops a run with SIGTERM (a closed terminal with SIGHUP);
by default Python dies on them at once, skipping every `finally`: the kernel settings stay changed
and the run's children keep running. Raised as an exception instead, they unwind like SIGINT: the
running command's process group is killed, the settings are put back, locks are released and the
run directory is left for `--resume`. A second signal while that cleanup runs is ignored (SIGKILL
still ends everything at once).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Ended(KeyboardInterrupt):
    """The run was asked to end by a signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def ending_signals_raise() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():  # only the main thread takes signals
        yield
        return
    fired = False

    def handler(signum: int, _frame: FrameType | None) -> None:
        nonlocal fired
        if not fired:
            fired = True
            raise Ended(signum)

    old = {s: signal.signal(s, handler) for s in ENDING}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def name(e: KeyboardInterrupt) -> str:
    return signal.Signals(e.signum).name if isinstance(e, Ended) else "SIGINT"
