"""How often `--until-decided` names a winner that is not one: made-up A/A checks from real rounds.

    python -m analysis.sequential_study RUN_DIR [--checks 2000] [--rounds 5] [--seed 1]

RUN_DIR is an A/A run: `ringsum run CONFIG --against COPY` where COPY is a copy of the same
hasher binaries, so every hasher X runs beside `baseline:X`, an identical program, in the same
shuffled rounds. Each made-up check draws rounds with replacement from the real ones (a round's
two times stay together: the same disk, the same neighbours) and makes the looks a run
--until-decided of `--rounds` rounds would make, stopping at the first that names a winner.
Between two identical programs every winner is a wrong one. The same checks with 95% on every
look show what the correction buys. (The regression check's power study, harness/check/power.py, is
the model: the verdict's own code on real rounds.)
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import numpy as np

from harness import stats
from harness.pipeline.config_schema import BASELINE_PREFIX
from harness.judge.decision import decide
from harness.judge.results import RUNS_CSV, read_runs
from harness.judge.sequential import Sequential, SequentialError
from harness.judge.speed_limit import by_round


@dataclass(frozen=True)
class Rule:
    name: str
    confidence: float


@dataclass
class Tally:
    checks: int = 0
    wrong: int = 0
    rounds_used: list[int] | None = None

    def add(self, wrong: bool, rounds: int) -> None:
        self.checks += 1
        self.wrong += wrong
        self.rounds_used = [*(self.rounds_used or []), rounds]


def pairs(run_dir: Path) -> dict[str, tuple[dict[int, float], dict[int, float]]]:
    """hasher label -> (its round times, its identical baseline's), the rounds both have."""
    times = by_round(read_runs(run_dir / RUNS_CSV))
    out = {}
    for label, mine in times.items():
        other = times.get(BASELINE_PREFIX + label)
        if other and not label.startswith(BASELINE_PREFIX):
            common = sorted(set(mine) & set(other))
            if common:
                out[label] = ({r: mine[r] for r in common}, {r: other[r] for r in common})
    return out


def made_up_check(a: dict[int, float], b: dict[int, float], drawn: list[int], seq: Sequential,
                  confidence: float) -> tuple[bool, int]:
    """One made-up run of the looks on the real rounds `drawn`: (named a winner, rounds used)."""
    ta = {i: a[int(r)] for i, r in enumerate(drawn)}
    tb = {i: b[int(r)] for i, r in enumerate(drawn)}
    n = seq.base_rounds
    while True:
        cut = {"A": {i: t for i, t in ta.items() if i < n}, "A'": {i: t for i, t in tb.items() if i < n}}
        if decide(cut, ["A", "A'"], confidence).decided:
            return True, n
        if n >= seq.max_rounds:
            return False, n
        n = min(seq.max_rounds, n + seq.step)


def study(run_dir: Path, checks: int, rounds: int, seed: int) -> str:
    found = pairs(run_dir)
    if not found:
        raise SequentialError(f"{run_dir}: no hasher ran beside an identical {BASELINE_PREFIX}copy "
                         "(make it with `ringsum run CONFIG --against A_COPY_OF_THE_BIN_DIR`)")
    seq = Sequential.for_run(rounds, None)
    rules = [Rule(f"corrected ({seq.confidence:.2%} a look)", seq.confidence),
             Rule("95% every look", stats.CONFIDENCE)]
    rng = np.random.default_rng(seed)
    tallies = {(label, r.name): Tally() for label in found for r in rules}
    per_pair = max(1, checks // len(found))
    for label, (a, b) in found.items():
        for _ in range(per_pair):
            drawn = list(rng.choice(sorted(a), size=seq.max_rounds, replace=True))  # the same for both rules
            for r in rules:
                tallies[(label, r.name)].add(*made_up_check(a, b, drawn, seq, r.confidence))
    lines = [f"A/A run: {run_dir} ({len(found)} hashers beside identical copies, "
             f"{min(len(a) for a, _ in found.values())}-{max(len(a) for a, _ in found.values())} real rounds each)",
             f"looks: after {rounds} rounds, then every {seq.step} more, up to {seq.max_rounds} ({seq.looks} looks); "
             f"{per_pair} made-up checks per hasher, seed {seed}", "",
             "| rule | checks | wrong winners | rate | median rounds used |", "| --- | ---: | ---: | ---: | ---: |"]
    for r in rules:
        ts = [tallies[(label, r.name)] for label in found]
        total, wrong = sum(t.checks for t in ts), sum(t.wrong for t in ts)
        used = [n for t in ts for n in (t.rounds_used or [])]
        lines.append(f"| {r.name} | {total} | {wrong} | {wrong / total:.1%} | {median(used):g} |")
    worst = max(found, key=lambda lbl: tallies[(lbl, rules[0].name)].wrong)
    t = tallies[(worst, rules[0].name)]
    lines += ["", f"most wrong winners with the correction: {worst}, {t.wrong} of {t.checks}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.sequential_study", description=__doc__.split("\n")[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--checks", type=int, default=2000, help="made-up checks in all (default 2000)")
    ap.add_argument("--rounds", type=int, default=5, help="the rounds before the first look (default 5, quick.toml's)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if not (a.run_dir / RUNS_CSV).is_file():
        print(f"sequential_study: {a.run_dir}: no {RUNS_CSV}", file=sys.stderr)
        return 2
    if a.checks < 1 or a.rounds < 1:
        print("sequential_study: --checks and --rounds must be positive", file=sys.stderr)
        return 2
    try:
        print(study(a.run_dir, a.checks, a.rounds, a.seed), end="")
    except SequentialError as e:
        print(f"sequential_study: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
