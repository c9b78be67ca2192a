"""`ringsum run --until-decided`: add rounds to the contenders only, until the headline names a
winner (or, for one hasher and b3sum, says which of the two is faster) or the budget (time, or
rounds) ends.

Looking at the data after every few rounds and stopping at the first look that names a winner
would, at 95% a look, name a winner that is not one far more often than 5% of the time. So the
number of looks is fixed before the first round (`looks`: after the config's rounds, then after
every `step` more, up to `max_rounds`) and every look decides at the stricter confidence
1 - 5%/looks (Bonferroni over the looks: the chance that any look is wrong stays at most 5%,
whether or not the run stops early). The regression check's power study does the same kind of
check on real rounds: tests/test_sequential.py and `python -m analysis.sequential_study`.

An added round runs, in a fresh shuffled order: the contenders (the fastest hasher and every one
within noise of it at that confidence), the readers that have set the speed limit in some round
so far (so each added round has a limit of its own), and the fastest b3sum (so "vs b3sum" gains
the rounds too). Hashers once clearly beaten get no more rounds.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness import stats
from harness.catalog.tools import HASHER, REFERENCE_HASH, tools_with
from harness.judge import results as res
from harness.judge import verdict
from harness.judge.decision import Decision
from harness.judge.load import load_run

MAX_ROUNDS_FACTOR = 4  # default max_rounds: this many times the config's rounds
MAX_ROUNDS_CAP = 100


class SequentialError(ValueError):
    pass


@dataclass(frozen=True)
class Sequential:
    """The looks of one run, fixed before it starts."""

    base_rounds: int
    max_rounds: int
    step: int
    budget_s: float | None = None  # time for the added rounds; None: until max_rounds

    @classmethod
    def for_run(cls, rounds: int, budget_s: float | None, max_rounds: int | None = None) -> Sequential:
        top = max_rounds if max_rounds is not None else min(MAX_ROUNDS_CAP, MAX_ROUNDS_FACTOR * rounds)
        if top <= rounds:
            raise SequentialError(f"--until-decided needs room for more rounds than the {rounds} planned "
                                  f"(at most {top})")
        return cls(rounds, top, max(2, math.ceil(rounds / 2)), budget_s)

    @property
    def looks(self) -> int:
        return 1 + math.ceil((self.max_rounds - self.base_rounds) / self.step)

    @property
    def confidence(self) -> float:
        return 1 - (1 - stats.CONFIDENCE) / self.looks

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"looks": self.looks, "confidence": self.confidence}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Sequential:
        return cls(int(data["base_rounds"]), int(data["max_rounds"]), int(data["step"]), data.get("budget_s"))


def check_plan(plan: Any) -> None:
    """One workload to decide: one dataset in one condition."""
    files = {c.file for c in plan.commands}  # a RAM device's copy stands in for its source
    if len(files) != 1 or len(plan.conditions) > 1:
        raise SequentialError(f"--until-decided decides one workload; this plan reads {len(files)} "
                              f"datasets in {len(plan.conditions)} conditions")
    hashers = sum(c.tool == HASHER for c in plan.commands)
    if hashers < 2 and not (hashers == 1 and any(c.tool in tools_with(REFERENCE_HASH) for c in plan.commands)):
        raise SequentialError("--until-decided needs two hashers or more, or a hasher and b3sum, to decide between")


def settled(h: Any) -> bool:
    """Whether a look answers the run's question: which hasher is the fastest or, with one hasher and
    b3sum, whether it beats b3sum or b3sum beats it, at the look's confidence."""
    d = h.decision
    if d.runner_up is None and d.kind != "none" and h.b3sum is not None:
        return stats.outcome(h.b3sum.ratio, d.confidence) in ("faster", "slower")
    return d.decided


def current_decision(run_dir: Path) -> tuple[Decision, Any, Any]:
    """The decision at this look, the headline it is part of, and the runs table it was made from:
    of the run directory as it stands, at the confidence its looks recorded, as its summary will be."""
    run = load_run(run_dir)
    if run.meta.get("sequential") is None:
        raise SequentialError(f"{run_dir}: meta.json has no record of the run's looks (--until-decided)")
    h = verdict.headline(run.runs, run.plan["cache"], run.argvs, confidence=run.decision_confidence)
    assert h.decision is not None
    return h.decision, h, run.runs


def next_round_labels(h: Any) -> list[str]:
    """The commands an added round runs (see the module doc)."""
    assert h.decision is not None
    readers = sorted(set(h.limit.set_in_round.values())) if h.limit else []
    return [*h.decision.contenders, *readers, *([h.b3sum.label] if h.b3sum else [])]


def round_seconds(runs: Any, labels: list[str], overhead_s: float) -> float:
    """About how long one added round of `labels` takes: their median wall times so far, each with
    the per-execution overhead (cache drop, start-up)."""
    walls = runs[runs["label"].astype(str).isin(labels)].groupby("label")["wall_s"].median()
    return float(walls.sum()) + overhead_s * len(labels)


def record(run_dir: Path, seq: Sequential, outcome: dict[str, Any] | None = None) -> None:
    meta = res.read_json(run_dir / res.META_JSON)
    meta["sequential"] = seq.to_json() | ({"outcome": outcome} if outcome else {})
    res.write_meta(run_dir, meta)


def recorded(meta: dict[str, Any]) -> Sequential | None:
    data = meta.get("sequential")
    return Sequential.from_json(data) if data else None
