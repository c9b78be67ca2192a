"""What the charts share: the numbers behind them (per-command statistics for a file size, ratios to the
speed limit, ties with the fastest), their colours, labels and self-describing subtitles."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.load import Run
from harness import verdict
from harness.results import command_stats
from harness.tools import TOOL_LIST
from harness.units import format_size
from harness.variants import VARIANT_LIST


GB = 1e9


HASHER_COLOURS = {v.name: v.colour for v in VARIANT_LIST}


BASELINE_COLOURS = {t.name: t.colour for t in TOOL_LIST}


FALLBACK_COLOURS = ["#17becf", "#bcbd22", "#393b79", "#637939", "#843c39"]


RUN_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]


_FILE_TAG = re.compile(r" \[[^\]]+\]$")


@dataclass(frozen=True)
class Skip:
    """A chart the data does not support, and why."""

    reason: str


def command_name(label: str) -> str:
    """The command without the ` [file]` tag the plan adds when a run has several files."""
    return _FILE_TAG.sub("", label)


def short_label(label: str) -> str:
    """Labels as shown on charts: the `liburing_b3sum_` prefix dropped, nothing else changed."""
    return label.replace("liburing_b3sum_", "")


def colour(variant: str) -> str:
    if variant in HASHER_COLOURS:
        return HASHER_COLOURS[variant]
    if variant in BASELINE_COLOURS:
        return BASELINE_COLOURS[variant]
    return FALLBACK_COLOURS[sum(map(ord, variant)) % len(FALLBACK_COLOURS)]


def short_cpu(model: str | None) -> str:
    """'Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz' -> 'Intel Core i7-8700'."""
    if not model:
        return "unknown CPU"
    model = re.sub(r"\((R|TM|tm|r)\)|\bCPU\b|\bProcessor\b|@.*$|\b\d+-Core\b", "", model)
    return " ".join(model.split())


def machine(run: Run) -> str:
    fp = run.fingerprint
    cores = fp.get("cores")
    return short_cpu(fp.get("cpu_model")) + (f", {cores} cores" if cores else "")


def rounds(run: Run) -> int:
    configured = ((run.meta.get("config") or {}).get("run") or {}).get("rounds")
    if configured:
        return int(configured)
    return int(run.runs["round"].max()) if len(run.runs) else 0


def run_date(run: Run) -> str:
    ts = run.started_at
    return ts.strftime("%Y-%m-%d") if ts is not None else "undated"


def largest_file_size(run: Run) -> int:
    return int(run.runs["file_size"].max())


def subtitle(run: Run, file_size: int | None = None) -> str:
    """'1GiB file, cold cache, 5 rounds · AMD EPYC, 2 cores · 2026-11-21'."""
    size = file_size if file_size is not None else largest_file_size(run)
    caches = "/".join(sorted(run.runs["cache"].dropna().unique())) or "?"
    return (f"{size_text(size)} file, {caches} cache, {rounds(run)} rounds · {machine(run)} · "
            f"{run_date(run)}")


def size_text(n: int) -> str:
    """1073741824 -> '1GiB', 1000 -> '1000 B'."""
    text = format_size(int(n))
    return text + "iB" if text[-1].isalpha() else text + " B"


def for_size(run: Run, file_size: int | None) -> tuple[pd.DataFrame, int]:
    size = file_size if file_size is not None else largest_file_size(run)
    return run.runs[run.runs["file_size"] == size], size


def gbps_text(x: float) -> str:
    return f"{x / GB:.2f}"


def reference(stats: pd.DataFrame, tool: str) -> pd.Series | None:
    """The baseline a hasher is compared to: b3sum's default (all threads, mmap) when present,
    else the tool's fastest command by median."""
    rows = stats[(stats["tool"] == tool) & stats["median_s"].notna()]
    if not len(rows):
        return None
    if tool == "b3sum":
        default = rows[rows["num_threads"].isna() & (rows["mmap"] != False).fillna(True)  # noqa: E712
                       & rows["extra"].fillna("").eq("")]
        if len(default):
            return default.sort_values("median_s").iloc[0]
    return rows.sort_values("median_s").iloc[0]


def with_limit_ratios(stats: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """stats with limit_ratio, limit_low, limit_high: each command's time / the speed limit, paired
    per round (harness/verdict.py), its median and 95% interval; NaN without a limit."""
    ratios = verdict.limit_ratios(runs)
    for column, part in (("limit_ratio", "median"), ("limit_low", "low"), ("limit_high", "high")):
        stats[column] = [getattr(ratios[lbl], part) if lbl in ratios and ratios[lbl].n else np.nan
                         for lbl in stats["label"].astype(str)]
    return stats


def as_ran(stats: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """stats with `direct` as the hashers read, where they reported it (runs.csv effective_direct,
    harness/effective.py): uring_b3sum at its defaults asks for nothing and reads cold files with
    O_DIRECT."""
    if "effective_direct" not in runs:
        return stats
    ran = runs.dropna(subset=["effective_direct"]).groupby("label")["effective_direct"].first()
    stats = stats.copy()
    stats["direct"] = [bool(ran[lbl]) if lbl in ran.index else d for lbl, d in zip(stats["label"], stats["direct"])]
    return stats


def tied_with_fastest(runs: pd.DataFrame, labels: list[str]) -> list[str]:
    """The fastest of labels by median and every one the data cannot tell from it (per-round
    ratio whose 95% interval contains 1), the fastest first."""
    times = verdict.by_round(runs)
    ranked = verdict.fastest(times, labels)
    if not ranked:
        return []
    best = ranked[0][0]
    return [best, *verdict.tied_with(times, best, [lbl for lbl, _ in ranked])]


def hasher_stats(run: Run, file_size: int | None = None) -> tuple[pd.DataFrame, int]:
    """command_stats for one file size, with the paired ratio to the limit and speed-ups over
    b3sum and cat."""
    runs, size = for_size(run, file_size)
    stats = with_limit_ratios(command_stats(runs), runs)
    for tool in ("b3sum", "cat"):
        ref = reference(stats, tool)
        stats[f"speedup_{tool}"] = ref["median_s"] / stats["median_s"] if ref is not None else np.nan
    return stats, size


def run_legend(run: Run) -> str:
    fpid = str(run.fingerprint.get("fingerprint_id") or "no-fp")[:8]
    ts = run.started_at
    when = ts.strftime("%Y-%m-%d %H:%M UTC") if ts is not None else "undated"
    return f"{fpid} {short_cpu(run.fingerprint.get('cpu_model'))} {when} ({run.path.name})"
