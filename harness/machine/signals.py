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
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Ended(KeyboardInterrupt):
    """The run was asked to end by a signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class EndingSignals:
    """Installed by `ending_signals_raise`. Python runs a handler between any two bytecodes, also
    inside a finalizer or a fork hook, where an exception is printed and dropped: `check()`, called
    where the run can stop, raises it again for a signal whose exception was lost."""

    def __init__(self) -> None:
        self.received: int | None = None

    def handler(self, signum: int, _frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
            raise Ended(signum)

    def check(self) -> None:
        if self.received is not None:
            raise Ended(self.received)


@contextmanager
def ending_signals_raise() -> Iterator[EndingSignals]:
    ending = EndingSignals()
    if threading.current_thread() is not threading.main_thread():  # only the main thread takes signals
        yield ending
        return
    old = {s: signal.signal(s, ending.handler) for s in ENDING}
    old_hook = sys.unraisablehook

    def quiet_when_lost(u: Any) -> None:  # check() raises it where it counts
        if not isinstance(u.exc_value, Ended):
            old_hook(u)

    sys.unraisablehook = quiet_when_lost
    try:
        yield ending
    finally:
        sys.unraisablehook = old_hook
        for s, h in old.items():
            signal.signal(s, h)


def name(e: KeyboardInterrupt) -> str:
    return signal.Signals(e.signum).name if isinstance(e, Ended) else "SIGINT"
