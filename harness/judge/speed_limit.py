"""The speed limit: per round, the fastest plain read of the same bytes by any read-only command
(`READ_TOOLS`: the limit readers of harness/catalog/tools.py, and a `[[commands]]` entry with
`reads_only`), and over the rounds its median; every command's time paired per round against it.
A self-timed reader (fio) counts by its own read runtime, since its wall time includes its start-up.
A reader cannot be faster than it by construction; a hasher faster than it means the run's readers
missed a faster way to read (harness/judge/verdict.py reports it as a finding). Pure functions of
the runs table (`harness.judge.results.read_runs()`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness import stats
from harness.catalog.tools import FIO_RANDOM, READ_TOOLS, REFERENCE_HASH, SELF_TIMED, tools_with
from harness.judge.results import rows_where, succeeded
from harness.judge.robust import condition_names, one_condition
from harness.units import format_rate

RoundTimes = stats.RoundTimes

LIMIT_DEFINITION = ("per round, the fastest plain read of the file by any read-only command "
                    f"({', '.join(READ_TOOLS)}; fio by its own read runtime); the limit is the median "
                    "over rounds")


# --- per-round times ---

def job_time(runs: Any) -> Any:
    """Seconds each execution took for its job: fio's own read runtime for fio, wall time otherwise."""
    return runs["fio_runtime_s"].where(runs["tool"].isin(tools_with(SELF_TIMED)), runs["wall_s"]).astype("float64")


def by_round(runs: Any) -> dict[str, RoundTimes]:
    """label -> {round: median job time over the round's successful executions}."""
    ok = runs.loc[succeeded(runs), ["label", "round", "tool", "fio_runtime_s", "wall_s"]]
    out: dict[str, RoundTimes] = {}
    if not len(ok):
        return out
    medians = job_time(ok).groupby([ok["label"].astype(str), ok["round"].astype(int)]).median()
    for (label, rnd), seconds in medians.items():
        if seconds == seconds:
            out.setdefault(str(label), {})[int(rnd)] = float(seconds)
    return out


def files_by_size(runs: Any) -> list[str]:
    """The run's test files, smallest first."""
    sizes = runs.groupby(runs["file"].astype(str))["file_size"].max()
    return [str(f) for f in sizes.sort_values(kind="stable").index]


def one_file(runs: Any, file: str | None = None) -> Any:
    """The rows of one test file (default: the largest, the one headlines are about)."""
    if not len(runs):
        return runs
    file = file if file is not None else files_by_size(runs)[-1]
    return rows_where(runs, runs["file"].astype(str) == file)


def workloads(runs: Any) -> list[tuple[str, str]]:
    """(condition, file) pairs: what a speed limit and a headline are about."""
    return [(c, f) for c in condition_names(runs) for f in files_by_size(one_condition(runs, c))]


# --- the speed limit ---

@dataclass(frozen=True)
class SpeedLimit:
    """One file's speed limit: per round the fastest read and who did it, and over the rounds."""

    file: str
    file_size: int
    per_round: RoundTimes
    set_in_round: dict[int, str]  # round -> the reader that set the limit (equal times: the first label)
    estimate: stats.Estimate  # the per-round limits: median and its interval
    readers: dict[str, float]  # every reader with data -> its median job time

    @property
    def seconds(self) -> float:
        return self.estimate.median

    @property
    def Bps(self) -> float:
        return self.file_size / self.seconds

    @property
    def set_by(self) -> str:
        """The reader that set the limit in the most rounds (equal counts: the faster median)."""
        counts = {r: list(self.set_in_round.values()).count(r) for r in self.readers}
        return min(self.readers, key=lambda r: (-counts[r], self.readers[r], r))

    @property
    def set_by_rounds(self) -> int:
        return list(self.set_in_round.values()).count(self.set_by)

    @property
    def best_reader(self) -> str:
        """The reader with the lowest median time."""
        return min(self.readers, key=lambda r: (self.readers[r], r))

    def text(self) -> str:
        best = self.best_reader
        return (f"{self.seconds:.3f} s = {format_rate(self.Bps)}, the fastest plain read per round "
                f"(median of {self.estimate.n} rounds, interval {self.estimate.low:.3f}-{self.estimate.high:.3f} s); "
                f"set by {self.set_by} in {self.set_by_rounds} of {len(self.set_in_round)} rounds; "
                f"best reader by median: {best} ({self.readers[best]:.3f} s)")

    def to_json(self) -> dict[str, Any]:
        return {"definition": LIMIT_DEFINITION, "file": self.file, "file_size": self.file_size,
                "limit_s": self.seconds, "limit_Bps": self.Bps, "interval_s": self.estimate.to_json(),
                "set_by": self.set_by, "set_by_rounds": self.set_by_rounds, "best_reader": self.best_reader,
                "best_reader_median_s": self.readers[self.best_reader], "readers": self.readers,
                "per_round": [{"round": r, "seconds": s, "reader": self.set_in_round[r]}
                              for r, s in sorted(self.per_round.items())]}


def speed_limit(runs: Any, file: str | None = None) -> SpeedLimit | None:
    """The speed limit of one file (default: the largest); None when no reader succeeded."""
    rows = one_file(runs, file)
    rows = rows[rows["tool"].isin(READ_TOOLS)]  # few of the rows, before the columns are read
    in_order = ~rows["extra"].fillna("").astype(str).str.contains(FIO_RANDOM, regex=False) if "extra" in rows else True
    readers = rows[(rows["bytes"] == rows["file_size"]).fillna(False).astype(bool) & in_order]
    times = by_round(readers)
    if not times:
        return None
    per_round: RoundTimes = {}
    set_in_round: dict[int, str] = {}
    for label in sorted(times):
        for rnd, seconds in times[label].items():
            if rnd not in per_round or seconds < per_round[rnd]:
                per_round[rnd], set_in_round[rnd] = seconds, label
    return SpeedLimit(file=str(readers["file"].iloc[0]), file_size=int(readers["file_size"].iloc[0]),
                      per_round=per_round, set_in_round=set_in_round,
                      estimate=stats.median_interval(per_round.values()),
                      readers={lbl: stats.median_interval(t.values()).median for lbl, t in times.items()})


def limit_ratios(runs: Any, limit_of: Callable[[str, str], SpeedLimit | None] | None = None,
                 times_of: Callable[[str, str], dict[str, RoundTimes]] | None = None) -> dict[str, stats.Estimate]:
    """label -> its time / its file's speed limit, paired per round (commands of files without a limit
    are left out). `limit_of` and `times_of` (condition, file) give a dataset's limit and per-round
    times; by default they are worked out here (harness.judge.verdict.Judgement passes its own)."""
    if limit_of is None or times_of is None:
        rows = functools.cache(lambda cond, file: one_file(one_condition(runs, cond), file))
        limit_of, times_of = (lambda c, f: speed_limit(rows(c, f))), (lambda c, f: by_round(rows(c, f)))
    out = {}
    for cond, file in workloads(runs):
        limit = limit_of(cond, file)
        if limit is None:
            continue
        for label, times in times_of(cond, file).items():
            out[label] = stats.paired_rounds(times, limit.per_round)
    return out


def blake3_in_memory(runs: Any) -> dict[str, float | None]:
    """Warm mode: how fast BLAKE3 hashes a cached file, the median throughput of `b3sum
    --num-threads 1` and of `b3sum` (all threads), both with mmap. A figure of its own, not the
    speed limit (which is about reading)."""
    ok = runs[succeeded(runs)]
    b3 = ok[ok["tool"].isin(tools_with(REFERENCE_HASH)) & (ok["mmap"] == True)]  # noqa: E712 (nullable)
    one = b3[b3["num_threads"] == 1]["throughput_Bps"]
    every = b3[b3["num_threads"].isna()]["throughput_Bps"]
    return {"blake3_single_core_Bps": float(one.median()) if len(one) else None,
            "blake3_all_core_Bps": float(every.median()) if len(every) else None}


def meta_speed_limit(runs: Any, cache: str) -> dict[str, Any]:
    """meta.json's `speed_limit`: the largest file's limit (in the first condition), plus BLAKE3's
    in-memory speed when warm."""
    runs = one_condition(runs)
    limit = speed_limit(runs)
    out: dict[str, Any] = limit.to_json() if limit else {
        "definition": LIMIT_DEFINITION, "limit_s": None, "limit_Bps": None,
        "reason": f"no successful read-only command ({', '.join(READ_TOOLS)})"}
    if cache == "warm":
        out.update(blake3_in_memory(runs))
    return out
