"""Every `ringsum` command's arguments, grouped as `ringsum --help` lists them, and the one place that
names the function each command runs ("module:function"). Only argparse and light modules load here:
a command's own modules load when it runs (harness/cli/main.py), so that `--help`, a usage error and
the completions cost no numpy, pandas or pipeline (tests/test_cli_startup.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

from analysis.cli import add_report_arguments
from harness import __version__
from harness.catalog.variants import BIN_DIR_HELP
from harness.check import settings as check
from harness.cli.args import (Parser, add_file_args, final_rounds_arg, fraction_arg, minutes_arg, posint_arg,
                               size_arg)
from harness.conditions.spec import add_condition_args
from harness.history import CHECK_CONFIG, HISTORY_STORE
from harness.tune import settings as tune



def make_parser() -> argparse.ArgumentParser:
    names = ",".join(name for _, commands in GROUPS for name, *_ in commands)
    ap = Parser(prog="ringsum", usage=f"%(prog)s [-h] [--version] {{{names}}} ...", description="Benchmark io_uring BLAKE3 file hashers.",
                formatter_class=argparse.RawDescriptionHelpFormatter,
                epilog="\n".join(_command_list()) + "\n\n`ringsum COMMAND --help` gives a command's options.")
    ap.add_argument("--version", action="version", version=f"ringsum {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=Parser, metavar="COMMAND", help=argparse.SUPPRESS)
    for _, commands in GROUPS:
        for name, help_text, add_args, handler in commands:
            p = sub.add_parser(name, description=help_text[0].upper() + help_text[1:] + ".")
            p.set_defaults(handler=handler)
            add_args(p)
    return ap


def _command_list() -> list[str]:
    lines = []
    for title, commands in GROUPS:
        lines += ["", f"{title}:"] + [f"  {name:<14}{help_text}" for name, help_text, _, _ in commands]
    return lines[1:]


# --- measuring ---

def _run(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", nargs="?", help="config TOML (optional with --resume)")
    add_file_args(p)
    _run_options(p)
    p.add_argument("--resume", metavar="RUN_DIR", help="finish an interrupted run")
    p.add_argument("--against", metavar="BIN_DIR",
                   help="also run every hasher from BIN_DIR (a baseline build), labelled baseline:..., "
                        "in the same rounds (A/B; `ringsum check --against` judges such a run)")
    p.add_argument("--until-decided", action="store_true",
                   help="after the rounds, add rounds to the contenders only until the headline names a winner "
                        "(each look stricter, so that all looks together err at most 5%%) or the budget ends")
    p.add_argument("--budget", type=minutes_arg, metavar="MINUTES", help="with --until-decided: time for added rounds")
    p.add_argument("--max-rounds", type=posint_arg, metavar="N",
                   help="with --until-decided: rounds at most (default 4 x the config's, at most 100)")


def _run_options(p: argparse.ArgumentParser) -> None:
    """What `run` and `bench` share past the test file: where results go, and what follows the run."""
    p.add_argument("--out", default="results", metavar="DIR", help="parent of run directories")
    p.add_argument("--seed", type=int, help="shuffle seed (default: config's or random)")
    p.add_argument("--yes", action="store_true", help="start a plan estimated at over an hour")
    p.add_argument("--report", action="store_true",
                   help="then `ringsum report` the run directory (unless the run exits 2); the run's exit status is kept")
    e = p.add_argument_group("export, as hyperfine writes them (the run directory keeps everything)")
    e.add_argument("--export-json", metavar="FILE", help="hyperfine's JSON: a result per command, its times in seconds")
    e.add_argument("--export-csv", metavar="FILE", help="hyperfine's CSV: a row per command (mean, stddev, median ...)")
    e.add_argument("--export-markdown", metavar="FILE", help="hyperfine's Markdown table, relative to the fastest")
    p.add_argument("--show-output", action="store_true",
                   help="print the commands' output to the terminal, as hyperfine does (their hashes too)")


def _bench(p: argparse.ArgumentParser) -> None:
    p.add_argument("commands", nargs="+", metavar="COMMAND",
                   help="a shell-free command line, split as the shell would ({file} is the test file; "
                        "{NAME} a --parameter-list value); e.g. 'b3sum {file}'")
    p.add_argument("-L", "--parameter-list", nargs=2, action="append", default=[], metavar=("NAME", "VALUES"),
                   help="run each command once per comma-separated value of {NAME} (repeatable: every combination)")
    p.add_argument("-n", "--command-name", action="append", default=[], metavar="NAME",
                   help="a name for each COMMAND in order (default: the command line)")
    p.add_argument("--reads-only", action="append", default=[], metavar="NAME",
                   help="this command only reads the file: it counts for the speed limit (repeatable)")
    p.add_argument("--no-b3sum", action="store_true", help="do not add b3sum beside the commands")
    add_file_args(p)
    _run_options(p)


def _plan(p: argparse.ArgumentParser) -> None:
    p.add_argument("config")
    add_file_args(p)
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--out", default="results", metavar="DIR",
                   help="parent of run directories, as for run: the estimate learns from this machine's "
                        "earlier ones there (default results)")


def _tune(p: argparse.ArgumentParser) -> None:
    p.add_argument("--space", default=str(tune.DEFAULT_SPACE), metavar="CONFIG",
                   help="config whose hasher commands are the space (default configs/tune.toml)")
    p.add_argument("--file", metavar="PATH", help="test file (default: the space's run.file / run.file_size)")
    p.add_argument("--size", type=size_arg, metavar="SIZE", help="size of the generated random test file")
    p.add_argument("--dir", metavar="DIR", help="where --size generates its file (default build/data)")
    p.add_argument("--warm", action="store_true", help="warm page cache instead of the space's mode")
    p.add_argument("--bin-dir", metavar="DIR", help=BIN_DIR_HELP)
    p.add_argument("--variant", action="append", metavar="NAME", help="search only this variant (repeatable)")
    p.add_argument("--budget", type=minutes_arg, metavar="MINUTES", help="estimated time to spend at most")
    p.add_argument("--final-rounds", type=final_rounds_arg, default=tune.FINAL_ROUNDS, metavar="N",
                   help=f"rounds of the final stage, which races the finalists and the defaults (default "
                        f"{tune.FINAL_ROUNDS}; at least {tune.MIN_FINAL_ROUNDS}); fewer if the cap or the budget "
                        "says so. A small edge needs more: a record holds a pick only where it beat the defaults")
    p.add_argument("--out", default="results", metavar="DIR", help="parent of the tune directory")
    add_condition_args(p)
    p.add_argument("--install", action="store_true",
                   help="make the best uring_b3sum setting its wisdom for the kind of work tuned (a cold or "
                        "cached file, a cold or cached tree) on this machine and device (`ringsum wisdom`)")
    p.add_argument("--compare-full-grid", nargs="?", const="", metavar="RUN_DIR",
                   help="then run the full grid (or read a finished RUN_DIR of it) and compare")


# --- reading results ---

def _compare(p: argparse.ArgumentParser) -> None:
    p.epilog = ("Per command: median time in RUN_A and RUN_B, the ratio B/A with its interval, faster / slower / "
                "no change / inconclusive. Exit 0 compared; 3 not compared (the runs measured different things: "
                "shown side by side, the reason said); 2 when a run cannot be read.")
    p.add_argument("run_a", metavar="RUN_A", help="run directory, or a hyperfine --export-json file of the same "
                   "commands: the reference (the ratio's denominator)")
    p.add_argument("run_b", metavar="RUN_B", help="run directory compared with it")
    p.add_argument("--threshold", default=f"{check.DEFAULT_THRESHOLD:.0%}", metavar="PCT",
                   help="smallest change that counts (default %(default)s)")
    p.add_argument("--confidence", default=f"{check.DEFAULT_CONFIDENCE:.0%}", metavar="PCT",
                   help="confidence of the interval (default %(default)s)")
    p.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown")


def _collect(p: argparse.ArgumentParser) -> None:
    p.add_argument("dirs", nargs="+", metavar="DIR", help="run directories, or directories holding them")
    p.add_argument("--out", default="results/fleet", metavar="DIR",
                   help="where fleet.md, fleet-runs.csv and fleet-machines.csv go (default results/fleet)")


def _history(p: argparse.ArgumentParser) -> None:
    verbs = p.add_subparsers(dest="history_cmd", required=True, parser_class=Parser)
    add = verbs.add_parser("add", help="build each commit in its own directory, run the config, keep the result")
    add.set_defaults(handler="harness.cli.history:cmd_history_add")
    add.add_argument("revs", nargs="*", default=["HEAD"], metavar="REV", help="commits (default HEAD)")
    add.add_argument("--config", metavar="CONFIG", help=f"what to run (default the checkout's {CHECK_CONFIG})")
    _revision_args(add)
    add.add_argument("--store", default=str(HISTORY_STORE), metavar="DIR", help=f"the store (default {HISTORY_STORE})")
    add.add_argument("--reference", metavar="REV",
                     help="a new store's reference build, run beside every commit (default the first REV)")
    show = verbs.add_parser("show", help="history.html: a chart per command and machine, changes marked")
    show.set_defaults(handler="analysis.history_page:run_show")
    show.add_argument("--store", default=str(HISTORY_STORE), metavar="DIR", help=f"the store (default {HISTORY_STORE})")
    show.add_argument("--out", metavar="DIR", help="where history.html goes (default: the store)")


def _revision_args(p: argparse.ArgumentParser) -> None:
    """What history add and bisect share: the repository, and the file and rounds of each build's run."""
    p.add_argument("--repo", default=".", metavar="DIR", help="the git repository (default: the current directory)")
    p.add_argument("--rounds", type=posint_arg, metavar="N", help="override the config's rounds")
    p.add_argument("--file", metavar="PATH", help="test file (as for run)")
    p.add_argument("--size", type=size_arg, metavar="SIZE", help="size of the generated random test file")
    p.add_argument("--dir", metavar="DIR", help="where --size generates its file (default build/data)")


# --- guarding against regressions ---

def _check(p: argparse.ArgumentParser) -> None:
    against = p.add_mutually_exclusive_group()
    against.add_argument("--baseline", metavar="RUN_DIR|NAME",
                         help="a run directory, a baseline saved for this machine (a name, or `latest`), or a "
                              "hyperfine --export-json file of the same commands")
    against.add_argument("--against", metavar="BIN_DIR",
                         help="A/B: run the config's hashers from --bin-dir and from BIN_DIR (the baseline "
                              "build) in the same rounds, and compare them round by round (needs --config); "
                              "a finished A/B run (`ringsum run --against`) is judged so with --current alone")
    current = p.add_mutually_exclusive_group(required=True)
    current.add_argument("--current", metavar="RUN_DIR", help="compare this finished run")
    current.add_argument("--config", metavar="CONFIG", help="run this config now and compare it")
    add_file_args(p)
    p.add_argument("--out", default="results", metavar="DIR", help="parent of the --config run's directory")
    _judgement_args(p, "smallest change that counts (default 5%%)")
    p.add_argument("--inconclusive", choices=("pass", "fail"), default="pass",
                   help="what a hasher whose interval reaches past the threshold (too noisy to tell either way) "
                        "makes the check exit with: pass (0, listed; default) or fail (1)")
    p.add_argument("--resamples", type=posint_arg, default=check.RESAMPLES, metavar="N",
                   help=f"bootstrap resamples (default {check.RESAMPLES})")
    p.add_argument("--min-runs", type=posint_arg, default=check.MIN_RUNS, metavar="N",
                   help=f"fewest executions of a command on each side (default {check.MIN_RUNS})")
    p.add_argument("--markdown", metavar="FILE", help="write the table as Markdown (CI summary)")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML, one testcase per command")
    p.add_argument("--instructions", action="store_true",
                   help="also count the hashers' instructions now and compare with the baseline's")
    p.add_argument("--instruction-tolerance", type=fraction_arg, metavar="PCT",
                   default=check.DEFAULT_INSTRUCTION_TOLERANCE, help="default 1%%")


def _judgement_args(p: argparse.ArgumentParser, threshold_help: str) -> None:
    p.add_argument("--threshold", type=fraction_arg, default=check.DEFAULT_THRESHOLD, metavar="PCT", help=threshold_help)
    p.add_argument("--confidence", type=fraction_arg, default=check.DEFAULT_CONFIDENCE, metavar="PCT",
                   help="confidence of the interval (default 95%%)")


def _baseline(p: argparse.ArgumentParser) -> None:
    verbs = p.add_subparsers(dest="baseline_cmd", required=True, parser_class=Parser)
    save = verbs.add_parser("save", help="keep a finished run as a baseline for this machine")
    save.add_argument("run_dir", metavar="RUN_DIR")
    save.add_argument("--name", help="baseline name (default: the run directory's name)")
    save.add_argument("--replace", action="store_true", help="overwrite a baseline of the same name")
    save.add_argument("--instructions", action="store_true",
                      help="count the hashers' instructions now (build/bin) and keep them with it")
    save.add_argument("--bin-dir", metavar="DIR", help="hasher binaries for --instructions")
    verbs.add_parser("list", help="list saved baselines")


def _instructions(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bin-dir", metavar="DIR", help=BIN_DIR_HELP)
    p.add_argument("--file", metavar="PATH", help="file to hash (default: a random file of --size)")
    p.add_argument("--size", type=size_arg, default=check.INSTRUCTION_FILE_SIZE, metavar="SIZE",
                   help="size of the generated file (default 16M)")
    p.add_argument("--save", metavar="RUN_DIR", help="write RUN_DIR/instructions.json for later checks")


def _bisect(p: argparse.ArgumentParser) -> None:
    p.add_argument("--good", required=True, metavar="REV", help="a commit known to be fast")
    p.add_argument("--bad", required=True, metavar="REV", help="a later commit known (or thought) to be slower")
    p.add_argument("--config", metavar="CONFIG",
                   help=f"the hashers and rounds of each step (default the checkout's {CHECK_CONFIG})")
    _revision_args(p)
    _judgement_args(p, "smallest slowdown that counts (default 5%%)")
    p.add_argument("--out", default="results", metavar="DIR",
                   help="parent of the bisect's directory (its clone, builds, runs and bisect.json)")


# --- the machine and the hashers ---

def _sysinfo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--file", metavar="PATH", help="describe the filesystem and device of this file")
    p.add_argument("--json", action="store_true", help="everything, as JSON (the fingerprint, versions, git)")


def _knobs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bin-dir", metavar="DIR", help=BIN_DIR_HELP)
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--markdown", action="store_true", help="as docs/knobs.md's Markdown table")
    shape.add_argument("--json", action="store_true", help="as JSON")


def _wisdom(p: argparse.ArgumentParser) -> None:
    p.epilog = ("Records live in ~/.config/ringsum/wisdom ($URING_B3SUM_WISDOM overrides; "
                "uring_b3sum --no-wisdom ignores them); sweeps never read them.")
    verbs = p.add_subparsers(dest="wisdom_cmd", required=True, parser_class=Parser)
    verbs.add_parser("show", help="list the records, marking this machine's")
    f = verbs.add_parser("forget", help="drop records: every one, or of one kind of work or this machine")
    f.add_argument("--work", choices=tune.WORKS + tune.RETIRED_WORKS, help="only the records of this kind of work")
    f.add_argument("--this-machine", action="store_true", help="only the records of this CPU and SIMD degree")
    i = verbs.add_parser("install", help="make a finished tune's best uring_b3sum setting the record of its work")
    i.add_argument("tune_dir", metavar="TUNE_DIR", help="a tune directory (ringsum tune wrote it)")
    for v in verbs.choices.values():
        v.add_argument("--bin-dir", metavar="DIR", help=BIN_DIR_HELP)


Command = tuple[str, str, Callable[[argparse.ArgumentParser], None], str]
GROUPS: tuple[tuple[str, tuple[Command, ...]], ...] = (
    ("measure", (
        ("run", "expand a config, run it, write a run directory", _run, "harness.cli.run:cmd_run"),
        ("bench", "time command lines as hyperfine does, in ringsum's interleaved rounds (cold by default)",
         _bench, "harness.cli.bench:cmd_bench"),
        ("plan", "print the expanded commands and the estimated duration", _plan, "harness.cli.info:cmd_plan"),
        ("tune", "find the best hasher configuration without the full grid", _tune, "harness.cli.tune:cmd_tune"),
    )),
    ("read results", (
        ("report", "charts, summary.md and report.html for run directories", add_report_arguments, "analysis.cli:run_report"),
        ("compare", "each command's change from one finished run to another: faster, slower, no change",
         _compare, "harness.compare:run_compare"),
        ("collect", "the runs of a fleet: one tidy table and one row per machine", _collect,
         "analysis.collect:run_collect"),
        ("history", "results across commits: add a commit's measurements to the store, show the store as a page",
         _history, ""),
    )),
    ("guard against regressions", (
        ("check", "compare a run with a baseline run; exit 1 on a regression", _check, "harness.cli.check:cmd_check"),
        ("baseline", "save or list baselines (results/baselines/<fingerprint_id>/, installed: in ~/.local/share/ringsum)", _baseline,
         "harness.cli.check:cmd_baseline"),
        ("instructions", "count the instructions of hashing a hot file (callgrind)", _instructions,
         "harness.cli.check:cmd_instructions"),
        ("bisect", "find the first commit that made the hashers slower (git bisect, each step an A/B check)",
         _bisect, "harness.cli.history:cmd_bisect"),
    )),
    ("the machine and the hashers", (
        ("sysinfo", "the machine a figure depends on (--json: its fingerprint, versions)", _sysinfo,
         "harness.cli.info:cmd_sysinfo"),
        ("knobs", "the hashers' knobs as they describe themselves, for the terminal (--markdown: docs/knobs.md)",
         _knobs, "harness.cli.info:cmd_knobs"),
        ("wisdom", "uring_b3sum's measured choices for this machine: show, forget, install a finished tune's",
         _wisdom, "harness.cli.tune:cmd_wisdom"),
    )),
)

