"""The headline as a decision: a clear winner among the hashers, or "no winner after N rounds" with
the ones within noise, how many more rounds would likely separate the two fastest, and which of
the tied ones to take meanwhile (the one that sets the fewest options: nothing to lose, less to
keep).

A winner is decided when the paired per-round ratio of the fastest hasher (by median) to every
other has its interval wholly below 1 at the decision's confidence. That confidence is 95% for one
look at the data; a run that adds rounds until decided looks several times, and each look then
uses a stricter confidence so that the chance of ever naming a winner that is not one stays 5%
(harness/judge/sequential.py).

The estimate of more rounds comes from the interval itself: with n rounds its upper end is below
1 when at most k-1 rounds have the fastest not faster, k the order statistic of n at the
confidence (harness/stats.py). If the fastest lost a share p of the rounds so far, the estimate is
the fewest n' with p·n' <= k(n') - 1: the rounds at which a like share of losses would fit. It is
an estimate, said as "about"; a difference under `RESOLUTION` by median is called too small to
chase, and one that would take over `MAX_MORE` times the rounds so far is not given a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness import stats

RESOLUTION = 0.005  # a time ratio within 0.5% of 1: no number of rounds here is worth spending on it
SHOWN = 4  # contenders named in the text (the JSON has them all)
MAX_MORE = 10  # more than this many times the rounds so far: "many more", not a number to plan on

RoundTimes = stats.RoundTimes


@dataclass(frozen=True)
class Decision:
    """What the headline tells a person to do."""

    kind: str  # "winner" | "no_winner" | "none"
    rounds: int
    confidence: float
    winner: str | None = None  # kind "winner": the hasher; "no_winner": the fastest by median
    contenders: list[str] = field(default_factory=list)  # the winner and every hasher within noise of it
    take: str | None = None  # "no_winner": the contender with the fewest options
    runner_up: str | None = None
    runner_up_ratio: stats.Estimate | None = None  # winner's time / runner-up's, per round
    more_rounds: int | None = None  # about this many more would separate winner and runner-up
    why_no_estimate: str = ""
    hashers: int = 0  # in the run, succeeded or not (kind "none": none at all, or none succeeded)

    @property
    def decided(self) -> bool:
        return self.kind == "winner"

    @property
    def no_hasher(self) -> str:
        """Why there is nothing to decide: a run of commands only (`ringsum bench`) is not a failure."""
        return "no hasher ran successfully" if self.hashers else "no hasher in the run"

    def text(self, reference: tuple[str, stats.Estimate] | None = None) -> str:
        """The decision in words; with a reference (the fastest b3sum: its label, and the pick's time over
        its, per round), whether the pick beats it, at the decision's confidence."""
        if self.kind == "none":
            return f"{self.no_hasher}: nothing to decide"
        if reference is None:
            return self._among_hashers()
        label, ratio = reference
        word = stats.outcome(ratio, self.confidence)
        if word == "slower":
            return (f"use `{label}`: it beats {self.winner}, the fastest hasher here, after {self.rounds} rounds "
                    f"({self.winner}'s time / its: {ratio.text(2)})")
        base = f"use {self.winner}" if self.runner_up is None else self._among_hashers()
        return f"{base}; " + {
            "unknown": f"no round in common with `{label}`",
            "undecided": (f"against `{label}` {ratio.text(2)} x its time, undecided: {ratio.n} rounds give at most "
                          f"{ratio.confidence:.1%} (min to max), {self.confidence:.0%} takes "
                          f"{stats.fewest_rounds(self.confidence)} or more"),
            "faster": f"it beats `{label}` ({ratio.text(2)} x its time)",
            "tie": f"not told apart from `{label}` after {ratio.n} rounds ({ratio.text(2)} x its time)"}[word]

    def _among_hashers(self) -> str:
        assert self.winner is not None
        if self.runner_up is None:
            return f"use {self.winner} (the only hasher in the run)"
        ratio = self.runner_up_ratio.text(3) if self.runner_up_ratio else "-"
        if self.runner_up_ratio and self.runner_up_ratio.confidence < self.confidence:
            ratio += f", min to max of {self.runner_up_ratio.n} rounds: {self.runner_up_ratio.confidence:.2%}"
        if self.decided:
            return (f"use {self.winner}: faster than every other hasher after {self.rounds} rounds "
                    f"(its time / the runner-up {self.runner_up}'s: {ratio})")
        more = (f"about {self.more_rounds} more rounds would likely separate {self.winner} from {self.runner_up}"
                if self.more_rounds is not None else self.why_no_estimate)
        named = "; ".join(self.contenders[:SHOWN]) + (f"; and {len(self.contenders) - SHOWN} more"
                                                       if len(self.contenders) > SHOWN else "")
        return (f"no winner after {self.rounds} rounds: {len(self.contenders)} hashers are within noise "
                f"({named}); {more}; take {self.take}, the one that sets the fewest options")

    def to_json(self, reference: tuple[str, stats.Estimate] | None = None) -> dict[str, Any]:
        """Its text as the headline says it: with the reference (the fastest b3sum) when there is one."""
        return {"kind": self.kind, "text": self.text(reference), "winner": self.winner if self.decided else None,
                "fastest": self.winner, "contenders": self.contenders, "take": self.take if not self.decided
                else self.winner, "rounds": self.rounds, "confidence": self.confidence,
                "runner_up": self.runner_up,
                "runner_up_ratio": self.runner_up_ratio.to_json() if self.runner_up_ratio else None,
                "more_rounds": self.more_rounds}


def _log_ratios(a: RoundTimes, b: RoundTimes) -> list[float]:
    return [math.log(a[r] / b[r]) for r in sorted(set(a) & set(b)) if a[r] > 0 and b[r] > 0]


def tied_with(times: dict[str, RoundTimes], best: str, labels: list[str]) -> dict[str, stats.Estimate]:
    """The labels (other than best) whose per-round ratio best/label has an interval containing 1
    at 95% (tune's finalists, the charts' shading)."""
    ties = {lbl: stats.paired_rounds(times[best], times[lbl]) for lbl in labels if lbl != best and lbl in times}
    return {lbl: r for lbl, r in ties.items() if stats.is_tie(r)}


def more_rounds(logs: list[float], confidence: float = stats.CONFIDENCE) -> tuple[int | None, str]:
    """About how many more rounds would make the interval of the median of these per-round log
    ratios (the fastest's time / the runner-up's) clear 0, or why no number is given (see the
    module doc)."""
    x = np.asarray(logs, dtype=float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n < 3:
        return None, "too few common rounds to estimate from"
    if abs(float(np.median(x))) < math.log1p(RESOLUTION):
        return None, (f"they differ by less than {RESOLUTION:.1%} by median, too little for more rounds "
                      "to be worth it")
    behind = float(np.mean(x >= 0))  # the share of rounds the fastest did not win
    if behind >= 0.5:
        return None, "the fastest by median wins no more rounds than it loses: more rounds would not separate them"
    for more in range(1, MAX_MORE * n + 1):
        k = stats.order_index(n + more, confidence)
        if k and behind * (n + more) <= k - 1:
            return more, ""
    return None, f"more than {MAX_MORE * n} more rounds would be needed to separate them"


def options_set(label: str) -> int:
    """How many options a hasher's label names beyond its variant's defaults ('uring_b3sum defaults': 0,
    'uring_b3sum bs=4M qd=8 buf=16': 3; harness/pipeline/plan.py labels a configuration by what it sets)."""
    words = [w for w in label.split()[1:] if not w.startswith(("@", "["))]  # not the condition's, the dataset's tags
    return 0 if words == ["defaults"] else len(words)


def decide(times: dict[str, RoundTimes], hashers: list[str], confidence: float = stats.CONFIDENCE) -> Decision:
    """The decision among `hashers` (labels with times) at `confidence` per comparison."""
    medians = sorted(((float(np.median(list(times[h].values()))), h) for h in hashers if times.get(h)))
    rounds = len(set().union(*(times[h] for _, h in medians))) if medians else 0
    if not medians:
        return Decision("none", 0, confidence, hashers=len(hashers))
    winner = medians[0][1]
    if len(medians) == 1:
        return Decision("winner", rounds, confidence, winner, [winner], winner)
    ratios = {h: stats.paired_rounds(times[winner], times[h], confidence) for _, h in medians[1:]}
    # Too few rounds for a stricter confidence than one look's give [min, max] at less: not reached.
    reached = {h: confidence <= stats.CONFIDENCE or r.confidence >= confidence for h, r in ratios.items()}
    tied = [h for _, h in medians[1:] if not (ratios[h].n and ratios[h].high < 1.0 and reached[h])]
    runner_up = medians[1][1]
    if not tied:
        return Decision("winner", rounds, confidence, winner, [winner], winner, runner_up, ratios[runner_up])
    contenders = [winner, *tied]
    take = min(contenders, key=lambda h: (options_set(h), contenders.index(h)))
    extra, why = more_rounds(_log_ratios(times[winner], times[tied[0]]), confidence)
    return Decision("no_winner", rounds, confidence, winner, contenders, take, tied[0], ratios[tied[0]], extra, why)
