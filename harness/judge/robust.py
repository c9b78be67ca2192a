"""Across machine conditions: each condition's winner, and the robust pick.

A configuration is a command without its condition (its label without " @<condition>"). In each
condition the best configuration is the hasher with the lowest median time there; a configuration's
ratio to it is its time / the best's time, paired per round (harness/stats.py). The **robust pick**
is the configuration whose worst such ratio over the conditions is smallest: what to choose when the
next machine may be any of them. Its worst ratio is given with its interval and the condition it
comes from; a pick whose worst interval contains 1 is as good as the best everywhere.

harness/judge/verdict.py feeds these the per-round times of each condition (its rows are cut by
`one_condition`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness import stats
from harness.conditions.spec import AS_IS
from harness.judge.results import rows_where
from harness.units import format_rate

RoundTimes = stats.RoundTimes


def condition_names(runs: Any) -> list[str]:
    """The run's machine conditions (harness/conditions/spec.py), the machine as it is first; [""] for
    a run without them."""
    if "condition" not in runs or not len(runs):
        return [""]
    names = {str(x) for x in runs["condition"].fillna("").astype(str)}
    return sorted(names, key=lambda n: (n not in ("", AS_IS), n))


def one_condition(runs: Any, name: str | None = None) -> Any:
    """The rows of one condition (default: the first); every verdict is made within one."""
    if "condition" not in runs or not len(runs):
        return runs
    name = condition_names(runs)[0] if name is None else name
    return rows_where(runs, runs["condition"].fillna("").astype(str) == name)


def configuration(label: str, condition: str) -> str:
    """The label without its condition's tag."""
    tag = f" @{condition}"
    return label[: -len(tag)] if condition and label.endswith(tag) else label


@dataclass(frozen=True)
class Cell:
    """One configuration in one condition."""

    configuration: str
    condition: str
    vs_best: stats.Estimate  # its time / the condition's best configuration's, per round
    vs_limit: stats.Estimate | None  # its time / the condition's speed limit, per round

    def to_json(self) -> dict[str, Any]:
        return {"configuration": self.configuration, "condition": self.condition,
                "vs_best": self.vs_best.to_json(), "tie_with_best": stats.is_tie(self.vs_best),
                "vs_limit": self.vs_limit.to_json() if self.vs_limit else None}


@dataclass(frozen=True)
class RobustPick:
    configuration: str
    worst: stats.Estimate  # its largest ratio to a condition's best
    worst_condition: str
    best_in: dict[str, str]  # condition -> its best configuration
    cells: list[Cell]

    def text(self) -> str:
        mine = [c for c in self.cells if c.configuration == self.configuration]
        behind = [c.condition for c in mine if c.vs_best.median > 1 and not stats.is_tie(c.vs_best)]
        how = (f"at worst {self.worst.text(3)} x the time of the condition's best ({self.worst_condition}); "
               + (f"really behind it in {len(behind)} of {len(mine)} conditions ({', '.join(behind)})" if behind else
                  f"tied with or the best in every one of the {len(mine)} conditions (each interval holds 1)"))
        return f"{self.configuration}: {how}"

    def to_json(self) -> dict[str, Any]:
        return {"definition": "the configuration whose worst per-round-paired ratio to each condition's "
                              "best configuration is smallest",
                "configuration": self.configuration, "worst_vs_best": self.worst.to_json(),
                "worst_condition": self.worst_condition, "best_in": self.best_in,
                "cells": [c.to_json() for c in self.cells]}


def robust_pick(times: dict[str, dict[str, RoundTimes]],
                limits: dict[str, RoundTimes]) -> RobustPick | None:
    """times: condition -> configuration -> per-round seconds (hashers only); limits: condition ->
    the speed limit's per-round seconds. Only configurations measured in every condition compete."""
    conditions = [c for c in times if times[c]]
    if not conditions:
        return None
    everywhere = sorted(set.intersection(*(set(k for k, t in times[c].items() if t) for c in conditions)))
    if not everywhere:
        return None
    cells: list[Cell] = []
    best_in: dict[str, str] = {}
    for cond in conditions:
        medians = {k: stats.median_interval(times[cond][k].values()).median for k in everywhere}
        best = min(everywhere, key=lambda k: (medians[k], k))
        best_in[cond] = best
        for k in everywhere:
            limit = limits.get(cond)
            cells.append(Cell(k, cond, stats.paired_rounds(times[cond][k], times[cond][best]),
                              stats.paired_rounds(times[cond][k], limit) if limit else None))
    worst: dict[str, Cell] = {}
    for cell in cells:
        if cell.configuration not in worst or cell.vs_best.median > worst[cell.configuration].vs_best.median:
            worst[cell.configuration] = cell
    pick = min(everywhere, key=lambda k: (worst[k].vs_best.median, worst[k].vs_best.high, k))
    return RobustPick(pick, worst[pick].vs_best, worst[pick].condition, best_in, cells)


def lines(file_size: int, headlines: list[tuple[str, Any]], pick: RobustPick | None) -> list[str]:
    """summary.txt's part for several conditions: each one's limit and winner (its verdict.Headline),
    then the robust pick."""
    out = ["", f"By condition ({file_size >> 20} MiB file; x limit and vs b3sum: time ratios, paired per round, "
               "median [95% interval]):"]
    width = max(len(c) for c, _ in headlines)
    for cond, h in headlines:
        if h.use is None:
            out.append(f"  {cond:<{width}}  no hasher ran successfully")
            continue
        limit = f"limit {format_rate(h.limit.Bps)}" if h.limit else "no limit"
        out.append(f"  {cond:<{width}}  {limit:>16}  best {configuration(h.use, cond)}: "
                   f"x limit {h.vs_limit.text(2) if h.vs_limit else '-'}"
                   + (f", vs b3sum {h.b3sum.ratio.text(2)} ({h.b3sum.outcome})" if h.b3sum else ""))
    return out + ["", "robust pick: " + (pick.text() if pick else "- (no hasher configuration ran in every condition)")]
