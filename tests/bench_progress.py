"""What --progress costs: uring_b3sum with and without it, stderr a terminal for both, in interleaved
rounds (the order shuffled in each), cold (the page cache dropped before every execution) or hot.

    .venv/bin/python tests/bench_progress.py --rounds 21 [--cold] [--recursive] PATH

Prints each side's median wall time and the median of the per-round ratios (with --progress / without)
with its distribution-free 95% interval (harness.stats.paired_ratio). A benchmark, not a test: run it
alone on the machine.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness import stats
from harness.machine import page_cache
from hashers_support import run_on_terminal  # noqa: E402  (tests/ is this script's directory)


def timed_on_terminal(argv: list[str]) -> tuple[float, bytes]:
    """Wall time of argv with stderr on a pseudo-terminal, and what the terminal received."""
    start = time.perf_counter()
    code, _, terminal = run_on_terminal(argv, stdout_too=False)
    elapsed = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"bench_progress: {' '.join(argv)}: exit {code}")
    return elapsed, terminal


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--cold", action="store_true", help="drop the page cache before every execution")
    ap.add_argument("--recursive", action="store_true", help="PATH is a tree: -r")
    ap.add_argument("--program", type=Path, default=REPO / "build" / "bin" / "uring_b3sum")
    a = ap.parse_args()
    base = [str(a.program), *(["-r"] if a.recursive else []), str(a.path)]
    sides = {"plain": base, "progress": [base[0], "--progress", *base[1:]]}
    times: dict[str, list[float]] = {name: [] for name in sides}
    redraws = []
    rng = random.Random(1)
    if not a.cold:  # uring_b3sum reads a cold file with O_DIRECT, which leaves it cold: read it through the cache
        for f in ([p for p in a.path.rglob("*") if p.is_file()] if a.path.is_dir() else [a.path]):
            page_cache.read_file(f)
    for _ in range(a.rounds):
        for name in rng.sample(list(sides), len(sides)):
            if a.cold:
                page_cache.drop_caches(a.path)
            elapsed, terminal = timed_on_terminal(sides[name])
            times[name].append(elapsed)
            if name == "progress":
                redraws.append(len(re.findall(rb"\r[^\r\n\x1b]+\x1b\[K", terminal)))
    ratio = stats.paired_ratio(times["progress"], times["plain"])
    print(f"{'cold' if a.cold else 'hot'} {a.path}, {a.rounds} interleaved rounds")
    for name in sides:
        print(f"  {name:9} median {statistics.median(times[name]):.4f} s")
    print(f"  progress / plain, per round: median {ratio.median:.4f} [{ratio.low:.4f}, {ratio.high:.4f}] "
          f"({ratio.confidence:.0%}); redraws per run: median {statistics.median(redraws):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
