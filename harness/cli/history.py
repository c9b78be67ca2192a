"""`ringsum bisect` and `ringsum history`: their parsers and what they run (harness/history/; the
history page is drawn by analysis/history_page.py, which harness/cli/main.py calls)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness import stats
from harness.check import decide
from harness.cli.args import fraction_arg, posint_arg, size_arg
from harness.history import add as history_add
from harness.history.bisect import Bisection, Settings
from harness.history.revisions import Repository, RevisionError
from harness.pipeline.config import load_config
from harness.pipeline.run_directory import stamped_dir
from harness.progress import log

HISTORY_HELP = "results across commits: add a commit's measurements to the store, show the store as a page"
DEFAULT_STORE = Path("results") / "history"
HELP = "find the first commit that made the hashers slower (git bisect, each step an A/B check)"
CHECK_CONFIG = Path("configs") / "check.toml"


def add_parser(sub: Any) -> None:
    b = sub.add_parser("bisect", help=HELP)
    b.add_argument("--good", required=True, metavar="REV", help="a commit known to be fast")
    b.add_argument("--bad", required=True, metavar="REV", help="a later commit known (or thought) to be slower")
    b.add_argument("--config", metavar="CONFIG",
                   help=f"the hashers and rounds of each step (default the checkout's {CHECK_CONFIG})")
    b.add_argument("--repo", default=".", metavar="DIR", help="the git repository (default: the current directory)")
    b.add_argument("--rounds", type=posint_arg, metavar="N", help="override the config's rounds")
    b.add_argument("--file", metavar="PATH", help="test file (as for run)")
    b.add_argument("--size", type=size_arg, metavar="SIZE", help="size of the generated random test file")
    b.add_argument("--dir", metavar="DIR", help="where --size generates its file (default build/data)")
    b.add_argument("--threshold", type=fraction_arg, default=decide.DEFAULT_THRESHOLD, metavar="PCT",
                   help="smallest slowdown that counts (default 5%%)")
    b.add_argument("--confidence", type=fraction_arg, default=decide.DEFAULT_CONFIDENCE, metavar="PCT",
                   help="confidence of each step's interval (default 95%%)")
    b.add_argument("--out", default="results", metavar="DIR",
                   help="parent of the bisect's directory (its clone, builds, runs and bisect.json)")


def add_history_parser(sub: Any) -> None:
    h = sub.add_parser("history", help=HISTORY_HELP)
    hsub = h.add_subparsers(dest="history_cmd", required=True, parser_class=type(h))
    add = hsub.add_parser("add", help="build each commit in its own directory, run the config, keep the result")
    add.add_argument("revs", nargs="*", default=["HEAD"], metavar="REV", help="commits (default HEAD)")
    add.add_argument("--config", metavar="CONFIG", help=f"what to run (default the checkout's {CHECK_CONFIG})")
    add.add_argument("--repo", default=".", metavar="DIR", help="the git repository (default: the current directory)")
    add.add_argument("--rounds", type=posint_arg, metavar="N", help="override the config's rounds")
    add.add_argument("--file", metavar="PATH", help="test file (as for run)")
    add.add_argument("--size", type=size_arg, metavar="SIZE", help="size of the generated random test file")
    add.add_argument("--dir", metavar="DIR", help="where --size generates its file (default build/data)")
    add.add_argument("--store", default=str(DEFAULT_STORE), metavar="DIR", help=f"the store (default {DEFAULT_STORE})")
    add.add_argument("--reference", metavar="REV",
                     help="a new store's reference build, run beside every commit (default the first REV)")
    show = hsub.add_parser("show", help="history.html: a chart per command and machine, changes marked")
    show.add_argument("--store", default=str(DEFAULT_STORE), metavar="DIR", help=f"the store (default {DEFAULT_STORE})")
    show.add_argument("--out", metavar="DIR", help="where history.html goes (default: the store)")


def _cmd_history_add(a: argparse.Namespace) -> int:
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


def _cmd_bisect(a: argparse.Namespace) -> int:
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


COMMANDS = {"bisect": _cmd_bisect}
HISTORY_COMMANDS = {"add": _cmd_history_add}
