"""The history store: one directory per machine and commit, in a results tree a CI job can cache
or publish (`ringsum history add` fills it, `ringsum history show` draws it).

    <store>/<fingerprint_id>/<commit>/record.json   the commit, the machine, when, and per command
                                                    its median time with its interval
    <store>/<fingerprint_id>/<commit>/run/          the run directory the record comes from

Points measured on another machine live under another fingerprint and are never joined into one
line with these.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness import stats
from harness.pipeline import results as res
from harness.pipeline.verdict import by_round

RECORD_JSON = "record.json"
RUN = "run"


class StoreError(Exception):
    """A store that cannot be read or written; the message is one line naming the path."""


@dataclass
class Point:
    """One command's time at one commit: its median with the interval (stats.median_interval)."""

    median_s: float
    low_s: float
    high_s: float
    n: int
    times_s: list[float] = field(default_factory=list)  # per round: what a change's interval is drawn from


@dataclass
class Record:
    sha: str
    subject: str
    committed_at: str  # the committer date, ISO 8601
    depth: int  # commits it reaches (git rev-list --count): the points' order, whatever the dates
    measured_at: str
    fingerprint_id: str
    machine: str  # the machine in words (CPU, SIMD level, cores), as meta.json has it
    config: str
    points: dict[str, Point] = field(default_factory=dict)  # command label -> its time

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Record:
        points = {label: Point(**p) for label, p in doc.pop("points").items()}
        return cls(**doc, points=points)


def points_of(run_dir: Path) -> dict[str, Point]:
    """Every succeeded command of a finished run: its median over rounds, with its interval."""
    runs = res.read_runs(run_dir / res.RUNS_CSV)
    out = {}
    for label, rounds in by_round(runs).items():
        times = list(rounds.values())
        if times:
            m = stats.median_interval(times)
            out[label] = Point(m.median, m.low, m.high, m.n, [rounds[r] for r in sorted(rounds)])
    return out


def _checked_dir(path: Path) -> Path:
    if path.is_symlink():
        raise StoreError(f"{path}: a symlink; the store follows none")
    return path


def save(store: Path, record: Record) -> Path:
    """record.json written into <store>/<fingerprint>/<commit>/ (made if missing)."""
    where = _checked_dir(_checked_dir(store) / record.fingerprint_id) / record.sha
    _checked_dir(where).mkdir(parents=True, exist_ok=True)
    tmp = where / (RECORD_JSON + ".tmp")
    tmp.write_text(json.dumps(asdict(record), indent=1) + "\n")
    os.replace(tmp, where / RECORD_JSON)
    return where


def load(store: Path) -> dict[str, list[Record]]:
    """fingerprint_id -> its records, in commit order (depth, then committer date, then hash)."""
    if not store.is_dir() or store.is_symlink():
        raise StoreError(f"{store}: no history store here (fill one with `ringsum history add`)")
    machines: dict[str, list[Record]] = {}
    for path in sorted(store.glob(f"*/*/{RECORD_JSON}")):
        if any(p.is_symlink() for p in (path, path.parent, path.parent.parent)):
            raise StoreError(f"{path}: a symlink; the store follows none")
        try:
            record = Record.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, TypeError, KeyError) as e:
            raise StoreError(f"{path}: not a history record ({e})") from None
        machines.setdefault(record.fingerprint_id, []).append(record)
    for records in machines.values():
        records.sort(key=lambda r: (r.depth, r.committed_at, r.sha))
    return machines
