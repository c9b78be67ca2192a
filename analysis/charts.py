"""The report's charts: one function per chart, each answering the question in its docstring.

Every chart function returns a matplotlib Figure, or a Skip saying why the run's data cannot
answer its question. Titles state file size, cache mode, rounds and machine, so a chart is
self-describing when shared alone.
"""

from __future__ import annotations


import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from harness.judge.load import Run, load_trace, run_speed_limit  # noqa: E402
from analysis.chart_data import (GB, REFERENCE_TOOLS, RUN_COLOURS, Skip, as_ran, colour, command_name,  # noqa: E402
                                 for_size, gbps_text, hasher_stats, machine, reference, role_handles, rounds,
                                 run_date, run_legend, short_label, size_text, subtitle, tied_with_fastest)
from harness.catalog.tools import HASHER, READ_TOOLS, SELF_TIMED, tools_with
from harness.judge.speed_limit import job_time
from harness.judge.results import command_stats, succeeded  # noqa: E402
from harness.units import about_size, format_size  # noqa: E402
from harness.catalog.variants import article_variants  # noqa: E402


# --- shared helpers ---


# --- 1. ranking ---

def _throughput_ticks(size: int, xlim: tuple[float, float]) -> list[float]:
    """Round GB/s values for the throughput axis of a wall-time axis, spaced apart on it."""
    span = xlim[1] - xlim[0]
    ticks: list[float] = []
    last_x = None
    for gbps in (0.1, 0.2, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50):
        x = size / (gbps * GB)
        if xlim[0] <= x <= xlim[1] and (last_x is None or last_x - x >= 0.06 * span):
            ticks.append(gbps)
            last_x = x
    return ticks


def chart_ranking(run: Run, file_size: int | None = None) -> Figure | Skip:
    """Which command hashes (or reads) the file fastest, how much do its times spread, which
    hashers are tied with the fastest, and how far is each from the speed limit (the fastest plain
    read in each round)? (The article's benchmark table as a picture.)"""
    runs, size = for_size(run, file_size)
    stats = command_stats(runs)
    if not stats["median_s"].notna().any():
        return Skip("no successful executions")
    ok = runs[succeeded(runs)]
    seconds = job_time(ok)  # fio by its own read time, as the limit counts it
    stats["shown_s"] = stats["label"].map(seconds.groupby(ok["label"]).median())
    stats = stats.sort_values("shown_s", ascending=False, na_position="first").reset_index(drop=True)
    tied = tied_with_fastest(runs, list(stats.loc[stats["tool"] == HASHER, "label"].astype(str)),
                             run.decision_confidence)
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.38 * len(stats)), layout="constrained")
    rng = np.random.default_rng(0)
    for y, row in stats.iterrows():
        c = colour(str(row["variant"]), str(row["tool"]))
        walls = seconds[ok["label"] == row["label"]].dropna().to_numpy()
        if not len(walls):
            ax.text(0.01, y, "all executions failed", transform=ax.get_yaxis_transform(),
                    va="center", color="#d62728", fontsize=8)
            continue
        if row["label"] in tied:
            ax.axhspan(y - 0.5, y + 0.5, color="#fff1a8", zorder=0)
        ax.boxplot([walls], positions=[y], orientation="horizontal", widths=0.6, showfliers=False,
                   whis=(0, 100), patch_artist=True,
                   boxprops={"facecolor": c, "alpha": 0.35, "edgecolor": c},
                   medianprops={"color": c, "linewidth": 2}, whiskerprops={"color": c},
                   capprops={"color": c})
        ax.scatter(walls, y + rng.uniform(-0.18, 0.18, len(walls)), s=10, color=c, zorder=3,
                   edgecolors="none")
        ax.text(float(np.max(walls)), y, f"  {row['shown_s']:.3f} s", va="center", fontsize=8)
    names = [short_label(command_name(lbl)) + (" (own read time)" if tool in tools_with(SELF_TIMED) else "")
             + (f"  ({f} failed)" if f else "")
             for lbl, tool, f in zip(stats["label"], stats["tool"], stats["failed"])]
    ax.set_yticks(range(len(stats)), names, fontsize=8)
    for tick, variant, tool in zip(ax.get_yticklabels(), stats["variant"], stats["tool"]):
        tick.set_color(colour(str(variant), str(tool)))
    limit = run_speed_limit(run, size)
    lo = float(np.nanmin(seconds))
    hi = float(np.nanmax(seconds))
    if limit:
        lo = min(lo, limit.seconds)
        ax.axvline(limit.seconds, color="black", linestyle="--", linewidth=1)
        ax.text(limit.seconds, len(stats) - 0.4,
                f" speed limit {limit.seconds:.3f} s ({gbps_text(limit.Bps)} GB/s): the fastest plain read of each "
                f"round, median; {short_label(limit.set_by)} in {limit.set_by_rounds} of "
                f"{len(limit.set_in_round)} rounds", fontsize=8, va="bottom")
    ax.set_xlim(lo * 0.9, hi * 1.12)
    ax.set_ylim(-0.7, len(stats) - 0.1)
    ax.set_xlabel("time (s; fio: its own read time) — box: min / quartiles / max, dots: each round, "
                  "lower is better")
    top = ax.secondary_xaxis("top", functions=(lambda s: size / np.maximum(s, 1e-9) / GB,
                                               lambda t: size / np.maximum(t, 1e-9) / GB))
    top.set_xticks(_throughput_ticks(size, ax.get_xlim()))
    top.xaxis.set_major_formatter("{x:g}")
    top.set_xlabel("throughput (GB/s)")
    ax.grid(axis="x", alpha=0.3)
    fig.legend(handles=role_handles(stats["tool"]), loc="outside lower center", ncols=2, fontsize=8,
               frameon=False)
    shaded = ("shaded: the fastest hasher and the " + f"{len(tied) - 1} within noise of it" if len(tied) > 1
              else "shaded: the fastest hasher (none other within noise of it)") if tied else ""
    ax.set_title(f"Ranking of every command by median time; {shaded}\n{subtitle(run, size)}", fontsize=10)
    return fig


# --- 2. tuning heatmaps ---

def chart_heatmaps(run: Run, file_size: int | None = None) -> Figure | Skip:
    """For each hasher variant, with and without O_DIRECT (as it read, where it said): which block size × queue depth gives
    the highest median throughput on this machine (the sweet spot), and how sharp is it?"""
    runs, size = for_size(run, file_size)
    stats = as_ran(command_stats(runs[runs["tool"] == HASHER]), runs)
    stats = stats[stats["median_Bps"].notna()]
    panels = []
    for (variant, direct), g in stats.groupby(["variant", stats["direct"].fillna(False)], sort=True):
        best = g.loc[g.groupby(["block_size", "queue_depth"])["median_Bps"].idxmax()]  # best config per cell
        if len(best) >= 2:
            tied = set(tied_with_fastest(runs, list(best["label"].astype(str)), run.decision_confidence))
            cells = best.set_index(["block_size", "queue_depth"])
            outlined = cells["label"].astype(str).isin(tied).unstack("queue_depth")
            panels.append((variant, bool(direct), cells["median_Bps"].unstack("queue_depth"), outlined))
    if not panels:
        return Skip("no hasher variant was swept over more than one block size × queue depth")
    vmax = max(float(np.nanmax(p[2].to_numpy(dtype=float))) for p in panels) / GB
    ncols = 2 if len(panels) > 1 else 1
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 0.6 + 3.4 * nrows),
                             layout="constrained", squeeze=False)
    image = None
    for ax, (variant, direct, grid, outlined) in zip(axes.flat, panels):
        grid = grid.sort_index().sort_index(axis=1)
        outlined = outlined.reindex_like(grid).fillna(False).to_numpy(dtype=bool)
        values = grid.to_numpy(dtype=float) / GB
        image = ax.imshow(np.ma.masked_invalid(values), cmap="viridis", vmin=0, vmax=vmax,
                          aspect="auto", origin="lower")
        ax.set_xticks(range(grid.shape[1]), [str(q) for q in grid.columns])
        ax.set_yticks(range(grid.shape[0]), [format_size(int(b)) for b in grid.index])
        ax.set_xlabel("queue depth")
        ax.set_ylabel("block size (bytes)")
        for (i, j), v in np.ndenumerate(values):
            if v == v:
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=9,
                        color="white" if v < 0.6 * vmax else "black",
                        fontweight="bold" if outlined[i, j] else "normal")
            if outlined[i, j]:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="#d62728",
                                       linewidth=3))
        ax.set_title(f"{short_label(variant)}, {'O_DIRECT' if direct else 'buffered'}", fontsize=10)
    for ax in axes.flat[len(panels):]:
        ax.set_axis_off()
    fig.colorbar(image, ax=axes, label="median throughput (GB/s)", shrink=0.8)
    fig.suptitle(f"Tuning: median throughput (GB/s) by block size × queue depth; outlined: the best cell "
                 f"and every cell within noise of it\n(per-round ratio to the best: its interval not wholly "
                 f"below 1, at the decision's {run.decision_confidence:.0%}) · "
                 f"{subtitle(run, size)}", fontsize=10)
    return fig


# --- 3. in flight ---

def traced_stats(run: Run) -> pd.DataFrame:
    """command_stats of the hasher configurations that have a readable trace."""
    if not len(run.traces):
        return pd.DataFrame()
    ok = run.traces[(run.traces["exit_code"] == 0).fillna(False).astype(bool)]
    labels = set(ok["label"].dropna())
    stats = command_stats(run.runs[run.runs["tool"] == HASHER])
    return stats[stats["label"].isin(labels)]


def default_trace_choice(run: Run) -> list[str]:
    """Best and worst traced hasher configs by median, plus a singlethread and a multithread one
    at the same knobs (the fastest such pair, O_DIRECT preferred: it shows the disk-bound
    picture of the article), at most 4 labels."""
    stats = traced_stats(run)
    if not len(stats):
        return []
    ranked = stats.sort_values("median_s", na_position="last")
    chosen = [ranked["label"].iloc[0], ranked["label"].iloc[-1]]
    knobs = ["block_size", "queue_depth", "buffers", "direct", "file_size"]
    article = article_variants()
    single = ranked[ranked["variant"] == article.get("singlethread")]
    multi = ranked[ranked["variant"] == article.get("multithread")]
    if len(single) and len(multi):
        pairs = single.merge(multi, on=knobs, suffixes=("_single", "_multi"))
        if len(pairs):
            pairs = pairs.assign(best=pairs[["median_s_single", "median_s_multi"]].min(axis=1),
                                 buffered=~pairs["direct"].fillna(False).astype(bool))
            pair = pairs.sort_values(["buffered", "best"]).iloc[0]
            chosen += [pair["label_single"], pair["label_multi"]]
    return list(dict.fromkeys(chosen))[:4]


def chart_in_flight(run: Run, labels: list[str] | None = None) -> Figure | Skip:
    """Is the disk or the consumer the bottleneck? Requests in flight at each consumer run stay at
    queue depth − 1 when the disk is the bottleneck, and fall lower when the consumer is."""
    if not len(run.traces):
        return Skip("no traces (run without trace = true, or traced runs failed)")
    labels = labels or default_trace_choice(run)
    if not labels:
        return Skip("no successful traced hasher configuration")
    stats = command_stats(run.runs).set_index("label")
    fig, axes = plt.subplots(len(labels), 2, figsize=(11, 0.6 + 2.2 * len(labels)),
                             gridspec_kw={"width_ratios": [4, 1]}, layout="constrained",
                             squeeze=False, sharey="row")
    for (series_ax, hist_ax), label in zip(axes, labels):
        trace = load_trace(run, label)
        qd = stats.loc[label, "queue_depth"] if label in stats.index else pd.NA
        qd = int(qd) if qd is not pd.NA else int(trace["in_flight"].max())
        c = colour(str(stats.loc[label, "variant"]), HASHER) if label in stats.index else "black"
        series_ax.step(trace["time_ms"], trace["in_flight"], where="post", color=c, linewidth=0.8,
                       rasterized=len(trace) > 2000)
        counts = trace["in_flight"].value_counts(normalize=True).reindex(range(qd + 1), fill_value=0)
        hist_ax.barh(counts.index, counts.to_numpy() * 100, color=c, height=0.8)
        for ax in (series_ax, hist_ax):
            ax.axhline(qd - 1, color="black", linestyle="--", linewidth=0.8)
            ax.set_ylim(-0.5, qd + 0.5)
            ax.grid(alpha=0.3)
        series_ax.set_yticks(range(0, qd + 1, max(1, (qd + 1) // 8)))
        median = stats.loc[label, "median_Bps"] if label in stats.index else np.nan
        series_ax.set_title(f"{short_label(command_name(label))} — {len(trace)} consumer runs, "
                            f"median {gbps_text(median)} GB/s", fontsize=9, loc="left")
        series_ax.set_ylabel("in flight")
        hist_ax.set_xlabel("% of consumer runs")
        series_ax.text(0.995, (qd - 1) / (qd + 1) + 0.5 / (qd + 1), "queue depth − 1",
                       transform=series_ax.transAxes, ha="right", va="bottom", fontsize=7,
                       bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})
    axes[-1][0].set_xlabel("time since start (ms)")
    fig.suptitle(f"Requests in flight at each consumer run (one traced run per configuration)\n"
                 f"{subtitle(run)}", fontsize=10)
    return fig


# --- 4. limit ratio ---

def chart_limit_ratio(run: Run, file_size: int | None = None) -> Figure | Skip:
    """How much longer than the fastest plain read does each hasher configuration take (its time
    / the speed limit in the same round, median and 95% interval), and what share of b3sum's and
    of cat's time does it take (time ratios, paired per round)?"""
    stats, size = hasher_stats(run, file_size)
    limit = run_speed_limit(run, size)
    if not limit:
        return Skip(f"no speed limit (no successful read-only command: {', '.join(READ_TOOLS[:-1])} or a reads_only [[commands]] entry)")
    hashers = stats[(stats["tool"] == HASHER)].sort_values("limit_ratio", ascending=False,
                                                              na_position="first")
    if not len(hashers):
        return Skip("no hasher configurations in the run")
    hashers = hashers.reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(11, 1.9 + 0.38 * len(hashers)), layout="constrained")
    ratios = hashers["limit_ratio"].to_numpy(dtype=float)
    err = np.vstack([ratios - hashers["limit_low"].to_numpy(dtype=float),
                     hashers["limit_high"].to_numpy(dtype=float) - ratios])
    ax.errorbar(ratios, range(len(hashers)), xerr=err, fmt="none", ecolor="#555555", capsize=3,
                linewidth=1)
    ax.scatter(ratios, range(len(hashers)), color=[colour(str(v), HASHER) for v in hashers["variant"]],
               s=40, zorder=3)
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
    numbers = []  # a column right of the plot, so the axis spans the data and nothing more
    for y, row in hashers.iterrows():
        if row["limit_ratio"] != row["limit_ratio"]:
            ax.text(0.01, y, "no executions in a round with a limit", va="center", fontsize=8,
                    color="#d62728", transform=ax.get_yaxis_transform())
            numbers.append("-")
            continue
        parts = [f"{row['limit_ratio']:.2f} [{row['limit_low']:.2f}, {row['limit_high']:.2f}]"]
        parts += [f"{row[f'{t}_ratio']:.2f}× {t}'s time" for t in REFERENCE_TOOLS
                  if row[f"{t}_ratio"] == row[f"{t}_ratio"]]
        numbers.append(" · ".join(parts))
    ax.set_yticks(range(len(hashers)), [short_label(command_name(x)) for x in hashers["label"]],
                  fontsize=8)
    right = ax.secondary_yaxis("right")
    right.set_yticks(range(len(hashers)), numbers, fontsize=8)
    right.tick_params(length=0)
    low = float(np.nanmin(hashers["limit_low"])) if hashers["limit_low"].notna().any() else 1.0
    high = float(np.nanmax(hashers["limit_high"])) if hashers["limit_high"].notna().any() else 1.0
    low, high = min(low, 1.0), max(high, 1.0)
    margin = 0.04 * (high - low) + 0.01
    ax.set_xlim(low - margin, high + margin)
    refs = []
    for tool in REFERENCE_TOOLS:
        ref = reference(stats, tool)
        if ref is not None:
            refs.append(f"{tool} = {ref['label']} ({ref['median_s']:.3f} s)")
    ax.set_xlabel(f"time / speed limit in the same round (median, 95% interval); 1.0 = as fast as the "
                  f"fastest plain read ({limit.seconds:.3f} s median, {short_label(limit.set_by)} in "
                  f"{limit.set_by_rounds} of {len(limit.set_in_round)} rounds)")
    ax.grid(axis="x", alpha=0.3)
    fig.legend(handles=role_handles([HASHER]), loc="outside lower center", fontsize=8, frameon=False)
    ax.set_title("Hasher time / the speed limit, and at right / b3sum's and cat's time: time ratios paired "
                 "per round, below 1 = less time\n"
                 + ("references: " + ", ".join(refs) if refs else "no b3sum or cat in the run")
                 + f"\n{subtitle(run, size)}", fontsize=10)
    return fig


# --- 5. scaling ---

def chart_scaling(run: Run) -> Figure | Skip:
    """How does each command's time grow with the file size: linearly (slope 1 on log-log), or
    with a fixed start-up cost that dominates small files?"""
    sizes = sorted(run.runs["file_size"].dropna().unique())
    if len(sizes) < 2:
        return Skip(f"one file size ({size_text(sizes[0])})" if sizes else "no runs")
    stats = command_stats(run.runs)
    stats["command"] = stats["label"].map(command_name)
    fig, ax = plt.subplots(figsize=(10, 6.5), layout="constrained")
    for command, g in stats[stats["median_s"].notna()].groupby("command", sort=True):
        g = g.sort_values("file_size")
        ax.plot(g["file_size"].astype(float), g["median_s"], marker="o", markersize=4,
                color=colour(str(g["variant"].iloc[0]), str(g["tool"].iloc[0])), label=short_label(command),
                alpha=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks([float(s) for s in sizes], [format_size(int(s)) for s in sizes])
    ax.set_xlabel("file size (bytes, log scale)")
    ax.set_ylabel("median wall time (s, log scale)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncols=2, loc="upper left")
    caches = "/".join(sorted(run.runs["cache"].dropna().unique()))
    ax.set_title(f"Time against file size per command\n{caches} cache, {rounds(run)} rounds · "
                 f"{machine(run)} · {run_date(run)}", fontsize=10)
    return fig


# --- 6. trees: the small-file cliff ---

def chart_small_files(run: Run) -> Figure | Skip:
    """Where is the small-file cliff? Median throughput of each command against the mean file size
    of each dataset (bytes / files): a tree of many small files costs an open, a stat and a close
    per file, which parallel readers hide and one-file-at-a-time readers pay in full."""
    runs = run.runs.copy()
    if "files" not in runs or not runs["files"].fillna(1).gt(1).any():
        return Skip("no tree of many files in this run")
    runs["mean_size"] = runs["file_size"] / runs["files"].fillna(1)
    if runs["mean_size"].nunique() < 2:
        return Skip("one dataset (give trees of several file sizes)")
    stats = command_stats(runs)
    stats["mean_size"] = stats["label"].map(runs.groupby("label")["mean_size"].first())
    stats["command"] = stats["label"].map(command_name)
    fig, ax = plt.subplots(figsize=(10, 6), layout="constrained")
    used: dict[str, int] = {}  # commands of one tool share its colour: told apart by the line
    for command, g in stats[stats["median_Bps"].notna()].groupby("command", sort=True):
        g = g.sort_values("mean_size")
        c = colour(str(g["variant"].iloc[0]), str(g["tool"].iloc[0]))
        used[c] = used.get(c, -1) + 1
        ax.plot(g["mean_size"].astype(float), g["median_Bps"] / GB, marker="o", markersize=4, color=c,
                linestyle=("-", "--", ":", "-.")[used[c] % 4], label=short_label(command), alpha=0.85)
    names = runs.groupby("mean_size")["label"].first().map(lambda lbl: lbl[len(command_name(lbl)):].strip(" []"))
    ax.set_xscale("log", base=2)
    ticks, last = [], 0.0
    for x, n in names.items():  # a tick close to the one before goes a line lower
        low = "\n\n" if last and x / last < 1.6 and not ticks[-1].startswith("\n") else ""
        ticks.append(low + f"{about_size(int(x))}" + (f"\n{n}" if n else ""))
        last = x
    ax.set_xticks([float(x) for x in names.index], ticks, fontsize=8)
    ax.set_xlabel("mean file size of the dataset (log scale)")
    ax.set_ylabel("median throughput (GB/s), higher is better")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncols=2, loc="upper left")
    caches = "/".join(sorted(runs["cache"].dropna().unique()))
    ax.set_title(f"Throughput against file size: the small-file cliff\n{caches} cache, {rounds(run)} rounds · "
                 f"{machine(run)} · {run_date(run)}", fontsize=10)
    return fig


# --- 7. across runs ---


def chart_across_runs(runs: list[Run]) -> Figure | Skip:
    """Do the same commands rank the same way on another machine or another day? Median wall
    time of every command present in all the runs, side by side (whiskers: min–max)."""
    if len(runs) < 2:
        return Skip("one run directory given (pass several to compare runs or machines)")
    tables = [command_stats(r.runs).set_index("label") for r in runs]
    common = set.intersection(*(set(t.index[t["median_s"].notna()]) for t in tables))
    if not common:
        return Skip("no command with successful executions in every run")
    order = tables[0].loc[sorted(common)].sort_values("median_s", ascending=False).index
    height = 0.8 / len(runs)
    fig, ax = plt.subplots(figsize=(10, 1.8 + 0.25 * len(order) * len(runs)), layout="constrained")
    for k, (run, table) in enumerate(zip(runs, tables)):
        rows = table.loc[order]
        y = np.arange(len(order)) + 0.4 - height * (k + 0.5)  # first run on top, as in the legend
        err = np.vstack([rows["median_s"] - rows["min_s"], rows["max_s"] - rows["median_s"]])
        ax.barh(y, rows["median_s"], height=height, xerr=err, label=run_legend(run),
                color=RUN_COLOURS[k % len(RUN_COLOURS)], alpha=0.85,
                error_kw={"linewidth": 0.8, "capsize": 2})
    ax.set_yticks(range(len(order)), [short_label(command_name(x)) for x in order], fontsize=8)
    ax.set_xlabel("median wall time (s), whiskers min–max, lower is better")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    sizes = sorted({size_text(s) for r in runs for s in r.runs["file_size"].dropna().unique()})
    ax.set_title(f"The same commands across {len(runs)} runs ({', '.join(sizes)} files; "
                 f"fingerprint id, CPU, date)", fontsize=10)
    return fig
