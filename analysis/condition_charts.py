"""The charts of a run under several machine conditions (harness/conditions/spec.py): how each
configuration holds up when the disk, the cores or the CPU change, and where each stops following
a disk that gets faster."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from analysis.chart_data import GB, ROLES, Skip, subtitle  # noqa: E402
from harness.judge.load import Run  # noqa: E402
from harness import stats
from harness.catalog.tools import HASHER, REFERENCE_HASH, tools_with
from harness.judge import robust
from harness.judge import decision
from harness.judge import verdict
from harness.judge.speed_limit import by_round, one_file, speed_limit

COMPARED_TOOLS = (HASHER, *tools_with(REFERENCE_HASH))


def _configurations(rows: object, cond: str) -> dict[str, str]:
    """label -> configuration (the label without its condition) of the hashers and b3sum."""
    ok = rows[rows["tool"].isin(COMPARED_TOOLS)]  # type: ignore[index]
    return {str(lbl): robust.configuration(str(lbl), cond) for lbl in ok["label"].unique()}


def _is_b3sum(config: str) -> bool:
    return config.split()[0] in tools_with(REFERENCE_HASH)  # not b3sum_pread, one of ours


def _role_colours(configs: list[str]) -> dict[str, str]:
    """configuration -> colour: b3sum's in its orange family, ours in the blues, one member each."""
    out: dict[str, str] = {}
    for family, members in ((REFERENCE_HASH, [c for c in configs if _is_b3sum(c)]),
                            ("ours", [c for c in configs if not _is_b3sum(c)])):
        colours = ROLES[family].colours
        out.update({c: colours[i % len(colours)] for i, c in enumerate(members)})
    return out


def chart_conditions(run: Run) -> Figure | Skip:
    """How does each configuration hold up from one machine condition to the next: its time over
    the condition's speed limit (paired per round, median), with the condition's winner and every
    configuration tied with it outlined?"""
    names = verdict.condition_names(run.runs)
    if len(names) < 2:
        return Skip("the run has one machine condition (see [conditions] in the config)")
    cells: dict[tuple[str, str], float] = {}
    outlined: set[tuple[str, str]] = set()
    for cond in names:
        rows = one_file(verdict.one_condition(run.runs, cond))
        labels = _configurations(rows, cond)
        limit = speed_limit(rows)
        times = by_round(rows)
        for label, config in labels.items():
            if limit and label in times:
                cells[config, cond] = stats.paired_rounds(times[label], limit.per_round).median
        ranked = verdict.fastest(times, list(labels))
        if ranked:
            best = ranked[0][0]
            for label in [best, *decision.tied_with(times, best, [lbl for lbl, _ in ranked])]:
                outlined.add((labels[label], cond))
    configs = sorted({c for c, _ in cells}, key=lambda c: (not c.startswith("uring"), _is_b3sum(c), c))
    if not configs:
        return Skip("no speed limit in any condition: no read-only command succeeded")
    values = np.array([[cells.get((k, c), np.nan) for c in names] for k in configs])
    fig, ax = plt.subplots(figsize=(1.6 + 0.95 * len(names), 1.6 + 0.45 * len(configs)), layout="constrained")
    top = float(np.nanmax(values)) if np.isfinite(values).any() else 2.0
    image = ax.imshow(np.ma.masked_invalid(values), cmap="RdYlGn_r", vmin=1.0, vmax=max(top, 1.5), aspect="auto")
    for (i, j), v in np.ndenumerate(values):
        if v == v:
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                    fontweight="bold" if (configs[i], names[j]) in outlined else "normal")
        if (configs[i], names[j]) in outlined:
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.5))
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(len(configs)), configs, fontsize=8)
    colours = _role_colours(configs)
    for tick, config in zip(ax.get_yticklabels(), configs):
        tick.set_color(colours[config])
    fig.colorbar(image, ax=ax, label="time / the condition's speed limit", shrink=0.8)
    pick = verdict.robust_pick(run.runs)
    ax.set_title("Each configuration under each machine condition: time / the condition's fastest plain read\n"
                 "outlined: the condition's fastest hasher or b3sum and every one tied with it (95%)"
                 + (f"\nrobust pick: {pick.text()}" if pick else "") + f"\n{subtitle(run)}", fontsize=9)
    return fig


def chart_read_caps(run: Run) -> Figure | Skip:
    """Where does each configuration stop following the disk: its throughput against the rate the
    disk is capped at (uncapped: the disk's own fastest plain read), one line per configuration?"""
    runs = run.runs
    if "read_cap" not in runs:
        return Skip("the run has no read-capped condition")
    caps = {}
    for cond in verdict.condition_names(runs):
        rows = verdict.one_condition(runs, cond)
        first = rows.iloc[0]
        if first["device"] == "disk" and pd.isna(first["cores"]) and first["simd"] == "full":
            caps[cond] = None if pd.isna(first["read_cap"]) else int(first["read_cap"])
    if len(caps) < 2:
        return Skip("the run has fewer than two read caps on the disk with every core and full SIMD")
    lines: dict[str, list[tuple[float, float, float, float]]] = {}
    limits = []
    for cond, cap in caps.items():
        rows = one_file(verdict.one_condition(runs, cond))
        limit = speed_limit(rows)
        if limit is None:
            continue
        x = float(cap) if cap is not None else limit.Bps
        limits.append((x, limit.Bps))
        times = by_round(rows)
        size = float(rows["file_size"].max())
        for label, config in _configurations(rows, cond).items():
            if label in times:
                est = stats.median_interval(size / t for t in times[label].values())
                lines.setdefault(config, []).append((x, est.median, est.low, est.high))
    fig, ax = plt.subplots(figsize=(7.5, 4.8), layout="constrained")
    limits.sort()
    ax.plot([x / GB for x, _ in limits], [y / GB for _, y in limits], color="grey", linestyle="--",
            linewidth=2, label="the fastest plain read (the limit)")
    colours = _role_colours(sorted(lines))
    for config, points in sorted(lines.items()):
        points.sort()
        xs = np.array([p[0] for p in points]) / GB
        ax.errorbar(xs, [p[1] / GB for p in points],
                    yerr=[[(p[1] - p[2]) / GB for p in points], [(p[3] - p[1]) / GB for p in points]],
                    marker="o", capsize=3, label=config, color=colours[config])
    ax.set_xlabel("disk read rate (GB/s): the cap, or the disk's own (its fastest plain read) where uncapped")
    ax.set_ylabel("median throughput (GB/s)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title("Following the disk: throughput against the disk's rate; below the dashed line, the "
                 f"configuration holds the disk back\n{subtitle(run)}", fontsize=9)
    ax.set_xticks([x / GB for x, _ in limits], [f"{x / GB:.2f}" + ("" if any(c == x for c in caps.values()) else "\n(uncapped)")
                                                 for x, _ in limits])
    return fig

