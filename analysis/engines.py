"""Is io_uring worth it on this device? fio's engines in one run (configs/engines.toml): the one-line
answer, the chart of throughput against depth with a line per engine, and fio's own in-flight
distribution beside the hashers'.

    python -m analysis.engines RUN_DIR        the answer, and a line per fio row

Times are fio's own read runtimes (its start-up is not the device's), paired per round; a ratio is
io_uring's time over psync's, below 1 io_uring is faster. A verdict: faster or slower where the 95%
interval lies wholly below or above 1, a tie where it holds 1.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis.chart_data import GB, Skip, size_text, subtitle  # noqa: E402
from harness.judge.load import Run, RunDirError, load_run  # noqa: E402
from harness import stats  # noqa: E402
from harness.catalog.tools import FIO_RANDOM  # noqa: E402
from harness.judge.results import succeeded  # noqa: E402

BASE = "psync"  # the plain read at one request in flight: what io_uring has to beat
QUESTIONS = (("randread", 4 << 10), ("read", 1 << 20))  # the note's two rows: 4K random, large in order


@dataclass(frozen=True)
class FioRow:
    label: str
    engine: str  # "io_uring batched" for io_uring with iodepth_batch_* options
    rw: str
    bs: int
    depth: int

    @property
    def order(self) -> tuple:
        """Rows read as a table: in order first, then by block size and depth."""
        return self.rw != "read", self.bs, self.depth, self.label


def fio_rows(run: Run) -> tuple[pd.DataFrame, dict[str, FioRow]]:
    """fio's successful executions (fio's runtime per round, labels x rounds) and what each label is."""
    df = run.runs
    rows = df[(df["tool"] == "fio") & succeeded(df)]
    described = {}
    for label, extra in rows.groupby("label")["extra"].first().fillna("").items():
        engine = (re.search(r"engine=(\S+)", str(extra)) or [None, "io_uring"])[1]
        engine += " batched" if "batch=" in str(extra) else ""
        one = rows[rows["label"] == label].iloc[0]
        described[str(label)] = FioRow(str(label), engine, "randread" if FIO_RANDOM in str(extra) else "read",
                                       int(one["block_size"]), int(one["queue_depth"]))
    times = rows.pivot_table(index="round", columns="label", values="fio_runtime_s", aggfunc="median")
    return times, described


def answer(run: Run) -> str | None:
    """"io_uring over psync at its best depth: 0.62x the time [0.58, 0.66] (4K random), ...", or None
    when the run lacks psync or io_uring at both questions' rows."""
    times, rows = fio_rows(run)
    parts = []
    for rw, bs in QUESTIONS:
        here = [r for r in rows.values() if r.rw == rw and r.bs == bs]
        base = next((r for r in here if r.engine == BASE), None)
        uring = [r for r in here if r.engine.startswith("io_uring")]
        if base is None or not uring:
            continue
        ratios = {r.label: stats.paired_ratio(times[r.label], times[base.label]) for r in uring}
        best = min(uring, key=lambda r: ratios[r.label].median)  # the best depth by the paired ratio itself
        e = ratios[best.label]
        verdict = "faster" if e.high < 1 else "slower" if e.low > 1 else "a tie"
        what = f"{size_text(bs).removesuffix('iB')} {'random' if rw == 'randread' else 'in order'}"
        parts.append(f"{e.text(2)} ({what}, {best.engine} {best.depth} deep: {verdict})")
    if not parts:
        return None
    return f"io_uring over {BASE} at its best depth, time ratio: " + "; ".join(parts)


def chart_engines(run: Run) -> Figure | Skip:
    """Is io_uring worth it on this device: fio's throughput against the queue depth, a line per
    engine (sync and psync keep one request in flight), a panel per block size and order?"""
    times, rows = fio_rows(run)
    if len({r.engine for r in rows.values()}) < 2:
        return Skip("fewer than two fio engines in the run (configs/engines.toml compares them)")
    panels = sorted({(r.rw, r.bs) for r in rows.values()}, key=lambda p: (p[0] != "read", p[1]))
    names = sorted({r.engine for r in rows.values()})
    colour = {name: f"C{i}" for i, name in enumerate(names)}  # one colour an engine, in every panel
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels) + 1, 3.8), squeeze=False)
    for ax, (rw, bs) in zip(axes[0], panels):
        here = [r for r in rows.values() if (r.rw, r.bs) == (rw, bs)]
        for engine in sorted({r.engine for r in here}):
            points = sorted((r.depth, _rate(run, r.label)) for r in here if r.engine == engine)
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", color=colour[engine])
        ax.set_xscale("log", base=2)
        ax.set_title(f"{size_text(bs)} {'random' if rw == 'randread' else 'in order'}", fontsize=9)
        ax.set_xlabel("queue depth")
    axes[0][0].set_ylabel("GB/s, median (fio's own)")
    fig.legend([plt.Line2D([], [], color=colour[n], marker="o") for n in names], names, fontsize=8,
               loc="lower center", ncol=len(names), bbox_to_anchor=(0.5, -0.06))
    fig.suptitle(f"fio's engines: throughput against depth\n{subtitle(run)}", fontsize=10, y=1.04)
    fig.tight_layout()
    return fig


def _rate(run: Run, label: str) -> float:
    rows = run.runs[(run.runs["label"] == label) & succeeded(run.runs)]
    return float(rows["fio_bw_Bps"].median()) / GB


def chart_fio_in_flight(run: Run) -> Figure | Skip:
    """How many requests did fio really keep in flight: the share of its time at each depth
    (fio's iodepth distribution), a bar per fio command deeper than one?"""
    df = run.runs
    rows = df[(df["tool"] == "fio") & succeeded(df) & (df["queue_depth"].fillna(1) > 1)]
    if "fio_depth" not in rows or not rows["fio_depth"].fillna("").astype(bool).any():
        return Skip("no fio command deeper than one recorded its in-flight distribution")
    described = fio_rows(run)[1]
    shares: dict[str, dict[str, float]] = {}
    for label, depths in sorted(rows.groupby("label")["fio_depth"], key=lambda g: described[str(g[0])].order):
        cells = [dict((k, float(v)) for k, v in (w.split(":") for w in str(d).split())) for d in depths if d == d and d]
        keys = sorted({k for c in cells for k in c}, key=lambda k: int(k.lstrip(">=")))
        shares[str(label)] = {k: sum(c.get(k, 0.0) for c in cells) / len(cells) for k in keys}
    buckets = sorted({k for s in shares.values() for k in s}, key=lambda k: int(k.lstrip(">=")))
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(shares) + 1.5))
    left = pd.Series(0.0, index=list(shares))
    for bucket in buckets:
        values = pd.Series({lbl: s.get(bucket, 0.0) for lbl, s in shares.items()})
        ax.barh(list(shares), values, left=left, label=f"≤{bucket}" if not bucket.startswith(">") else bucket)
        left += values
    ax.set_xlabel("% of fio's time at each in-flight depth (fio's iodepth distribution, mean over rounds)")
    ax.legend(fontsize=7, ncol=len(buckets), loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    ax.tick_params(axis="y", labelsize=7)
    fig.suptitle(f"fio in flight\n{subtitle(run)}", fontsize=10, y=1.02)
    ax.invert_yaxis()  # the first row on top
    return fig


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    args = ap.parse_args(argv)
    try:
        run = load_run(args.run_dir)
    except RunDirError as e:
        print(f"fatal: {e}", file=sys.stderr)
        return 1
    said = answer(run)
    if said is None:
        print(f"fatal: {args.run_dir}: no psync and io_uring rows at 4K random or 1M in order "
              "(configs/engines.toml has them)", file=sys.stderr)
        return 1
    times, rows = fio_rows(run)
    try:
        print(said)
        for r in sorted(rows.values(), key=lambda r: (r.rw, r.bs, r.engine, r.depth)):
            print(f"  {r.label}: {times[r.label].median():.3f} s, {_rate(run, r.label):.2f} GB/s")
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        sys.stderr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
