"""`ringsum check`: did a build get slower than a baseline run?

Pipeline: load both run directories -> align commands by label -> normalise -> bootstrap the
ratio of medians -> verdicts -> text table, Markdown, JUnit XML.

Figures:
  paired  A/B in one run (`--against BIN_DIR`): the command's time divided by its baseline
        build's time in the same round, summed up over rounds by the Hodges-Lehmann centre with
        its signed-rank interval (harness.stats.paired_shift: the two builds are exchangeable in
        shuffled rounds, so the log-ratios are symmetric and the interval is sharper than a
        median's); the two share every round, so the drift of a shared VM cancels. The primary
        figure whenever the run has it (fewer rounds than the confidence needs: "too few runs").
Across two runs, each a ratio of medians over a command's executions:
  cat   median wall time / median wall time of `cat FILE` in the same rounds (the rounds are
        shuffled and interleaved, so a slow stretch of the disk hits both); the primary figure,
        because cat reads the same file through the same cold path
  fio   the same with fio's own read time (`read.runtime`, ms resolution) of the best fio
        command (by median)
  raw   median wall time, only when both runs have the same machine fingerprint
The verdict rests on the first of paired, cat, fio, raw that the command has. Medians are
taken before dividing: one execution's spike (common on a shared VM) then moves neither.

Decision: the paired figure's interval, or a percentile bootstrap (seeded; rounds resampled
with their reference) of figure(current) / figure(baseline); a regression only when the whole
interval lies above 1 + threshold, an improvement only when it lies below 1 - threshold,
inconclusive when it reaches past both, otherwise "no change".

Behaviour counters (harness/judge/counters.py: reads, in-flight, io_uring_enter calls, read bytes,
context switches, page faults, peak RSS, residency) of each hasher's probes, compared median to
median within measured tolerances: an I/O regression shows there exactly.

Deterministic companion: user-space instructions of hashing a hot file (harness/check/instructions.py).
Outputs: harness/check/report.py.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness import stats
from harness.catalog.tools import HASHER
from harness.check.settings import (DEFAULT_CONFIDENCE, DEFAULT_INSTRUCTION_TOLERANCE, DEFAULT_THRESHOLD,  # noqa: F401
                                    MIN_RUNS, RESAMPLES, parse_fraction)
from harness.check.load import REFERENCE_TOOLS, CheckError, RunData, Sample, is_run_dir
from harness.judge import counters as ctr
from harness.pipeline.run import run

SEED = 20230701
FIGURES = ("paired", *REFERENCE_TOOLS, "raw")  # in order of preference for the verdict
POOLED = "all hashers, pooled"
MIN_LOG_SCALE = 1e-3  # a command's per-round noise is never taken as below 0.1% (weights stay finite)

# verdicts
REGRESSION, IMPROVEMENT, NO_CHANGE, FAILED = "regression", "improvement", "no change", "failed"
INCONCLUSIVE = "inconclusive"  # the interval holds a change of the threshold's size either way: not a pass
TOO_FEW, NOT_COMPARABLE, REFERENCE = "too few runs", "not comparable", "reference"
ONLY_BASELINE, ONLY_CURRENT = "only in baseline", "only in current"
BAD = (REGRESSION, FAILED)
UNDECIDED = (TOO_FEW, NOT_COMPARABLE)


@dataclass
class Settings:
    threshold: float = DEFAULT_THRESHOLD
    confidence: float = DEFAULT_CONFIDENCE
    resamples: int = RESAMPLES
    seed: int = SEED
    min_runs: int = MIN_RUNS
    # What `ringsum compare` (harness/compare.py) reads differently from a regression check:
    figures: tuple[str, ...] = FIGURES  # estimated, in this order; the verdict rests on the first a command has
    judge_references: bool = False  # a check leaves cat and fio unjudged: they normalise the others
    inconclusive: str = "pass"  # what an inconclusive hasher makes the check exit with: "pass" (0) or "fail" (1)


@dataclass
class Estimate:
    figure: str
    baseline: float  # median
    current: float
    ratio: float  # current / baseline
    low: float
    high: float


@dataclass
class Comparison:
    label: str
    tool: str
    verdict: str
    reason: str = ""
    baseline_n: int = 0
    current_n: int = 0
    primary: str | None = None
    estimates: dict[str, Estimate] = field(default_factory=dict)


@dataclass
class InstructionComparison:
    variant: str
    baseline: int | None
    current: int | None
    verdict: str
    reason: str = ""

    @property
    def ratio(self) -> float | None:
        return self.current / self.baseline if self.baseline and self.current else None


@dataclass
class Report:
    baseline: RunData
    current: RunData
    settings: Settings
    comparisons: list[Comparison]
    instructions: list[InstructionComparison] = field(default_factory=list)
    instruction_tolerance: float = DEFAULT_INSTRUCTION_TOLERANCE
    counters: list[ctr.CounterChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def fingerprint_match(self) -> bool:
        return self.baseline.fingerprint_id is not None and \
            self.baseline.fingerprint_id == self.current.fingerprint_id

    def count(self, verdict: str) -> int:
        return sum(1 for c in [*self.comparisons, *self.instructions, *self.counters] if c.verdict == verdict)

    @property
    def exit_code(self) -> int:
        """0 no regression shown; 1 a regression or a failed command, by any signal (or an inconclusive
        hasher, with inconclusive = "fail"); 2 something could not be compared, or no hasher was
        judged (baselines alone say nothing about the hashers). An inconclusive hasher (its interval
        reaches past the threshold: too noisy to tell) is listed and passes unless told otherwise."""
        verdicts = [c.verdict for c in [*self.comparisons, *self.instructions, *self.counters]]
        if any(v in BAD for v in verdicts):
            return 1
        judged = [c for c in self.comparisons
                  if c.tool in (HASHER, POOLED) and c.verdict not in (REFERENCE, ONLY_BASELINE, ONLY_CURRENT)]
        if not judged or any(v in UNDECIDED for v in verdicts):
            return 2
        if self.settings.inconclusive == "fail" and any(c.verdict == INCONCLUSIVE for c in judged):
            return 1
        return 0

    def signals(self) -> list[tuple[str, bool, str]]:
        """(signal, whether it found a regression, what it says) for each signal the check had:
        instruction counts (CPU work, nearly deterministic), the behaviour counters (the I/O path),
        wall time; those that found a regression first, in that order of noise."""
        out = []
        hashers = [c for c in self.comparisons if c.tool in (HASHER, POOLED)]
        for name, items, label in (("instructions", self.instructions, lambda c: c.variant),
                                   ("counters", self.counters, lambda c: f"{c.label}: {c.counter}"),
                                   ("wall time", hashers, lambda c: c.label)):
            if not items:
                continue
            bad = [i for i in items if i.verdict in BAD]
            shown = bad or [i for i in items if i.verdict == INCONCLUSIVE]
            said = ", ".join(f"{sum(i.verdict == v for i in items)} {v}" for v in dict.fromkeys(i.verdict for i in items))
            if shown:
                said += f" ({'; '.join(label(i) for i in shown[:3])}{' ...' if len(shown) > 3 else ''})"
            out.append((name, bool(bad), said))
        return sorted(out, key=lambda s: not s[1])

    def decided_by(self) -> str:
        """The signal that decided the exit: the first that found a regression; else, on an exit 1, the
        wall time's inconclusive hashers (inconclusive = "fail"); else every signal's "no"."""
        signals = self.signals()
        if signals and signals[0][1]:
            return f"{signals[0][0]}: {signals[0][2]}"
        return "; ".join(f"{name}: {said}" for name, _bad, said in signals) or "nothing compared"


# --- statistics ---

def bootstrap_ratio(baseline: Sample, current: Sample, confidence: float, resamples: int,
                    rng: np.random.Generator) -> tuple[float, float, float]:
    """(current.value / baseline.value, low, high): a percentile bootstrap interval of the ratio,
    the two runs resampled independently."""
    ratios = current.resampled(rng, resamples) / baseline.resampled(rng, resamples)
    tail = (1 - confidence) / 2
    low, high = np.quantile(ratios, [tail, 1 - tail])
    return current.value / baseline.value, float(low), float(high)


def _by_key(sample: Sample) -> dict[tuple[str, int], float]:
    times: dict[tuple[str, int], list[float]] = {}
    for k, t in zip(sample.keys, sample.time):
        times.setdefault(k, []).append(float(t))
    return {k: float(np.median(v)) for k, v in times.items()}


def paired_ratio(baseline: Sample, current: Sample, confidence: float) -> tuple[float, float, stats.Estimate]:
    """(median baseline time, median current time, the ratio current/baseline of the rounds in
    which both ran: the Hodges-Lehmann centre of the per-round ratios with its signed-rank
    interval, harness.stats.paired_shift; two builds of one program in shuffled rounds are
    exchangeable, which that interval needs). Rounds are the unit: a spike moves one ratio."""
    b, c = _by_key(baseline), _by_key(current)
    keys = [k for k in c if k in b]
    ratio = stats.paired_shift([c[k] for k in keys], [b[k] for k in keys], confidence)
    if not keys:
        return math.nan, math.nan, ratio
    return float(np.median([b[k] for k in keys])), float(np.median([c[k] for k in keys])), ratio


def decide(low: float, high: float, threshold: float) -> str:
    """One vocabulary for check and compare: a regression or an improvement when the whole interval
    lies past the threshold; no change when it lies wholly inside ±threshold; inconclusive otherwise
    (no one may read "no change" into [+1.7%, +24.9%] at ±3%, nor into a 3-round [-90%, +909%])."""
    if not (math.isfinite(low) and math.isfinite(high)):  # an infinite or missing time tells nothing
        return INCONCLUSIVE
    if low > 1 + threshold:
        return REGRESSION
    if high < 1 - threshold:
        return IMPROVEMENT
    if low < 1 - threshold or high > 1 + threshold:
        return INCONCLUSIVE
    return NO_CHANGE


def _tool(run: RunData, label: str) -> str:
    return str(run.runs.loc[run.runs["label"] == label, "tool"].iloc[0])


def _file_size(run: RunData, label: str) -> int:
    return int(run.runs.loc[run.runs["label"] == label, "file_size"].iloc[0])


def _paired(baseline: RunData, current: RunData) -> bool:
    """The two halves of one A/B run: their rounds pair."""
    return baseline.ab_half and current.ab_half and baseline.path == current.path


def compare_command(label: str, baseline: RunData, current: RunData, settings: Settings,
                    fingerprint_match: bool) -> Comparison:
    tool = _tool(current, label)
    b, c = baseline.samples[label], current.samples[label]
    cmp = Comparison(label=label, tool=tool, verdict=NO_CHANGE,
                     baseline_n=len(b["raw"]), current_n=len(c["raw"]))
    if _file_size(baseline, label) != _file_size(current, label):
        cmp.verdict, cmp.reason = NOT_COMPARABLE, "different file sizes"
        return cmp
    rng = np.random.default_rng([settings.seed, zlib.crc32(label.encode())])
    paired_coverage = 1.0
    if _paired(baseline, current):
        base, cur, ratio = paired_ratio(b["raw"], c["raw"], settings.confidence)
        paired_coverage = ratio.confidence
        if ratio.n >= settings.min_runs:
            cmp.estimates["paired"] = Estimate("paired", base, cur, ratio.median, ratio.low, ratio.high)
    for fig in settings.figures:
        if fig == "paired" or (fig == "raw" and not fingerprint_match):
            continue
        if len(b[fig]) >= settings.min_runs and len(c[fig]) >= settings.min_runs:
            ratio, low, high = bootstrap_ratio(b[fig], c[fig], settings.confidence, settings.resamples, rng)
            cmp.estimates[fig] = Estimate(fig, b[fig].value, c[fig].value, ratio, low, high)
    if label in current.failures:
        cmp.verdict, cmp.reason = FAILED, current.failures[label]
    elif tool in REFERENCE_TOOLS and not settings.judge_references:
        cmp.verdict = REFERENCE  # it normalises the others; not judged
    elif min(cmp.baseline_n, cmp.current_n) < settings.min_runs:
        cmp.verdict = TOO_FEW
        cmp.reason = (f"{cmp.baseline_n} baseline and {cmp.current_n} current executions; "
                      f"{settings.min_runs} needed on each side")
    elif "paired" in cmp.estimates and paired_coverage < settings.confidence:
        cmp.verdict = TOO_FEW
        cmp.reason = (f"{len(c['raw'])} rounds give a {paired_coverage * 100:.1f}% interval at most; "
                      f"{settings.confidence * 100:g}% asked")
    elif not cmp.estimates:
        cmp.verdict = NOT_COMPARABLE
        cmp.reason = "different machine fingerprint and no cat or fio reference in both runs"
    else:
        cmp.primary = next(f for f in settings.figures if f in cmp.estimates)
        e = cmp.estimates[cmp.primary]
        cmp.verdict = decide(e.low, e.high, settings.threshold)
    return cmp


def compare(baseline: RunData, current: RunData, settings: Settings) -> Report:
    if baseline.cache and current.cache and baseline.cache != current.cache:
        raise CheckError(f"cache modes differ: baseline {baseline.cache}, current {current.cache}")
    report = Report(baseline=baseline, current=current, settings=settings, comparisons=[])
    if _paired(baseline, current):
        report.notes.append("A/B run: each command against its baseline build in the same rounds")
    elif not report.fingerprint_match:
        report.notes.append(f"machine fingerprints differ ({baseline.fingerprint_id} vs "
                            f"{current.fingerprint_id}): raw times not compared")
    for label in current.samples:
        if label in baseline.samples:
            report.comparisons.append(compare_command(label, baseline, current, settings,
                                                      report.fingerprint_match))
        else:
            report.comparisons.append(Comparison(label, _tool(current, label), ONLY_CURRENT,
                                                 current_n=len(current.samples[label]["raw"])))
    for label in baseline.samples:
        if label not in current.samples:
            report.comparisons.append(Comparison(label, _tool(baseline, label), ONLY_BASELINE,
                                                 baseline_n=len(baseline.samples[label]["raw"])))
    if not any(c.tool == HASHER and c.verdict not in (ONLY_CURRENT, ONLY_BASELINE) for c in report.comparisons):
        report.notes.append("no hasher command is common to both runs: nothing to judge (exit 2)")
    last = (REFERENCE, ONLY_CURRENT, ONLY_BASELINE)  # judged commands first, in the run's order
    report.comparisons.sort(key=lambda c: last.index(c.verdict) + 1 if c.verdict in last else 0)
    like = {c.label for c in report.comparisons if c.verdict not in (*last, NOT_COMPARABLE)}
    if _paired(baseline, current) and len([c for c in report.comparisons if "paired" in c.estimates]) > 1:
        report.comparisons.insert(0, compare_pooled(report.comparisons, baseline, current, settings))
    # counters say what a command did to its file: between different workloads they differ by design
    report.counters = ctr.compare({k: v for k, v in baseline.counters.items() if k in like}, current.counters)
    return report


def compare_pooled(comparisons: list[Comparison], baseline: RunData, current: RunData,
                   settings: Settings) -> Comparison:
    """All judged hashers at once: per round, a weighted mean of their log current/baseline
    ratios, then the paired shift over rounds (as for one command). A change in shared code
    moves every command; pooling cuts the noise of a round's figure. Each command weighs
    1/s^2, s the median |log ratio| of its rounds: a command timed through a noisy disk (O_DIRECT
    read hot) then hardly dilutes the quiet ones. s ignores the signs, so with nothing changed
    the pooled log ratios stay symmetric, as the signed-rank interval needs."""
    labels = [c.label for c in comparisons if "paired" in c.estimates and c.tool not in REFERENCE_TOOLS]
    per_label = []
    for label in labels:
        b, c = _by_key(baseline.samples[label]["raw"]), _by_key(current.samples[label]["raw"])
        per_label.append({k: c[k] / b[k] for k in c if k in b})
    rounds = sorted(set.intersection(*(set(r) for r in per_label)))
    logs = np.log(np.array([[r[k] for k in rounds] for r in per_label]))  # command x round
    pooled = np.array([])
    if rounds:
        weights = 1 / np.maximum(np.median(np.abs(logs), axis=1), MIN_LOG_SCALE) ** 2
        pooled = weights @ logs / weights.sum()
    ratio = stats.log_shift(pooled, settings.confidence)
    cmp = Comparison(label=f"{POOLED} ({len(labels)} hashers)", tool=POOLED, verdict=NO_CHANGE,
                     baseline_n=len(rounds), current_n=len(rounds), primary="paired")
    cmp.estimates["paired"] = Estimate("paired", math.nan, math.nan, ratio.median, ratio.low, ratio.high)
    if ratio.confidence < settings.confidence or ratio.n < settings.min_runs:
        cmp.verdict, cmp.reason = TOO_FEW, f"{ratio.n} rounds in which every hasher ran"
    else:
        cmp.verdict = decide(ratio.low, ratio.high, settings.threshold)
    return cmp


# --- the current run ---

def measure(opts: Any) -> tuple[Path, int]:
    """Run a config (harness.pipeline.run.Options) and return (the new run directory, run's exit code)."""

    outcome = run(opts)
    if outcome.run_dir is None or not is_run_dir(outcome.run_dir):
        raise CheckError(f"the current run wrote no run directory under {opts.out} (exit {outcome.code})")
    return outcome.run_dir, outcome.code
