"""The results of a run: the runs.csv record and its writer/reader, meta.json, and the per-command
reduction of the runs table (`command_stats()`). What the numbers say (the speed limit, the summary,
the headline) is harness/judge/verdict.py.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Iterable, TypedDict, get_args, get_origin, get_type_hints

from harness.catalog.knobs import load_knobs


RUNS_CSV = "runs.csv"
META_JSON = "meta.json"
PLAN_JSON = "plan.json"
TRACE_INDEX_CSV = "traces/index.csv"  # one row per traced hasher configuration
TRACE_INDEX_COLUMNS = ["label", "file", "trace", "exit_code", "hash_ok"]
SUMMARY_TXT = "summary.txt"
SUMMARY_JSON = "summary.json"


@dataclass
class RunRecord:
    """One timed execution: one row of runs.csv (the column order is the field order)."""

    label: str
    tool: str
    variant: str
    group: str
    block_size: int | None
    queue_depth: int | None
    buffers: int | None
    direct: bool | None
    knobs: dict[str, Any]  # the hashers' own knobs (harness/catalog/knobs.py), a column each; {} for other tools
    num_threads: int | None
    mmap: bool | None
    extra: str
    file: str  # the dataset: a file, or a tree's root directory
    file_size: int  # bytes read (a tree's: over all its files)
    cache: str
    round: int  # 1-based
    position: int  # 0-based index in the round's shuffled order
    wall_s: float | None
    user_s: float | None
    sys_s: float | None
    bytes: int
    throughput_Bps: float | None  # file_size / wall_s
    exit_code: int | None  # None: did not finish (timeout, hyperfine failure)
    resident_before: float | None
    hash_ok: bool | None  # None for tools that do not print a BLAKE3 hash, and when the command failed
    fio_bw_Bps: float | None
    fio_runtime_s: float | None
    started_at: str  # ISO 8601 UTC
    error: str = ""  # why the row failed or is suspect; empty when fine
    files: int | None = 1  # in the dataset (None in a runs.csv written before trees)
    condition: str = "as-is"  # the machine condition's name (harness/conditions/spec.py), then its parts:
    device: str = "disk"  # where the dataset was: "disk" (as it is) or "ram" (a RAM device's copy)
    read_cap: int | None = None  # bytes/s the device was capped at
    cores: int | None = None  # CPUs the command could use (None: all)
    simd: str = "full"  # BLAKE3's build: full, avx2, sse41
    # What the hasher reports it did (--effective, harness/pipeline/effective.py), beside the knobs asked for:
    effective_path: str = ""  # ring, memory, pread, stream ("+"-joined when the files differ)
    effective_block_size: int | None = None  # None: not reported, or not one value over the files
    effective_queue_depth: int | None = None
    effective_buffers: int | None = None
    effective_direct: bool | None = None  # True: every file read with O_DIRECT; None: mixed or not reported
    effective_huge_pages: bool | None = None
    effective_hashing: str = ""  # a ring block on one core (serial), every core (parallel), or when-behind
    effective_hash_threads: int | None = None  # the most threads a block could be hashed on
    effective_staging: str = ""  # a file's tasks: in-place, prefetch, read-once or copy; measured: undecided
    effective_parallel_share: float | None = None  # of the bytes hashed from the ring, the share on every core
    fio_iops: float | None = None  # fio's own read IOPS
    fio_depth: str = ""  # fio's in-flight distribution, "1:0.1 2:0.2 4:99.7" (percent of its time at each depth)


_FIELDS = [f.name for f in fields(RunRecord)]
FIXED = [name for name in _FIELDS if name != "knobs"]  # the columns every runs.csv has


def _typed(kind: type) -> set[str]:
    """The columns whose field is of that type (or None): the record's annotations are the one
    declaration of runs.csv's types."""
    name = kind.__name__
    return {f.name for f in fields(RunRecord) if str(f.type).split(" | ")[0] == name}


_INT = _typed(int)
_FLOAT = _typed(float)
_BOOL = _typed(bool)


def columns(knobs: Iterable[str]) -> list[str]:
    """runs.csv's columns, in order: the record's fields with the hashers' own knobs in place of `knobs`."""
    at = _FIELDS.index("knobs")
    return _FIELDS[:at] + list(knobs) + _FIELDS[at + 1:]


def _knob_value(s: str) -> Any:
    """A knob column's cell: the table says flag or number, runs.csv says it again (True/False or digits)."""
    if s == "":
        return None
    if s in ("True", "False"):
        return s == "True"
    return int(s)


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _uncell(name: str, s: str) -> Any:
    if s == "":
        return "" if name not in (_INT | _FLOAT | _BOOL) else None
    if name in _INT:
        return int(s)
    if name in _FLOAT:
        return float(s)
    if name in _BOOL:
        return s == "True"
    return s


def record_line(rec: RunRecord, columns: list[str]) -> str:
    buf = io.StringIO()
    row = [_cell(getattr(rec, c) if c in FIXED else rec.knobs.get(c)) for c in columns]
    csv.writer(buf, lineterminator="\n").writerow(row)
    return buf.getvalue()


def read_header(path: Path) -> list[str] | None:
    """The columns of an existing runs.csv, None when there is none yet."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return next(csv.reader(f), None)
    except FileNotFoundError:
        return None


class RunsWriter:
    """Appends rows to runs.csv; every row is written and fsync'd on its own, so a kill loses at
    most the row being written (a torn last line is cut off when the file is reopened). A write
    that fails (disk full) is cut off at once and raises OSError: the rows before it stay whole."""

    def __init__(self, path: Path, knobs: Iterable[str] | None = None) -> None:
        """`knobs`: the hashers' own knob columns of a new file (default: the built hashers' table);
        a file resumed keeps its own."""
        self.path = path
        repair_csv(path)
        self.columns = read_header(path) or columns(load_knobs().own if knobs is None else knobs)
        new = not path.exists() or path.stat().st_size == 0
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        if new:
            self._write(",".join(self.columns) + "\n")

    def _write(self, text: str) -> None:
        data = text.encode("utf-8")
        size = os.fstat(self._fd).st_size
        try:
            while data:
                data = data[os.write(self._fd, data):]
            os.fsync(self._fd)
        except OSError:
            try:
                os.ftruncate(self._fd, size)
            except OSError:
                pass  # repair_csv cuts the torn line on the next open
            raise

    def append(self, rec: RunRecord) -> None:
        self._write(record_line(rec, self.columns))

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> "RunsWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def repair_csv(path: Path) -> None:
    """Cut a torn (unterminated) last line left by a kill."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with open(path, "r+b") as f:
            f.truncate(cut)
            f.flush()
            os.fsync(f.fileno())


def read_records(path: Path) -> list[RunRecord]:
    """All complete rows of a runs.csv (a torn last line is ignored)."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    reader = csv.DictReader(io.StringIO(text))
    knobs = knob_columns(reader.fieldnames or [])
    out = []
    for r in reader:
        kw = {c: _uncell(c, r.get(c, "") or "") for c in FIXED}
        out.append(RunRecord(**kw, knobs={c: _knob_value(r.get(c) or "") for c in knobs}))
    return out


def knob_columns(header: list[str]) -> list[str]:
    """The hashers' own knob columns of a runs.csv: every column that is not a fixed one."""
    return [c for c in header if c not in FIXED]


def read_runs(path: str | Path) -> "Any":
    """runs.csv as a pandas DataFrame with proper dtypes (nullable ints/bools)."""
    # Deferred for start-up time: pandas loads only where a table is read.
    import pandas as pd

    p = Path(path)
    if p.is_dir():
        p = p / RUNS_CSV
    recs = read_records(p)
    knobs = knob_columns(read_header(p) or [])
    rows = [{**{c: getattr(r, c) for c in FIXED}, **r.knobs} for r in recs]
    df = pd.DataFrame(rows, columns=columns(knobs))
    for c in knobs:
        flags = all(isinstance(v, bool) for v in df[c].dropna())
        df[c] = df[c].astype("boolean" if flags else "Int64")
    for c in _INT:
        df[c] = df[c].astype("Int64")
    for c in _FLOAT:
        df[c] = df[c].astype("Float64")
    for c in _BOOL:
        df[c] = df[c].astype("boolean")
    return df


# --- meta.json ---

class RunMeta(TypedDict, total=False):
    """meta.json, key by key: its one declaration. The run writes the first group as it starts, the
    rest as they happen; `write_meta` refuses a key or a type not declared here."""

    config: dict  # the config as run (harness/pipeline/config_schema.py's to_json)
    options: dict  # the command line's Options
    fingerprint: dict  # the machine (harness/machine/sysinfo.py)
    versions: dict  # of every tool
    git_commit: str | None
    git_dirty: bool | None
    git_errors: dict
    started_at: str  # ISO 8601 UTC
    finished_at: str | None  # None until it ends; --resume goes on with a run that has none
    resumed_at: list  # when each --resume started
    files: list  # each dataset: path, size, kind, files, b3sum (copy_of for a RAM device's copy)
    speed_limit: dict | None  # written as the run ends (harness/judge/speed_limit.py)
    seed: int
    tools: dict  # tool -> the path run
    python: str
    system_settings: list  # what the run changed on the machine, and back to what
    stopped: list  # each stop before the end: when, why, executions recorded
    outcome: dict  # as the run ends: hash mismatches, failures, warnings
    sequential: dict  # --until-decided: its looks (harness/judge/sequential.py)


def meta_problems(meta: dict[str, Any]) -> list[str]:
    """What in a meta.json is not as RunMeta declares it: a key it does not name, a value of another type."""
    declared = get_type_hints(RunMeta)
    out = []
    for key, value in meta.items():
        if key not in declared:
            out.append(f"{key}: not a meta.json key")
            continue
        kinds = tuple(get_origin(k) or k for k in get_args(declared[key]) or (declared[key],))
        if not isinstance(value, kinds):
            out.append(f"{key}: a {type(value).__name__}, not {' or '.join(k.__name__ for k in kinds)}")
    return out


def write_meta(run_dir: Path, meta: dict[str, Any]) -> None:
    """meta.json, atomically, as RunMeta declares it (a ValueError names what is not)."""
    problems = meta_problems(meta)
    if problems:
        raise ValueError(f"{run_dir / META_JSON}: " + "; ".join(problems))
    write_json_atomic(run_dir / META_JSON, meta)


def json_text(data: Any) -> str:
    """A run directory's JSON files as written: two-space indent, keys in their order, a final newline."""
    return json.dumps(data, indent=2, sort_keys=False, default=str) + "\n"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write to a temporary file, fsync, rename: the old file stays whole if the write fails."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json_text(data))
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# --- reductions of the runs table ---

def succeeded(runs: Any) -> Any:
    """Mask of the executions that count, for every figure ringsum reports: exit code 0, a wall
    time, and a hash that is not known to be wrong."""
    exit_ok = (runs["exit_code"] == 0).fillna(False).astype(bool)
    hash_not_wrong = (runs["hash_ok"] != False).fillna(True).astype(bool)  # noqa: E712 (nullable)
    return exit_ok & runs["wall_s"].notna() & hash_not_wrong


def rows_where(runs: Any, mask: Any) -> Any:
    """The rows of the table the mask selects; all of them without a copy of every column (a run of
    one file or one condition: the judge selects so hundreds of times a summary)."""
    return runs.copy(deep=False) if mask.all() else runs[mask]


def config_columns(runs: Any) -> list[str]:
    """The knobs that tell two configurations of the same tool apart: the runs.csv columns from
    block_size to extra, the hashers' own (whatever knob table the run had) among them."""
    names = list(runs.columns)
    return names[names.index("block_size"):names.index("extra") + 1]


def command_stats(runs: Any) -> Any:
    """The one per-command reduction of a runs table (summary, report, charts, check, bench):
    one row per command label, in first-seen order: its identity and knobs, then n (successful
    executions), failed, mismatches (executions whose hash was wrong), min_s / median_s / max_s /
    mean_s of wall time and median_Bps of throughput over the successful executions only (NaN when
    none succeeded), hash_ok_all (True/False when the tool prints a hash, NA otherwise) and
    first_error (the error of its first failed execution, "" when none failed)."""
    # Deferred for start-up time: pandas loads only where a table is read.
    import pandas as pd

    ok = succeeded(runs)
    identity = ["label", "tool", "variant", "group"] + config_columns(runs) + ["file_size", "cache"]
    labels = runs["label"]
    # A pass a column over the whole table, grouped by label, not a pass a command: the summaries of
    # the kept runs are made again by every test run.
    stats = runs.loc[~labels.duplicated(), identity].reset_index(drop=True)
    order = pd.Index(stats["label"])

    def per_label(values: Any, how: Any) -> Any:
        return values.groupby(labels[values.index], sort=False).agg(how).reindex(order)

    n = per_label(ok, "sum").astype("int64")
    good = runs.loc[ok, ["wall_s", "throughput_Bps"]].astype("float64")
    hashes = runs["hash_ok"]
    stats["n"] = n.to_numpy()
    stats["failed"] = (per_label(ok, "size") - n).astype("int64").to_numpy()
    stats["mismatches"] = per_label((hashes == False).fillna(False), "sum").astype("int64").to_numpy()  # noqa: E712
    for name, how in (("min_s", "min"), ("median_s", "median"), ("max_s", "max")):
        stats[name] = per_label(good["wall_s"], how).to_numpy()
    # Series.mean's own sum, as a command's wall times alone would have it (a grouped mean differs in its last bits)
    stats["mean_s"] = per_label(good["wall_s"], lambda wall: wall.mean()).to_numpy()
    stats["median_Bps"] = per_label(good["throughput_Bps"], "median").to_numpy()
    judged = per_label(hashes.notna(), "sum")
    right = per_label((hashes == True).fillna(False), "sum")  # noqa: E712
    stats["hash_ok_all"] = pd.array([bool(r == j) if j else pd.NA for j, r in zip(judged, right)], dtype="boolean")
    first_error = runs.loc[~ok, ["label", "error"]].drop_duplicates("label").set_index("label")["error"]
    stats["first_error"] = [str(first_error[label]) if failed else "" for label, failed in zip(order, stats["failed"])]
    for c in identity:
        stats[c] = stats[c].astype(runs[c].dtype)
    return stats


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def iso(t: dt.datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")
