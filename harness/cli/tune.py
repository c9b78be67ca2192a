"""`ringsum tune`: its parser and what it runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.catalog.variants import BIN_DIR_HELP
from harness.cli.args import minutes_arg, size_arg
from harness.conditions.spec import add_condition_args, condition_overrides
from harness.tune import search as tune
from harness.tune import space as tune_space

HELP = "find the best hasher configuration without the full grid"


def add_parser(sub: Any) -> None:
    t = sub.add_parser("tune", help=HELP)
    t.add_argument("--space", default=str(tune_space.DEFAULT_SPACE), metavar="CONFIG",
                   help="config whose hasher commands are the space (default configs/tune.toml)")
    t.add_argument("--file", metavar="PATH", help="test file (default: the space's run.file / run.file_size)")
    t.add_argument("--size", type=size_arg, metavar="SIZE", help="size of the generated random test file")
    t.add_argument("--dir", metavar="DIR", help="where --size generates its file (default build/data)")
    t.add_argument("--warm", action="store_true", help="warm page cache instead of the space's mode")
    t.add_argument("--bin-dir", metavar="DIR", help=BIN_DIR_HELP)
    t.add_argument("--variant", action="append", metavar="NAME", help="search only this variant (repeatable)")
    t.add_argument("--budget", type=minutes_arg, metavar="MINUTES", help="estimated time to spend at most")
    t.add_argument("--out", default="results", metavar="DIR", help="parent of the tune directory")
    add_condition_args(t)
    t.add_argument("--install", action="store_true",
                   help="copy tuned.options to $XDG_CONFIG_HOME/ringsum/uring_b3sum.options")
    t.add_argument("--compare-full-grid", nargs="?", const="", metavar="RUN_DIR",
                   help="then run the full grid (or read a finished RUN_DIR of it) and compare")


def _cmd_tune(a: argparse.Namespace) -> int:
    try:
        space = tune_space.load_space(a.space, a.file, a.size, a.dir, a.warm, a.bin_dir, a.variant,
                                      condition_overrides(a))
        grid = a.compare_full_grid
        return tune.tune(space, Path(a.out), a.budget * 60 if a.budget else None, a.install,
                         compare=grid is not None, grid_run_dir=Path(grid) if grid else None)
    except tune.TuneError as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 2


COMMANDS = {"tune": _cmd_tune}
