"""`ringsum check`, `ringsum baseline` and `ringsum instructions`: their parsers and what each runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.catalog.variants import BIN_DIR_HELP
from harness.check import decide, instructions, saved_runs
from harness.check import load as check_load
from harness.check import report as check_report
from harness.check.hyperfine_export import is_hyperfine_export, load_export
from harness.cli.args import Parser, add_file_args, fraction_arg, posint_arg, size_arg
from harness.machine import sysinfo
from harness.pipeline import results
from harness.pipeline.config_schema import BASELINE_PREFIX
from harness.pipeline.run_request import Options
from harness.units import format_size

HELP = {"check": "compare a run with a baseline run; exit 1 on a regression",
        "baseline": "save or list baselines (results/baselines/<fingerprint_id>/, installed: in ~/.local/share/ringsum)",
        "instructions": "count the instructions of hashing a hot file (callgrind)"}


def add_parsers(sub: Any) -> None:
    c = sub.add_parser("check", help=HELP["check"])
    against = c.add_mutually_exclusive_group()
    against.add_argument("--baseline", metavar="RUN_DIR|NAME",
                         help="a run directory, a baseline saved for this machine (a name, or `latest`), or a "
                              "hyperfine --export-json file of the same commands")
    against.add_argument("--against", metavar="BIN_DIR",
                         help="A/B: run the config's hashers from --bin-dir and from BIN_DIR (the baseline "
                              "build) in the same rounds, and compare them round by round (needs --config); "
                              "a finished A/B run (`ringsum run --against`) is judged so with --current alone")
    current = c.add_mutually_exclusive_group(required=True)
    current.add_argument("--current", metavar="RUN_DIR", help="compare this finished run")
    current.add_argument("--config", metavar="CONFIG", help="run this config now and compare it")
    add_file_args(c)
    c.add_argument("--out", default="results", metavar="DIR", help="parent of the --config run's directory")
    c.add_argument("--threshold", type=fraction_arg, default=decide.DEFAULT_THRESHOLD, metavar="PCT",
                   help="smallest change that counts (default 5%%)")
    c.add_argument("--confidence", type=fraction_arg, default=decide.DEFAULT_CONFIDENCE, metavar="PCT",
                   help="confidence of the bootstrap interval (default 95%%)")
    c.add_argument("--resamples", type=posint_arg, default=decide.RESAMPLES, metavar="N",
                   help=f"bootstrap resamples (default {decide.RESAMPLES})")
    c.add_argument("--min-runs", type=posint_arg, default=decide.MIN_RUNS, metavar="N",
                   help=f"fewest executions of a command on each side (default {decide.MIN_RUNS})")
    c.add_argument("--markdown", metavar="FILE", help="write the table as Markdown (CI summary)")
    c.add_argument("--junit", metavar="FILE", help="write JUnit XML, one testcase per command")
    c.add_argument("--instructions", action="store_true",
                   help="also count the hashers' instructions now and compare with the baseline's")
    c.add_argument("--instruction-tolerance", type=fraction_arg, metavar="PCT",
                   default=decide.DEFAULT_INSTRUCTION_TOLERANCE, help="default 1%%")

    b = sub.add_parser("baseline", help=HELP["baseline"])
    bsub = b.add_subparsers(dest="baseline_cmd", required=True, parser_class=Parser)
    bs = bsub.add_parser("save", help="keep a finished run as a baseline for this machine")
    bs.add_argument("run_dir", metavar="RUN_DIR")
    bs.add_argument("--name", help="baseline name (default: the run directory's name)")
    bs.add_argument("--replace", action="store_true", help="overwrite a baseline of the same name")
    bs.add_argument("--instructions", action="store_true",
                    help="count the hashers' instructions now (build/bin) and keep them with it")
    bs.add_argument("--bin-dir", metavar="DIR", help="hasher binaries for --instructions")
    bsub.add_parser("list", help="list saved baselines")

    i = sub.add_parser("instructions", help=HELP["instructions"])
    i.add_argument("--bin-dir", metavar="DIR", help=BIN_DIR_HELP)
    i.add_argument("--file", metavar="PATH", help="file to hash (default: a random file of --size)")
    i.add_argument("--size", type=size_arg, default=instructions.INSTRUCTION_FILE_SIZE, metavar="SIZE",
                   help="size of the generated file (default 64M)")
    i.add_argument("--save", metavar="RUN_DIR", help="write RUN_DIR/instructions.json for later checks")


def _cmd_check(a: argparse.Namespace) -> int:

    settings = decide.Settings(threshold=a.threshold, confidence=a.confidence, resamples=a.resamples,
                              min_runs=a.min_runs)
    if a.against is not None and a.config is None:
        raise decide.CheckError("--against runs both builds now: it needs --config")
    if a.against is not None and not Path(a.against).is_dir():
        raise decide.CheckError(f"--against {a.against}: not a directory of hasher binaries")
    if a.against is None and a.baseline is None and a.current is None:
        raise decide.CheckError("give a baseline: --baseline RUN_DIR|NAME, or --against BIN_DIR (A/B)")
    export = Path(a.baseline) if a.baseline and is_hyperfine_export(Path(a.baseline)) else None
    base_dir = None if a.against or a.baseline is None or export else \
        saved_runs.find(a.baseline, sysinfo.fingerprint(a.file)["fingerprint_id"])
    if a.config:

        opts = Options(config_path=a.config, file=a.file, size=a.size, dir=a.dir, out=a.out,
                       rounds=a.rounds, warm=a.warm, bin_dir=a.bin_dir, against=a.against)
        current_dir, _code = decide.measure(opts)  # failed executions become "failed" verdicts
    else:
        current_dir = Path(a.current)
    current = check_load.load_run(current_dir)
    notes = []
    if export:
        base, notes = load_export(export, current)
    elif base_dir is None:
        if not check_load.is_ab_run(current):
            raise decide.CheckError(f"{current_dir}: not an A/B run (no {BASELINE_PREFIX} commands); give --baseline")
        base, current = check_load.split_ab(current)
    else:
        base = check_load.load_run(base_dir)
    report = decide.compare(base, current, settings)
    report.notes += notes
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

    counts = instructions.instructions_now(Path(a.bin_dir) if a.bin_dir else None,
                                    Path(a.file) if a.file else None, a.size)
    for variant, n in counts["counts"].items():
        print(f"{variant:<30} {n:>14}")
    print(f"({counts['counter']}, {format_size(counts['file_size'])} file)")
    if a.save:
        results.write_json_atomic(Path(a.save) / instructions.INSTRUCTIONS_JSON, counts)
    return 0


COMMANDS = {"check": _cmd_check, "baseline": _cmd_baseline, "instructions": _cmd_instructions}
