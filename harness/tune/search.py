"""`ringsum tune`: the best hasher configuration for this machine without running the full grid.

The space is a ringsum config (default `configs/tune.toml`): each of its hasher commands is one
point, and `run.rounds` is how many rounds its full grid would run. The search, each stage a
normal `ringsum run` (cache drops, hash checks, the machine lock) into the tune directory:

1. coarse: every other block size and queue depth, the smallest buffer count, every variant and
   O_DIRECT setting; 2 rounds (1 when the second would take more than half of what is left).
2. refine (up to 3 times): the unmeasured neighbours of the best 3 so far (block size and queue
   depth one step either way, the other buffer counts, O_DIRECT toggled, the other variants);
   2 rounds. Rankings pool every stage's executions (median wall time of the successful,
   hash-checked ones).
3. semifinal: the best 10 so far re-measured together, 3 rounds, so the finalists are not picked
   by one lucky execution on a noisy disk.
4. final: the 3 best of the semifinal, plus the best `uring_b3sum` if none of them is one,
   interleaved in 5 rounds (`--final-rounds`) with b3sum, fio at their block sizes and depths, the
   limit group's readers (the speed limit: per round, the fastest plain read) and uring_b3sum with
   no options (its defaults: `--install` records the best uring_b3sum setting only where it beat
   them). The winner is the finalist with the lowest median in this stage, unless others are tied
   with it (their per-round ratio's interval contains 1, harness/stats.py): then the tie-break rule
   (`TIE_BREAK`) picks among them.

Hasher executions are capped at a quarter of the full grid's (points x rounds) and `--budget`
caps the estimated time (`ringsum plan`'s estimate, scaled by how long the stages so far really
took, not counting waits for the lock). The final stage is reserved first, the semifinal may
take half of the rest; what does not fit is cut, rounds first, then the configurations at the end
of the list (the neighbours of the lower-ranked points), and each cut is said. The tune directory
gets `tuned.toml` (a config with the winner alone, for `ringsum run`), `tuned.options` (the best
`uring_b3sum` setting as an options file, for a user who wants it everywhere) and `tune.json` (every
stage, every median). `--install` (or `ringsum wisdom install TUNE_DIR` later) makes the best
`uring_b3sum` setting the wisdom record of the kind of work the tune measured, for this machine and
device (harness/tune/wisdom.py): it then decides for that work alone, never for another.

`--compare-full-grid [RUN_DIR]` then runs the full grid (or reads a finished run of it) and
re-measures tune's winner and the grid's best interleaved, so the ratio of their medians is fair.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from harness import progress, stats
from harness.catalog.knobs import load_knobs, switched_on
from harness.conditions import emulation
from harness.judge import decision
from harness.judge import results as res
from harness.judge import verdict
from harness.pipeline.config import parse_config
from harness.pipeline.plan import Command, build_plan
from harness.pipeline.run_directory import stamped_dir
from harness.tune.output import TIE_BREAK, Outcome, compare_full_grid, summary, write_outputs
from harness.tune.space import (COARSE_ROUNDS, COMPARE_ROUNDS, DEFAULT_VARIANT, FINAL_ROUNDS, FINALISTS,
                                GRID_FRACTION, MIN_FINAL_ROUNDS, REFINE_ROUNDS, REFINE_STAGES, REFINE_TOP,
                                SEMIFINAL_ROUNDS, SEMIFINALISTS, Measure, Space, Stage, StageResult, TuneError,
                                config_text, estimate_s, fio_for, ranked, real_measure, score_text)
from harness.pipeline.plan import Plan
from harness.pipeline.preflight import check_binaries, check_cache_mode, required_tools


# --- the space ---


# --- stages ---


# --- measuring a stage for real ---


# --- the search ---



def _final_points(space: Space, order: list[str]) -> list[Command]:
    """The first FINALISTS of `order`, and the best uring_b3sum if none of them is one."""
    top = [space.by_label[lbl] for lbl in order[:FINALISTS]]
    if all(c.variant != DEFAULT_VARIANT for c in top):
        top += [space.by_label[lbl] for lbl in order if space.by_label[lbl].variant == DEFAULT_VARIANT][:1]
    return top


class _Ledger:
    """What the stages spent (hasher executions, seconds) against the cap and the budget; every
    stage's results; what was cut."""

    def __init__(self, space: Space, measure: Measure, budget_s: float | None, max_runs: int,
                 log: Callable[[str], None]) -> None:
        self.space, self._measure, self.budget_s, self.max_runs, self.log = space, measure, budget_s, max_runs, log
        self.runs, self.spent_s, self.estimated_s = 0, 0.0, 0.0
        self.walls: dict[str, list[float]] = {}  # pooled over the stages
        self.stages: list[dict[str, Any]] = []
        self.cuts: list[str] = []

    def scale(self) -> float:
        """Measured / estimated duration of the stages so far."""
        return max(0.25, self.spent_s / self.estimated_s) if self.spent_s and self.estimated_s else 1.0

    def cost(self, stage: Stage) -> tuple[int, float]:
        """Hasher executions (a final stage's uring_b3sum defaults are hasher executions too) and seconds."""
        runs = (len(stage.points) + (stage.defaults is not None)) * stage.rounds
        return runs, self.scale() * estimate_s(self.space, stage)

    def left(self, reserved: list[Stage]) -> tuple[int, float]:
        runs, secs = self.max_runs - self.runs, (self.budget_s or math.inf) - self.spent_s
        for st in reserved:
            r, s = self.cost(st)
            runs, secs = runs - r, secs - s
        return runs, secs

    def fit(self, stage: Stage, reserved: list[Stage], share: float = 1.0, min_rounds: int = 1,
            min_points: int = 1) -> Stage | None:
        """The stage, with fewer rounds and then fewer points (from the end) until it fits in `share`
        of what is left after the reserved stages; None if even the smallest does not."""
        runs, secs = self.left(reserved)
        runs, secs = math.floor(runs * share), secs * share
        st = dataclasses.replace(stage, points=list(stage.points))
        while len(st.points) >= min_points:
            r, s = self.cost(st)
            if r <= runs and s <= secs:
                return st
            if st.rounds > min_rounds:
                st.rounds -= 1
            else:
                st.points.pop()
        return None

    def note_cut(self, wanted: Stage, got: Stage | None, reserved: list[Stage], what: str,
                 share: float = 1.0) -> None:
        if got and (got.rounds, len(got.points)) == (wanted.rounds, len(wanted.points)):
            return
        why = "the execution cap" if self.cost(wanted)[0] > self.left(reserved)[0] * share else "the budget"
        self.cuts.append(f"{wanted.name}: " + (
            f"{len(got.points)} of {len(wanted.points)} {what}, {got.rounds} of {wanted.rounds} rounds ({why})"
            if got else f"skipped, {len(wanted.points)} {what} did not fit ({why})"))

    def measure(self, stage: Stage) -> StageResult:
        est = estimate_s(self.space, stage)
        r = self._measure(stage, f"stage-{len(self.stages) + 1}-{stage.name}")
        self.runs += r.hasher_runs
        self.spent_s += r.elapsed_s
        self.estimated_s += est
        for lbl, ws in r.walls.items():
            self.walls.setdefault(lbl, []).extend(ws)
        best = ranked(r.walls, [c.label for c in stage.points])
        self.stages.append({"n": len(self.stages) + 1, "name": stage.name, "rounds": stage.rounds,
                            "points": [c.label for c in stage.points], "run_dir": r.run_dir,
                            "hasher_runs": r.hasher_runs, "baseline_runs": r.baseline_runs,
                            "estimated_s": round(est, 1), "elapsed_s": round(r.elapsed_s, 1),
                            "medians": dict(best), "failed": r.failed, "mismatched": r.mismatched})
        lead = f"; best {best[0][0]} ({score_text(self.space, best[0][1])})" if best else ""
        self.log(f"tune: stage {len(self.stages)} {stage.name}: {len(stage.points)} configurations x "
                 f"{stage.rounds} round{'s' * (stage.rounds > 1)}, {r.hasher_runs} hasher executions{lead}")
        return r

    def order(self) -> list[str]:
        """The space's measured configurations, by pooled median, fastest first."""
        return [lbl for lbl, _ in ranked(self.walls, list(self.space.by_label))]


def _first_stages(space: Space) -> tuple[Stage, int]:
    """The coarse stage, and how many finalists the final stage will have at most: one more where
    another variant may take every place and the best uring_b3sum joins them (_final_points). A space
    of uring_b3sum alone counted that one too, and its final lost the round a record needs (4 rounds'
    interval covers 87.5%, under wisdom's 90%: a cached tree of 1M files, 8f50662391e2)."""
    joins = DEFAULT_VARIANT in space.variants and len(set(space.variants)) > 1
    return Stage("coarse", space.coarse(), COARSE_ROUNDS), min(len(space.points), FINALISTS + joins)


def _runs_defaults(space: Space) -> bool:
    """Whether the final stage will run uring_b3sum's defaults: a finalist is always one where the
    space has it (_final_points), under one condition."""
    return DEFAULT_VARIANT in space.variants and len(space.config.conditions.expand()) == 1


def _final_stage(space: Space, points: list[Command], rounds: int) -> Stage:
    """The finalists with the readers and b3sum, and, where one is uring_b3sum, its defaults: a record
    is installed only where its setting beats them (under several conditions the robust pick is the
    space's, and no record is made)."""
    defaults = (DEFAULT_VARIANT if any(c.variant == DEFAULT_VARIANT for c in points)
                and len(space.config.conditions.expand()) == 1 else None)
    return Stage("final", points, rounds, fio=fio_for(points), b3sum=True, limit=True, defaults=defaults)


def versus_defaults(r: StageResult, label: str) -> dict[str, Any] | None:
    """The best uring_b3sum setting's time over its defaults', per round of the final stage; None
    where the stage did not run the defaults."""
    defaults = f"{DEFAULT_VARIANT} defaults"
    if defaults not in r.times or label not in r.times:
        return None
    return stats.paired_rounds(r.times[label], r.times[defaults]).to_json()


def pick(space: Space, r: StageResult, finalists: list[tuple[str, float]]) -> tuple[str, float, list[str]]:
    """The fastest of `finalists` (label, median; fastest first), or, when others are tied with it
    in r's rounds, the first of the tied by TIE_BREAK. Returns (label, median, tied labels)."""
    medians = dict(finalists)
    best = finalists[0][0]
    tied = [best, *decision.tied_with(r.times, best, list(medians))]

    def rule(label: str) -> tuple[int, int, float]:
        c = space.by_label[label]
        options = len(switched_on(load_knobs(), c.variant, c.knob_values()))
        return (c.block_size or 0) * (c.buffers or 0), options, medians[label]

    winner = min(tied, key=rule)
    return winner, medians[winner], tied if len(tied) > 1 else []


def check_limits(space: Space, budget_s: float | None) -> None:
    """The coarse stage (1 round) and the final (fewest rounds) must fit the cap and the budget."""
    coarse, n_final = _first_stages(space)
    max_runs = math.floor(space.grid_runs * GRID_FRACTION)
    min_runs = len(coarse.points) + (n_final + _runs_defaults(space)) * MIN_FINAL_ROUNDS
    if min_runs > max_runs:
        raise TuneError(f"the space is too small to tune: the coarse and final stages need {min_runs} "
                        f"hasher executions, more than a quarter of the full grid's {space.grid_runs}; "
                        "run the grid itself")
    min_final = _final_stage(space, space.points[:n_final], MIN_FINAL_ROUNDS)
    min_s = estimate_s(space, dataclasses.replace(coarse, rounds=1)) + estimate_s(space, min_final)
    if budget_s is not None and budget_s < min_s:
        raise TuneError(f"budget {budget_s / 60:.1f} min is too small: the coarse stage "
                        f"({len(coarse.points)} configurations) and the final re-measurement need about "
                        f"{math.ceil(min_s / 60)} min")


def search(space: Space, measure: Measure, budget_s: float | None = None,
           log: Callable[[str], None] = progress.log, final_rounds: int = FINAL_ROUNDS) -> Outcome:
    """Coarse, refine, semifinal, final (final_rounds rounds, fewer where the cap or the budget says
    so); within a quarter of the grid's executions and the budget."""
    max_runs = math.floor(space.grid_runs * GRID_FRACTION)
    coarse, n_final = _first_stages(space)
    # before the finalists are known; its defaults as the real one will have them
    stand_in = dataclasses.replace(_final_stage(space, space.points[:n_final], final_rounds),
                                   defaults=DEFAULT_VARIANT if _runs_defaults(space) else None)
    min_final = dataclasses.replace(stand_in, rounds=MIN_FINAL_ROUNDS)
    check_limits(space, budget_s)
    book = _Ledger(space, measure, budget_s, max_runs, log)
    log(f"tune: {len(space.points)} configurations in the space, full grid {space.grid_runs} executions; "
        f"cap {max_runs} hasher executions" + (f", budget {budget_s / 60:.1f} min" if budget_s else ""))
    # A second coarse round only if it leaves at least as much for refining and the semifinal.
    first = (book.fit(coarse, [stand_in], share=0.5, min_rounds=COARSE_ROUNDS, min_points=len(coarse.points))
             or dataclasses.replace(coarse, rounds=1))
    book.note_cut(coarse, first, [stand_in], "configurations", share=0.5)
    book.measure(first)

    final = book.fit(stand_in, [], min_rounds=MIN_FINAL_ROUNDS, min_points=n_final) or min_final
    book.note_cut(stand_in, final, [], "finalists")
    # The semifinal may take up to half of what is left; the refine stages get the rest first.
    semi_want = Stage("semifinal", space.points[:SEMIFINALISTS], SEMIFINAL_ROUNDS)
    semi = book.fit(semi_want, [final], share=0.5, min_rounds=SEMIFINAL_ROUNDS, min_points=FINALISTS + 1)
    for _ in range(REFINE_STAGES):
        parents = book.order()[:REFINE_TOP]
        cands: list[Command] = []
        for lbl in parents:
            cands += [c for c in space.neighbours(space.by_label[lbl]) if c.label not in book.walls and c not in cands]
        if not cands:
            break
        want = Stage("refine", cands, REFINE_ROUNDS)
        reserved = [final] + ([semi] if semi else [])
        stage = book.fit(want, reserved)
        book.note_cut(want, stage, reserved, "neighbours")
        if stage is None:
            break
        book.measure(stage)
        if len(stage.points) < len(cands):
            break

    order = book.order()
    if not order:
        raise TuneError("no configuration ran successfully; see the stage run directories")
    if len(order) > FINALISTS:
        want = Stage("semifinal", [space.by_label[lbl] for lbl in order[:SEMIFINALISTS]], SEMIFINAL_ROUNDS)
        semi = book.fit(want, [final], min_rounds=SEMIFINAL_ROUNDS, min_points=FINALISTS + 1)
        book.note_cut(want, semi, [final], "configurations")
        if semi:
            r = book.measure(semi)
            again = [lbl for lbl, _ in ranked(r.walls, [c.label for c in semi.points])]
            order = again + [lbl for lbl in order if lbl not in again]
    final = _final_stage(space, _final_points(space, order), final.rounds)
    r = book.measure(final)
    finalists = ranked(r.walls, [c.label for c in final.points])
    if not finalists:
        raise TuneError(f"every finalist failed in the final stage; see {r.run_dir}")
    if r.robust is None:
        winner, winner_median, tied = pick(space, r, finalists)
        defaults = [(lbl, m) for lbl, m in finalists if space.by_label[lbl].variant == DEFAULT_VARIANT]
        best_default = pick(space, r, defaults)[:2] if defaults else None
        vs_defaults = versus_defaults(r, best_default[0]) if best_default else None
        mine = r.times.get(winner, {})
    else:  # several conditions: the robust pick, its figures in the first condition
        first = space.config.conditions.expand()[0].name
        winner, tied, best_default, vs_defaults = r.robust.configuration, [], None, None
        mine = r.times.get(f"{winner} @{first}", {})
        winner_median = verdict.stats.median_interval(mine.values()).median
    return Outcome(stages=book.stages, winner=winner, winner_median_s=winner_median,
                   finalists=finalists, best_default=best_default, tied=tied, hasher_runs=book.runs,
                   baseline_runs=sum(s["baseline_runs"] for s in book.stages), grid_runs=space.grid_runs,
                   grid_points=len(space.points), file_size=space.file.size, final_rounds=final.rounds,
                   speed_limit=r.limit.to_json() if r.limit else {},
                   vs_limit=stats.paired_rounds(mine, r.limit.per_round).to_json() if r.limit else None,
                   vs_b3sum=(verdict.Versus(r.b3sum, stats.paired_rounds(mine, r.times[r.b3sum])).to_json()
                             if r.b3sum else None),
                   fingerprint_id=r.fingerprint_id, cuts=book.cuts,
                   robust=r.robust.to_json() if r.robust else None, robust_text=r.robust.text() if r.robust else "",
                   best_default_vs_defaults=vs_defaults)


# --- outputs ---


# --- the full-grid comparison ---


def preflight(space: Space) -> None:
    """What the stages would find missing (root for cold mode, binaries, fio, hyperfine, b3sum)."""

    if space.config.run.cached_share is not None:
        raise TuneError(f"{space.config.path}: run.cached_share: a record is for a cold or a cached kind of work, "
                        "and a file partly cached is neither")
    check_cache_mode(space.config.run.cache)
    check_binaries(Plan(space.points, [space.file], 1, 1, space.config.run.cache))
    final = Stage("final", space.points[:1], 1, fio=fio_for(space.points[:1]), b3sum=True)
    config = parse_config(config_text(space, final), "final")
    plan = build_plan(config, [space.file])
    required_tools(plan)
    try:
        emulation.check_machine(plan.conditions, plan.datasets, plan.programs)
    except emulation.EmulationError as e:
        raise TuneError(str(e)) from None


def tune(space: Space, out: Path, budget_s: float | None = None, install: bool = False,
         compare: bool = False, grid_run_dir: Path | None = None, measure: Measure | None = None,
         final_rounds: int = FINAL_ROUNDS) -> int:
    """`ringsum tune`: search, write the outputs, print the result (and the grid comparison)."""
    preflight(space)
    check_limits(space, budget_s)
    if install and DEFAULT_VARIANT not in space.variants:
        raise TuneError(f"--install: {DEFAULT_VARIANT} is not in the space; there would be nothing to install")
    tune_dir = stamped_dir(out, "tune-")
    progress.log(f"tune directory: {tune_dir}")
    measure = measure or real_measure(space, tune_dir)
    o = search(space, measure, budget_s, final_rounds=final_rounds)
    written = write_outputs(space, o, tune_dir, install)
    for text in summary(o):
        print(text)
    print("wrote: " + ", ".join(str(p) for p in written))
    wrong = sorted({lbl for s in o.stages for lbl in s["mismatched"]})
    if wrong:
        progress.log(f"ringsum: HASH MISMATCH against the official b3sum (left out of the ranking): {'; '.join(wrong[:5])}")
    if compare or grid_run_dir is not None:
        c = compare_full_grid(space, o, measure, grid_run_dir)
        print(f"full grid: best {c.grid_best} (median {c.grid_best_median_s:.3f} s in {c.grid_run_dir}), "
              f"{c.grid_runs} hasher executions")
        how = (f"re-measured interleaved over {COMPARE_ROUNDS} rounds: {c.tune_median_s:.3f} s vs "
               f"{c.grid_median_s:.3f} s" if c.compare_run_dir else "the same configuration")
        print(f"tune vs full grid: {c.ratio:.3f} ({how}); executions {o.hasher_runs} vs {c.grid_runs} "
              f"({o.hasher_runs / c.grid_runs:.1%})")
        data = res.read_json(tune_dir / "tune.json")
        data["comparison"] = {**dataclasses.asdict(c), "ratio": c.ratio}
        res.write_json_atomic(tune_dir / "tune.json", data)
    return 1 if wrong else 0
