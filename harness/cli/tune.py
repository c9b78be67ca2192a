"""`ringsum tune`: its parser and what it runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.catalog.variants import BIN_DIR_HELP, default_bin_dir
from harness.cli.args import minutes_arg, size_arg
from harness.conditions.spec import add_condition_args, condition_overrides
from harness.tune import search as tune
from harness.tune import space as tune_space
from harness.tune import wisdom

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
                   help="make the best uring_b3sum setting its wisdom for the kind of work tuned (a cold file, "
                        "a cached file, a tree) on this machine and device (`ringsum wisdom`)")
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


WISDOM_HELP = "uring_b3sum's measured choices for this machine: show, forget, install a finished tune's"


def add_wisdom_parser(sub: Any) -> None:
    w = sub.add_parser("wisdom", help=WISDOM_HELP, description=wisdom.__doc__.split("\n\n")[0])
    verbs = w.add_subparsers(dest="wisdom_cmd", required=True)
    verbs.add_parser("show", help="list the records, marking this machine's")
    f = verbs.add_parser("forget", help="drop records: every one, or of one kind of work or this machine")
    f.add_argument("--work", choices=wisdom.WORKS, help="only the records of this kind of work")
    f.add_argument("--this-machine", action="store_true", help="only the records of this CPU and SIMD degree")
    i = verbs.add_parser("install", help="make a finished tune's best uring_b3sum setting the record of its work")
    i.add_argument("tune_dir", metavar="TUNE_DIR", help="a tune directory (ringsum tune wrote it)")
    for p in verbs.choices.values():
        p.add_argument("--bin-dir", metavar="DIR", help=BIN_DIR_HELP)


def _this_machine(bin_dir: str | None) -> str:
    """This machine's "cpu=.. simd=..", as the built uring_b3sum keys records."""
    program = (Path(bin_dir) if bin_dir else default_bin_dir()) / tune_space.DEFAULT_VARIANT
    return " ".join(w for w in wisdom.key_of(program, Path(".")).split() if not w.startswith("device="))


def _cmd_wisdom(a: argparse.Namespace) -> int:
    try:
        if a.wisdom_cmd == "show":
            print("\n".join(wisdom.show(machine=_this_machine(a.bin_dir))))
        elif a.wisdom_cmd == "forget":
            gone = wisdom.forget(work=a.work, machine=_this_machine(a.bin_dir) if a.this_machine else None)
            print(f"forgot {len(gone)} record{'s' if len(gone) != 1 else ''} in {wisdom.wisdom_path()}")
        else:
            r = wisdom.install(Path(a.tune_dir), bin_dir=Path(a.bin_dir) if a.bin_dir else None)
            print(f"installed in {wisdom.wisdom_path()}: {r.work} {r.key}: {' '.join(r.options) or 'the defaults'}")
    except wisdom.WisdomError as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 2
    return 0


COMMANDS = {"tune": _cmd_tune, "wisdom": _cmd_wisdom}
