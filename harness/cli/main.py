"""`ringsum` command line: run, plan, knobs, sysinfo, report, collect, check, compare, baseline,
instructions, tune, wisdom, bisect, history.

Errors print `ringsum: <one line>` on stderr. Exit codes: 0 fine; 1 the run failed (hash
mismatch, failed executions); 2 usage, config or set-up error found before anything ran;
130 ended by SIGINT, SIGTERM or SIGHUP (settings put back; resume with --resume). `ringsum check`:
0 no regression; 1 a regression or a failed command; 2 could not compare (missing baseline, too
few runs, no common reference, no hasher in both runs). `ringsum compare`: 0 compared; 3 not
compared (the runs measured different things); 2 a run could not be read.

The command line is the one place that wires the packages together: each command's parser and
handler live in a module of their own (harness/cli/check.py, harness/cli/tune.py, harness/cli/info.py, harness/cli/history.py,
harness/compare.py, analysis/cli.py), and this module only builds the parser and dispatches. It is
also the one module of `harness` that imports `analysis` (tests/test_layout.py).
"""

from __future__ import annotations

import argparse
import sys

from analysis import cli as report_cli
from harness import __version__, compare
from harness.catalog.knobs import KnobsError
from harness.check.load import CheckError
from harness.cli import check, history, info, tune
from harness.cli.args import Parser, add_file_args, minutes_arg, posint_arg
from harness.conditions.spec import condition_overrides
from harness.datasets.generate import FileError
from harness.machine.page_cache import CacheError
from harness.machine.state import StateError
from harness.pipeline.config import ConfigError
from harness.pipeline.plan import PlanError
from harness.pipeline.preflight import SetupError
from harness.pipeline.run import run
from harness.pipeline.run_request import Options

COMPARE_HELP = "each command's change from one finished run to another: faster, slower, no change"


def make_parser() -> argparse.ArgumentParser:
    ap = Parser(prog="ringsum", description="Benchmark io_uring BLAKE3 file hashers.")
    ap.add_argument("--version", action="version", version=f"ringsum {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    _add_run_parser(sub)
    info.add_parsers(sub)
    report_cli.add_report_parser(sub)
    co = sub.add_parser("collect", help="the runs of a fleet: one tidy table and one row per machine")
    co.add_argument("dirs", nargs="+", metavar="DIR", help="run directories, or directories holding them")
    co.add_argument("--out", default="results/fleet", metavar="DIR",
                    help="where fleet.md, fleet-runs.csv and fleet-machines.csv go (default results/fleet)")
    check.add_parsers(sub)
    compare.add_parser(sub, COMPARE_HELP)
    tune.add_parser(sub)
    tune.add_wisdom_parser(sub)
    history.add_parser(sub)
    history.add_history_parser(sub)
    return ap


def _add_run_parser(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("run", help="expand a config, run it, write a run directory")
    r.add_argument("config", nargs="?", help="config TOML (optional with --resume)")
    add_file_args(r)
    r.add_argument("--out", default="results", metavar="DIR", help="parent of run directories")
    r.add_argument("--resume", metavar="RUN_DIR", help="finish an interrupted run")
    r.add_argument("--seed", type=int, help="shuffle seed (default: config's or random)")
    r.add_argument("--against", metavar="BIN_DIR",
                   help="also run every hasher from BIN_DIR (a baseline build), labelled baseline:..., "
                        "in the same rounds (A/B; `ringsum check --against` judges such a run)")
    r.add_argument("--yes", action="store_true", help="start a plan estimated at over an hour")
    r.add_argument("--until-decided", action="store_true",
                   help="after the rounds, add rounds to the contenders only until the headline names a winner "
                        "(each look stricter, so that all looks together err at most 5%%) or the budget ends")
    r.add_argument("--budget", type=minutes_arg, metavar="MINUTES", help="with --until-decided: time for added rounds")
    r.add_argument("--max-rounds", type=posint_arg, metavar="N",
                   help="with --until-decided: rounds at most (default 4 x the config's, at most 100)")
    r.add_argument("--report", action="store_true",
                   help="then `ringsum report` the run directory (unless the run exits 2); the run's exit status is kept")


def _cmd_run(a: argparse.Namespace) -> int:
    if a.config is None and a.resume is None:
        print("ringsum: run needs a CONFIG (or --resume RUN_DIR)", file=sys.stderr)
        return 2
    if a.resume and (a.file or a.size or a.rounds or a.warm or a.bin_dir or a.against or condition_overrides(a)
                     or a.until_decided or a.budget or a.max_rounds):
        print("ringsum: --resume takes the run's own settings; drop --file/--size/--rounds/--warm/--bin-dir/--against, "
              "the conditions and --until-decided/--budget/--max-rounds", file=sys.stderr)
        return 2
    if (a.budget or a.max_rounds) and not a.until_decided:
        print("ringsum: --budget and --max-rounds go with --until-decided", file=sys.stderr)
        return 2
    opts = Options(config_path=a.config, file=a.file, size=a.size, dir=a.dir, out=a.out,
                   rounds=a.rounds, resume=a.resume, warm=a.warm, bin_dir=a.bin_dir, seed=a.seed,
                   against=a.against, yes=a.yes, conditions=condition_overrides(a), until_decided=a.until_decided,
                   budget_s=a.budget * 60 if a.budget else None, max_rounds=a.max_rounds)
    outcome = run(opts)
    if not a.report or outcome.code > 1 or outcome.run_dir is None:
        return outcome.code
    reported = report_cli.run_report(argparse.Namespace(run_dirs=[str(outcome.run_dir)], out=None, trace_labels=None))
    return outcome.code or reported


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:  # the short usage, with its commands, and one error line, as any other usage error
        make_parser().print_usage(sys.stderr)
        print("ringsum: no command given (see ringsum --help)", file=sys.stderr)
        return 2
    a = make_parser().parse_args(args)
    try:
        if a.cmd == "run":
            return _cmd_run(a)
        if a.cmd == "compare":
            return compare.run_compare(a)
        if a.cmd == "collect":
            # Deferred for start-up time: pandas loads only for the commands that read runs.
            from analysis.collect import run_collect
            return run_collect(a.dirs, a.out)
        if a.cmd == "history" and a.history_cmd == "show":
            # Deferred for start-up time: matplotlib loads only for the commands that draw.
            from analysis.history_page import run_show
            return run_show(a)
        if a.cmd == "history":
            return history.HISTORY_COMMANDS[a.history_cmd](a)
        if a.cmd == "report":
            return report_cli.run_report(a)
        handlers = {**info.COMMANDS, **check.COMMANDS, **tune.COMMANDS, **history.COMMANDS}
        return handlers[a.cmd](a)
    except (ConfigError, PlanError, SetupError, CheckError, FileError, StateError, KnobsError) as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 2
    except CacheError as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ringsum: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
