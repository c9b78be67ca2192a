"""The check's settings a command line shows before anything is measured: its defaults and how a
percentage is read. Kept apart from the judging (harness/check/decide.py, with numpy) so that
`ringsum --help` and the parsers load nothing heavy."""

from __future__ import annotations

DEFAULT_THRESHOLD = 0.05
DEFAULT_CONFIDENCE = 0.95
RESAMPLES = 10_000
MIN_RUNS = 3  # ok executions per command on each side
DEFAULT_INSTRUCTION_TOLERANCE = 0.01
INSTRUCTION_FILE_SIZE = 16 << 20  # the hot file `ringsum instructions` hashes (a steady count, 4 programs in ~2 s)


def parse_fraction(text: str) -> float:
    """"5%" or "0.05" -> 0.05."""
    t = text.strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise ValueError(f"expected a fraction like 5% or 0.05, got {text!r}") from None
    if not 0 <= v < 1:
        raise ValueError(f"expected a fraction between 0 and 1, got {text!r}")
    return v
