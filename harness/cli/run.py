"""What `ringsum run` runs: a config's sweep (harness/pipeline/run.py), then what was asked for after
it: hyperfine's exports (harness/pipeline/exports.py) and the report. Its arguments, and
`ringsum bench`'s, are in harness/cli/parser.py."""

from __future__ import annotations

import argparse
import sys

from harness.conditions.spec import condition_overrides
from harness.pipeline import exports
from harness.pipeline.run import run
from harness.pipeline.run_request import Options


def cmd_run(a: argparse.Namespace) -> int:
    if a.config is None and a.resume is None:
        print("ringsum: run needs a CONFIG (or --resume RUN_DIR); `ringsum bench 'CMD' ...` times command lines",
              file=sys.stderr)
        return 2
    if a.resume and (a.file or a.size or a.rounds or a.warm or a.bin_dir or a.against or condition_overrides(a)
                     or a.until_decided or a.budget or a.max_rounds or a.warmup is not None):
        print("ringsum: --resume takes the run's own settings; drop --file/--size/--rounds/--warm/--warmup/--bin-dir/"
              "--against, the conditions and --until-decided/--budget/--max-rounds", file=sys.stderr)
        return 2
    if (a.budget or a.max_rounds) and not a.until_decided:
        print("ringsum: --budget and --max-rounds go with --until-decided", file=sys.stderr)
        return 2
    return measure(a, Options(config_path=a.config, resume=a.resume, against=a.against, until_decided=a.until_decided,
                              budget_s=a.budget * 60 if a.budget else None, max_rounds=a.max_rounds, **common(a)))


def common(a: argparse.Namespace) -> dict[str, object]:
    """The Options `run` and `bench` take alike from their command lines."""
    return dict(file=a.file, size=a.size, dir=a.dir, out=a.out, rounds=a.rounds, warm=a.warm, bin_dir=a.bin_dir,
                seed=a.seed, yes=a.yes, conditions=condition_overrides(a), warmup=a.warmup,
                show_output=a.show_output)


def measure(a: argparse.Namespace, opts: Options) -> int:
    """Run, then export and report as asked. The run's exit status is kept; a run that exits 2 (nothing
    ran) has neither, and an export that cannot be written is said before anything runs."""
    asked = {"json": a.export_json, "csv": a.export_csv, "markdown": a.export_markdown}
    try:
        exports.check_writable(asked)
    except exports.ExportError as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 2
    outcome = run(opts)
    if outcome.code > 1 or outcome.run_dir is None:
        return outcome.code
    try:
        exports.write(outcome.run_dir, asked)
    except exports.ExportError as e:
        print(f"ringsum: {e} (the run is kept in {outcome.run_dir})", file=sys.stderr)
        return outcome.code or 1
    if not a.report:
        return outcome.code
    # Deferred for start-up time: pandas and matplotlib load only when a report is asked for.
    from analysis import cli as report_cli
    reported = report_cli.run_report(argparse.Namespace(run_dirs=[str(outcome.run_dir)], out=None, trace_labels=None))
    return outcome.code or reported
