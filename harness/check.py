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
with their reference) of figure(current) / figure(baseline); a regression
only when the whole interval lies above 1 + threshold, an improvement only when it lies below
1 - threshold, otherwise "no change".

Behaviour counters (harness/counters.py: reads, in-flight, io_uring_enter calls, read bytes,
context switches, page faults, peak RSS, residency) of each hasher's probes, compared median to
median within measured tolerances: an I/O regression shows there exactly.

Deterministic companion: user-space instructions of hashing a hot file, counted with valgrind's
callgrind (perf's hardware counters are used when they work), compared with a tolerance.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import shutil
import subprocess
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from xml.etree import ElementTree as ET

import numpy as np

from harness import counters as ctr
from harness import results as res
from harness import stats
from harness.config import BASELINE_PREFIX

DEFAULT_THRESHOLD = 0.05
DEFAULT_CONFIDENCE = 0.95
RESAMPLES = 10_000
SEED = 20230701
MIN_RUNS = 3  # ok executions per command on each side
FIGURES = ("paired", "cat", "fio", "raw")  # in order of preference for the verdict
REFERENCE_TOOLS = ("cat", "fio")
POOLED = "all hashers, pooled"
MIN_LOG_SCALE = 1e-3  # a command's per-round noise is never taken as below 0.1% (weights stay finite)
INSTRUCTIONS_JSON = "instructions.json"
DEFAULT_INSTRUCTION_TOLERANCE = 0.01
INSTRUCTION_FILE_SIZE = 64 << 20
INSTRUCTION_VARIANTS = ("liburing_b3sum_singlethread", "liburing_b3sum_multithread", "b3sum_pread")

# verdicts
REGRESSION, IMPROVEMENT, NO_CHANGE, FAILED = "regression", "improvement", "no change", "failed"
TOO_FEW, NOT_COMPARABLE, REFERENCE = "too few runs", "not comparable", "reference"
ONLY_BASELINE, ONLY_CURRENT = "only in baseline", "only in current"
BAD = (REGRESSION, FAILED)
UNDECIDED = (TOO_FEW, NOT_COMPARABLE)


class CheckError(Exception):
    """The comparison cannot be made at all (missing baseline, unreadable run). Exit 2."""


@dataclass
class Settings:
    threshold: float = DEFAULT_THRESHOLD
    confidence: float = DEFAULT_CONFIDENCE
    resamples: int = RESAMPLES
    seed: int = SEED
    min_runs: int = MIN_RUNS


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
    runs: Any  # pandas DataFrame (harness.results.read_runs)
    samples: dict[str, dict[str, Sample]]  # label -> figure -> executions
    failures: dict[str, str]  # label -> why (failed execution, hash mismatch)
    counters: dict[str, dict[str, float]] = field(default_factory=dict)  # label -> counter -> summary
    ab_half: bool = False  # one half of an A/B run (select()): its rounds pair with the other half's


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
        """0 no regression; 1 a regression or a failed command; 2 something could not be compared,
        or no hasher was judged (baselines alone say nothing about the hashers)."""
        verdicts = [c.verdict for c in [*self.comparisons, *self.instructions, *self.counters]]
        if any(v in BAD for v in verdicts):
            return 1
        judged = [c for c in self.comparisons
                  if c.tool == "hasher" and c.verdict not in (REFERENCE, ONLY_BASELINE, ONLY_CURRENT)]
        if not judged or any(v in UNDECIDED for v in verdicts):
            return 2
        return 0


# --- loading and normalising ---

def _per_round(rows: Any, column: str) -> dict[tuple[str, int], float]:
    med = rows.groupby(["file", "round"])[column].median()
    return {(str(f), int(r)): float(v) for (f, r), v in med.items() if v == v and v > 0}


def reference_times(runs: Any) -> dict[str, dict[tuple[str, int], float]]:
    """figure -> (file, round) -> reference time in that round: cat's wall time, and fio's read
    time of the fio command with the best median (per file)."""
    ok = runs[res.succeeded(runs)]
    refs = {"cat": _per_round(ok[ok["tool"] == "cat"], "wall_s")}
    fio = ok[ok["tool"] == "fio"].copy()
    if len(fio):
        fio["read_s"] = fio["fio_runtime_s"].where(fio["fio_runtime_s"] > 0, fio["wall_s"])
        med = fio.groupby(["file", "label"])["read_s"].median()
        best = {f: lbl for f, lbl in med.groupby(level=0).idxmin().map(lambda t: t[1]).items()}
        fio = fio[[best.get(f) == lbl for f, lbl in zip(fio["file"], fio["label"])]]
        refs["fio"] = _per_round(fio, "read_s")
    else:
        refs["fio"] = {}
    return refs


def load_run(path: str | Path) -> RunData:
    p = Path(path)
    if not is_run_dir(p):
        raise CheckError(f"{p}: not a run directory (runs.csv and meta.json needed)")
    meta = res.read_json(p / res.META_JSON)
    runs = res.read_runs(p)
    if not len(runs):
        raise CheckError(f"{p}: no executions recorded in runs.csv")
    refs = reference_times(runs)
    ok_mask = res.succeeded(runs)
    samples: dict[str, dict[str, Sample]] = {}
    failures: dict[str, str] = {}
    for label, g in runs.groupby("label", sort=False):
        bad = g[~ok_mask[g.index]]
        mismatch = g[(g["hash_ok"] == False).fillna(False).astype(bool)]  # noqa: E712 (nullable)
        if len(mismatch):
            failures[label] = f"hash mismatch in {len(mismatch)} of {len(g)} executions"
        elif len(bad):
            failures[label] = f"{len(bad)} of {len(g)} executions failed: {bad['error'].iloc[0]}"
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
                   counters=ctr.summarize(ctr.read(p / ctr.COUNTERS_CSV)))


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
    if low > 1 + threshold:
        return REGRESSION
    if high < 1 - threshold:
        return IMPROVEMENT
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
    for fig in FIGURES[1:]:
        if fig == "raw" and not fingerprint_match:
            continue
        if len(b[fig]) >= settings.min_runs and len(c[fig]) >= settings.min_runs:
            ratio, low, high = bootstrap_ratio(b[fig], c[fig], settings.confidence, settings.resamples, rng)
            cmp.estimates[fig] = Estimate(fig, b[fig].value, c[fig].value, ratio, low, high)
    if label in current.failures:
        cmp.verdict, cmp.reason = FAILED, current.failures[label]
    elif tool in REFERENCE_TOOLS:
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
        cmp.primary = next(f for f in FIGURES if f in cmp.estimates)
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
    if not any(c.tool == "hasher" and c.verdict not in (ONLY_CURRENT, ONLY_BASELINE) for c in report.comparisons):
        report.notes.append("no hasher command is common to both runs: nothing to judge (exit 2)")
    last = (REFERENCE, ONLY_CURRENT, ONLY_BASELINE)  # judged commands first, in the run's order
    report.comparisons.sort(key=lambda c: last.index(c.verdict) + 1 if c.verdict in last else 0)
    judged = {c.label for c in report.comparisons if c.verdict not in last}
    if _paired(baseline, current) and len([c for c in report.comparisons if "paired" in c.estimates]) > 1:
        report.comparisons.insert(0, compare_pooled(report.comparisons, baseline, current, settings))
    report.counters = ctr.compare({k: v for k, v in baseline.counters.items() if k in judged},
                                  current.counters)
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
    """Run a config (harness.run.Options) and return (the new run directory, run's exit code)."""
    from harness.run import run

    outcome = run(opts)
    if outcome.run_dir is None or not is_run_dir(outcome.run_dir):
        raise CheckError(f"the current run wrote no run directory under {opts.out} (exit {outcome.code})")
    return outcome.run_dir, outcome.code


def is_run_dir(path: Path) -> bool:
    return (path / res.RUNS_CSV).is_file() and (path / res.META_JSON).is_file()


# --- instruction counts ---

def perf_works() -> bool:
    """perf's hardware instruction counter (absent in most VMs)."""
    if shutil.which("perf") is None:
        return False
    r = subprocess.run(["perf", "stat", "-x,", "-e", "instructions:u", "true"],
                       capture_output=True, text=True)
    return r.returncode == 0 and "<not supported>" not in r.stderr and "<not counted>" not in r.stderr


def count_instructions(argv: list[str], timeout: float = 300) -> tuple[int, str, str]:
    """(user-space instructions, counter, stdout) of one execution of argv."""
    if perf_works():
        r = subprocess.run(["perf", "stat", "-x,", "-e", "instructions:u", "--", *argv],
                           capture_output=True, text=True, timeout=timeout)
        counter = "perf"
        m = re.search(r"^(\d+),[^,]*,instructions", r.stderr, re.MULTILINE)
    else:
        if shutil.which("valgrind") is None:
            raise CheckError("neither perf's instruction counter nor valgrind is available "
                             "(apt-get install valgrind)")
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                           capture_output=True, text=True, timeout=timeout)
        counter = "callgrind"
        m = re.search(r"Collected : (\d+)", r.stderr)
    if r.returncode != 0 or not m:
        tail = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise CheckError(f"counting instructions of {argv[0]} failed: {tail}")
    return int(m.group(1)), counter, r.stdout


def measure_instructions(bin_dir: Path, file: Path, b3sum_hash: str,
                         variants: tuple[str, ...] = INSTRUCTION_VARIANTS) -> dict[str, Any]:
    """Instructions of each hasher at its default knobs hashing `file` (hot: read it first)."""
    file.read_bytes()  # into the page cache; the count does not depend on it, the duration does
    counts: dict[str, int] = {}
    counter = ""
    for variant in variants:
        exe = bin_dir / variant
        if not exe.is_file():
            raise CheckError(f"hasher binary {exe} not found; run `make`")
        counts[variant], counter, out = count_instructions([str(exe), str(file)])
        if not out.startswith(b3sum_hash):
            raise CheckError(f"{variant} printed a wrong hash under {counter}: {out.strip()[:80]}")
    return {"counter": counter, "file_size": file.stat().st_size, "bin_dir": str(bin_dir), "counts": counts}


def instructions_now(bin_dir: Path | None = None, file: Path | None = None,
                     size: int = INSTRUCTION_FILE_SIZE) -> dict[str, Any]:
    """measure_instructions() on `file`, or on a random file of `size` in build/data."""
    from harness.config import REPO_ROOT
    from harness.plan import FileSpec, find_tool
    from harness.files import ensure_file
    from harness.preflight import b3sum_reference
    from harness.units import format_size

    bin_dir = bin_dir or REPO_ROOT / os.environ.get("RINGSUM_BIN_DIR", "build/bin")
    if file is None:
        file = REPO_ROOT / "build" / "data" / f"ringsum-{format_size(size)}.bin"
        ensure_file(FileSpec(str(file), size, generate=True, owned=True), lambda msg: None)
    b3sum = find_tool("b3sum")
    if b3sum is None:
        raise CheckError("b3sum not found; run `make deps`")
    return measure_instructions(Path(bin_dir).absolute(), file, b3sum_reference(str(b3sum), str(file), 60))


def compare_instructions(baseline: dict[str, Any] | None, current: dict[str, Any],
                         tolerance: float) -> list[InstructionComparison]:
    if baseline is None:
        return [InstructionComparison(v, None, n, NOT_COMPARABLE, f"baseline has no {INSTRUCTIONS_JSON}")
                for v, n in current["counts"].items()]
    out = []
    for variant, n in current["counts"].items():
        b = baseline["counts"].get(variant)
        if b is None:
            out.append(InstructionComparison(variant, None, n, ONLY_CURRENT))
        elif baseline.get("file_size") != current["file_size"] or baseline.get("counter") != current["counter"]:
            out.append(InstructionComparison(variant, b, n, NOT_COMPARABLE,
                                             "different file size or counter"))
        else:
            ratio = n / b
            verdict = (REGRESSION if ratio > 1 + tolerance else
                       IMPROVEMENT if ratio < 1 - tolerance else NO_CHANGE)
            out.append(InstructionComparison(variant, b, n, verdict))
    return out


def read_instructions(run_dir: Path) -> dict[str, Any] | None:
    p = run_dir / INSTRUCTIONS_JSON
    return res.read_json(p) if p.is_file() else None


# --- output ---

def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def _interval(e: Estimate) -> str:
    return f"[{_pct(e.low)}, {_pct(e.high)}]"


def _value(fig: str, v: float) -> str:
    if v != v:
        return "-"
    return f"{v * 1000:.2f} ms" if fig in ("paired", "raw") else f"{v:.3f}"


def _row(c: Comparison) -> dict[str, str]:
    """The cells of one table row: primary figure first, the other figures as changes."""
    e = c.estimates.get(c.primary or "") if c.primary else None
    if e is None and c.estimates:  # references and failures: raw if there, else what is there
        e = c.estimates.get("raw") or next(iter(c.estimates.values()))
    row = {"command": c.label, "figure": "-", "baseline": "-", "current": "-", "change": "-",
           "interval": "-", "verdict": c.verdict + (f" ({c.reason})" if c.reason else "")}
    if e is not None:
        row.update(figure="÷" + e.figure if e.figure in ("cat", "fio") else e.figure,
                   baseline=_value(e.figure, e.baseline), current=_value(e.figure, e.current),
                   change=_pct(e.ratio), interval=_interval(e))
    for fig in FIGURES:
        other = c.estimates.get(fig)
        row[fig] = "n/a" if other is None else f"{_pct(other.ratio)}"
    return row


COLUMNS = ("command", "figure", "baseline", "current", "change", "interval", "verdict",
           "paired", "cat", "fio", "raw")
HEADERS = {"paired": "paired", "cat": "÷cat", "fio": "÷fio", "raw": "raw"}


def _summary_line(report: Report) -> str:
    parts = [f"{report.count(v)} {v}" for v in (REGRESSION, FAILED, IMPROVEMENT, NO_CHANGE, TOO_FEW, NOT_COMPARABLE)
             if report.count(v)]
    return ", ".join(parts) or "nothing compared"


def _header_lines(report: Report) -> list[str]:
    s = report.settings
    return [
        f"baseline: {report.baseline.path} (fingerprint {report.baseline.fingerprint_id})",
        f"current:  {report.current.path} (fingerprint {report.current.fingerprint_id})",
        f"figure for the verdict: first of paired, ÷cat, ÷fio, raw available; threshold ±{s.threshold * 100:g}%, "
        f"{s.confidence * 100:g}% interval: Hodges-Lehmann and signed ranks of the per-round ratios (paired), or a bootstrap "
        f"of the ratio of medians ({s.resamples} resamples, seed {s.seed})",
    ]


def _counter_rows(report: Report) -> list[tuple[str, str, str, str, str, str]]:
    """(command, counter, baseline, current, change, verdict) of every counter out of tolerance."""
    def num(v: float) -> str:
        return f"{v:.3g}" if v != int(v) else f"{int(v)}"

    return [(c.label, c.counter, num(c.baseline), num(c.current), c.change, c.verdict)
            for c in report.counters if c.verdict != NO_CHANGE]


def _counter_summary(report: Report) -> str:
    labels = {c.label for c in report.counters}
    return (f"behaviour counters: {len(report.counters)} compared over {len(labels)} commands, "
            f"{len(_counter_rows(report))} out of tolerance (harness/counters.py TOLERANCES)")


def format_table(report: Report) -> str:
    rows = [_row(c) for c in report.comparisons]
    head = {k: HEADERS.get(k, k) for k in COLUMNS}
    widths = {k: max(len(head[k]), *(len(r[k]) for r in rows)) if rows else len(head[k]) for k in COLUMNS}
    widths["command"] = min(widths["command"], 60)

    def line(r: dict[str, str]) -> str:
        cells = []
        for k in COLUMNS:
            v = r[k] if k != "command" or len(r[k]) <= 60 else r[k][:59] + "…"
            cells.append(v.ljust(widths[k]) if k in ("command", "verdict", "figure") else v.rjust(widths[k]))
        return "  ".join(cells).rstrip()

    out = _header_lines(report) + ["", line(head), *(line(r) for r in rows)]
    if report.counters:
        out += ["", _counter_summary(report)]
        out += [f"  {cmd}  {name}: {b} -> {c} ({change})  {verdict}"
                for cmd, name, b, c, change, verdict in _counter_rows(report)]
    if report.instructions:
        out += ["", f"instructions (tolerance ±{report.instruction_tolerance * 100:g}%):"]
        for i in report.instructions:
            change = _pct(i.ratio) if i.ratio else "-"
            out.append(f"  {i.variant:<30} {i.baseline or '-':>14} {i.current or '-':>14} {change:>8}  "
                       f"{i.verdict}{f' ({i.reason})' if i.reason else ''}")
    out += ["", *(f"note: {n}" for n in report.notes), f"result: {_summary_line(report)} -> exit {report.exit_code}"]
    return "\n".join(out) + "\n"


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


def format_markdown(report: Report) -> str:
    icon = {0: "✅", 1: "❌", 2: "⚠️"}[report.exit_code]
    out = [f"## {icon} ringsum check: {_summary_line(report)}", ""]
    out += [f"- {_md_escape(h)}" for h in _header_lines(report)]
    out += [f"- note: {_md_escape(n)}" for n in report.notes]
    out += ["", "| " + " | ".join(HEADERS.get(k, k) for k in COLUMNS) + " |",
            "|" + "|".join("---" if k in ("command", "figure", "verdict") else "---:" for k in COLUMNS) + "|"]
    for c in report.comparisons:
        r = _row(c)
        if c.verdict in BAD:
            r["verdict"] = f"**{r['verdict']}**"
        out.append("| " + " | ".join(_md_escape(r[k]) for k in COLUMNS) + " |")
    if report.counters:
        out += ["", _md_escape(_counter_summary(report))]
        if _counter_rows(report):
            out += ["", "| command | counter | baseline | current | change | verdict |",
                    "|---|---|---:|---:|---:|---|"]
            out += ["| " + " | ".join(_md_escape(x) for x in r) + " |" for r in _counter_rows(report)]
    if report.instructions:
        out += ["", f"Instructions (user space, tolerance ±{report.instruction_tolerance * 100:g}%):", "",
                "| hasher | baseline | current | change | verdict |", "|---|---:|---:|---:|---|"]
        for i in report.instructions:
            out.append(f"| {i.variant} | {i.baseline or '-'} | {i.current or '-'} | "
                       f"{_pct(i.ratio) if i.ratio else '-'} | {i.verdict} |")
    out += ["", f"Exit code {report.exit_code}."]
    return "\n".join(out) + "\n"


def format_junit(report: Report) -> str:
    """One testcase per command (and per hasher's instruction count): regressions and failed
    commands are failures, undecidable ones errors, commands in one run only skipped."""
    suite = ET.Element("testsuite", name="ringsum check")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    cases: list[tuple[str, str, str, str]] = [
        ("ringsum.check", c.label, c.verdict, f"{c.verdict}: {_row(c)['change']} {_row(c)['interval']}"
         + (f" ({c.reason})" if c.reason else "")) for c in report.comparisons]
    cases += [("ringsum.counters", f"{c.label}: {c.counter}", c.verdict,
               f"{c.verdict}: {c.baseline:g} -> {c.current:g} ({c.change})") for c in report.counters]
    cases += [("ringsum.instructions", i.variant, i.verdict,
               f"{i.verdict}: {i.baseline} -> {i.current}" + (f" ({i.reason})" if i.reason else ""))
              for i in report.instructions]
    for classname, name, verdict, message in cases:
        case = ET.SubElement(suite, "testcase", classname=classname, name=name)
        counts["tests"] += 1
        if verdict in BAD:
            ET.SubElement(case, "failure", message=message, type=verdict)
            counts["failures"] += 1
        elif verdict in UNDECIDED:
            ET.SubElement(case, "error", message=message, type=verdict)
            counts["errors"] += 1
        elif verdict in (ONLY_BASELINE, ONLY_CURRENT):
            ET.SubElement(case, "skipped", message=verdict)
            counts["skipped"] += 1
        else:
            ET.SubElement(case, "system-out").text = message
    for k, v in counts.items():
        suite.set(k, str(v))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_outputs(report: Report, markdown: Path | None, junit: Path | None) -> None:
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(format_markdown(report), encoding="utf-8")
    if junit is not None:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_text(format_junit(report), encoding="utf-8")


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
