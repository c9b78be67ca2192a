"""What `ringsum bisect` and `ringsum history add` run (harness/history/; their arguments are in
harness/cli/parser.py, and the history page is drawn by analysis/history_page.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness import stats
from harness.check import decide
from harness.history import CHECK_CONFIG
from harness.history import add as history_add
from harness.history.bisect import Bisection, Settings
from harness.history.revisions import Repository, RevisionError
from harness.pipeline.config import load_config
from harness.pipeline.run_directory import stamped_dir
from harness.progress import log


def cmd_history_add(a: argparse.Namespace) -> int:
    repo_dir = Path(a.repo).absolute()
    config = Path(a.config) if a.config else repo_dir / CHECK_CONFIG
    if not config.is_file():
        raise decide.CheckError(f"{config}: no such config")
    try:
        repo = Repository(repo_dir)
        revs = [repo.resolve(r) for r in a.revs]
        reference = repo.resolve(a.reference) if a.reference else None
        settings = history_add.Settings(config.absolute(), a.rounds, a.file, a.size, a.dir)
        made = history_add.add(repo, revs, Path(a.store), settings, log, reference)
    except RevisionError as e:
        raise decide.CheckError(str(e)) from None
    return 0 if len(made) == len(revs) else 1


def fewest_rounds(confidence: float) -> int:
    """The fewest rounds whose intervals can reach the confidence at all: each command's from min to
    max, all hashers' pooled (a signed-rank interval); fewer can never decide a step."""
    return next(n for n in range(stats.fewest_rounds(confidence), 10_000)
                if stats.shift_interval(range(1, n + 1), confidence).confidence >= confidence)


def cmd_bisect(a: argparse.Namespace) -> int:
    repo_dir = Path(a.repo).absolute()
    config = Path(a.config) if a.config else repo_dir / CHECK_CONFIG
    if not config.is_file():
        raise decide.CheckError(f"{config}: no such config")
    rounds, need = a.rounds or load_config(config).run.rounds, fewest_rounds(a.confidence)
    if rounds < need:  # said before anything is built, not after both ends were
        raise decide.CheckError(f"{rounds} rounds can never decide a step at {a.confidence:.0%}: the fewest that can "
                                f"are {need} (--rounds {need}, or a lower --confidence); nothing was built")
    try:
        repo = Repository(repo_dir)
        good, bad = repo.resolve(a.good), repo.resolve(a.bad)
        if good.sha == bad.sha or not repo.is_ancestor(good, bad):
            raise RevisionError(f"--good {good.short} is not an ancestor of --bad {bad.short}")
        run_dir = stamped_dir(Path(a.out), "bisect-")
        repo.attach(run_dir / "repo.git")
        settings = Settings(config.absolute(), a.rounds, a.file, a.size, a.dir, a.threshold, a.confidence)
        log(f"bisect directory: {run_dir}")
        outcome = Bisection(repo, run_dir, settings, log).run(good, bad)
    except RevisionError as e:
        raise decide.CheckError(str(e)) from None
    print(f"{'commit':<12}  {'verdict':<7}  {'pooled ratio':<23}  {'build':>6}  {'measure':>7}  why")
    for s in outcome.steps:
        ratio = f"{s.ratio[0]:.3f} [{s.ratio[1]:.3f}, {s.ratio[2]:.3f}]" if s.ratio else "-"
        print(f"{s.sha[:12]:<12}  {s.verdict:<7}  {ratio:<23}  {s.build_s:>5.0f}s  {s.measure_s:>6.0f}s  {s.reason}")
    print(f"{outcome.kind}: {outcome.text}")
    print(f"bisect directory: {run_dir}")
    return outcome.exit_code

