"""What the charts share: the numbers behind them (per-command statistics for a file size, ratios to the
speed limit, ties with the fastest), their colours, labels and self-describing subtitles."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from harness.judge.load import Run
from harness.stats import paired_rounds
from harness.catalog.tools import (COMMAND, HASHER, OTHER_HASH, PLAIN_READ, READ_TOOLS, READER, REFERENCE_HASH, TOOL_LIST,
                                   TOOLS, the_tool, tools_with)
from harness.judge import decision
from harness.judge.speed_limit import by_round, limit_ratios
from harness.judge.results import command_stats
from harness.stats import CONFIDENCE
from harness.units import format_size
from harness.catalog.variants import VARIANTS


GB = 1e9


@dataclass(frozen=True)
class Role:
    """What a command is to the reader of a chart, drawn in one colour family throughout."""

    legend: str
    colours: tuple[str, ...]  # the family, its main member first


# Ours in blues, the readers that set the speed limit in greys, the tools we measure ourselves
# against in their own warm hues: a glance tells a hasher from a reader, whatever the chart.
ROLES = {
    "ours": Role("ours: the io_uring hashers (blues)", ("#1f5fbf", "#6aa5e0", "#0b2e6b", "#3d8fd6", "#9cc3ea")),
    "reader": Role(f"readers: {', '.join(READ_TOOLS[:-1])}, {READER} [[commands]] (greys; the speed limit)",
                   ("#555555", "#8c8c8c", "#333333", "#737373", "#9a9a9a")),
    REFERENCE_HASH: Role(f"{the_tool(REFERENCE_HASH)}, the official BLAKE3 (orange)", ("#e6730b", "#f2a65a")),
    OTHER_HASH: Role(f"{', '.join(tools_with(OTHER_HASH))}: other hashes, not BLAKE3 (magentas)", ("#b5179e", "#e05fc8")),
    "command": Role("other [[commands]] (greens)", ("#2e8b3a", "#7cc46b", "#1b5e20")),
}


# uring_b3sum, the one we ship, takes the family's main blue; the article's variants the others.
_OURS_ORDER = ["uring_b3sum"] + [v for v in VARIANTS if v != "uring_b3sum"]


def role(tool: str) -> str:
    """The role of a runs.csv `tool` in the charts: ours, reader, the reference hash, another hash or command."""
    if tool == HASHER:
        return "ours"
    if tool == READER or (tool in TOOLS and TOOLS[tool].reads_only):
        return "reader"
    roles = TOOLS[tool].roles if tool in TOOLS else frozenset()
    return next((r for r in (REFERENCE_HASH, OTHER_HASH) if r in roles), "command")


def _tool_of(variant: str) -> str:
    return HASHER if variant in _OURS_ORDER else variant if variant in TOOLS else COMMAND


def colour(variant: str, tool: str | None = None) -> str:
    """The colour of a command: its role's family, one member per variant (a hasher variant, a
    baseline tool, or a [[commands]] entry, which needs its tool: reader or command)."""
    family = ROLES[role(tool or _tool_of(variant))].colours
    if variant in _OURS_ORDER:
        return family[_OURS_ORDER.index(variant) % len(family)]
    if variant in TOOLS:  # each tool its own member of its role's family, in the registry's order
        alike = [t.name for t in TOOL_LIST if role(t.name) == role(variant)]
        return family[alike.index(variant) % len(family)]
    return family[sum(map(ord, variant)) % len(family)]


def role_handles(tools: object) -> list[Patch]:
    """Legend entries for the roles of the given runs.csv tools, in the order of ROLES."""
    present = {role(str(t)) for t in tools}  # type: ignore[attr-defined]
    return [Patch(facecolor=r.colours[0], edgecolor="none", label=r.legend)
            for name, r in ROLES.items() if name in present]


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
    """The rounds that ran: the config's, or more where --until-decided added some (runs.csv says)."""
    configured = ((run.meta.get("config") or {}).get("run") or {}).get("rounds") or 0
    return max(int(configured), int(run.runs["round"].max()) if len(run.runs) else 0)


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
    if tool in tools_with(REFERENCE_HASH):
        default = rows[rows["num_threads"].isna() & (rows["mmap"] != False).fillna(True)  # noqa: E712
                       & rows["extra"].fillna("").eq("")]
        if len(default):
            return default.sort_values("median_s").iloc[0]
    return rows.sort_values("median_s").iloc[0]


def with_limit_ratios(stats: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """stats with limit_ratio, limit_low, limit_high: each command's time / the speed limit, paired
    per round (harness/judge/speed_limit.py), its median and 95% interval; NaN without a limit."""
    ratios = limit_ratios(runs)
    for column, part in (("limit_ratio", "median"), ("limit_low", "low"), ("limit_high", "high")):
        stats[column] = [getattr(ratios[lbl], part) if lbl in ratios and ratios[lbl].n else np.nan
                         for lbl in stats["label"].astype(str)]
    return stats


def as_ran(stats: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """stats with `direct` as the hashers read, where they reported it (runs.csv effective_direct,
    harness/pipeline/effective.py): uring_b3sum at its defaults asks for nothing and reads cold files with
    O_DIRECT."""
    if "effective_direct" not in runs:
        return stats
    ran = runs.dropna(subset=["effective_direct"]).groupby("label")["effective_direct"].first()
    stats = stats.copy()
    stats["direct"] = [bool(ran[lbl]) if lbl in ran.index else d for lbl, d in zip(stats["label"], stats["direct"])]
    return stats


def tied_with_fastest(runs: pd.DataFrame, labels: list[str], confidence: float = CONFIDENCE) -> list[str]:
    """The fastest of labels by median and every one not clearly slower at the confidence: the
    decision's contenders (harness/judge/decision.py), so a chart shades what the headline names."""
    times = by_round(runs)
    return decision.decide(times, [lbl for lbl in labels if times.get(lbl)], confidence).contenders


REFERENCE_TOOLS = (the_tool(REFERENCE_HASH), the_tool(PLAIN_READ))


def hasher_stats(run: Run, file_size: int | None = None) -> tuple[pd.DataFrame, int]:
    """command_stats for one file size, with the paired ratio to the limit and to b3sum and cat
    (harness.stats.RATIO_CONVENTION): `{tool}_ratio`, `{tool}_low`, `{tool}_high` = this command's
    time / the reference's in the same round, median over rounds and its 95% interval."""
    runs, size = for_size(run, file_size)
    stats = with_limit_ratios(command_stats(runs), runs)
    times = by_round(runs)
    for tool in REFERENCE_TOOLS:
        ref = reference(stats, tool)
        ref_times = times.get(str(ref["label"])) if ref is not None else None
        estimates = [paired_rounds(times[lbl], ref_times) if ref_times and lbl in times else None
                     for lbl in stats["label"].astype(str)]
        for column, part in (("ratio", "median"), ("low", "low"), ("high", "high")):
            stats[f"{tool}_{column}"] = [getattr(e, part) if e is not None and e.n else np.nan
                                         for e in estimates]
    return stats, size


def run_legend(run: Run) -> str:
    fpid = str(run.fingerprint.get("fingerprint_id") or "no-fp")[:8]
    ts = run.started_at
    when = ts.strftime("%Y-%m-%d %H:%M UTC") if ts is not None else "undated"
    return f"{fpid} {short_cpu(run.fingerprint.get('cpu_model'))} {when} ({run.path.name})"
