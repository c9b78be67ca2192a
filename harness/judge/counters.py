"""Behaviour counters, as a run records them (counters.csv: one probe execution a row) and as two
runs' are judged against each other: what a hasher did, not how long it took. The probes that
measure them are harness/pipeline/counters.py's.

  reads           completions reaped (the hasher's --trace): blocks and retries
  mean_in_flight  requests in flight, time-weighted over the consumer runs (--trace)
  peak_in_flight  the most requests in flight at once (--trace): the queue depth used
  uring_enters    io_uring_enter system calls (perf's syscalls tracepoint)
  read_bytes      bytes the process made the block layer read (/proc/PID/io)
  ctx_switches    voluntary + involuntary context switches (rusage, through GNU time)
  minor_faults    minor page faults (rusage)
  max_rss_kib     peak resident set (rusage)
  resident_after  fraction of the file in the page cache afterwards (O_DIRECT leaves none)

`compare()` judges two sets of probes counter by counter: the median of each side, a tolerance per
counter set from A/A checks (docs/regression-check.md), and a direction in which a change is a
regression.
"""

from __future__ import annotations

import csv
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from statistics import median

COUNTERS_CSV = "counters.csv"


@dataclass
class Counters:
    """One probe execution of one command: a row of counters.csv."""

    label: str
    file: str
    exit_code: int | None
    reads: int | None
    mean_in_flight: float | None
    peak_in_flight: int | None
    uring_enters: int | None
    read_bytes: int | None
    ctx_switches: int | None
    minor_faults: int | None
    max_rss_kib: int | None
    resident_after: float | None


COLUMNS = [f.name for f in fields(Counters)]
MEASURES = COLUMNS[COLUMNS.index("reads"):]


@dataclass(frozen=True)
class Tolerance:
    """How far a counter may move before it is a change, and which way is worse ("none": shown,
    never judged). A change must exceed both the relative and the absolute bound. `over`: how a
    side's probes are summed up: their median, or their max for what a probe can only fall short
    of (a queue depth not reached because every read completed at once; a file another program
    dropped from the cache before it was measured)."""

    relative: float
    absolute: float
    worse: str  # "up", "down", "either" or "none"
    over: str = "median"  # or "max"


# Set from A/A checks of two identical builds on the shared 2-core VM, three probes each
# (docs/regression-check.md): reads, faults and RSS hardly move; read_bytes carries the
# libraries re-read after a cache drop; system calls and context switches depend on timing; the
# time-weighted mean in flight varied as much and is only shown. io_uring_enter calls count how
# often the consumer found no completion waiting: one build against itself went 21 -> 114 on the
# Zen 3, and on the Zen 5 (8f50662391e2, make check-power) 29-42 -> 109-114 in every probe of a
# check, a false alarm by any rule of spread; no injected fault was caught by them alone (depth1:
# the peak in flight): shown, not judged. Context switches varied by an order of magnitude between two
# identical builds of the single thread when `make test` ran a CPU-heavy test beside the
# probes: they count waits and preemptions, not what
# the program asked for, so they are shown, not judged (no injected fault is caught by them). The queue depth in
# use is judged by its peak: the most in flight at once, which the first fill of the ring reaches
# whatever the scheduling (the count at a consumer run was 0 on a loaded machine: every read had
# completed before the consumer looked).
TOLERANCES: dict[str, Tolerance] = {
    "reads": Tolerance(0.05, 2, "up"),
    "mean_in_flight": Tolerance(0.0, 0.0, "none"),
    "peak_in_flight": Tolerance(0.40, 1.5, "down", "max"),
    "uring_enters": Tolerance(0.0, 0.0, "none"),
    "read_bytes": Tolerance(0.30, 8 << 20, "up"),
    "ctx_switches": Tolerance(0.0, 0.0, "none"),
    "minor_faults": Tolerance(0.25, 200, "up"),
    "max_rss_kib": Tolerance(0.25, 4096, "up"),
    "resident_after": Tolerance(0.0, 0.5, "either", "max"),
}


# --- counters.csv ---

def append(path: Path, row: Counters) -> None:
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            w.writeheader()
        w.writerow({k: "" if v is None else v for k, v in asdict(row).items()})
        f.flush()
        os.fsync(f.fileno())


_FLOATS = {f.name for f in fields(Counters) if str(f.type).startswith("float")}


def _uncell(name: str, text: str) -> float | int | None:
    if text == "":
        return None
    return float(text) if name in _FLOATS else int(text)


def read(path: Path) -> list[Counters]:
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return [Counters(label=r["label"], file=r["file"],
                         **{k: _uncell(k, r.get(k) or "") for k in COLUMNS[2:]})  # type: ignore[arg-type]
                for r in csv.DictReader(f)]


# --- comparison ---

@dataclass
class CounterChange:
    label: str
    counter: str
    baseline: float
    current: float
    verdict: str  # "regression", "improvement", "no change"

    @property
    def change(self) -> str:
        if self.baseline == 0:
            return f"{self.current - self.baseline:+g}"
        return f"{(self.current / self.baseline - 1) * 100:+.1f}%"


def summarize(rows: list[Counters]) -> dict[str, dict[str, float]]:
    """label -> counter -> its median (or max, as TOLERANCES says) over the label's successful probes."""
    by_label: dict[str, list[Counters]] = {}
    for r in rows:
        if r.exit_code == 0:
            by_label.setdefault(r.label, []).append(r)
    out: dict[str, dict[str, float]] = {}
    for label, rs in by_label.items():
        out[label] = {}
        for k in MEASURES:
            vals = [getattr(r, k) for r in rs if getattr(r, k) is not None]
            if vals:
                out[label][k] = float(max(vals) if TOLERANCES[k].over == "max" else median(vals))
    return out


def judge(counter: str, baseline: float, current: float) -> str:
    tol = TOLERANCES[counter]
    delta = current - baseline
    if tol.worse == "none" or abs(delta) <= tol.absolute or abs(delta) <= tol.relative * abs(baseline):
        return "no change"
    if tol.worse == "either" or (delta > 0) == (tol.worse == "up"):
        return "regression"
    return "improvement"


def compare(baseline: dict[str, dict[str, float]], current: dict[str, dict[str, float]]) -> list[CounterChange]:
    """Every counter that both sides have, for every label on both sides, judged by its tolerance."""
    out = []
    for label, cur in current.items():
        base = baseline.get(label)
        if base is None:
            continue
        for k in MEASURES:
            if k not in base or k not in cur:
                continue
            out.append(CounterChange(label, k, base[k], cur[k], judge(k, base[k], cur[k])))
    return out
