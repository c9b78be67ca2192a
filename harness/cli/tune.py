"""What `ringsum tune` and `ringsum wisdom` run (their arguments: harness/cli/parser.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.catalog.variants import default_bin_dir
from harness.conditions.spec import condition_overrides
from harness.tune import search as tune
from harness.tune import space as tune_space
from harness.tune import wisdom

def cmd_tune(a: argparse.Namespace) -> int:
    try:
        space = tune_space.load_space(a.space, a.file, a.size, a.dir, a.warm, a.bin_dir, a.variant,
                                      condition_overrides(a))
        grid = a.compare_full_grid
        return tune.tune(space, Path(a.out), a.budget * 60 if a.budget else None, a.install,
                         compare=grid is not None, grid_run_dir=Path(grid) if grid else None,
                         final_rounds=a.final_rounds)
    except tune.TuneError as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 2


def _this_machine(bin_dir: str | None) -> str:
    """This machine's "cpu=.. simd=..", as the built uring_b3sum keys records."""
    program = (Path(bin_dir) if bin_dir else default_bin_dir()) / tune_space.DEFAULT_VARIANT
    return " ".join(w for w in wisdom.key_of(program, Path(".")).split() if not w.startswith("device="))


def cmd_wisdom(a: argparse.Namespace) -> int:
    try:
        if a.wisdom_cmd == "show":
            print("\n".join(wisdom.show(machine=_this_machine(a.bin_dir))))
        elif a.wisdom_cmd == "forget":
            gone = wisdom.forget(work=a.work, machine=_this_machine(a.bin_dir) if a.this_machine else None)
            print(f"forgot {len(gone)} record{'s' if len(gone) != 1 else ''} in {wisdom.wisdom_path()}")
        else:
            r = wisdom.install(Path(a.tune_dir), bin_dir=Path(a.bin_dir) if a.bin_dir else None)
            print(f"installed in {wisdom.wisdom_path()}: {r.work} {r.key}: {' '.join(r.options) or 'the defaults'}"
                  + wisdom.why_defaults(Path(a.tune_dir)))
    except wisdom.WisdomError as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 2
    return 0

