"""What `ringsum check`, `ringsum baseline` and `ringsum instructions` run (their arguments: harness/cli/parser.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.check import decide, instructions, saved_runs
from harness.check import load as check_load
from harness.check import report as check_report
from harness.check.hyperfine_export import is_hyperfine_export, load_export
from harness.machine import sysinfo
from harness.judge import results
from harness.pipeline.config_schema import BASELINE_PREFIX
from harness.pipeline.run_request import Options
from harness.units import format_size

def cmd_check(a: argparse.Namespace) -> int:
    settings = decide.Settings(threshold=a.threshold, confidence=a.confidence, resamples=a.resamples,
                              min_runs=a.min_runs, inconclusive=a.inconclusive)
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
                       rounds=a.rounds, warm=a.warm, warmup=a.warmup, bin_dir=a.bin_dir, against=a.against)
        current_dir, _code = decide.measure(opts)  # failed executions become "failed" verdicts
    else:
        current_dir = Path(a.current)
    current = check_load.check_data(current_dir)
    notes = []
    if export:
        base, notes = load_export(export, current)
    elif base_dir is None:
        if not check_load.is_ab_run(current):
            raise decide.CheckError(f"{current_dir}: not an A/B run (no {BASELINE_PREFIX} commands); give --baseline")
        base, current = check_load.split_ab(current)
    else:
        base = check_load.check_data(base_dir)
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


def cmd_baseline(a: argparse.Namespace) -> int:
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


def cmd_instructions(a: argparse.Namespace) -> int:
    counts = instructions.instructions_now(Path(a.bin_dir) if a.bin_dir else None,
                                    Path(a.file) if a.file else None, a.size)
    for variant, n in counts["counts"].items():
        print(f"{variant:<30} {n:>14}")
    print(f"({counts['counter']}, {format_size(counts['file_size'])} file)")
    if a.save:
        results.write_json_atomic(Path(a.save) / instructions.INSTRUCTIONS_JSON, counts)
    return 0

