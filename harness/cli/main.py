"""`ringsum`: build the parser (harness/cli/parser.py), then import and call the one command asked for.

Errors print `ringsum: <one line>` on stderr. Exit codes: 0 fine; 1 the run failed (hash
mismatch, failed executions); 2 usage, config or set-up error found before anything ran;
130 ended by SIGINT, SIGTERM or SIGHUP (settings put back; resume with --resume). `ringsum check`:
0 no regression; 1 a regression or a failed command; 2 could not compare (missing baseline, too
few runs, no common reference, no hasher in both runs). `ringsum compare`: 0 compared; 3 not
compared (the runs measured different things); 2 a run could not be read.

A command's modules load only when it runs: `ringsum --help` and a usage error load no numpy,
pandas or pipeline. This is the one module of `harness` that calls into `analysis` (by the names
in the parser's table; tests/test_layout.py).
"""

from __future__ import annotations

import importlib
import sys

from harness.cli.parser import make_parser


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:  # the short usage, with its commands, and one error line, as any other usage error
        make_parser().print_usage(sys.stderr)
        print("ringsum: no command given (see ringsum --help)", file=sys.stderr)
        return 2
    a = make_parser().parse_args(args)
    try:
        module, function = a.handler.split(":")
        return getattr(importlib.import_module(module), function)(a)
    except KeyboardInterrupt:
        print("ringsum: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as e:
        code = _exit_code(e)
        if code is None:
            raise
        print(f"ringsum: {e}", file=sys.stderr)
        return code


# The errors a command says in one line, by the exit they give: 2 found before anything ran, 1 the page
# cache could not be set. Looked up after the command ran, which has loaded their modules already.
ONE_LINE_ERRORS = {
    "harness.catalog.knobs:KnobsError": 2, "harness.check.load:CheckError": 2,
    "harness.datasets.generate:FileError": 2, "harness.machine.state:StateError": 2,
    "harness.pipeline.config:ConfigError": 2, "harness.pipeline.plan:PlanError": 2,
    "harness.pipeline.preflight:SetupError": 2, "harness.machine.page_cache:CacheError": 1,
}


def _exit_code(e: Exception) -> int | None:
    for name, code in ONE_LINE_ERRORS.items():
        module, cls = name.split(":")
        if isinstance(e, getattr(importlib.import_module(module), cls)):
            return code
    return None
