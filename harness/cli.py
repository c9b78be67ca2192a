"""`ringsum` command line: run, plan, sysinfo, report, collect, check, baseline, instructions, tune.

Errors print `ringsum: <one line>` on stderr. Exit codes: 0 fine; 1 the run failed (hash
mismatch, failed executions); 2 usage, config or set-up error found before anything ran;
130 ended by SIGINT, SIGTERM or SIGHUP (settings put back; resume with --resume). `ringsum check`:
0 no regression; 1 a regression or a failed command; 2 could not compare (missing baseline, too
few runs, no common reference, no hasher in both runs).

The command line is the one module of `harness` that reaches into `analysis` (the report and
collect commands, imported where they run): every other import goes analysis -> harness
(tests/test_layout.py).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from harness.conditions import add_condition_args, condition_overrides, plan_lines
from harness.config import ConfigError, load_config
from harness.plan import PlanError, build_plan, estimate, estimate_execution_s, format_duration
from harness import values
from harness.units import format_size
from harness.variants import BIN_DIR_HELP


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        print(f"ringsum: {message} (see ringsum {self.prog.split()[-1]} --help)"
              if " " in self.prog else f"ringsum: {message} (see ringsum --help)", file=sys.stderr)
        sys.exit(2)


def _arg(parse: Any) -> Any:
    """A harness.values parser as an argparse type: its own message, on one line."""
    def typed(s: str) -> Any:
        try:
            return parse(int(s) if s.strip().isdigit() and parse is values.posint else s)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return typed


_size_arg, _posint_arg = _arg(values.size), _arg(values.posint)


def _add_file_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--file", metavar="PATH",
                   help="test file, read as it is; with --size: generated there if missing "
                        "(an existing file of another size is an error, never rewritten)")
    p.add_argument("--size", type=_size_arg, metavar="SIZE",
                   help="size of the generated random test file (e.g. 1G)")
    p.add_argument("--dir", metavar="DIR", help="where --size generates its file (default build/data)")
    p.add_argument("--rounds", type=_posint_arg, metavar="N", help="override run.rounds")
    p.add_argument("--warm", action="store_true", help="warm page cache instead of the config's mode")
    p.add_argument("--bin-dir", metavar="DIR", help=BIN_DIR_HELP)
    add_condition_args(p)


# The subcommands whose modules load numpy and pandas: their full parsers are built only when one of
# them is the command, so that `ringsum --help` and the others start fast.
_HEAVY = {"check": "compare a run with a baseline run; exit 1 on a regression",
          "baseline": "save or list baselines (results/baselines/<fingerprint_id>/)",
          "instructions": "count the instructions of hashing a hot file (callgrind)",
          "tune": "find the best hasher configuration without the full grid"}


def make_parser(command: str | None = None) -> argparse.ArgumentParser:
    """`command`: the subcommand about to run, if known; None builds every parser in full."""
    from harness import __version__

    ap = _Parser(prog="ringsum", description="Benchmark io_uring BLAKE3 file hashers.")
    ap.add_argument("--version", action="version", version=f"ringsum {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="expand a config, run it, write a run directory")
    r.add_argument("config", nargs="?", help="config TOML (optional with --resume)")
    _add_file_args(r)
    r.add_argument("--out", default="results", metavar="DIR", help="parent of run directories")
    r.add_argument("--resume", metavar="RUN_DIR", help="finish an interrupted run")
    r.add_argument("--seed", type=int, help="shuffle seed (default: config's or random)")
    r.add_argument("--against", metavar="BIN_DIR",
                   help="also run every hasher from BIN_DIR (a baseline build), labelled baseline:..., "
                        "in the same rounds (A/B; `ringsum check --against` judges such a run)")
    r.add_argument("--yes", action="store_true", help="start a plan estimated at over an hour")
    r.add_argument("--report", action="store_true",
                   help="then `ringsum report` the run directory (unless the run exits 2); the run's exit status is kept")
    p = sub.add_parser("plan", help="print the expanded commands and the estimated duration")
    p.add_argument("config")
    _add_file_args(p)
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    k = sub.add_parser("knobs", help="the hashers' knobs as they describe themselves (docs/knobs.md)")
    k.add_argument("--bin-dir", metavar="DIR", help=BIN_DIR_HELP)
    k.add_argument("--json", action="store_true", help="as JSON instead of a Markdown table")
    s = sub.add_parser("sysinfo", help="the machine a figure depends on (--json: its fingerprint, versions)")
    s.add_argument("--file", metavar="PATH", help="describe the filesystem and device of this file")
    s.add_argument("--json", action="store_true", help="everything, as JSON (the fingerprint, versions, git)")
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
    for name, help_text in _HEAVY.items():
        if name not in sub.choices:
            sub.add_parser(name, help=help_text, add_help=False)
    return ap


def _command_of(argv: list[str]) -> str | None:
    """The subcommand named in argv (the first word that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _fraction_arg(s: str) -> float:
    from harness.check import parse_fraction

    try:
        return parse_fraction(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _add_check_parsers(sub: Any) -> None:
    from harness import check, instructions

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
    _add_file_args(c)
    c.add_argument("--out", default="results", metavar="DIR", help="parent of the --config run's directory")
    c.add_argument("--threshold", type=_fraction_arg, default=check.DEFAULT_THRESHOLD, metavar="PCT",
                   help="smallest change that counts (default 5%%)")
    c.add_argument("--confidence", type=_fraction_arg, default=check.DEFAULT_CONFIDENCE, metavar="PCT",
                   help="confidence of the bootstrap interval (default 95%%)")
    c.add_argument("--resamples", type=_posint_arg, default=check.RESAMPLES, metavar="N",
                   help=f"bootstrap resamples (default {check.RESAMPLES})")
    c.add_argument("--min-runs", type=_posint_arg, default=check.MIN_RUNS, metavar="N",
                   help=f"fewest executions of a command on each side (default {check.MIN_RUNS})")
    c.add_argument("--markdown", metavar="FILE", help="write the table as Markdown (CI summary)")
    c.add_argument("--junit", metavar="FILE", help="write JUnit XML, one testcase per command")
    c.add_argument("--instructions", action="store_true",
                   help="also count the hashers' instructions now and compare with the baseline's")
    c.add_argument("--instruction-tolerance", type=_fraction_arg, metavar="PCT",
                   default=check.DEFAULT_INSTRUCTION_TOLERANCE, help="default 1%%")

    b = sub.add_parser("baseline", help=_HEAVY["baseline"])
    bsub = b.add_subparsers(dest="baseline_cmd", required=True, parser_class=_Parser)
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
    i.add_argument("--size", type=_size_arg, default=instructions.INSTRUCTION_FILE_SIZE, metavar="SIZE",
                   help="size of the generated file (default 64M)")
    i.add_argument("--save", metavar="RUN_DIR", help="write RUN_DIR/instructions.json for later checks")


def _cmd_plan(a: argparse.Namespace) -> int:
    from harness.files import describe, resolve_files
    from harness.probe import HasherRejects, check_hashers
    from harness.run import LONG_PLAN_S, Options, apply_overrides

    opts = Options(config_path=a.config, rounds=a.rounds, warm=a.warm, bin_dir=a.bin_dir,
                   conditions=condition_overrides(a))
    config = apply_overrides(load_config(a.config), opts)
    files = resolve_files(config, a.file, a.size, a.dir)
    plan = build_plan(config, files)
    est = estimate(plan, config)
    missing = sorted({c.argv[0] for c in plan.commands if c.tool == "hasher" and not Path(c.argv[0]).is_file()})
    if missing:
        plan.notes.append(f"hasher options not checked: {missing[0]} is not built (make)")
    else:
        try:
            check_hashers(plan, config.run.timeout_s)
        except HasherRejects as e:
            raise ConfigError(f"{config.path}: {e}") from None
    if a.json:
        print(json.dumps({"commands": [c.to_json() for c in plan.commands],
                          "files": [f.to_json() for f in files], "estimate_s": est.total_s,
                          "conditions": [c.to_json() | {"name": c.name} for c in plan.conditions],
                          "timed_executions": plan.timed_executions,
                          "traced_executions": plan.traced_executions}, indent=2))
        return 0
    print(f"config: {config.path}")
    print(f"cache: {plan.cache}   rounds: {plan.rounds} x {plan.runs_per_round}   "
          f"timeout: {config.run.timeout_s:g} s per execution")
    for f in files:
        print(f"{f.kind}: {f.path} ({f.describe() if f.is_tree else format_size(f.size)}, {describe(f)})")
    print()
    group = None
    for i, c in enumerate(plan.commands, 1):
        if c.group != group:
            group = c.group
            print(f"[{group}]")
        per = estimate_execution_s(c, plan.cache, config)
        print(f"{i:>4}. {c.label}   (~{per:.2f} s{', +1 traced run' if c.trace_argv else ''})")
        print(f"      {shlex.join(c.argv)}")
    for line in plan_lines(plan.conditions):
        print(line)
    for n in plan.notes:
        print(f"note: {n}")
    print()
    print(f"{len(plan.commands)} commands x {plan.rounds} rounds x {plan.runs_per_round} = "
          f"{plan.timed_executions} timed executions + {plan.traced_executions} traced runs")
    print(f"estimated duration: {format_duration(est.total_s)}  (timed {format_duration(est.timed_s)}, "
          f"traced {format_duration(est.traced_s)}, setup {format_duration(est.setup_s)}; "
          f"nominal read {config.run.nominal.read_Bps / 1e9:.1f} GB/s, "
          f"{config.run.nominal.overhead_s:g} s overhead per execution)")
    if est.total_s > LONG_PLAN_S:
        print("over an hour: `ringsum run` starts it only with --yes")
    return 0


def _cmd_sysinfo(a: argparse.Namespace) -> int:
    from harness.sysinfo import human, sysinfo

    info = sysinfo(a.file)
    print(json.dumps(info, indent=2) if a.json else human(info), end="\n" if a.json else "")
    return 0


def _cmd_run(a: argparse.Namespace) -> int:
    from harness.run import Options, run

    if a.config is None and a.resume is None:
        print("ringsum: run needs a CONFIG (or --resume RUN_DIR)", file=sys.stderr)
        return 2
    if a.resume and (a.file or a.size or a.rounds or a.warm or a.bin_dir or a.against or condition_overrides(a)):
        print("ringsum: --resume takes the run's own settings; drop --file/--size/--rounds/--warm/--bin-dir/--against "
              "and the conditions", file=sys.stderr)
        return 2
    opts = Options(config_path=a.config, file=a.file, size=a.size, dir=a.dir, out=a.out,
                   rounds=a.rounds, resume=a.resume, warm=a.warm, bin_dir=a.bin_dir, seed=a.seed,
                   against=a.against, yes=a.yes, conditions=condition_overrides(a))
    outcome = run(opts)
    if not a.report or outcome.code > 1 or outcome.run_dir is None:
        return outcome.code
    from analysis.cli import run_report

    reported = run_report(argparse.Namespace(run_dirs=[str(outcome.run_dir)], out=None, trace_labels=None))
    return outcome.code or reported


def _cmd_check(a: argparse.Namespace) -> int:
    from pathlib import Path

    from harness import baseline, check, check_load, check_report, instructions, sysinfo
    from harness.config_schema import BASELINE_PREFIX

    settings = check.Settings(threshold=a.threshold, confidence=a.confidence, resamples=a.resamples,
                              min_runs=a.min_runs)
    if a.against is not None and a.config is None:
        raise check.CheckError("--against runs both builds now: it needs --config")
    if a.against is not None and not Path(a.against).is_dir():
        raise check.CheckError(f"--against {a.against}: not a directory of hasher binaries")
    if a.against is None and a.baseline is None and a.current is None:
        raise check.CheckError("give a baseline: --baseline RUN_DIR|NAME, or --against BIN_DIR (A/B)")
    base_dir = None if a.against or a.baseline is None else \
        baseline.find(a.baseline, sysinfo.fingerprint(a.file)["fingerprint_id"])
    if a.config:
        from harness.run import Options

        opts = Options(config_path=a.config, file=a.file, size=a.size, dir=a.dir, out=a.out,
                       rounds=a.rounds, warm=a.warm, bin_dir=a.bin_dir, against=a.against)
        current_dir, _code = check.measure(opts)  # failed executions become "failed" verdicts
    else:
        current_dir = Path(a.current)
    current = check_load.load_run(current_dir)
    if base_dir is None:
        if not check_load.is_ab_run(current):
            raise check.CheckError(f"{current_dir}: not an A/B run (no {BASELINE_PREFIX} commands); give --baseline")
        base, current = check_load.split_ab(current)
    else:
        base = check_load.load_run(base_dir)
    report = check.compare(base, current, settings)
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

    from harness import baseline, instructions, results

    if a.baseline_cmd == "list":
        for b in baseline.list_baselines():
            print(f"{b.fingerprint_id}  {b.name}  {b.started_at}  {b.path}")
        return 0
    dest = baseline.save(Path(a.run_dir), a.name, replace=a.replace)
    if a.instructions:
        counts = instructions.instructions_now(Path(a.bin_dir) if a.bin_dir else None)
        results.write_json_atomic(dest / instructions.INSTRUCTIONS_JSON, counts)
    print(dest)
    return 0


def _cmd_instructions(a: argparse.Namespace) -> int:
    from pathlib import Path

    from harness import instructions, results

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
    from harness.tune_space import DEFAULT_SPACE

    t = sub.add_parser("tune", help=_HEAVY["tune"])
    t.add_argument("--space", default=str(DEFAULT_SPACE), metavar="CONFIG",
                   help="config whose hasher commands are the space (default configs/tune.toml)")
    t.add_argument("--file", metavar="PATH", help="test file (default: the space's run.file / run.file_size)")
    t.add_argument("--size", type=_size_arg, metavar="SIZE", help="size of the generated random test file")
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
    from harness import tune, tune_space

    try:
        space = tune_space.load_space(a.space, a.file, a.size, a.dir, a.warm, a.bin_dir, a.variant,
                                      condition_overrides(a))
        grid = a.compare_full_grid
        return tune.tune(space, Path(a.out), a.budget * 60 if a.budget else None, a.install,
                         compare=grid is not None, grid_run_dir=Path(grid) if grid else None)
    except tune.TuneError as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 2


def _cmd_knobs(a: argparse.Namespace) -> int:
    import dataclasses

    from harness.knobs import load_knobs, markdown_table

    table = load_knobs(a.bin_dir)
    if a.json:
        print(json.dumps([dataclasses.asdict(k) for k in table], indent=2))
    else:
        print(markdown_table(table), end="")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:  # the commands (usage, exit 2), rather than an error about the missing one
        return make_parser("").print_help() or 2
    a = make_parser(_command_of(args) or "").parse_args(args)

    from harness.cache import CacheError
    from harness.check import CheckError
    from harness.files import FileError
    from harness.knobs import KnobsError
    from harness.preflight import SetupError
    from harness.state import StateError

    try:
        if a.cmd == "tune":
            return _cmd_tune(a)
        if a.cmd in _CHECK_COMMANDS:
            return _CHECK_COMMANDS[a.cmd](a)
        if a.cmd == "plan":
            return _cmd_plan(a)
        if a.cmd == "sysinfo":
            return _cmd_sysinfo(a)
        if a.cmd == "knobs":
            return _cmd_knobs(a)
        if a.cmd == "collect":
            from analysis.fleet import run_collect
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

