"""Paired per-round ratios of two commands over several runs of one config, each run's and pooled:
the Markdown table of an A/A or repeated race in a kept run's README (docs/cold-path/*-aa-*/).

    python -m analysis.pooled RUN_DIR [RUN_DIR ...] --pair A B [--pair A B ...]

A and B name a command by its label, else by its group (a wrapper's, say); "X|Y" takes the first of
X and Y that a run has, for one setting named two ways in different runs. A row per pair: A's time
over B's in the same round, the median [95% interval] and in how many rounds A was the faster, in
each run and over all their rounds pooled. Rounds are paired within a run only, never across runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from harness.judge.load import RunDirError, load_run
from harness.judge.results import succeeded
from harness.stats import paired_ratio


class PooledError(Exception):
    """A name no run has: one line for the user."""


def round_times(run_dir: Path, names: set[str]) -> pd.DataFrame:
    """Each name's time in each round (its counted executions' median there), a column per name."""
    runs = load_run(run_dir).runs
    runs = runs[succeeded(runs)]
    path = run_dir / "runs.csv"
    columns = {}
    for spec in sorted(names):
        for name, by in ((name, by) for name in spec.split("|") for by in ("label", "group")):
            picked = runs[runs[by] == name]
            if by == "group" and picked["label"].nunique() > 1:
                raise PooledError(f"{path}: group {name!r} has several commands: name one by its label")
            if len(picked):
                columns[spec] = picked.groupby("round")["wall_s"].median()
                break
        else:
            raise PooledError(f"{path}: no command labelled or grouped {spec!r}")
    return pd.DataFrame(columns)


def cell(a: pd.Series, b: pd.Series) -> str:
    both = a.notna() & b.notna()
    e = paired_ratio(a[both], b[both])
    return f"{e.median:.3f} [{e.low:.3f}, {e.high:.3f}], {(a[both] < b[both]).sum()} of {both.sum()}"


def table(run_dirs: list[Path], pairs: list[tuple[str, str]]) -> str:
    names = {n for pair in pairs for n in pair}
    runs = [round_times(d, names) for d in run_dirs]
    pooled = pd.concat(runs, keys=range(len(runs)))
    heads = [d.name for d in run_dirs] + ["pooled"] * (len(runs) > 1)
    frames = runs + [pooled] * (len(runs) > 1)
    lines = ["| A / B: median [95%], A faster in | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]
    for a, b in pairs:
        row = f"{a} / {b}".replace("|", " or ")  # a | would end the Markdown cell
        lines.append(f"| {row} | " + " | ".join(cell(f[a], f[b]) for f in frames) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.pooled", description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    ap.add_argument("--pair", nargs=2, action="append", required=True, metavar=("A", "B"),
                    help="A's time over B's, per round (repeatable)")
    args = ap.parse_args(argv)
    try:
        print(table(args.run_dirs, [tuple(p) for p in args.pair]))
    except (PooledError, RunDirError) as e:
        print(f"analysis.pooled: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
