"""Compare builds of the same hasher from a `make bench` run: pairs of commands `<label>` and
`<build>-<label>`, interleaved in the same shuffled rounds.

Usage: python -m harness.bench RUN_DIR. Prints, per pair, the median wall time of both builds and
their ratio (this build / the other), and each one's ratio to b3sum when the run has it.
- `notrace-` (configs/bench-trace.toml): the same source without the trace code. With tracing off
  the trace code should cost nothing measurable: a ratio within the run's noise of 1.
- `blake3join-` (configs/bench-join.toml): linked with BLAKE3's own TBB join instead of
  hashers/parallel_hash.cpp: below 1 is what the grain saves.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.judge.results import command_stats, read_runs
from harness.catalog.tools import REFERENCE_HASH, the_tool

OTHER_BUILDS = {"notrace-": "no trace code", "blake3join-": "BLAKE3's join"}
B3SUM = the_tool(REFERENCE_HASH)  # its command label in bench.toml is the tool's name


def paired_builds(run_dir: Path) -> list[dict[str, object]]:
    stats = command_stats(read_runs(run_dir)).set_index("label")
    b3sum = float(stats.loc[B3SUM, "median_s"]) if B3SUM in stats.index else None
    rows = []
    for label in stats.index:
        for prefix, other in OTHER_BUILDS.items():
            this = label[len(prefix):]
            if not label.startswith(prefix) or this not in stats.index:
                continue
            mine, theirs = float(stats.loc[this, "median_s"]), float(stats.loc[label, "median_s"])
            rows.append({"command": this, "other": other, "n": int(stats.loc[this, "n"]),
                         "this_s": mine, "other_s": theirs, "ratio": mine / theirs,
                         "this_vs_b3sum": mine / b3sum if b3sum else None,
                         "other_vs_b3sum": theirs / b3sum if b3sum else None})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    a = ap.parse_args(argv)
    if not (a.run_dir / "runs.csv").exists():
        print(f"fatal: {a.run_dir}: not a run directory (no runs.csv)", file=sys.stderr)
        return 2
    rows = paired_builds(a.run_dir)
    if not rows:
        names = " or ".join(f"'{p}<label>'" for p in OTHER_BUILDS)
        print(f"fatal: {a.run_dir}: no pairs of '<label>' and {names} commands", file=sys.stderr)
        return 1
    print(f"{'command':<44} {'runs':>4} {'as built':>10} {'other build':>26} {'ratio':>7} {'÷ b3sum':>15}")
    for r in rows:
        vs = (f"{r['this_vs_b3sum']:.3f} / {r['other_vs_b3sum']:.3f}" if r["this_vs_b3sum"] is not None else "-")
        print(f"{r['command']:<44} {r['n']:>4} {r['this_s']:>8.4f} s {r['other']:>15} {r['other_s']:>8.4f} s "
              f"{r['ratio']:>7.3f} {vs:>15}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
