"""The machine ledger: every machine a developer meets keeps its runs of the ledger's suites under
docs/ledger/<fingerprint id>/<suite>/, and one table is drawn from all of them: machine x kind of
work x (uring_b3sum's defaults, the best of its own settings in the same rounds, b3sum, the limit).
A default or a rule of the hashers names the rows it rests on (docs/ledger.md).

    python -m analysis.ledger keep RUN_DIR [RUN_DIR ...]   copy runs' records into the ledger
    python -m analysis.ledger table [LEDGER_DIR]           print the table (default docs/ledger)

`make ledger` runs the suites (at most 15 minutes) and keeps them; docs/ledger/README.md holds the table
as a `<!-- table docs/ledger ledger -->` region (analysis/doc_figures.py keeps it up to date).

Kinds of work come from each run itself: its cache mode (cold: the page cache dropped; hot:
cached), one file or a tree, and each machine condition's device and cores; a condition with a
read cap is left out (every command ties at the cap). In each condition: the defaults are the
`uring_b3sum` group; its own settings are the run's other uring_b3sum hashers (not a baseline
build's, nor a [[commands]] entry: a tree's list, through xargs or --files0-from, names the same
files another way, prepared before the timing, where -r walks them itself); b3sum is the fastest b3sum by median (b3sum, its thread counts,
b3sum through xargs); the limit the fastest plain read per round. Ratios are time ratios paired
per round, median [95% interval]; below 1 is faster.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.judge.load import RunDirError, load_run
from analysis.paired_table import HASHER, HASHERS, Condition, run_conditions, shapes, without_condition
from harness import stats

REPO_ROOT = Path(__file__).resolve().parent.parent
LEDGER_DIR = REPO_ROOT / "docs" / "ledger"
# What a kept run brings: its records, not raw/, traces/, datasets or charts.
RECORDS = ("config.toml", "meta.json", "plan.json", "runs.csv", "summary.json", "summary.txt", "summary.md")
DEFAULTS_GROUP = "uring_b3sum"
# The targets for the defaults with no record: within 2% of the best own setting; hot, not
# slower than b3sum (medians of the paired ratios).
OWN_WITHIN = 1.02
# What a hasher chose for each file, as it said (--effective, runs.csv): two commands that chose alike
# ran the same way, whatever their options said (alike: _same_choices). The share hashed on every
# core is what happened, not a choice.
CHOICES = ("effective_path", "effective_block_size", "effective_queue_depth", "effective_buffers",
           "effective_direct", "effective_huge_pages", "effective_hashing", "effective_hash_threads",
           "effective_staging")
MEASURED = frozenset({"effective_hashing", "effective_staging"})  # decided in each execution, by timing


class LedgerError(ValueError):
    """A ledger or a run that cannot be kept or read; the message names it."""


@dataclass(frozen=True)
class Row:
    machine: str  # fingerprint id
    work: str  # "cold file, disk, 2 cores"
    run: str  # the run directory, as shown
    rounds: int
    defaults_s: float
    vs_own: stats.Estimate
    own: str  # the best own setting by median ("defaults" when it is the defaults)
    vs_b3sum: stats.Estimate | None
    b3sum_wins: str
    b3sum: str
    vs_limit: stats.Estimate | None
    limit_s: float | None
    hot: bool
    file_size: int  # bytes read: the limit's rate is file_size / limit_s
    same_choices: bool = False  # the own best chose as the defaults did: vs_own is two runs of one way

    @property
    def meets(self) -> str:
        """Whether the defaults meet the ledger's targets in this row, by median."""
        misses = []
        if self.vs_own.median > OWN_WITHIN and not self.same_choices:
            misses.append(f"{self.vs_own.median:.2f} x own best")
        if self.hot and self.vs_b3sum is not None and self.vs_b3sum.median > 1:
            misses.append("behind b3sum")
        return "yes" if not misses else "no: " + ", ".join(misses)


def _is_b3sum(c: Condition, label: str) -> bool:
    return c.tools[label] == "b3sum" or c.groups[label].startswith("b3sum")


def _is_own(c: Condition, label: str) -> bool:
    return c.tools[label] == HASHER and not c.groups[label].startswith("baseline:") and not _is_b3sum(c, label)


def _choices(runs: pd.DataFrame, label: str) -> tuple[frozenset[str], ...] | None:
    """The values each choice took in a command's executions; None where the run did not record them."""
    mine = runs[runs["label"] == label]
    if mine.empty or any(col not in mine or mine[col].isna().all() for col in CHOICES[:2]):
        return None
    return tuple(frozenset(str(v) for v in mine[col].dropna().unique()) if col in mine else frozenset()
                 for col in CHOICES)


def _same_choices(a: tuple[frozenset[str], ...] | None, b: tuple[frozenset[str], ...] | None) -> bool:
    """Two commands chose alike where each took the same values of every choice its options set, and,
    of each choice measured in the process (MEASURED: the staging trial, side by side), some value in
    common: a trial that went one way in one command's executions and both ways in the other's leaves
    two runs of one configuration. A staging forced in every execution ("in-place", not
    "in-place+measured") shares no value with a trial's, and a path taken in some executions only
    (the ring for some files) is a choice apart."""
    return a is not None and b is not None and all(
        (x & y or not (x or y)) if col in MEASURED else x == y for col, x, y in zip(CHOICES, a, b))


def _work(cache: str, files: int, device: str, cores: int, file_size: int = 0, share: float | None = None) -> str:
    """"cold file, ram, 2 cores"; a cached file's device is not read, so not named; a tree's files
    are sized where the run had trees of several sizes (file_size: their bytes in all); a run that
    kept a share of the file cached (run.cached_share): "file 0.5 cached, disk, 2 cores"."""
    what = f"tree of {files:,} files" if files > 1 else "file"
    if file_size and files > 1:
        what += f" of {_size(file_size // files)}"
    where = f"{device}, " if cache == "cold" else ""
    how = f"{what} {share:g} cached" if share is not None else f"{'cold' if cache == 'cold' else 'hot'} {what}"
    return f"{how}, {where}{cores} core{'s' if cores != 1 else ''}"


def rows(run_dir: Path, shown_as: str) -> list[Row]:
    """The ledger rows of one kept run: one a machine condition without a read cap and, where the run
    had datasets of several shapes (ledger-memory-min: trees of files of one size each), a dataset."""
    run = load_run(run_dir)
    fp_id = str(run.fingerprint.get("fingerprint_id") or "?")
    each = shapes(run.runs)
    kinds = sorted(set(each), key=lambda s: (s[0] // s[1], s))
    out = []
    for shape in kinds:
        runs = run.runs[[s == shape for s in each]]
        out += _rows(runs, run_conditions(run, shown_as, shape if len(kinds) > 1 else None)[1], fp_id, shown_as,
                     shape[0] if len(kinds) > 1 else 0, run.plan.get("cached_share"))
    return out


def _rows(runs: pd.DataFrame, conditions: list[Condition], fp_id: str, shown_as: str, sized: int,
          share: float | None = None) -> list[Row]:
    out = []
    for c in conditions:
        mine = runs[runs["condition"] == c.name] if "condition" in runs else runs
        if "read_cap" in mine and mine["read_cap"].notna().any():
            continue
        defaults = [x for x in c.wall.columns if c.groups[x] == DEFAULTS_GROUP and c.tools[x] in HASHERS]
        if len(defaults) != 1:
            raise LedgerError(f"{shown_as}: condition {c.name} has {len(defaults)} commands of group "
                              f"{DEFAULTS_GROUP!r} (uring_b3sum's defaults), not one")
        label = defaults[0]
        wall = c.wall
        own = min((x for x in wall.columns if _is_own(c, x)), key=lambda x: wall[x].median())
        b3sums = [x for x in wall.columns if _is_b3sum(c, x)]
        b3sum = min(b3sums, key=lambda x: wall[x].median()) if b3sums else None
        limit = c.limit
        device = str(mine["device"].dropna().iloc[0]) if "device" in mine and mine["device"].notna().any() else "disk"
        files = int(mine["files"].dropna().iloc[0]) if "files" in mine and mine["files"].notna().any() else 1
        chose = _choices(mine, own) if own != label else None
        same = _same_choices(chose, _choices(mine, label))
        out.append(Row(
            machine=fp_id, work=_work(str(mine["cache"].iloc[0]), files, device, c.cores, sized, share), run=shown_as,
            rounds=int(wall[label].notna().sum()), defaults_s=float(wall[label].median()),
            vs_own=stats.paired_ratio(wall[label], wall[own]),
            own="defaults" if own == label else without_condition(own).removeprefix("uring_b3sum ")
            + (" (the defaults' choices)" if same else ""),
            vs_b3sum=stats.paired_ratio(wall[label], wall[b3sum]) if b3sum else None,
            b3sum_wins=(f"{int((wall[label] < wall[b3sum]).sum())} of {int((wall[label] * wall[b3sum]).notna().sum())}"
                        if b3sum else "-"),
            b3sum=without_condition(b3sum) if b3sum else "-",
            vs_limit=stats.paired_ratio(wall[label], limit) if limit is not None else None,
            limit_s=float(limit.median()) if limit is not None else None,
            hot=str(mine["cache"].iloc[0]) != "cold", file_size=c.file_size, same_choices=same))
    return out


def _size(n: int | None) -> str:
    return "?" if not n else f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n >> 10} KiB"


def machine_line(fp: dict, disk_rate: float | None) -> str:
    """What the ledger's figures depend on, for one machine."""
    signature = fp.get("cpu_signature") or "family/model/stepping not recorded"
    virt = fp.get("virtualization") or "?"
    rate = f"cold plain read {disk_rate / 1e9:.2f} GB/s" if disk_rate else "cold read rate not in the ledger"
    # a cached run's files are warmed before each command; by hand they may have left the cache
    reclaim = fp.get("page_cache_reclaim")
    idle = f"; idle page cache paged out: {reclaim}" if reclaim and reclaim != "none" else ""
    return (f"{fp.get('cpu_model', '?')} ({signature}), BLAKE3 SIMD {str(fp.get('blake3_simd', '?')).upper()}, "
            f"L2 {_size(fp.get('l2_cache_bytes'))} per core, {fp.get('cores', '?')} cores, {virt}; "
            f"{fp.get('fs_type', '?')} on {fp.get('device_driver') or '?'}, {rate}{idle}")


def _run_dirs(ledger: Path) -> list[Path]:
    """Every kept run under the ledger: <machine>/<suite>/ with a runs.csv, no symlink on the way."""
    if ledger.is_symlink() or not ledger.is_dir():
        raise LedgerError(f"{ledger}: not a directory")
    found = []
    for machine in sorted(p for p in ledger.iterdir() if p.is_dir() and not p.is_symlink()):
        for suite in sorted(p for p in machine.iterdir() if p.is_dir() and not p.is_symlink()):
            if (suite / "runs.csv").is_file() and not (suite / "runs.csv").is_symlink():
                found.append(suite)
    return found


def _estimate(e: stats.Estimate | None, digits: int = 2) -> str:
    return e.text(digits) if e is not None else "-"


def table(ledger: Path = LEDGER_DIR, shown_as: str = "docs/ledger") -> str:
    """The machines, then one row a machine x kind of work x kept run."""
    machines: dict[str, dict] = {}
    all_rows: list[Row] = []
    for run_dir in _run_dirs(ledger):
        shown = f"{shown_as}/{run_dir.parent.name}/{run_dir.name}"
        try:
            fp = json.loads((run_dir / "meta.json").read_text(encoding="utf-8")).get("fingerprint") or {}
        except (OSError, ValueError) as e:
            raise LedgerError(f"{shown}/meta.json: {e}") from e
        found = rows(run_dir, shown)
        machines.setdefault(run_dir.parent.name, fp)
        all_rows += found
    if not all_rows:
        raise LedgerError(f"{ledger}: no kept run (make ledger keeps one)")
    out = ["Machines (the directory under the ledger is the fingerprint id its runs recorded):", ""]
    for machine, fp in machines.items():
        disk = [r.file_size / r.limit_s for r in all_rows
                if r.machine == fp.get("fingerprint_id") and r.work.startswith("cold file, disk") and r.limit_s]
        rate = max(disk) if disk else None
        out.append(f"- `{machine}`: {machine_line(fp, rate)}")
    head = ["machine", "kind of work", "run", "rounds", "defaults", "× own best", "own best", "× b3sum (faster in)",
            "b3sum", "× limit", "limit", "targets met"]
    out += ["", "| " + " | ".join(head) + " |", "| " + " | ".join(["---"] * 3 + ["---:"] * 3 + ["---"] + ["---:"]
                                                                   + ["---"] + ["---:"] * 2 + ["---"]) + " |"]
    for r in sorted(all_rows, key=lambda r: (r.machine, r.work, r.run)):
        out.append("| " + " | ".join([
            f"`{r.machine}`", r.work, f"`{r.run.rsplit('/', 1)[-1]}`", str(r.rounds), f"{r.defaults_s:.3f} s",
            _estimate(r.vs_own, 3), r.own, f"{_estimate(r.vs_b3sum)} ({r.b3sum_wins})", r.b3sum,
            _estimate(r.vs_limit), f"{r.limit_s:.3f} s" if r.limit_s else "-", r.meets]) + " |")
    return "\n".join(out) + "\n"


def keep(run_dir: Path, ledger: Path = LEDGER_DIR) -> Path:
    """Copy one finished run's records to <ledger>/<its fingerprint id>/<its config's name>/, replacing
    what that machine kept of the same suite (git keeps the history)."""
    if run_dir.is_symlink() or not (run_dir / "runs.csv").is_file():
        raise LedgerError(f"{run_dir}: not a finished run directory (no runs.csv)")
    try:
        meta = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise LedgerError(f"{run_dir}/meta.json: {e}") from e
    fp_id, config = (meta.get("fingerprint") or {}).get("fingerprint_id"), (meta.get("config") or {}).get("path")
    if not fp_id or not config:
        raise LedgerError(f"{run_dir}/meta.json: no fingerprint id or config path: not a run to keep")
    if not meta.get("finished_at"):
        raise LedgerError(f"{run_dir}: the run did not finish (meta.json has no finished_at): not kept")
    dest = ledger / fp_id / Path(str(config)).stem
    for step in (ledger, ledger / fp_id, dest):
        if step.is_symlink():
            raise LedgerError(f"{step}: a symlink; the ledger is not written through one")
    if dest.exists():
        if (dest / "README.md").is_file():
            print(f"note: {dest}/README.md told the story of the run this one replaces: it is gone with it "
                  "(git has it); write the new run's", file=sys.stderr)
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name in RECORDS:
        src = run_dir / name
        if src.is_file() and not src.is_symlink():
            shutil.copyfile(src, dest / name)
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    k = sub.add_parser("keep", help="copy runs' records into the ledger, under their machine")
    k.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    k.add_argument("--ledger", type=Path, default=LEDGER_DIR)
    t = sub.add_parser("table", help="print the ledger's table")
    t.add_argument("ledger", nargs="?", type=Path, default=LEDGER_DIR)
    args = ap.parse_args(argv)
    try:
        if args.verb == "keep":
            for run_dir in args.run_dirs:
                print(f"kept {run_dir} as {keep(run_dir, args.ledger)}")
        else:
            print(table(args.ledger), end="")
    except (LedgerError, RunDirError) as e:
        print(f"fatal: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
