"""What the driver tells the person running it: one-line notes, and progress through the sweep."""

from __future__ import annotations

import os
import sys
from typing import TextIO


def _terminal_width(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns if stream.isatty() else 0
    except (OSError, ValueError, AttributeError):
        return 0


class Progress:
    """tqdm bar with ETA on a terminal; otherwise one line per finished execution."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.done, self.stream = total, 0, stream
        self.bar = None
        if _terminal_width(stream) > 0:
            # Deferred for start-up time: tqdm loads only when a progress bar is drawn.
            from tqdm import tqdm

            self.bar = tqdm(total=total, file=stream, unit="run", dynamic_ncols=True)

    def finished(self, text: str) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix_str(text[:60], refresh=False)
            self.bar.update(1)
        else:
            w = len(str(self.total))
            print(f"[{self.done:>{w}}/{self.total}] {text}", file=self.stream, flush=True)

    def note(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
