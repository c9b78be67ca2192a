"""`ringsum compare RUN_A RUN_B`: how each command's time changed from one finished run to another.

A reading tool, not a gate (that is `ringsum check`): it exits 0 whatever changed, and 2 only
when a run directory cannot be read. Models: pyperf's `compare_to` (a row per benchmark, slower
or faster, significant or not) and hyperfine's scripts/welch_ttest.py; ringsum has no t-test,
because wall times are skewed and a cold run's spikes are not noise around a mean: it takes
`ringsum check`'s machinery (harness/check/decide.py) with the raw figure only.

Per command in both runs: the median wall time of each, their ratio B/A, and a percentile
bootstrap interval of it (the two runs resampled independently: runs made apart do not pair by
round; seeded, so the same runs always give the same table). Verdicts against ±threshold:
faster or slower when the whole interval lies beyond it, no change only when the whole interval
lies inside it, inconclusive otherwise (the interval reaches past a threshold: the data cannot
say whether the change is as large as the threshold). Behaviour counters, when both runs have
them, as check compares them.

Two runs are compared only when they measured the same thing: the same datasets (file sizes and
file counts), the same cache mode and the same machine (meta.json's fingerprint_id, see
harness/machine/sysinfo.py). Otherwise their medians are printed side by side under one line saying why
no ratio is given: a 1 GiB file against an 8 MiB one, or cold against warm, is no change of
anything.
"""

from __future__ import annotations

import argparse
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import stats
from harness.check import decide
from harness.check.hyperfine_export import is_hyperfine_export, load_export
from harness.check.load import CheckError, RunData, check_data
from harness.judge.counters import CounterChange
from harness.units import about_size

VERDICT_NAMES = {decide.REGRESSION: "slower", decide.IMPROVEMENT: "faster",
                 decide.ONLY_BASELINE: "only in A", decide.ONLY_CURRENT: "only in B"}
COUNTER_VERDICTS = {decide.REGRESSION: "worse", decide.IMPROVEMENT: "better"}  # a counter is no time
VERDICT_ORDER = ["slower", "faster", decide.FAILED, decide.INCONCLUSIVE, decide.NO_CHANGE, decide.TOO_FEW,
          decide.NOT_COMPARABLE, "only in A", "only in B"]  # every verdict, in the summary line's order
NOTE_WIDTH = 100  # the notes under the text table are wrapped; the table itself is not
HEADERS = ("command", "A median", "B median", "B/A", "interval", "verdict")


@dataclass
class Comparison:
    """Two run directories read side by side, with the ratios when they measured the same thing."""

    a: RunData
    b: RunData
    settings: decide.Settings
    differences: list[str]  # why the runs are not compared; empty when they are
    rows: list[decide.Comparison] = field(default_factory=list)
    counters: list[CounterChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # about the runs themselves (a hyperfine export's machine)

    @property
    def compared(self) -> bool:
        return not self.differences


def _size(n: int) -> str:
    """1073741824 -> "1 GiB", 8388608 -> "8 MiB"."""
    text = about_size(n)
    return f"{text[:-1]} {text[-1]}iB" if text[-1] in "KMGT" else text  # about_size's inexact forms have units


def datasets(run: RunData) -> str:
    """What a run hashed: "a file of 1 GiB", "a tree of 16,384 files (1 GiB in all)"."""
    kinds = sorted({(int(f), int(s)) for f, s in zip(run.runs["files"].fillna(1), run.runs["file_size"])})
    return " and ".join(f"a file of {_size(size)}" if files == 1 else f"a tree of {files:,} files ({_size(size)} in all)"
                        for files, size in kinds)


def caches(run: RunData) -> str:
    return "+".join(sorted(str(c) for c in run.runs["cache"].dropna().unique())) or "unknown"


def differences(a: RunData, b: RunData) -> list[str]:
    """Why the two runs measured different things (empty: they did not)."""
    why = []
    if datasets(a) != datasets(b):
        why.append(f"A hashed {datasets(a)}, B {datasets(b)}")
    if caches(a) != caches(b):
        why.append(f"A ran {caches(a)}, B {caches(b)}")
    unknown = [name for name, run in (("A", a), ("B", b)) if run.fingerprint_id is None]
    if unknown:
        why.append(f"{' and '.join(unknown)} {'has' if len(unknown) == 1 else 'have'} no machine fingerprint "
                   "(meta.json fingerprint_id): not shown to be the same machine")
    elif a.fingerprint_id != b.fingerprint_id:
        why.append(f"A ran on machine {a.fingerprint_id}, B on {b.fingerprint_id} (`ringsum sysinfo` shows this one's)")
    return why


def compare_runs(a: RunData, b: RunData, threshold: float = decide.DEFAULT_THRESHOLD,
                 confidence: float = decide.DEFAULT_CONFIDENCE) -> Comparison:
    """The change of every command from A to B (decide.compare with A as the baseline), or only the
    reasons they are not compared."""
    settings = decide.Settings(threshold=threshold, confidence=confidence, figures=("raw",),
                              judge_references=True)
    result = Comparison(a, b, settings, differences(a, b))
    if result.compared:
        report = decide.compare(a, b, settings)
        result.rows, result.counters = report.comparisons, report.counters
        for row in result.rows:  # check judges only the current run's failures; a reader needs both
            if row.label in a.failures and row.verdict not in (decide.FAILED, decide.ONLY_CURRENT):
                row.verdict, row.reason = decide.FAILED, f"in A: {a.failures[row.label]}"
        order = {decide.ONLY_BASELINE: 1, decide.ONLY_CURRENT: 2}
        result.rows.sort(key=lambda r: (order.get(r.verdict, 0), r.label))
    return result


# --- output ---

def _seconds(t: float) -> str:
    if t != t:
        return "-"
    return f"{t:.3f} s" if t >= 1 else f"{t * 1000:.1f} ms"


def _median(run: RunData, label: str) -> float:
    sample = run.samples.get(label, {}).get("raw")
    return sample.value if sample is not None and len(sample) else float("nan")


def table_rows(result: Comparison) -> list[tuple[str, ...]]:
    """The table's cells, HEADERS' columns; side by side (no ratio) when the runs are not compared."""
    if not result.compared:
        labels = list(dict.fromkeys([*sorted(result.a.samples), *sorted(result.b.samples)]))
        return [(label, _seconds(_median(result.a, label)), _seconds(_median(result.b, label)), "-", "-", "-")
                for label in labels]
    out = []
    for row in result.rows:
        e = row.estimates.get("raw")
        verdict = VERDICT_NAMES.get(row.verdict, row.verdict) + (f" ({row.reason})" if row.reason else "")
        out.append((row.label, _seconds(_median(result.a, row.label)), _seconds(_median(result.b, row.label)),
                    f"{e.ratio:.3f}" if e else "-", f"[{e.low:.3f}, {e.high:.3f}]" if e else "-", verdict))
    return out


def _run_line(name: str, run: RunData) -> str:
    return (f"{name}: {run.path}: {datasets(run)}, {caches(run)}, machine {run.fingerprint_id}, "
            f"{run.runs['round'].max()} rounds")


def notes(result: Comparison) -> list[str]:
    """What the table says and how: the ratio convention once, then how B/A was estimated."""
    if not result.compared:
        return [*result.notes, "not compared: " + "; ".join(result.differences)]
    s = result.settings
    verdicts = [VERDICT_NAMES.get(r.verdict, r.verdict) for r in result.rows]
    t = f"±{s.threshold * 100:g}%"
    return [*result.notes,
            ", ".join(f"{verdicts.count(v)} {v}" for v in VERDICT_ORDER if v in verdicts) or "no command in both runs",
            f"ratios: {stats.RATIO_CONVENTION}",
            f"B/A here: B's median time / A's (A is the reference); runs made apart do not pair by round, so the "
            f"{s.confidence * 100:g}% interval is a percentile bootstrap, each run resampled on its own "
            f"({s.resamples} resamples, seed {s.seed}). faster, slower: the whole interval beyond {t}; no change: "
            f"the whole interval inside {t}; inconclusive: it reaches past {t}, the data cannot tell"]


def _counter_lines(result: Comparison) -> list[str]:
    if not result.counters:
        return []
    moved = [c for c in result.counters if c.verdict != decide.NO_CHANGE]
    return [f"behaviour counters: {len(result.counters)} compared, {len(moved)} out of tolerance "
            f"(harness/judge/counters.py)"] + [f"  {c.label}  {c.counter}: {c.baseline:g} -> {c.current:g} ({c.change}) "
                                         f"{COUNTER_VERDICTS.get(c.verdict, c.verdict)}" for c in moved]


def format_text(result: Comparison) -> str:
    rows = table_rows(result)
    widths = [max(len(r[i]) for r in [HEADERS, *rows]) for i in range(len(HEADERS))]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) if i in (0, 5) else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    columns = HEADERS if result.compared else HEADERS[:3]
    body = [line(r[:len(columns)]) for r in [columns, *rows]]
    out = [_run_line("A", result.a), _run_line("B", result.b), "", *body]
    counters = _counter_lines(result)
    wrapped = [textwrap.fill(n, NOTE_WIDTH, subsequent_indent="  ") for n in notes(result)]
    return "\n".join([*out, *([""] + counters if counters else []), "", *wrapped]) + "\n"


def format_markdown(result: Comparison) -> str:
    columns = HEADERS if result.compared else HEADERS[:3]

    def cells(r: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in r[:len(columns)]) + " |"

    out = ["## ringsum compare", "", f"- {_run_line('A', result.a)}", f"- {_run_line('B', result.b)}", "",
           cells(columns), "|" + "|".join("---" if h in ("command", "verdict") else "---:" for h in columns) + "|",
           *(cells(r) for r in table_rows(result))]
    counters = _counter_lines(result)
    return "\n".join([*out, *([""] + counters if counters else []), "", *notes(result)]) + "\n"


# --- command line ---

NOT_COMPARED = 3  # the exit of a compare that refused: a script can tell it from a result


def run_compare(a: argparse.Namespace) -> int:
    fractions = []
    for option, text in (("--threshold", a.threshold), ("--confidence", a.confidence)):
        try:
            fractions.append(decide.parse_fraction(text))
        except ValueError as e:
            raise CheckError(f"{option}: {e}") from None
    runs, notes = [], []
    for name, path in (("RUN_B", a.run_b), ("RUN_A", a.run_a)):
        try:
            if name == "RUN_A" and is_hyperfine_export(Path(path)):
                export, notes = load_export(Path(path), runs[0])
                runs.insert(0, export)
            else:
                runs.insert(0, check_data(path))
        except CheckError as e:
            raise CheckError(f"{name}: {e}") from None
    result = compare_runs(*runs, *fractions)
    result.notes += notes
    print(format_text(result), end="")
    if a.markdown:
        try:
            Path(a.markdown).write_text(format_markdown(result), encoding="utf-8")
        except OSError as e:
            raise CheckError(f"--markdown {a.markdown}: {e.strerror}") from None
    return NOT_COMPARED if result.differences else 0
