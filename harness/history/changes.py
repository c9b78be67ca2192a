"""Where a measure changed across commits: PELT (Killick, Fearnhead and Eckley, "Optimal detection
of changepoints with a linear computational cost", JASA 2012) on the log of each commit's median
time, a change in mean with a Gaussian cost; and each change's size with its interval, from the
rounds of the commits of the segments on either side of it.

The noise is read off the data, not assumed: sigma is the median absolute difference between
neighbouring commits (x 1.4826 / sqrt 2, a robust standard deviation of one point), at least 1%,
so that a machine's run-to-run drift is not taken for a change. The penalty per change is
3 log n, a little above BIC's 2 log n, and a change is kept only when its interval leaves 1 out: a
history page that cries wolf is read once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIN_SIGMA = 0.01  # log scale: 1%
BOOTSTRAP = 4000
CONFIDENCE = 0.95


def noise(logs: list[float]) -> float:
    diffs = np.abs(np.diff(np.asarray(logs, dtype=float)))
    if not len(diffs):
        return MIN_SIGMA
    return max(MIN_SIGMA, float(np.median(diffs)) * 1.4826 / math.sqrt(2))


def pelt(values: list[float], penalty: float | None = None, sigma: float | None = None) -> list[int]:
    """The indices where a new segment starts (never 0), for a change in mean of `values`."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n < 2:
        return []
    sigma = sigma if sigma is not None else noise(list(x))
    beta = penalty if penalty is not None else 3 * math.log(n)
    s1 = np.concatenate([[0.0], np.cumsum(x)]) / sigma
    s2 = np.concatenate([[0.0], np.cumsum(x * x)]) / sigma ** 2

    def cost(a: int, b: int) -> float:  # segment x[a:b], in units of sigma^2
        m = b - a
        return float(s2[b] - s2[a] - (s1[b] - s1[a]) ** 2 / m)

    best = [-beta] + [0.0] * n
    last = [0] * (n + 1)
    candidates = [0]
    for t in range(1, n + 1):
        totals = [best[s] + cost(s, t) + beta for s in candidates]
        i = int(np.argmin(totals))
        best[t], last[t] = totals[i], candidates[i]
        candidates = [s for s, total in zip(candidates, totals) if total - beta <= best[t]] + [t]
    starts, t = [], n
    while t > 0:
        if last[t] > 0:
            starts.append(last[t])
        t = last[t]
    return sorted(starts)


@dataclass(frozen=True)
class Change:
    index: int  # the first commit of the new segment
    ratio: float  # its median time / the commit before's
    low: float
    high: float

    def text(self) -> str:
        return f"x{self.ratio:.3f} [{self.low:.3f}, {self.high:.3f}]"


def step(before: list[float], after: list[float], seed: int = 1) -> tuple[float, float, float]:
    """after's median / before's, with a percentile bootstrap interval (the rounds of two runs are
    independent: each side is resampled on its own)."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    ratio = float(np.median(b) / np.median(a))
    boot = (np.median(rng.choice(b, (BOOTSTRAP, len(b))), axis=1)
            / np.median(rng.choice(a, (BOOTSTRAP, len(a))), axis=1))
    tail = (1 - CONFIDENCE) / 2
    return ratio, float(np.quantile(boot, tail)), float(np.quantile(boot, 1 - tail))


def _measured(starts: list[int], rounds: list[list[float]]) -> list[Change]:
    bounds = [0, *starts, len(rounds)]
    found = []
    for i, k in enumerate(starts):
        before = [t for r in rounds[bounds[i]:k] for t in r]
        after = [t for r in rounds[k:bounds[i + 2]] for t in r]
        if before and after:
            found.append(Change(k, *step(before, after)))
    return found


def changes(medians: list[float], rounds: list[list[float]]) -> list[Change]:
    """The changes of one measure across commits in order: where, and by how much (the rounds of
    every commit of the segment after the change over those of the segment before it). A place
    PELT proposes whose interval holds 1 is no change: it is dropped, and the others are measured
    again without it, until every change left is one its own rounds show."""
    starts = pelt([math.log(m) for m in medians])
    while True:
        found = _measured(starts, rounds)
        shown = [c.index for c in found if c.low > 1 or c.high < 1]
        if shown == starts:
            return found
        starts = shown
