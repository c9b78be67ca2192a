"""`ringsum history add [REV ...]`: build each revision in a directory of its own, run the check
config with its hashers beside the store's reference build (A/B, the same rounds), and keep the
paired ratios in the history store (harness/history/store.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.history import store
from harness.history.revisions import Repository, Revision, RevisionError
from harness.judge.results import META_JSON, iso, utcnow
from harness.pipeline.run import run
from harness.pipeline.run_request import Options

WORK = ".work"  # in the store: the private clone, and each build while it is measured


@dataclass
class Settings:
    config: Path
    rounds: int | None = None
    file: str | None = None
    size: int | None = None
    dir: str | None = None


def machine_text(fingerprint: dict) -> str:
    """The machine in words, as every figure names it."""
    l2 = fingerprint.get("l2_cache_bytes")
    return (f"{fingerprint.get('cpu_model') or 'unknown CPU'}, BLAKE3 SIMD {fingerprint.get('blake3_simd') or '?'}, "
            f"L2 {l2 >> 10 if l2 else '?'} KiB per core, {fingerprint.get('cores') or '?'} cores, "
            f"{fingerprint.get('fs_type') or '?'} on {fingerprint.get('source') or '?'}")


def _git(repo: Repository, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo.source), *args], capture_output=True, text=True, timeout=60).stdout.strip()


def _shown(config: Path, root: Path) -> str:
    """A config inside the repository by its path there (a store is published: no machine's paths)."""
    return str(config.relative_to(root)) if config.is_relative_to(root) else str(config)


def add(repo: Repository, revs: list[Revision], history: Path, settings: Settings,
        log: Callable[[str], None], reference: Revision | None = None) -> list[Path]:
    """Each revision measured beside the reference build and recorded; the record directories, in
    the order given. The reference is the store's; a new store takes `reference`, else the first
    revision given."""
    work = history / WORK
    work.mkdir(parents=True, exist_ok=True)
    repo.attach(work / "repo.git")
    kept = store.reference(history)
    if kept and reference and reference.sha != kept:
        raise RevisionError(f"{history} measures beside {kept[:12]}: a store has one reference (a new --store for another)")
    ref = repo.revision(kept) if kept else reference or revs[0]
    builds = work / "builds"
    log(f"history: the reference build, run beside every commit: {ref.text()}")
    ref_bin = repo.build(ref, builds)
    store.set_reference(history, ref.sha)
    made = []
    for rev in revs:
        log(f"history: {rev.text()}: building")
        try:
            bin_dir = repo.build(rev, builds)
        except RevisionError as e:
            log(f"history: {rev.short}: not recorded: {e}")
            continue
        opts = Options(config_path=str(settings.config), file=settings.file, size=settings.size, dir=settings.dir,
                       rounds=settings.rounds, out=str(work / "runs"), bin_dir=str(bin_dir), against=str(ref_bin),
                       yes=True)
        outcome = run(opts)
        if outcome.code != 0 or outcome.run_dir is None:
            log(f"history: {rev.short}: not recorded: the run exited {outcome.code}")
            continue
        meta = json.loads((outcome.run_dir / META_JSON).read_text())
        fingerprint = meta["fingerprint"]
        record = store.Record(sha=rev.sha, subject=rev.subject,
                              committed_at=_git(repo, "log", "-1", "--format=%cI", rev.sha),
                              depth=int(_git(repo, "rev-list", "--count", rev.sha) or 0), measured_at=iso(utcnow()),
                              fingerprint_id=fingerprint["fingerprint_id"], reference=ref.sha,
                              machine=machine_text(fingerprint), config=_shown(settings.config, repo.source),
                              points=store.points_of(outcome.run_dir))
        where = store.save(history, record)
        if (where / store.RUN).exists():
            shutil.rmtree(where / store.RUN)
        shutil.move(str(outcome.run_dir), str(where / store.RUN))
        if rev.sha != ref.sha:
            shutil.rmtree(builds / rev.short, ignore_errors=True)
        log(f"history: {rev.short}: recorded in {where}")
        made.append(where)
    return made
