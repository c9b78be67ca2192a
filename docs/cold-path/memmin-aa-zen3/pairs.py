"""Paired per-round ratios of the memmin-aa runs, per tree: ring and memory over the defaults, and
ring over memory; per run and pooled. Also which way the defaults went (effective_path)."""
import sys
from pathlib import Path

import pandas as pd

from harness.stats import paired_ratio

runs = []
for i, run in enumerate(sys.argv[1:], 1):
    d = pd.read_csv(Path(run) / "runs.csv")
    d = d[d.tool == "hasher"].assign(run=i, tree=lambda x: x.label.str.extract(r"\[(\w+)\]$")[0])
    runs.append(d)
alld = pd.concat(runs)
for tree in ["1M", "1536K"]:
    t = alld[alld.tree == tree]
    ways = t[t.group == "uring_b3sum"].effective_path.value_counts().to_dict()
    print(f"\n{tree} files, 2 cores: the defaults went {ways}")
    print("| ratio (median [95%], rounds the first faster) | " + " | ".join(f"run {i}" for i in range(1, len(runs) + 1)) + " | pooled |")
    print("|---" * (len(runs) + 2) + "|")
    per = [t[t.run == i].pivot_table(index="round", columns="group", values="wall_s") for i in range(1, len(runs) + 1)]
    pooled = t.pivot_table(index=["run", "round"], columns="group", values="wall_s")
    for a, b in [("ring", "uring_b3sum"), ("memory", "uring_b3sum"), ("ring", "memory")]:
        cells = []
        for p in per + [pooled]:
            e = paired_ratio(p[a], p[b])
            cells.append(f"{e.median:.3f} [{e.low:.3f}, {e.high:.3f}], {(p[a] < p[b]).sum()} of {len(p)}")
        name = {"uring_b3sum": "defaults"}.get(b, b)
        print(f"| {a} / {name} | " + " | ".join(cells) + " |")
