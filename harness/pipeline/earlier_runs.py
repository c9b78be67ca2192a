"""What earlier runs on this machine measured, for `ringsum plan`'s duration estimate.

The run directories are the results directory's children (`ringsum run --out`, default results/)
whose meta.json has this machine's fingerprint id (harness/machine/sysinfo.py) and a finish time. From each
successful execution of their runs.csv comes its seconds per byte read (wall time / bytes), and from
the gap between one execution's end and the next one's start the overhead per execution (the page
cache drop, hyperfine's start). A command of the plan then takes the median seconds per byte of the
same command before (the same label, but for its condition and dataset tags), else of the same tool
and variant, scaled to its bytes now; always in the same cache mode and machine condition, on a file
or a tree as now, of a size within `SIZE_RANGE` of it (a fixed start-up cost does not scale). A
command never measured is estimated from the nominal figures, but for the read rate: the plain
readers' (PLAIN_READERS) measured one when there is.

The directory is anyone's to write into: a symlink in it, or a run directory's file that is one, is
never followed, and a run directory that cannot be read whole is left out, never an error.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import stat
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.catalog.tools import READ_TOOLS, SELF_TIMED, tools_with
from harness.judge.robust import configuration
from harness.conditions.spec import AS_IS
from harness.machine import sysinfo

if TYPE_CHECKING:
    from harness.pipeline.plan import Command

# The readers whose wall time is their reading (a self-timed reader's includes its start-up).
PLAIN_READERS = tuple(t for t in READ_TOOLS if t not in tools_with(SELF_TIMED))
SIZE_RANGE = 4  # an execution teaches about files from a quarter of its size to four times it
LARGEST_FILE = 256 << 20  # a meta.json or runs.csv larger than this is no run directory's
DATASET_TAG = re.compile(r" \[[^\]]*\]$")  # " [64K]": the dataset's name, when a run has several

# (cache, condition, tree): where a measurement applies; then the command's configuration, or its
# tool, variant and thread count.
Where = tuple[str, str, bool]


@dataclass(frozen=True)
class Execution:
    """One successful execution of an earlier run, as the estimate uses it."""

    where: Where
    configuration: str
    tool: str
    variant: str  # "variant threads": with the tool, the coarser match
    file_size: int
    wall_s: float


@dataclass(frozen=True)
class Learned:
    """The measurements of this machine's earlier finished runs."""

    fingerprint_id: str
    run_dirs: tuple[Path, ...]
    executions: dict[Where, tuple[Execution, ...]]  # by where they apply
    overhead_by_cache: dict[str, float] = field(default_factory=dict)  # cache mode -> median seconds

    def execution_s(self, c: "Command", cache: str) -> float | None:
        """Seconds one execution of `c` took before, scaled to its bytes now; None: nothing comparable."""
        near = [e for e in self.executions.get((cache, c.condition.name, c.files > 1), ())
                if c.file_size / SIZE_RANGE <= e.file_size <= c.file_size * SIZE_RANGE]
        for same in ([e for e in near if e.configuration == command_configuration(c.label, c.condition.name)],
                     [e for e in near if (e.tool, e.variant) == (c.tool, variant_key(c.variant, c.num_threads))]):
            if same:
                return statistics.median(e.wall_s / e.file_size for e in same) * c.file_size
        return None

    def read_Bps(self, cache: str, condition: str) -> float | None:
        """How fast the plain readers read a file (not a tree) in that cache mode and condition, median."""
        rates = [e.file_size / e.wall_s for e in self.executions.get((cache, condition, False), ())
                 if e.tool in PLAIN_READERS]
        return statistics.median(rates) if rates else None

    def overhead_s(self, cache: str) -> float | None:
        return self.overhead_by_cache.get(cache)

    def describe(self) -> str:
        return (f"learned from {len(self.run_dirs)} earlier run{'s' if len(self.run_dirs) != 1 else ''} "
                f"on this machine ({self.fingerprint_id})")


def command_configuration(label: str, condition: str) -> str:
    """A label without its condition's and its dataset's tags: the same command in another run."""
    return DATASET_TAG.sub("", configuration(label, condition))


def variant_key(variant: str, num_threads: Any) -> str:
    """b3sum on one thread and on all are one variant, but not one speed."""
    return f"{variant} {num_threads or ''}".strip()


def _read_regular(path: Path) -> str | None:
    """A regular file's text, or None: a symlink (never followed), a FIFO or device, too large,
    unreadable or not UTF-8."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > LARGEST_FILE:
            return None
        try:
            return f.read(LARGEST_FILE + 1).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None


def _fingerprint_of(run_dir: Path) -> str | None:
    """The fingerprint id of a finished run directory; None when it is not one."""
    text = _read_regular(run_dir / "meta.json")
    try:
        meta = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(meta, dict) or not meta.get("finished_at") or not isinstance(meta.get("fingerprint"), dict):
        return None
    found = meta["fingerprint"].get("fingerprint_id")
    return found if isinstance(found, str) else None


def _executions(run_dir: Path) -> tuple[list[Execution], list[float]] | None:
    """The run's successful executions and the overheads between executions; None when its
    runs.csv is missing or a row of it is not a runs.csv row."""
    text = _read_regular(run_dir / "runs.csv")
    if not text:
        return None
    text = text[: text.rfind("\n") + 1]  # a torn last line: the run was killed while writing it
    done: list[Execution] = []
    timeline: list[tuple[datetime, float]] = []
    try:
        for row in csv.DictReader(io.StringIO(text)):
            if None in row or None in row.values():
                raise ValueError("a row with more or fewer cells than the header")
            if row.get("exit_code") != "0" or not row.get("wall_s") or row.get("hash_ok") == "False":
                continue
            condition = row.get("condition") or AS_IS
            wall_s, file_size = float(row["wall_s"]), int(row["file_size"])
            if not (0 < wall_s < math.inf and file_size > 0):
                continue
            done.append(Execution(where=(row["cache"], condition, int(row.get("files") or 1) > 1),
                                  configuration=command_configuration(row["label"], condition),
                                  tool=row["tool"], variant=variant_key(row["variant"], row.get("num_threads")),
                                  file_size=file_size, wall_s=wall_s))
            timeline.append((datetime.fromisoformat(row["started_at"].replace("Z", "+00:00")), wall_s))
        timeline.sort()  # TypeError: times with and without a zone
    except (KeyError, TypeError, ValueError, csv.Error):
        return None
    gaps = [(b[0] - a[0]).total_seconds() - a[1] for a, b in zip(timeline, timeline[1:])]
    return done, [g for g in gaps if g > 0]


def learn(results_dir: Path, fingerprint_id: str) -> Learned | None:
    """What the finished runs of this machine (fingerprint_id) under results_dir measured; None
    when none has a successful execution."""
    try:
        children = sorted(results_dir.iterdir())
    except OSError:
        return None
    run_dirs: list[Path] = []
    executions: dict[Where, list[Execution]] = {}
    overheads: dict[str, list[float]] = {}
    for run_dir in children:
        if run_dir.is_symlink() or not run_dir.is_dir() or _fingerprint_of(run_dir) != fingerprint_id:
            continue
        read = _executions(run_dir)
        if not read or not read[0]:
            continue
        done, gaps = read
        run_dirs.append(run_dir)
        for e in done:
            executions.setdefault(e.where, []).append(e)
        caches = {e.where[0] for e in done}
        if len(caches) == 1:  # a gap belongs to a cache mode only when the run had one
            overheads.setdefault(caches.pop(), []).extend(gaps)
    if not run_dirs:
        return None
    return Learned(fingerprint_id, tuple(run_dirs), {where: tuple(e) for where, e in executions.items()},
                   {cache: statistics.median(gaps) for cache, gaps in overheads.items() if gaps})


def this_machine(dataset: str | os.PathLike[str]) -> str:
    """The fingerprint id a run of this dataset would record; a file still to be generated is
    fingerprinted by the directory it will be in (its filesystem and device are the run's)."""
    path = Path(dataset).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return str(sysinfo.fingerprint(path)["fingerprint_id"])
