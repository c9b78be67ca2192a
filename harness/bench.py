"""Compare each hasher as built with its build without trace code, from a `configs/bench-trace.toml` run.

Usage: python -m harness.bench RUN_DIR. Prints, per variant, the median wall time of both builds
(interleaved in the same shuffled rounds) and their ratio: with tracing off, the trace code should
cost nothing measurable, i.e. a ratio within the run's noise of 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.results import per_command, read_runs

NOTRACE_PREFIX = "notrace-"


def trace_overhead(run_dir: Path) -> list[dict[str, object]]:
    stats = per_command(read_runs(run_dir)).set_index("label")
    rows = []
    for label in stats.index:
        if not label.startswith(NOTRACE_PREFIX):
            continue
        traced = label[len(NOTRACE_PREFIX):]
        if traced not in stats.index:
            continue
        with_code, without = stats.loc[traced], stats.loc[label]
        rows.append({"command": traced, "n": int(with_code["n"]),
                     "with_trace_code_s": float(with_code["median_s"]), "without_s": float(without["median_s"]),
                     "ratio": float(with_code["median_s"] / without["median_s"])})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    a = ap.parse_args(argv)
    if not (a.run_dir / "runs.csv").exists():
        print(f"fatal: {a.run_dir}: not a run directory (no runs.csv)", file=sys.stderr)
        return 2
    rows = trace_overhead(a.run_dir)
    if not rows:
        print(f"fatal: {a.run_dir}: no pairs of '<label>' and '{NOTRACE_PREFIX}<label>' commands", file=sys.stderr)
        return 1
    print(f"{'command':<52} {'runs':>4} {'trace code':>11} {'no trace code':>14} {'ratio':>7}")
    for r in rows:
        print(f"{r['command']:<52} {r['n']:>4} {r['with_trace_code_s']:>9.4f} s {r['without_s']:>12.4f} s "
              f"{r['ratio']:>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
