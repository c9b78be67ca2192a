"""`ringsum report RUN_DIR [RUN_DIR ...] [-o OUT]`: charts, summary.md and report.html.

Wired into `ringsum` by harness/cli/parser.py through add_report_arguments() and run_report();
also runnable alone as `python -m analysis`. Exit codes: 0 written; 1 the run has no data or the
output cannot be written; 2 a path is not a run directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                   help="run directory to report on; more directories join the across-runs chart")
    p.add_argument("-o", "--out", type=Path, metavar="OUT", help="output directory (default: the first RUN_DIR)")
    p.add_argument("--trace", action="append", metavar="LABEL", dest="trace_labels",
                   help="command label for the in-flight chart (repeatable; default: best, worst, "
                        "and a singlethread/multithread pair at the same knobs)")


def _fail(message: str, code: int) -> int:
    print(f"ringsum: {message}", file=sys.stderr)
    return code


def run_report(args: argparse.Namespace) -> int:
    # Deferred for start-up time: pandas and matplotlib load here, not when `ringsum` builds its parser.
    from harness.judge.load import NotARunDir, RunDirError, load_run
    from analysis.report import write_report

    runs = []
    for run_dir in args.run_dirs:
        try:
            run = load_run(run_dir)
        except NotARunDir as e:
            return _fail(str(e), 2)
        except RunDirError as e:
            return _fail(str(e), 1)
        if not len(run.runs):
            return _fail(f"{Path(run_dir) / 'runs.csv'}: no runs recorded (empty table)", 1)
        runs.append(run)
    out = args.out if args.out is not None else runs[0].path
    try:
        report = write_report(runs, out, args.trace_labels)
    except KeyError as e:
        return _fail(str(e.args[0]), 2)
    except OSError as e:
        return _fail(f"{out}: cannot write the report ({e.strerror or e})", 1)
    print(f"report: {report.html_path}")
    for chart in report.skipped:
        print(f"skipped {chart.name}: {chart.skipped}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis", description=__doc__.splitlines()[0])
    add_report_arguments(parser)
    return run_report(parser.parse_args(sys.argv[1:] if argv is None else argv))
