"""Each hashing command of a run against the plain readers and each b3sum of the same rounds,
condition by condition: the Markdown tables of docs/cold-path.md, generated from the run
directories kept beside it, so that a figure and its machine never part.

    python -m analysis.paired_table RUN_DIR [RUN_DIR ...]

Per condition and command: the median wall time; × limit, its time over the fastest plain read
of the same round (the limit readers but the self-timed, whose wall time includes their start-up,
or a `reads_only` command), median over rounds [95% interval]; × each b3sum of the
condition, the same ratio, and in how many rounds it was faster. Time ratios: below 1 is faster.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from analysis.load import RunDirError, load_run
from harness import stats
from harness.catalog.tools import COMMAND, LIMIT_READER, READER, REFERENCE_HASH, SELF_TIMED, tools_with

# The plain readers: wall times (a self-timed reader's wall time includes its start-up).
READERS = (*(t for t in tools_with(LIMIT_READER) if t not in tools_with(SELF_TIMED)), READER)
HASHERS = ("hasher", COMMAND)


def _base(label: str) -> str:
    return label.split(" @", 1)[0]


def condition_rows(wall: pd.DataFrame, limit: pd.Series | None, b3sums: list[str],
                   tools: dict[str, str]) -> list[list[str]]:
    """wall: rounds x labels of one condition; limit: its fastest plain read per round; tools: label -> tool."""
    rows = []
    for label in sorted(c for c in wall.columns if tools[c] in HASHERS):
        row = [_base(label), f"{wall[label].median():.3f} s"]
        row.append(stats.paired_ratio(wall[label], limit).text(2) if limit is not None else "-")
        for b in b3sums:
            ratio = wall[label] / wall[b]
            row.append(f"{stats.paired_ratio(wall[label], wall[b]).text(2)} ({int((ratio < 1).sum())} of "
                       f"{int(ratio.notna().sum())})")
        rows.append(row)
    return rows


def table(run_dir: Path, shown_as: str | None = None) -> str:
    """The tables of one run directory, opened by a line naming it (as `shown_as`, default its path)."""
    run = load_run(run_dir)
    runs = run.runs[(run.runs["exit_code"] == 0) & run.runs["hash_ok"].fillna(True).astype(bool)]  # NA: no hash
    if "condition" not in runs:
        runs = runs.assign(condition="as-is")
    out = [f"From `{shown_as or run_dir}` ({run.meta.get('started_at', '?')[:10]}, "
           f"fingerprint `{run.fingerprint.get('fingerprint_id', '?')}`):", ""]
    for condition, group in runs.groupby("condition"):
        wall = group.pivot_table(index="round", columns="label", values="wall_s")
        tools = dict(zip(group["label"], group["tool"]))
        b3sums = sorted((c for c in wall.columns if tools[c] in tools_with(REFERENCE_HASH)), key=_base)
        readers = [c for c in wall.columns if tools[c] in READERS]
        limit = wall[readers].min(axis=1) if readers else None
        head = ["command", "median", "× limit"] + [f"× {_base(b)} (faster in)" for b in b3sums]
        said = f"limit {limit.median():.3f} s (fastest plain read per round, median)" if readers else "no plain reader"
        out += [f"**{condition}**: {said}", "",
                "| " + " | ".join(head) + " |", "| --- | " + " | ".join("---:" for _ in head[1:]) + " |"]
        out += ["| " + " | ".join(row) + " |" for row in condition_rows(wall, limit, b3sums, tools)] + [""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    args = ap.parse_args(argv)
    try:
        print("\n".join(table(d) for d in args.run_dirs))
    except RunDirError as e:
        print(f"fatal: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
