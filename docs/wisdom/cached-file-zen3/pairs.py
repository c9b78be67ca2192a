"""Paired per-round ratios of wisdom-effect runs, each and pooled: the record and the tuned setting
forced over no record, the record over the tuned setting forced, no record over b3sum (where the
run has b3sum: docs/wisdom/tree-effect-cached-2 uses it too)."""
import sys
from pathlib import Path

import pandas as pd

from harness.stats import paired_ratio

PAIRS = [("wisdom", "no record"), ("tuned everywhere", "no record"), ("wisdom", "tuned everywhere"),
         ("no record", "b3sum")]


def show(title: str, p: pd.DataFrame) -> None:
    print(f"{title} ({len(p)} rounds)")
    for a, b in [(a, b) for a, b in PAIRS if a in p and b in p]:
        e = paired_ratio(p[a], p[b])
        print(f"  {a} / {b}: {e.median:.3f} [{e.low:.3f}, {e.high:.3f}], faster in {(p[a] < p[b]).sum()} of {len(p)}")


runs = []
for i, run in enumerate(sys.argv[1:]):
    p = pd.read_csv(Path(run) / "runs.csv").pivot_table(index="round", columns="label", values="wall_s")
    show(run, p)
    runs.append(p.set_axis([(i, r) for r in p.index], axis=0))
if len(runs) > 1:
    show("pooled", pd.concat(runs))
