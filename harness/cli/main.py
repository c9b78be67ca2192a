"""`ringsum` command line: run, plan, sysinfo, report, collect, decide, compare, saved_runs, instructions, tune.

Errors print `ringsum: <one line>` on stderr. Exit codes: 0 fine; 1 the run failed (hash
mismatch, failed executions); 2 usage, config or set-up error found before anything ran;
130 ended by SIGINT, SIGTERM or SIGHUP (settings put back; resume with --resume). `ringsum check`:
0 no regression; 1 a regression or a failed command; 2 could not compare (missing saved_runs, too
few runs, no common reference, no hasher in both runs).

The command line is the one module of `harness` that reaches into `analysis` (the report and
collect commands, imported where they run): every other import goes analysis -> harness
(tests/test_layout.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.cli import info
from harness.cli.args import Parser, add_file_args, posint_arg, size_arg
from harness.conditions.spec import add_condition_args, condition_overrides
from harness.pipeline.config import ConfigError
from harness.pipeline.plan import PlanError
from harness.units import format_size
from harness.catalog.variants import BIN_DIR_HELP


# The subcommands whose modules load numpy and pandas: their full parsers are built only when one of
# them is the command, so that `ringsum --help` and the others start fast.
_HEAVY = {"check": "compare a run with a baseline run; exit 1 on a regression",
          "compare": "each command's change from one finished run to another: faster, slower, no change",
          "baseline": "save or list baselines (results/baselines/<fingerprint_id>/)",
          "instructions": "count the instructions of hashing a hot file (callgrind)",
          "tune": "find the best hasher configuration without the full grid"}


def make_parser(command: str | None = None) -> argparse.ArgumentParser:
    """`command`: the subcommand about to run, if known; None builds every parser in full."""
    from harness import __version__

    ap = Parser(prog="ringsum", description="Benchmark io_uring BLAKE3 file hashers.")
    ap.add_argument("--version", action="version", version=f"ringsum {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=Parser)
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
    r.add_argument("--budget", type=_minutes_arg, metavar="MINUTES", help="with --until-decided: time for added rounds")
    r.add_argument("--max-rounds", type=posint_arg, metavar="N",
                   help="with --until-decided: rounds at most (default 4 x the config's, at most 100)")
    r.add_argument("--report", action="store_true",
                   help="then `ringsum report` the run directory (unless the run exits 2); the run's exit status is kept")
    info.add_parsers(sub)
    from analysis.cli import add_report_parser
    add_report_parser(sub)
    co = sub.add_parser("collect", help="the runs of a fleet: one tidy table and one row per machine")
    co.add_argument("dirs", nargs="+", metavar="DIR", help="run directories, or directories holding them")
    co.add_argument("--out", default="results/fleet", metavar="DIR",
                    help="where fleet.md, fleet-runs.csv and fleet-machines.csv go (default results/fleet)")
    full = command is None or command in _HEAVY
    if full and command in (None, "check", "baseline", "instructions"):
        _add_check_parsers(sub)
    if full and command in (None, "tune"):
        _add_tune_parser(sub)
    if full and command in (None, "compare"):
        from harness import compare
        compare.add_parser(sub, _HEAVY["compare"])
    for name, help_text in _HEAVY.items():
        if name not in sub.choices:
            sub.add_parser(name, help=help_text, add_help=False)
    return ap


def _command_of(argv: list[str]) -> str | None:
    """The subcommand named in argv (the first word that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _fraction_arg(s: str) -> float:
    from harness.check.decide import parse_fraction

    try:
        return parse_fraction(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _add_check_parsers(sub: Any) -> None:
    from harness.check import decide
    from harness.check import instructions

    c = sub.add_parser("check", help=_HEAVY["check"])
    against = c.add_mutually_exclusive_group()
    against.add_argument("--baseline", metavar="RUN_DIR|NAME",
                         help="a run directory, or a baseline saved for this machine (a name, or `latest`)")
    against.add_argument("--against", metavar="BIN_DIR",
                         help="A/B: run the config's hashers from --bin-dir and from BIN_DIR (the baseline "
                              "build) in the same rounds, and compare them round by round (needs --config); "
                              "a finished A/B run (`ringsum run --against`) is judged so with --current alone")
    current = c.add_mutually_exclusive_group(required=True)
    current.add_argument("--current", metavar="RUN_DIR", help="compare this finished run")
    current.add_argument("--config", metavar="CONFIG", help="run this config now and compare it")
    add_file_args(c)
    c.add_argument("--out", default="results", metavar="DIR", help="parent of the --config run's directory")
    c.add_argument("--threshold", type=_fraction_arg, default=decide.DEFAULT_THRESHOLD, metavar="PCT",
                   help="smallest change that counts (default 5%%)")
    c.add_argument("--confidence", type=_fraction_arg, default=decide.DEFAULT_CONFIDENCE, metavar="PCT",
                   help="confidence of the bootstrap interval (default 95%%)")
    c.add_argument("--resamples", type=posint_arg, default=decide.RESAMPLES, metavar="N",
                   help=f"bootstrap resamples (default {decide.RESAMPLES})")
    c.add_argument("--min-runs", type=posint_arg, default=decide.MIN_RUNS, metavar="N",
                   help=f"fewest executions of a command on each side (default {decide.MIN_RUNS})")
    c.add_argument("--markdown", metavar="FILE", help="write the table as Markdown (CI summary)")
    c.add_argument("--junit", metavar="FILE", help="write JUnit XML, one testcase per command")
    c.add_argument("--instructions", action="store_true",
                   help="also count the hashers' instructions now and compare with the baseline's")
    c.add_argument("--instruction-tolerance", type=_fraction_arg, metavar="PCT",
                   default=decide.DEFAULT_INSTRUCTION_TOLERANCE, help="default 1%%")

    b = sub.add_parser("baseline", help=_HEAVY["baseline"])
    bsub = b.add_subparsers(dest="baseline_cmd", required=True, parser_class=Parser)
    bs = bsub.add_parser("save", help="keep a finished run as a baseline for this machine")
    bs.add_argument("run_dir", metavar="RUN_DIR")
    bs.add_argument("--name", help="baseline name (default: the run directory's name)")
    bs.add_argument("--replace", action="store_true", help="overwrite a baseline of the same name")
    bs.add_argument("--instructions", action="store_true",
                    help="count the hashers' instructions now (build/bin) and keep them with it")
    bs.add_argument("--bin-dir", metavar="DIR", help="hasher binaries for --instructions")
    bsub.add_parser("list", help="list saved baselines")

    i = sub.add_parser("instructions", help=_HEAVY["instructions"])
    i.add_argument("--bin-dir", metavar="DIR", help=BIN_DIR_HELP)
    i.add_argument("--file", metavar="PATH", help="file to hash (default: a random file of --size)")
    i.add_argument("--size", type=size_arg, default=instructions.INSTRUCTION_FILE_SIZE, metavar="SIZE",
                   help="size of the generated file (default 64M)")
    i.add_argument("--save", metavar="RUN_DIR", help="write RUN_DIR/instructions.json for later checks")


def _cmd_run(a: argparse.Namespace) -> int:
    from harness.pipeline.run import Options, run

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
    from analysis.cli import run_report

    reported = run_report(argparse.Namespace(run_dirs=[str(outcome.run_dir)], out=None, trace_labels=None))
    return outcome.code or reported


def _cmd_check(a: argparse.Namespace) -> int:
    from pathlib import Path

    from harness.check import saved_runs
    from harness.check import decide
    from harness.check import load as check_load
    from harness.check import report as check_report
    from harness.check import instructions
    from harness.machine import sysinfo
    from harness.pipeline.config_schema import BASELINE_PREFIX

    settings = decide.Settings(threshold=a.threshold, confidence=a.confidence, resamples=a.resamples,
                              min_runs=a.min_runs)
    if a.against is not None and a.config is None:
        raise decide.CheckError("--against runs both builds now: it needs --config")
    if a.against is not None and not Path(a.against).is_dir():
        raise decide.CheckError(f"--against {a.against}: not a directory of hasher binaries")
    if a.against is None and a.baseline is None and a.current is None:
        raise decide.CheckError("give a baseline: --baseline RUN_DIR|NAME, or --against BIN_DIR (A/B)")
    base_dir = None if a.against or a.baseline is None else \
        saved_runs.find(a.baseline, sysinfo.fingerprint(a.file)["fingerprint_id"])
    if a.config:
        from harness.pipeline.run import Options

        opts = Options(config_path=a.config, file=a.file, size=a.size, dir=a.dir, out=a.out,
                       rounds=a.rounds, warm=a.warm, bin_dir=a.bin_dir, against=a.against)
        current_dir, _code = decide.measure(opts)  # failed executions become "failed" verdicts
    else:
        current_dir = Path(a.current)
    current = check_load.load_run(current_dir)
    if base_dir is None:
        if not check_load.is_ab_run(current):
            raise decide.CheckError(f"{current_dir}: not an A/B run (no {BASELINE_PREFIX} commands); give --baseline")
        base, current = check_load.split_ab(current)
    else:
        base = check_load.load_run(base_dir)
    report = decide.compare(base, current, settings)
    if a.instructions:
        now = instructions.instructions_now(Path(a.bin_dir) if a.bin_dir else None)
        before = (instructions.instructions_now(Path(a.against)) if a.against else
                  instructions.read_instructions(base_dir) if base_dir else None)
        report.instruction_tolerance = a.instruction_tolerance
        report.instructions = instructions.compare_instructions(before, now, a.instruction_tolerance)
    print(check_report.format_table(report), end="")
    check_report.write_outputs(report, Path(a.markdown) if a.markdown else None, Path(a.junit) if a.junit else None)
    return report.exit_code


def _cmd_baseline(a: argparse.Namespace) -> int:
    from pathlib import Path

    from harness.check import saved_runs
    from harness.check import instructions
    from harness.pipeline import results

    if a.baseline_cmd == "list":
        for b in saved_runs.list_baselines():
            print(f"{b.fingerprint_id}  {b.name}  {b.started_at}  {b.path}")
        return 0
    dest = saved_runs.save(Path(a.run_dir), a.name, replace=a.replace)
    if a.instructions:
        counts = instructions.instructions_now(Path(a.bin_dir) if a.bin_dir else None)
        results.write_json_atomic(dest / instructions.INSTRUCTIONS_JSON, counts)
    print(dest)
    return 0


def _cmd_instructions(a: argparse.Namespace) -> int:
    from pathlib import Path

    from harness.check import instructions
    from harness.pipeline import results

    counts = instructions.instructions_now(Path(a.bin_dir) if a.bin_dir else None,
                                    Path(a.file) if a.file else None, a.size)
    for variant, n in counts["counts"].items():
        print(f"{variant:<30} {n:>14}")
    print(f"({counts['counter']}, {format_size(counts['file_size'])} file)")
    if a.save:
        results.write_json_atomic(Path(a.save) / instructions.INSTRUCTIONS_JSON, counts)
    return 0


def _minutes_arg(s: str) -> float:
    try:
        m = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected minutes, got {s!r}") from None
    if not m > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of minutes, got {s!r}")
    return m


def _add_tune_parser(sub: Any) -> None:
    from harness.tune.space import DEFAULT_SPACE

    t = sub.add_parser("tune", help=_HEAVY["tune"])
    t.add_argument("--space", default=str(DEFAULT_SPACE), metavar="CONFIG",
                   help="config whose hasher commands are the space (default configs/tune.toml)")
    t.add_argument("--file", metavar="PATH", help="test file (default: the space's run.file / run.file_size)")
    t.add_argument("--size", type=size_arg, metavar="SIZE", help="size of the generated random test file")
    t.add_argument("--dir", metavar="DIR", help="where --size generates its file (default build/data)")
    t.add_argument("--warm", action="store_true", help="warm page cache instead of the space's mode")
    t.add_argument("--bin-dir", metavar="DIR", help=BIN_DIR_HELP)
    t.add_argument("--variant", action="append", metavar="NAME", help="search only this variant (repeatable)")
    t.add_argument("--budget", type=_minutes_arg, metavar="MINUTES", help="estimated time to spend at most")
    t.add_argument("--out", default="results", metavar="DIR", help="parent of the tune directory")
    add_condition_args(t)
    t.add_argument("--install", action="store_true",
                   help="copy tuned.options to $XDG_CONFIG_HOME/ringsum/uring_b3sum.options")
    t.add_argument("--compare-full-grid", nargs="?", const="", metavar="RUN_DIR",
                   help="then run the full grid (or read a finished RUN_DIR of it) and compare")


def _cmd_tune(a: argparse.Namespace) -> int:
    from harness.tune import search as tune
    from harness.tune import space as tune_space

    try:
        space = tune_space.load_space(a.space, a.file, a.size, a.dir, a.warm, a.bin_dir, a.variant,
                                      condition_overrides(a))
        grid = a.compare_full_grid
        return tune.tune(space, Path(a.out), a.budget * 60 if a.budget else None, a.install,
                         compare=grid is not None, grid_run_dir=Path(grid) if grid else None)
    except tune.TuneError as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:  # the commands (usage, exit 2), rather than an error about the missing one
        return make_parser("").print_help() or 2
    a = make_parser(_command_of(args) or "").parse_args(args)

    from harness.machine.page_cache import CacheError
    from harness.check.decide import CheckError
    from harness.datasets.generate import FileError
    from harness.catalog.knobs import KnobsError
    from harness.pipeline.preflight import SetupError
    from harness.machine.state import StateError

    try:
        if a.cmd == "tune":
            return _cmd_tune(a)
        if a.cmd == "compare":
            from harness.compare import run_compare
            return run_compare(a)
        if a.cmd in _CHECK_COMMANDS:
            return _CHECK_COMMANDS[a.cmd](a)
        if a.cmd in info.COMMANDS:
            return info.COMMANDS[a.cmd](a)
        if a.cmd == "collect":
            from analysis.collect import run_collect
            return run_collect(a.dirs, a.out)
        if a.cmd == "report":
            from analysis.cli import run_report
            return run_report(a)
        return _cmd_run(a)
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


_CHECK_COMMANDS = {"check": _cmd_check, "baseline": _cmd_baseline, "instructions": _cmd_instructions}


if __name__ == "__main__":
    sys.exit(main())

