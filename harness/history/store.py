"""The history store: one directory per machine and commit, in a results tree a CI job can cache
or publish (`ringsum history add` fills it, `ringsum history show` draws it).

    <store>/REFERENCE                               the reference commit every commit is run beside
    <store>/<fingerprint_id>/<commit>/record.json   the commit, the machine, when, and per command
                                                    its time / the reference build's in the same
                                                    rounds, with its interval and per-round ratios
    <store>/<fingerprint_id>/<commit>/run/          the A/B run directory the record comes from

Commits are measured minutes or months apart, and a machine drifts in between: a first history of
ten commits here, measured one after another, moved by a third with the same C code. So every
commit runs beside one reference build in the same shuffled rounds, and the record keeps the
paired ratio, which the drift of the machine leaves alone. Points measured on another machine live
under another fingerprint and are never joined into one line with these.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness import stats
from harness.judge import results as res
from harness.pipeline.config_schema import BASELINE_PREFIX
from harness.judge.speed_limit import by_round

RECORD_JSON = "record.json"
RUN = "run"
REFERENCE = "REFERENCE"


class StoreError(Exception):
    """A store that cannot be read or written; the message is one line naming the path."""


@dataclass
class Point:
    """One command at one commit: its time / the reference build's in the same rounds, the median
    of the per-round ratios with its interval (stats.paired_rounds), and its own median time."""

    ratio: float
    low: float
    high: float
    n: int
    median_s: float
    ratios: list[float] = field(default_factory=list)  # per round: what a change's interval is drawn from


@dataclass
class Record:
    sha: str
    subject: str
    committed_at: str  # the committer date, ISO 8601
    depth: int  # commits it reaches (git rev-list --count): the points' order, whatever the dates
    measured_at: str
    fingerprint_id: str
    reference: str  # the commit whose build ran beside it
    machine: str  # the machine in words (CPU, SIMD level, cores), as meta.json has it
    config: str
    points: dict[str, Point] = field(default_factory=dict)  # command label -> its time

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Record:
        points = {label: Point(**p) for label, p in doc.pop("points").items()}
        return cls(**doc, points=points)


def points_of(run_dir: Path) -> dict[str, Point]:
    """Every command of a finished A/B run that ran beside its reference twin: the paired ratio."""
    times = by_round(res.read_runs(run_dir / res.RUNS_CSV))
    out = {}
    for label, rounds in times.items():
        twin = times.get(BASELINE_PREFIX + label)
        if label.startswith(BASELINE_PREFIX) or not twin:
            continue
        common = sorted(set(rounds) & set(twin))
        if common:
            e = stats.paired_rounds(rounds, twin)
            out[label] = Point(e.median, e.low, e.high, e.n, stats.median_interval(list(rounds.values())).median,
                               [rounds[r] / twin[r] for r in common])
    return out


def reference(store: Path) -> str | None:
    path = _checked_dir(store) / REFERENCE
    return path.read_text().strip() if path.is_file() and not path.is_symlink() else None


def set_reference(store: Path, sha: str) -> None:
    _checked_dir(store).mkdir(parents=True, exist_ok=True)
    path = _checked_dir(store / REFERENCE)
    path.write_text(sha + "\n")


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
