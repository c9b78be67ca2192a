"""Read a run directory written by `ringsum run` into typed pandas tables.

This is the one entry point for everything that reads a finished run (`ringsum report`, `check`,
`compare`, `tune`, the ledger): `load_run()`, `run_speed_limit()`, `load_trace()`. The per-command reduction of
a runs table is harness/judge/results.py's `command_stats()`, the one every summary, chart and check uses.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from harness import stats
from harness.judge import results as harness_results
from harness.judge.speed_limit import SpeedLimit, speed_limit

RUNS_CSV = harness_results.RUNS_CSV
META_JSON = harness_results.META_JSON
PLAN_JSON = harness_results.PLAN_JSON
TRACE_INDEX = harness_results.TRACE_INDEX_CSV


# Columns a runs.csv must have to be read at all; knob columns added to the harness later are
# read as empty from older run directories.
REQUIRED = ["label", "tool", "variant", "file", "file_size", "cache", "round", "wall_s",
            "throughput_Bps", "exit_code", "hash_ok", "started_at"]
# Never empty in a row: every figure needs them, and every row says what ran on what (a failed
# execution has no wall time or exit code; nothing lacks the rest).
NEVER_BLANK = ("label", "tool", "file", "file_size", "cache", "round")


class RunDirError(ValueError):
    """A run directory that is incomplete or corrupt; the message names the file and problem."""


class NotARunDir(RunDirError):
    """The path is not a run directory at all (missing, or no runs.csv)."""


@dataclass
class Run:
    """One run directory: meta.json, plan.json, runs.csv and the trace index."""

    path: Path
    meta: dict
    runs: pd.DataFrame
    traces: pd.DataFrame
    plan: dict = field(default_factory=dict)

    @property
    def fingerprint(self) -> dict:
        return self.meta.get("fingerprint") or {}

    @property
    def argvs(self) -> dict[str, list[str]]:
        """label -> argv of every command in plan.json."""
        return {str(c.get("label")): [str(a) for a in c.get("argv", [])] for c in self.plan.get("commands", [])}

    @property
    def decision_confidence(self) -> float:
        """The confidence the run's decision is made at: stricter than 95% for a run --until-decided,
        which looked several times (meta.json `sequential`, harness/judge/sequential.py)."""
        looks = self.meta.get("sequential") or {}
        return float(looks.get("confidence", stats.CONFIDENCE))

    @property
    def cache(self) -> str:
        """The run's cache mode(s), e.g. "cold"."""
        return "/".join(sorted(self.runs["cache"].dropna().unique()))

    @property
    def started_at(self) -> pd.Timestamp | None:
        ts = self.meta.get("started_at")
        if ts:
            return pd.Timestamp(ts)
        if len(self.runs) and self.runs["started_at"].notna().any():
            return self.runs["started_at"].min()
        return None


def read_file(run_dir: Path, name: str, reader: Callable[[Path], Any]) -> Any:
    """reader(run_dir / name), any way it fails one RunDirError line naming the file. A symlink is
    refused: a run directory's files are its own, and one planted there could make ringsum (as root)
    read, and quote in an error, any file."""
    path = run_dir / name
    if path.is_symlink():
        raise RunDirError(f"{run_dir}: {name} is a symlink, not the run's own file")
    try:
        return reader(path)
    except (OSError, ValueError, KeyError, TypeError, csv.Error, pd.errors.ParserError) as e:
        # JSON and UTF-8 errors are ValueErrors
        raise RunDirError(f"{run_dir}: {name} unreadable: {' '.join(str(e).split())}") from None


def _runs_table(path: Path) -> pd.DataFrame:
    header = harness_results.read_header(path)
    if not header:
        raise ValueError("empty file (no header, no runs)")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ValueError(f"not a runs table (no {', '.join(missing)} column)")
    runs = harness_results.read_runs(path)
    for column in NEVER_BLANK:
        blank = runs[column].isna() | (runs[column].astype(str) == "")
        if blank.any():
            raise ValueError(f"row {int(blank.to_numpy().argmax()) + 1} after the header has no {column}")
    for c in ("label", "tool", "variant", "group", "extra", "file", "cache", "error"):
        runs[c] = runs[c].astype("string")
    runs["started_at"] = pd.to_datetime(runs["started_at"], utc=True, errors="coerce")
    return runs


def _json_object(path: Path) -> dict:
    """A JSON object, or {} for a file that is not there (an interrupted run may lack plan.json)."""
    if not path.exists():
        return {}
    data = harness_results.read_json(path)
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    return data


def _meta(path: Path) -> dict:
    meta = _json_object(path)
    if not isinstance(meta.get("fingerprint") or {}, dict):
        raise ValueError("not a run's metadata (a JSON object with a fingerprint object)")
    return meta


def _read_trace_index(path: Path) -> pd.DataFrame:
    columns = harness_results.TRACE_INDEX_COLUMNS
    if not path.exists():
        return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})
    index = pd.read_csv(path, dtype={"label": "string", "file": "string", "trace": "string"},
                        keep_default_na=False, na_values=[""])
    missing = [c for c in columns if c not in index.columns]
    if missing:
        raise ValueError(f"missing columns {', '.join(missing)}")
    index["exit_code"] = pd.to_numeric(index["exit_code"], errors="coerce").astype("Int64")
    index["hash_ok"] = index["hash_ok"].map({True: True, False: False, "True": True,
                                             "False": False}).astype("boolean")
    return index


def load_run(path: str | Path) -> Run:
    """The one reader of a run directory (`ringsum report`, `check`, `compare`, `tune`, the ledger):
    raise NotARunDir where there is no runs.csv, RunDirError naming the file and the problem where a
    file is unusable (unreadable, not a runs table, a row without a label, a symlink)."""
    path = Path(path)
    csv_path = path / RUNS_CSV
    if not csv_path.is_file() and not csv_path.is_symlink():
        raise NotARunDir(f"{path}: not a run directory (no {RUNS_CSV})")
    runs = read_file(path, RUNS_CSV, _runs_table)
    return Run(path=path, meta=read_file(path, META_JSON, _meta), runs=runs,
               traces=read_file(path, TRACE_INDEX, _read_trace_index), plan=read_file(path, PLAN_JSON, _json_object))


def run_speed_limit(run: Run, file_size: int | None = None) -> SpeedLimit | None:
    """The speed limit of the run's file of that size (default: the largest), recomputed from
    runs.csv by the one definition (harness/judge/speed_limit.py); None without a reader."""
    runs = run.runs if file_size is None else run.runs[run.runs["file_size"] == file_size]
    return speed_limit(runs)


def load_trace(run: Run, label: str) -> pd.DataFrame:
    """The per-consumer-run trace of one hasher configuration, with `time_ms` (since its first
    row) added; raise KeyError when the run has no trace for that label."""
    rows = run.traces[run.traces["label"] == label]
    if not len(rows):
        raise KeyError(f"{run.path}: no trace for {label!r}")
    trace_path = run.path / str(rows["trace"].iloc[0])
    try:
        trace = pd.read_csv(trace_path, dtype="int64")
    except (OSError, ValueError, pd.errors.ParserError) as e:
        raise RunDirError(f"{trace_path}: unreadable trace ({e})") from e
    trace["time_ms"] = (trace["time_ns"] - trace["time_ns"].iloc[0]) / 1e6 if len(trace) else 0.0
    return trace
