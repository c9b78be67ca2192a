"""The statistics behind every verdict ringsum prints, in one place: a median with its interval,
and the paired per-round ratio of two commands. Pure functions of numbers (numpy, no pandas), used
by the summary, the report, the charts and `ringsum tune` alike.

Interval: the distribution-free order-statistic interval for a median (the sign test's). With
the n values sorted, [x_(k), x_(n+1-k)] holds the true median with probability
1 - 2·P(Binomial(n, 1/2) < k) whatever the distribution of the values; k is the largest index
whose coverage is at least the confidence asked for. There is no resampling, so the same values
always give the same interval. Few values cannot give a 95% interval: below 6, even [min, max]
covers less (5 values: 93.75%, 3 values: 75%); the Estimate then says the coverage it has.

Paired ratio: commands run once per round in a shuffled order, so round r's times of two commands
share the disk's and the machine's mood of that round. The ratio a_r / b_r per round cancels
most of that drift; its median and interval say how much faster one is, and an interval that
contains 1 is a tie.

Paired shift (the regression check's figure): two builds of the same program in shuffled rounds
are exchangeable when nothing changed, so the log of their per-round ratio is symmetric about its
centre. Symmetry buys a sharper estimator than the median: the Hodges-Lehmann estimate (the
median of the pairwise means of the logs) with the exact Wilcoxon signed-rank interval, still
distribution-free and resampling-free. For normal-like noise its interval is about 20% narrower
than the median's, i.e. it needs about a third fewer rounds for the same width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

CONFIDENCE = 0.95

# The one way every output (text, Markdown, JSON, charts, report.html) states a comparison.
RATIO_CONVENTION = ("every ratio is a time ratio, this command's time / the reference's time, given as a "
                    "median [95% interval] (within a run paired per round; between two runs each resampled "
                    "on its own): below 1 is faster (0.80: 20% less time), an interval holding 1 is a tie; "
                    "the regression check writes the same ratio as a change (+5%: 1.05); ringsum prints no speed-ups")


@dataclass(frozen=True)
class Estimate:
    """A median with its interval; `confidence` is the interval's real coverage."""

    median: float
    low: float
    high: float
    n: int
    confidence: float

    def to_json(self) -> dict[str, float | int | None]:
        def num(x: float) -> float | None:
            return None if x != x else float(x)

        return {"median": num(self.median), "low": num(self.low), "high": num(self.high), "n": self.n,
                "confidence": round(self.confidence, 4)}

    def text(self, digits: int = 3) -> str:
        """'1.052 [1.021, 1.080]' (or '-' without data)."""
        if not self.n:
            return "-"
        return f"{self.median:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def _coverage(n: int, k: int) -> float:
    """P(x_(k) <= median <= x_(n+1-k)) for n values from any continuous distribution."""
    below = sum(math.comb(n, i) for i in range(k)) / 2 ** n
    return 1.0 - 2.0 * below


def order_index(n: int, confidence: float = CONFIDENCE) -> int:
    """The k of n values' interval [x_(k), x_(n+1-k)] at the confidence: the largest k whose
    coverage reaches it, 0 when even [min, max] covers less."""
    k, below, total = 0, 0, 2 ** n
    while k + 1 <= (n + 1) // 2:
        below += math.comb(n, k)  # the sum below x_(k+1): its coverage is 1 - 2 * below / 2^n
        if 1.0 - 2.0 * below / total < confidence:
            break
        k += 1
    return k


def median_interval(values: Iterable[float], confidence: float = CONFIDENCE) -> Estimate:
    """The median of the finite values and its order-statistic interval (see the module doc)."""
    x = np.sort(np.asarray([v for v in values], dtype=float))
    x = x[np.isfinite(x)]
    n = len(x)
    if not n:
        return Estimate(math.nan, math.nan, math.nan, 0, 0.0)
    k = max(1, order_index(n, confidence))  # too few values for the confidence: [min, max], at what it covers
    return Estimate(float(np.median(x)), float(x[k - 1]), float(x[n - k]), n, _coverage(n, k))


def paired_ratio(a: Iterable[float], b: Iterable[float], confidence: float = CONFIDENCE) -> Estimate:
    """Median and interval of a[i] / b[i] over the pairs where both are finite and b[i] > 0
    (a and b: the same rounds, in the same order; NaN marks a round a command has no time for)."""
    a_, b_ = np.asarray(list(a), dtype=float), np.asarray(list(b), dtype=float)
    if a_.shape != b_.shape:
        raise ValueError(f"paired values need equal lengths, got {a_.shape} and {b_.shape}")
    keep = np.isfinite(a_) & np.isfinite(b_) & (b_ > 0)
    return median_interval(a_[keep] / b_[keep], confidence)


RoundTimes = dict[int, float]  # round -> seconds: a command's time in each round (its executions' median)


def paired_rounds(a: RoundTimes, b: RoundTimes, confidence: float = CONFIDENCE) -> Estimate:
    """a's time / b's time over the rounds both have, as a median with its interval: the one way
    two commands of a run are compared (verdict, decision, the robust pick, tune, history)."""
    rounds = sorted(set(a) & set(b))
    return paired_ratio([a[r] for r in rounds], [b[r] for r in rounds], confidence)


def _signed_rank_cdf(n: int) -> np.ndarray:
    """P(W <= w) for w = 0 .. n(n+1)/2, W the Wilcoxon signed-rank statistic of n values
    symmetric about zero (each rank counted with probability 1/2, independently)."""
    p = np.zeros(n * (n + 1) // 2 + 1)
    p[0] = 1.0
    for k in range(1, n + 1):
        p[k:] = (p[k:] + p[:-k]) / 2
        p[:k] /= 2
    return np.cumsum(p)


def shift_interval(values: Iterable[float], confidence: float = CONFIDENCE) -> Estimate:
    """The Hodges-Lehmann centre of values symmetric about it (the median of the n(n+1)/2 means
    of pairs, each value with itself included) and the signed-rank interval
    [w_(k), w_(N+1-k)] of those sorted means, k the largest with coverage 1 - 2 P(W <= k-1) at
    least the confidence (see the module doc). Exact up to 400 values, then the normal
    approximation of W."""
    x = np.asarray([v for v in values], dtype=float)
    x = x[np.isfinite(x)]
    n = len(x)
    if not n:
        return Estimate(math.nan, math.nan, math.nan, 0, 0.0)
    i, j = np.triu_indices(n)
    walsh = np.sort((x[i] + x[j]) / 2)
    total = len(walsh)
    if n <= 400:
        below = _signed_rank_cdf(n)  # below[k-1] = P(W <= k-1)
        k = 1
        while k + 1 <= (total + 1) // 2 and 1 - 2 * below[k] >= confidence:
            k += 1
        coverage = 1 - 2 * below[k - 1] if k > 1 else 1 - 2 * 0.5 ** n
    else:
        mean, sd = total / 2, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        z = normal_quantile(1 - (1 - confidence) / 2)
        k = max(1, math.floor(mean - z * sd))
        coverage = confidence
    return Estimate(float(np.median(walsh)), float(walsh[k - 1]), float(walsh[total - k]), n, float(coverage))


def normal_quantile(p: float) -> float:
    """Inverse of the standard normal CDF by bisection (erf is exact enough; no scipy)."""
    lo, hi = -10.0, 10.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def paired_shift(a: Iterable[float], b: Iterable[float], confidence: float = CONFIDENCE) -> Estimate:
    """The ratio a/b of two exchangeable commands measured in the same rounds: exp of the shift
    interval of log(a[i] / b[i]) over the pairs where both are finite and positive."""
    a_, b_ = np.asarray(list(a), dtype=float), np.asarray(list(b), dtype=float)
    if a_.shape != b_.shape:
        raise ValueError(f"paired values need equal lengths, got {a_.shape} and {b_.shape}")
    keep = np.isfinite(a_) & np.isfinite(b_) & (a_ > 0) & (b_ > 0)
    return log_shift(np.log(a_[keep] / b_[keep]), confidence)


def log_shift(logs: Iterable[float], confidence: float = CONFIDENCE) -> Estimate:
    """A ratio from log-ratios: exp of their shift interval."""
    e = shift_interval(logs, confidence)
    return Estimate(math.exp(e.median), math.exp(e.low), math.exp(e.high), e.n, e.confidence) if e.n else e


def is_tie(ratio: Estimate) -> bool:
    """A ratio whose interval contains 1: the data cannot tell the two apart."""
    return ratio.n > 0 and ratio.low <= 1.0 <= ratio.high


def outcome(ratio: Estimate, confidence: float | None = None) -> str:
    """For a ratio a/b of times: 'faster' (a is, the whole interval below 1), 'slower', 'tie',
    or 'unknown' (no pairs); given a confidence, 'undecided' where the rounds cannot reach it even
    from min to max."""
    if not ratio.n:
        return "unknown"
    if confidence is not None and ratio.confidence < confidence:
        return "undecided"
    if is_tie(ratio):
        return "tie"
    return "faster" if ratio.high < 1.0 else "slower"


def fewest_rounds(confidence: float) -> int:
    """The fewest values whose median interval (from min to max at the least) reaches the confidence."""
    return next(n for n in range(1, 10_000) if order_index(n, confidence))
