"""What every `ringsum` subcommand's parser shares: one-line usage errors (exit 2), the typed
arguments (sizes, counts) and the test-file options."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.catalog.variants import BIN_DIR_HELP
from harness.check.settings import parse_fraction
from harness.conditions.spec import add_condition_args
from harness import config_values
from harness.tune.settings import MAX_FINAL_ROUNDS, MIN_FINAL_ROUNDS


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        print(f"ringsum: {message} (see ringsum {self.prog.split()[-1]} --help)"
              if " " in self.prog else f"ringsum: {message} (see ringsum --help)", file=sys.stderr)
        sys.exit(2)


def typed_arg(parse: Any) -> Any:
    """A harness.config_values parser as an argparse type: its own message, on one line."""
    def typed(s: str) -> Any:
        try:
            return parse(int(s) if s.strip().isdigit() and parse is config_values.posint else s)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return typed


size_arg, posint_arg = typed_arg(config_values.size), typed_arg(config_values.posint)


def add_file_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--file", metavar="PATH",
                   help="test file, read as it is; with --size: generated there if missing "
                        "(an existing file of another size is an error, never rewritten)")
    p.add_argument("--size", type=size_arg, metavar="SIZE",
                   help="size of the generated random test file (e.g. 1G)")
    p.add_argument("--dir", metavar="DIR", help="where --size generates its file (default build/data)")
    p.add_argument("--rounds", "-r", "--runs", dest="rounds", type=posint_arg, metavar="N",
                   help="override run.rounds: each command's timed executions (hyperfine's -r/--runs), interleaved")
    p.add_argument("--warm", action="store_true", help="warm page cache instead of the config's mode")
    p.add_argument("-w", "--warmup", type=count_arg, metavar="N",
                   help="N untimed executions of a command just before each timed one, as hyperfine's (implies --warm)")
    p.add_argument("--bin-dir", metavar="DIR", help=BIN_DIR_HELP)
    add_condition_args(p)


def count_arg(s: str) -> int:
    if not s.isdigit():
        raise argparse.ArgumentTypeError(f"expected a count (0 or more), got {s!r}")
    return int(s)


def minutes_arg(s: str) -> float:
    try:
        m = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected minutes, got {s!r}") from None
    if not m > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of minutes, got {s!r}")
    return m


def final_rounds_arg(s: str) -> int:
    """tune's final rounds: MIN_FINAL_ROUNDS to MAX_FINAL_ROUNDS."""
    if not s.isdigit() or not MIN_FINAL_ROUNDS <= int(s) <= MAX_FINAL_ROUNDS:
        raise argparse.ArgumentTypeError(f"expected {MIN_FINAL_ROUNDS} to {MAX_FINAL_ROUNDS} rounds, got {s!r}")
    return int(s)


def fraction_arg(s: str) -> float:
    """A percentage or a fraction ("5%", "0.05"), as the check's thresholds and confidences take."""
    try:
        return parse_fraction(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
