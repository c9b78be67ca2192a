"""Read a run directory written by `ringsum run` into typed pandas tables.

This is the stable entry point for everything that reads results (`ringsum report`,
`ringsum check`): `load_run()`, `speed_limit()`, `load_trace()`. The per-command reduction of
a runs table is harness/pipeline/results.py's `command_stats()`, the one every summary, chart and check uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from harness import stats
from harness.pipeline import results as harness_results
from harness.pipeline import verdict
from harness.pipeline.verdict import SpeedLimit

RUNS_CSV = harness_results.RUNS_CSV
META_JSON = harness_results.META_JSON
PLAN_JSON = harness_results.PLAN_JSON
TRACE_INDEX = harness_results.TRACE_INDEX_CSV



# Columns a runs.csv must have to be read at all; knob columns added to the harness later are
# read as empty from older run directories.
REQUIRED = ["label", "tool", "variant", "file", "file_size", "cache", "round", "wall_s",
            "throughput_Bps", "exit_code", "hash_ok", "started_at"]


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
        which looked several times (meta.json `sequential`, harness/pipeline/sequential.py)."""
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


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RunDirError(f"{path}: unreadable JSON ({e})") from e
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: expected a JSON object")
    return data


def _read_trace_index(path: Path) -> pd.DataFrame:
    columns = harness_results.TRACE_INDEX_COLUMNS
    if not path.exists():
        return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})
    try:
        index = pd.read_csv(path, dtype={"label": "string", "file": "string", "trace": "string"},
                            keep_default_na=False, na_values=[""])
    except (OSError, ValueError, pd.errors.ParserError) as e:
        raise RunDirError(f"{path}: unreadable CSV ({e})") from e
    missing = [c for c in columns if c not in index.columns]
    if missing:
        raise RunDirError(f"{path}: missing columns {', '.join(missing)}")
    index["exit_code"] = pd.to_numeric(index["exit_code"], errors="coerce").astype("Int64")
    index["hash_ok"] = index["hash_ok"].map({True: True, False: False, "True": True,
                                             "False": False}).astype("boolean")
    return index


def load_run(path: str | Path) -> Run:
    """Load a run directory; raise RunDirError naming the file when it is not a usable run."""
    path = Path(path)
    csv_path = path / RUNS_CSV
    if not csv_path.is_file():
        raise NotARunDir(f"{path}: not a run directory (no {RUNS_CSV})")
    try:
        header = csv_path.open(encoding="utf-8").readline().strip().split(",")
    except (OSError, UnicodeDecodeError) as e:
        raise RunDirError(f"{csv_path}: unreadable ({e})") from e
    if header == [""]:
        raise RunDirError(f"{csv_path}: empty file (no header, no runs)")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise RunDirError(f"{csv_path}: not a runs table (missing columns: {', '.join(missing)})")
    try:
        runs = harness_results.read_runs(csv_path)
    except (ValueError, TypeError) as e:
        raise RunDirError(f"{csv_path}: corrupt row ({e})") from e
    for c in ("label", "tool", "variant", "group", "extra", "file", "cache", "error"):
        runs[c] = runs[c].astype("string")
    runs["started_at"] = pd.to_datetime(runs["started_at"], utc=True, errors="coerce")
    return Run(path=path, meta=_read_json(path / META_JSON), runs=runs,
               traces=_read_trace_index(path / TRACE_INDEX), plan=_read_json(path / PLAN_JSON))


def speed_limit(run: Run, file_size: int | None = None) -> SpeedLimit | None:
    """The speed limit of the run's file of that size (default: the largest), recomputed from
    runs.csv by the harness's one definition (harness/pipeline/verdict.py); None without a reader."""
    runs = run.runs if file_size is None else run.runs[run.runs["file_size"] == file_size]
    return verdict.speed_limit(runs)


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
