"""Each hashing command of a run against the plain readers and each b3sum of the same rounds,
condition by condition: the Markdown tables of the kept runs' READMEs (docs/cold-path/*/README.md),
generated from the run directories themselves, so that a figure and its machine never part.

    python -m analysis.paired_table [--tuned] RUN_DIR [RUN_DIR ...]

Per condition and command: the median wall time; × limit, its time over the fastest plain read
of the same round (the limit readers but the self-timed, whose wall time includes their start-up,
or a `reads_only` command), median over rounds [95% interval]; × each b3sum of the
condition, the same ratio, and in how many rounds it was faster. Time ratios: below 1 is faster.

--tuned: one row a condition, issue 29's table: the defaults (group `uring_b3sum`), the fastest by
median of the shapes `ringsum tune` found (group `tuned`), b3sum and the limit, and the defaults over
that tuned shape, with a verdict on "at most 3% behind" (configs/conditions-table.toml); and the
defaults over the fastest reader by median alone. The limit, the least of several readers' times
in each round, is the faster for their noise: three readers of one speed give a limit below any
one reader's usual time, and a hasher reading exactly as fast as one of them a ratio above 1.
Last, the defaults' CPU floor: their own CPU time (user + system) spread over the condition's
cores, over the limit; no run on those cores takes less, whatever the disk, so a floor above 1.03
puts the issue's cold target out of reach of the defaults' work per byte.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.judge.load import Run, RunDirError, load_run
from harness import stats
from harness.catalog.tools import COMMAND, HASHER, LIMIT_READER, READER, REFERENCE_HASH, SELF_TIMED, tools_with

# The plain readers: wall times (a self-timed reader's wall time includes its start-up).
READERS = (*(t for t in tools_with(LIMIT_READER) if t not in tools_with(SELF_TIMED)), READER)
HASHERS = (HASHER, COMMAND)
BEHIND_AT_MOST = 1.03  # issue 29: the defaults never more than 3% behind the best tuned shape


def without_condition(label: str) -> str:
    """A label without its machine condition's tag: "b3sum @1core" -> "b3sum"."""
    return label.split(" @", 1)[0]


def _versus(mine: pd.Series, other: pd.Series) -> str:
    """The paired time ratio and the rounds mine was faster in: "0.83 [0.79, 0.89] (14 of 15)"."""
    ratio = mine / other
    return (f"{stats.paired_ratio(mine, other).text(2)} ({int((ratio < 1).sum())} of "
            f"{int(ratio.notna().sum())})")


def condition_rows(wall: pd.DataFrame, limit: pd.Series | None, b3sums: list[str],
                   tools: dict[str, str]) -> list[list[str]]:
    """wall: rounds x labels of one condition; limit: its fastest plain read per round; tools: label -> tool."""
    rows = []
    for label in sorted(c for c in wall.columns if tools[c] in HASHERS):
        row = [without_condition(label), f"{wall[label].median():.3f} s"]
        row.append(stats.paired_ratio(wall[label], limit).text(2) if limit is not None else "-")
        row += [_versus(wall[label], wall[b]) for b in b3sums]
        rows.append(row)
    return rows


@dataclass
class Condition:
    """One machine condition of a run: wall times (rounds x labels) and what each label is."""

    name: str
    wall: pd.DataFrame
    tools: dict[str, str]  # label -> tool
    groups: dict[str, str]  # label -> the config's group (a [[hashers]] name, a baseline)
    b3sums: list[str]
    readers: list[str]  # the plain readers
    file_size: int
    cpu: pd.DataFrame  # user + system time, rounds x labels
    cores: int  # the CPUs the condition gave each command

    @property
    def limit(self) -> pd.Series | None:
        """The fastest plain read per round; None without a plain reader."""
        return self.wall[self.readers].min(axis=1) if self.readers else None


def shapes(runs: pd.DataFrame) -> list[tuple[int, int]]:
    """Each row's dataset shape, (bytes, files): a RAM device's copy has its source's."""
    return [(int(b), int(f) if f == f else 1) for b, f in zip(runs["file_size"], runs["files"])]


def run_conditions(run: Run, shown_as: str | None, shape: tuple[int, int] | None = None) -> tuple[str, list[Condition]]:
    """The line naming the run (as `shown_as`, default its path), and its conditions; of the datasets
    of one shape (bytes, files) only, where given (a RAM device's copy has its source's shape)."""
    runs = run.runs[(run.runs["exit_code"] == 0) & run.runs["hash_ok"].fillna(True).astype(bool)]  # NA: no hash
    if shape is not None:
        runs = runs[[s == shape for s in shapes(runs)]]
    if "condition" not in runs:
        runs = runs.assign(condition="as-is")
    opening = (f"From `{shown_as or run.path}` ({run.meta.get('started_at', '?')[:10]}, "
               f"fingerprint `{run.fingerprint.get('fingerprint_id', '?')}`):")
    conditions = []
    machine_cores = int(run.fingerprint.get("cores") or 0)
    for name, group in runs.groupby("condition"):
        wall = group.pivot_table(index="round", columns="label", values="wall_s")
        tools = dict(zip(group["label"], group["tool"]))
        conditions.append(Condition(
            name, wall, tools, dict(zip(group["label"], group["group"])),
            sorted((c for c in wall.columns if tools[c] in tools_with(REFERENCE_HASH)), key=without_condition),
            [c for c in wall.columns if tools[c] in READERS], int(group["file_size"].iloc[0]),
            group.assign(cpu_s=group["user_s"] + group["sys_s"]).pivot_table(index="round", columns="label",
                                                                           values="cpu_s"),
            int(group["cores"].iloc[0]) if "cores" in group and group["cores"].notna().any() else machine_cores))
    return opening, conditions


def table(run_dir: Path, shown_as: str | None = None) -> str:
    """The tables of one run directory, opened by a line naming it (as `shown_as`, default its path)."""
    opening, conditions = run_conditions(load_run(run_dir), shown_as)
    out = [opening, ""]
    for c in conditions:
        head = ["command", "median", "× limit"] + [f"× {without_condition(b)} (faster in)" for b in c.b3sums]
        said = (f"limit {c.limit.median():.3f} s (fastest plain read per round, median)" if c.limit is not None
                else "no plain reader")
        out += [f"**{c.name}**: {said}", "",
                "| " + " | ".join(head) + " |", "| --- | " + " | ".join("---:" for _ in head[1:]) + " |"]
        out += ["| " + " | ".join(row) + " |" for row in condition_rows(c.wall, c.limit, c.b3sums, c.tools)] + [""]
    return "\n".join(out)


def _verdict(estimate: stats.Estimate) -> str:
    if estimate.high <= BEHIND_AT_MOST:
        return "within 3%"
    return "more than 3% behind" if estimate.low > BEHIND_AT_MOST else "not shown either way"


def tuned_table(run_dir: Path, shown_as: str | None = None, defaults_group: str = "uring_b3sum",
                tuned_group: str = "tuned") -> str:
    """One row a condition: the limit, the defaults, the best tuned shape and b3sum, each × limit,
    the defaults × the best tuned shape (paired, with the verdict) and × b3sum (with its wins)."""
    opening, conditions = run_conditions(load_run(run_dir), shown_as)
    head = ["condition", "limit", "defaults × limit", "tuned best × limit", "b3sum × limit",
            "defaults × tuned best", "defaults × b3sum (faster in)", "defaults × fastest reader",
            "CPU floor × limit"]
    out = [opening, "", "| " + " | ".join(head) + " |", "| --- | " + " | ".join("---:" for _ in head[1:]) + " |"]
    for c in conditions:
        wall = c.wall
        defaults = [x for x in wall.columns if c.groups[x] == defaults_group and c.tools[x] in HASHERS]
        tuned = [x for x in wall.columns if c.groups[x] == tuned_group and c.tools[x] in HASHERS]
        if len(defaults) != 1 or not tuned or not c.b3sums or c.limit is None:
            raise RunDirError(f"{run_dir}: condition {c.name} wants one command of group {defaults_group!r}, "
                              f"some of group {tuned_group!r}, a b3sum and a plain reader")
        mine, b3sum, limit = wall[defaults[0]], wall[c.b3sums[0]], c.limit
        best = min(tuned, key=lambda x: wall[x].median())
        reader = min(c.readers, key=lambda x: wall[x].median())
        versus_best = stats.paired_ratio(mine, wall[best])
        out.append("| " + " | ".join([
            c.name, f"{limit.median():.3f} s ({c.file_size / limit.median() / 1e9:.2f} GB/s)",
            stats.paired_ratio(mine, limit).text(2),
            f"{stats.paired_ratio(wall[best], limit).text(2)} ({without_condition(best).removeprefix('uring_b3sum ')})",
            stats.paired_ratio(b3sum, limit).text(2),
            f"{versus_best.text(3)} ({_verdict(versus_best)})",
            _versus(mine, b3sum),
            f"{stats.paired_ratio(mine, wall[reader]).text(2)} ({without_condition(reader)})",
            stats.paired_ratio(c.cpu[defaults[0]] / c.cores, limit).text(2) if c.cores else "-"]) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tuned", action="store_true", help="one row a condition: defaults, tuned best, b3sum, limit")
    ap.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    args = ap.parse_args(argv)
    try:
        print("\n".join((tuned_table if args.tuned else table)(d) for d in args.run_dirs))
    except RunDirError as e:
        print(f"fatal: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
