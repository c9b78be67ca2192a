"""`ringsum check`'s input: a run directory reduced to, per command and figure, its executions'
times and the references' in the same rounds (REFERENCE_TOOLS; ones for raw), and an A/B run split in halves."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from harness.catalog.tools import PLAIN_READ, SELF_TIMED, the_tool, tools_with
from harness.judge import counters as ctr
from harness.judge import results as res
from harness.judge.load import RunDirError, load_run, read_file
from harness.pipeline.config_schema import BASELINE_PREFIX


# The check's per-round references, each a figure of its own (÷cat, ÷fio): the plain read, and the
# self-timed readers by their own read time.
REFERENCE_TOOLS = (the_tool(PLAIN_READ), *tools_with(SELF_TIMED))


class CheckError(Exception):
    """The comparison cannot be made at all (missing baseline, unreadable run). Exit 2."""


@dataclass
class Sample:
    """A command's executions in one run for one figure: its times and, execution by execution,
    the reference's time in the same round (ones for raw). The figure is
    median(time) / median(reference): a spike of one reference execution does not carry over."""

    time: np.ndarray
    reference: np.ndarray
    keys: list[tuple[str, int]] = field(default_factory=list)  # (file, round) of each execution

    def __len__(self) -> int:
        return len(self.time)

    @property
    def value(self) -> float:
        return float(np.median(self.time) / np.median(self.reference))

    def resampled(self, rng: np.random.Generator, resamples: int) -> np.ndarray:
        """The figure of `resamples` bootstrap resamples of the executions (time and reference
        drawn together, so the pairing by round is kept)."""
        idx = rng.integers(0, len(self), size=(resamples, len(self)))
        return np.median(self.time[idx], axis=1) / np.median(self.reference[idx], axis=1)


@dataclass
class RunData:
    """One run directory reduced to what the check needs."""

    path: Path
    fingerprint_id: str | None
    cache: str | None
    runs: Any  # pandas DataFrame (harness.judge.results.read_runs)
    samples: dict[str, dict[str, Sample]]  # label -> figure -> executions
    failures: dict[str, str]  # label -> why (failed execution, hash mismatch)
    counters: dict[str, dict[str, float]] = field(default_factory=dict)  # label -> counter -> summary
    ab_half: bool = False  # one half of an A/B run (select()): its rounds pair with the other half's


def _per_round(rows: Any, column: str) -> dict[tuple[str, int], float]:
    med = rows.groupby(["file", "round"])[column].median()
    return {(str(f), int(r)): float(v) for (f, r), v in med.items() if v == v and v > 0}


def reference_times(runs: Any) -> dict[str, dict[tuple[str, int], float]]:
    """figure -> (file, round) -> reference time in that round: the plain read's wall time, and a
    self-timed reader's own read time, of its command with the best median (per file)."""
    ok = runs[res.succeeded(runs)]
    refs = {}
    for tool in REFERENCE_TOOLS:
        rows = ok[ok["tool"] == tool].copy()
        if tool in tools_with(SELF_TIMED) and len(rows):
            rows["wall_s"] = rows["fio_runtime_s"].where(rows["fio_runtime_s"] > 0, rows["wall_s"])
            med = rows.groupby(["file", "label"])["wall_s"].median()
            best = {f: lbl for f, lbl in med.groupby(level=0).idxmin().map(lambda t: t[1]).items()}
            rows = rows[[best.get(f) == lbl for f, lbl in zip(rows["file"], rows["label"])]]
        refs[tool] = _per_round(rows, "wall_s") if len(rows) else {}
    return refs


def check_data(path: str | Path) -> RunData:
    """A run directory, read by the one reader (harness/judge/load.py), reduced to what the check
    needs; CheckError where it cannot be read, a run without meta.json included."""
    p = Path(path)
    if not is_run_dir(p):
        raise CheckError(f"{p}: not a run directory (runs.csv and meta.json needed)")
    try:
        run = load_run(p)
        counters = _counters(p)
    except RunDirError as e:
        raise CheckError(str(e)) from None
    meta, runs = run.meta, run.runs
    if not len(runs):
        raise CheckError(f"{p}: no executions recorded in runs.csv")
    refs = reference_times(runs)
    ok_mask = res.succeeded(runs)
    samples: dict[str, dict[str, Sample]] = {}
    failures: dict[str, str] = {}
    per_command = res.command_stats(runs).set_index("label")
    for label, g in runs.groupby("label", sort=False):
        st = per_command.loc[label]
        if st["mismatches"]:
            failures[label] = f"hash mismatch in {st['mismatches']} of {len(g)} executions"
        elif st["failed"]:
            failures[label] = f"{st['failed']} of {len(g)} executions failed: {st['first_error']}"
        ok = g[ok_mask[g.index]]
        keys = list(zip(ok["file"].astype(str), ok["round"].astype(int)))
        wall = ok["wall_s"].to_numpy(dtype=float)
        figs = {"raw": Sample(wall, np.ones_like(wall), keys)}
        for name, ref in refs.items():
            have = [k in ref for k in keys]
            figs[name] = Sample(wall[have], np.array([ref[k] for k in keys if k in ref], dtype=float))
        samples[str(label)] = figs
    caches = set(runs["cache"].dropna().unique())
    return RunData(path=p, fingerprint_id=(meta.get("fingerprint") or {}).get("fingerprint_id"),
                   cache=caches.pop() if len(caches) == 1 else None, runs=runs,
                   samples=samples, failures=failures,
                   counters=counters)


def _counters(run_dir: Path) -> dict[str, dict[str, float]]:
    """counters.csv's summary per label, read as the run's other files are (no symlink)."""
    return ctr.summarize(read_file(run_dir, ctr.COUNTERS_CSV, ctr.read))


def is_ab_run(run: RunData) -> bool:
    """A run with a baseline build beside the current one (`--against`)."""
    return any(label.startswith(BASELINE_PREFIX) for label in run.samples)


def select(run: RunData, rename: Callable[[str], str | None]) -> RunData:
    """The commands of `run` that rename() gives a new label (None: left out), under it."""
    def pick(d: dict[str, Any]) -> dict[str, Any]:
        return {new: v for k, v in d.items() if (new := rename(k)) is not None}

    labels = [rename(str(lbl)) for lbl in run.runs["label"]]
    rows = run.runs[[lbl is not None for lbl in labels]].copy()
    rows["label"] = [lbl for lbl in labels if lbl is not None]
    return dataclasses.replace(run, runs=rows, samples=pick(run.samples), failures=pick(run.failures),
                               counters=pick(run.counters), ab_half=True)


def split_ab(run: RunData) -> tuple[RunData, RunData]:
    """(baseline, current) halves of an A/B run: the BASELINE_PREFIX commands, renamed to their
    twins' labels, and everything else. Both keep the run's path: compare() pairs them by round."""
    n = len(BASELINE_PREFIX)
    return (select(run, lambda lbl: lbl[n:] if lbl.startswith(BASELINE_PREFIX) else None),
            select(run, lambda lbl: None if lbl.startswith(BASELINE_PREFIX) else lbl))


def is_run_dir(path: Path) -> bool:
    return (path / res.RUNS_CSV).is_file() and (path / res.META_JSON).is_file()
