"""Baselines for `ringsum check`: saved run directories, kept per machine fingerprint.

    results/baselines/<fingerprint_id>/<name>/
        config.toml meta.json plan.json runs.csv summary.txt   copied from the run directory
        instructions.json                                     instruction counts (optional)

Like the rest of results/, baselines are not committed: a baseline is only meaningful on the
machine (fingerprint) that measured it. `ringsum check --baseline` takes a run directory, a
saved baseline's name, or `latest` (both looked up under this machine's fingerprint).

ringsum installed outside a checkout (a venv, pipx: no results/ beside the package) keeps them in
the user's data directory instead, $XDG_DATA_HOME/ringsum/baselines (~/.local/share/ringsum/baselines).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.catalog.variants import REPO_ROOT
from harness.check.instructions import INSTRUCTIONS_JSON
from harness.check.load import CheckError, is_run_dir
from harness.judge import results as res
from harness.judge.counters import COUNTERS_CSV


def baselines_root() -> Path:
    """The checkout's results/baselines, or the user's data directory's when installed (see above)."""
    if (REPO_ROOT / "results").is_dir():
        return REPO_ROOT / "results" / "baselines"
    data = os.environ.get("XDG_DATA_HOME", "")
    return (Path(data) if os.path.isabs(data) else Path.home() / ".local" / "share") / "ringsum" / "baselines"


BASELINES = baselines_root()
KEPT_FILES = ("config.toml", res.META_JSON, res.PLAN_JSON, res.RUNS_CSV, res.SUMMARY_TXT, res.SUMMARY_JSON,
              COUNTERS_CSV, INSTRUCTIONS_JSON)


@dataclass(frozen=True)
class Baseline:
    fingerprint_id: str
    name: str
    path: Path
    started_at: str


def run_fingerprint(run_dir: Path) -> str:
    meta = res.read_json(run_dir / res.META_JSON)
    fp = (meta.get("fingerprint") or {}).get("fingerprint_id")
    if not fp:
        raise CheckError(f"{run_dir}: meta.json has no fingerprint_id")
    return str(fp)


def save(run_dir: Path, name: str | None = None, root: Path = BASELINES, replace: bool = False) -> Path:
    """Copy the run's records (not raw/ or traces/) to root/<fingerprint_id>/<name>."""
    if not is_run_dir(run_dir):
        raise CheckError(f"{run_dir}: not a run directory (runs.csv and meta.json needed)")
    meta = res.read_json(run_dir / res.META_JSON)
    if not meta.get("finished_at"):
        raise CheckError(f"{run_dir}: the run did not finish (ringsum run --resume {run_dir})")
    name = name or run_dir.resolve().name
    if "/" in name or name in ("", ".", "..", "latest"):
        raise CheckError(f"bad baseline name {name!r}")
    dest = root / run_fingerprint(run_dir) / name
    if dest.exists():
        if not replace:
            raise CheckError(f"baseline {dest} exists (pass --replace)")
        shutil.rmtree(dest)
    try:
        dest.mkdir(parents=True)
        for f in KEPT_FILES:
            if (run_dir / f).is_file():
                shutil.copy2(run_dir / f, dest / f)
    except OSError as e:
        raise CheckError(f"cannot save the baseline in {dest}: {e.strerror or e}") from None
    return dest


def list_baselines(root: Path = BASELINES, fingerprint_id: str | None = None) -> list[Baseline]:
    """Saved baselines, oldest run first."""
    out = []
    for fp_dir in sorted(root.glob("*")) if root.is_dir() else []:
        if fingerprint_id is not None and fp_dir.name != fingerprint_id:
            continue
        for d in fp_dir.iterdir():
            if is_run_dir(d):
                started = str(res.read_json(d / res.META_JSON).get("started_at") or "")
                out.append(Baseline(fp_dir.name, d.name, d, started))
    return sorted(out, key=lambda b: (b.started_at, b.name))


def find(spec: str, fingerprint_id: str, root: Path = BASELINES) -> Path:
    """A run directory, or a saved baseline's name (or `latest`) for this machine."""
    p = Path(spec)
    if is_run_dir(p):
        return p
    if spec == "latest":
        saved = list_baselines(root, fingerprint_id)
        if not saved:
            raise CheckError(f"no saved baseline for this machine ({root}/{fingerprint_id}/); "
                             "measure one and `ringsum baseline save RUN_DIR`")
        return saved[-1].path
    candidate = root / fingerprint_id / spec
    if "/" not in spec and is_run_dir(candidate):
        return candidate
    raise CheckError(f"baseline {spec!r} not found: neither a run directory nor a saved baseline "
                     f"in {root / fingerprint_id}")
