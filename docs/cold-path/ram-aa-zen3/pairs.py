"""Paired per-round ratios of the ram-aa runs: each wrapper / w-defaults, per run and pooled."""
import sys
from pathlib import Path

import pandas as pd

from harness.stats import paired_ratio

frames = []
for i, run in enumerate(sys.argv[1:], 1):
    d = pd.read_csv(Path(run) / "runs.csv")
    d = d[d.tool == "hasher"].assign(run=i)
    frames.append(d.pivot_table(index=["run", "round"], columns="group", values="wall_s"))
allp = pd.concat(frames)
print("| ratio (median [95%], rounds ahead) | " + " | ".join(f"run {i}" for i in range(1, len(frames) + 1)) + " | pooled |")
print("|---" * (len(frames) + 2) + "|")
for a in ["w-same", "w-envpad", "w-deep"]:
    cells = []
    for p in frames + [allp]:
        e = paired_ratio(p[a], p["w-defaults"])
        cells.append(f"{e.median:.3f} [{e.low:.3f}, {e.high:.3f}], {(p[a] < p['w-defaults']).sum()} of {len(p)}")
    print(f"| {a} / w-defaults | " + " | ".join(cells) + " |")
e = paired_ratio(allp["w-deep"], allp["w-same"])
print("pooled w-deep / w-same", e)
print(allp.median())
