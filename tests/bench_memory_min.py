"""Where hashing a cached file from memory starts to pay: hot files of each size hashed with
`--path memory` and `--path ring`, interleaved rounds in shuffled order (docs/trees.md; docs/cold-path/tree-hot-run/README.md).

    .venv/bin/python tests/bench_memory_min.py [--rounds 11] [--total 256M] [--dir build/data/sizes] \
        [-- taskset -c 0]

Makes DIR/s<size>K/ (random files of one size, TOTAL in all) if missing, reads it into the page cache,
and prints each path's median and the median per-round ratio ring / memory. A benchmark: run it alone.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SIZES_KIB = (64, 128, 256, 512, 1024, 2048, 4096, 16384)


def make_files(directory: Path, size: int, total: int) -> Path:
    if not directory.is_dir():
        part = directory.with_name(directory.name + ".part")
        part.mkdir(parents=True, exist_ok=True)
        for i in range(max(4, total // size)):
            (part / f"f{i:05d}").write_bytes(os.urandom(size))
        part.rename(directory)
    for f in directory.iterdir():
        f.read_bytes()
    return directory


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--total", type=int, default=256 << 20, help="bytes per size")
    ap.add_argument("--dir", type=Path, default=REPO / "build" / "data" / "sizes")
    ap.add_argument("--program", type=Path, default=REPO / "build" / "bin" / "uring_b3sum")
    ap.add_argument("prefix", nargs="*", help="a command to run it under, such as taskset -c 0")
    a = ap.parse_args()
    rng = random.Random(7)
    for kib in SIZES_KIB:
        directory = make_files(a.dir / f"s{kib}K", kib << 10, a.total)
        times: dict[str, list[float]] = {"memory": [], "ring": []}
        for _ in range(a.rounds):
            for path in rng.sample(list(times), len(times)):
                start = time.perf_counter()
                subprocess.run([*a.prefix, str(a.program), "-r", "--path", path, str(directory)],
                               stdout=subprocess.DEVNULL, check=True)
                times[path].append(time.perf_counter() - start)
        ratios = [r / m for r, m in zip(times["ring"], times["memory"])]
        print(f"{kib:>6} KiB x {len(list(directory.iterdir())):5}: memory {statistics.median(times['memory']):.4f} s, "
              f"ring {statistics.median(times['ring']):.4f} s, ring / memory {statistics.median(ratios):.3f} "
              f"(ring faster in {sum(r < 1 for r in ratios)} of {a.rounds})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
