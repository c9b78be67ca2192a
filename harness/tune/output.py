"""What `ringsum tune` leaves: tuned.toml, tuned.options (installable defaults of uring_b3sum), tune.json,
the summary it prints, and the full-grid comparison."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from harness.judge.speed_limit import SpeedLimit
from harness import stats
from harness.catalog.knobs import load_knobs
from harness.judge import results as res
from harness.pipeline.plan import Command, knob_word
from harness.tune import wisdom
from harness.tune.space import (COMPARE_ROUNDS, DEFAULT_VARIANT, FINAL_ROUNDS, GRID_FRACTION, Measure,
                                Space, Stage, TuneError, knob_table, median, ranked, read_stage)
from harness.units import format_rate, format_size


TIE_BREAK = ("the least buffer memory (block size x buffers), then the fewest options switched on, "
             "then the lower median")


@dataclass
class Outcome:
    stages: list[dict[str, Any]]
    winner: str
    winner_median_s: float
    finalists: list[tuple[str, float]]  # final-stage medians, fastest first
    best_default: tuple[str, float] | None  # best uring_b3sum finalist (tie-broken like the winner)
    tied: list[str]  # the finalists tied with the fastest, the fastest first; empty when none is
    hasher_runs: int
    baseline_runs: int
    grid_runs: int
    grid_points: int
    file_size: int
    final_rounds: int
    speed_limit: dict[str, Any]  # SpeedLimit.to_json() of the final stage ({} without readers)
    vs_limit: dict[str, Any] | None  # the winner's time / the speed limit, per round (stats.Estimate)
    vs_b3sum: dict[str, Any] | None  # the winner against the fastest b3sum (verdict.Versus)
    fingerprint_id: str | None
    cuts: list[str]
    tie_break: str = TIE_BREAK
    robust: dict[str, Any] | None = None  # under several conditions: the final stage's robust pick
    robust_text: str = ""
    # the best uring_b3sum setting over uring_b3sum's defaults per final round (stats.Estimate);
    # --install records it only where that interval is below 1 (wisdom.beats_defaults)
    best_default_vs_defaults: dict[str, Any] | None = None


def options_lines(c: Command) -> list[str]:
    """The knobs as uring_b3sum's defaults file: one long option per line, the numbers first."""
    table, values = load_knobs(), c.knob_values()
    return ([f"{k.option} {knob_word(k, values[k.name])}" for k in table if not k.is_flag]
            + [k.option for k in table.flags if values[k.name]])


def tuned_toml(space: Space, c: Command, comment: str) -> str:
    """A config with the winner alone, run as the space's own runs are."""
    run = space.config.run
    source = ({"file_size": format_size(space.file.size)} if space.file.generate and not space.file.is_tree
              else {"file": space.file.path})  # a generated tree, as made here, is read as it is
    table = {"run": {"rounds": FINAL_ROUNDS, "cache": run.cache, **source, "timeout_s": run.timeout_s},
             "hashers": [{"name": "tuned", "variant": c.variant, **knob_table(c)}]}
    return f"# {comment}\n# Measure it again: ringsum run <this file>\n\n" + tomli_w.dumps(table)


def write_outputs(space: Space, o: Outcome, tune_dir: Path, install: bool) -> list[Path]:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    where = f"machine {o.fingerprint_id or '?'}, {stamp}, {space.file.describe()}, {space.config.run.cache}"
    written = []
    p = tune_dir / "tuned.toml"
    p.write_text(tuned_toml(space, space.by_label[o.winner],
                            f"ringsum tune's winner ({where}): median {o.winner_median_s:.3f} s"), encoding="utf-8")
    written.append(p)
    if o.best_default:
        lbl, m = o.best_default
        p = tune_dir / "tuned.options"
        p.write_text(f"# ringsum tune: {lbl} ({where}), median {m:.3f} s\n"
                     + "\n".join(options_lines(space.by_label[lbl])) + "\n", encoding="utf-8")
        written.append(p)
    best = space.by_label[o.best_default[0]] if o.best_default else None
    try:
        key = wisdom.key_of(Path(best.argv[0]), Path(space.file.path)) if best else None
        res.write_json_atomic(tune_dir / "tune.json", {
            **dataclasses.asdict(o), "space": str(space.config.path), "file": dataclasses.asdict(space.file),
            "cache": space.config.run.cache, "max_hasher_runs": math.floor(space.grid_runs * GRID_FRACTION),
            "finished_at": stamp, "work": wisdom.work_of(space.config.run.cache, space.file.is_tree),
            "wisdom_key": key, "best_default_variant": best.variant if best else None,
            "best_default_knobs": best.knob_values() if best else None})
        if install:
            wisdom.install(tune_dir)
            written.append(wisdom.wisdom_path())
    except wisdom.WisdomError as e:
        raise TuneError(str(e)) from None
    return written


def summary(o: Outcome) -> list[str]:
    """What tune found, for the terminal."""
    def line(lbl: str, m: float) -> str:
        return f"{lbl}  median {m:.3f} s"

    def ratio(e: dict[str, Any]) -> str:
        return stats.Estimate(**e).text(2)

    out = [f"best: {line(o.winner, o.winner_median_s)} over {o.final_rounds} interleaved rounds "
           f"({format_rate(o.file_size / o.winner_median_s)})"]
    if o.robust:
        conds = list(o.robust["best_in"])
        out = [f"robust pick over {len(conds)} conditions ({', '.join(conds)}): {o.robust_text}",
               f"  in {conds[0]}: " + out[0].removeprefix("best: ")]
    if o.tied:
        out.append(f"  TIE: {len(o.tied)} finalists cannot be told apart (per-round ratio to the fastest, its "
                   f"95% interval contains 1): {'; '.join(o.tied)}; picked by the tie-break rule: {o.tie_break}")
    if o.speed_limit and o.vs_limit:
        lim = o.speed_limit
        out.append(f"  speed limit {lim['limit_s']:.3f} s ({format_rate(lim['limit_Bps'])}, the fastest plain read "
                   f"per round; {lim['set_by']} in {lim['set_by_rounds']} of {len(lim['per_round'])} rounds): "
                   f"the winner takes {ratio(o.vs_limit)} x its time")
    if o.vs_b3sum:
        b3 = o.vs_b3sum
        out.append(f"  vs {b3['label']}: {ratio(b3['ratio'])} x its time ({b3['outcome']})")
    if o.best_default and o.best_default[0] != o.winner:
        out.append(f"best {DEFAULT_VARIANT}: {line(*o.best_default)}")
    if o.best_default and o.best_default_vs_defaults:
        beats = wisdom.beats_defaults(o.best_default_vs_defaults)
        out.append(f"  {o.best_default[0]} / {DEFAULT_VARIANT}'s defaults: {ratio(o.best_default_vs_defaults)}: "
                   + ("faster, a record holds it" if beats else
                      f"not clearly faster ({wisdom.not_faster_because(o.best_default_vs_defaults)}): "
                      "a record holds the defaults"))
    for lbl, m in o.finalists:
        if lbl != o.winner:
            out.append(f"  finalist: {line(lbl, m)}")
    out.append(f"runs: {o.hasher_runs} hasher executions (+{o.baseline_runs} of readers and b3sum) vs {o.grid_runs} for the "
               f"full grid ({o.grid_points} configurations x {o.grid_runs // o.grid_points} rounds): "
               f"{o.hasher_runs / o.grid_runs:.1%}")
    out += [f"cut: {c}" for c in o.cuts]
    return out


@dataclass
class Comparison:
    grid_run_dir: str
    grid_best: str
    grid_best_median_s: float  # in the grid run
    grid_runs: int  # hasher executions the grid run recorded
    compare_run_dir: str | None
    tune_median_s: float
    grid_median_s: float  # both re-measured interleaved

    @property
    def ratio(self) -> float:
        return self.tune_median_s / self.grid_median_s


def compare_full_grid(space: Space, o: Outcome, measure: Measure,
                      grid_run_dir: Path | None = None) -> Comparison:
    """The grid's best (running the grid unless a finished run of it is given) against tune's winner,
    both re-measured interleaved."""
    grid = (measure(Stage("grid", space.points, space.config.run.rounds), "grid") if grid_run_dir is None
            else read_stage(grid_run_dir))
    order = ranked(grid.walls, list(space.by_label))
    if not order:
        raise TuneError(f"{grid.run_dir}: no successful hasher execution of the space's configurations")
    best, best_m = order[0]
    if best == o.winner:
        m = o.winner_median_s
        return Comparison(str(grid.run_dir), best, best_m, grid.hasher_runs, None, m, m)
    pair = Stage("compare", [space.by_label[o.winner], space.by_label[best]], COMPARE_ROUNDS)
    r = measure(pair, "compare")
    tm, gm = median(r.walls.get(o.winner, [])), median(r.walls.get(best, []))
    if tm is None or gm is None:
        raise TuneError(f"the comparison run failed; see {r.run_dir}")
    return Comparison(str(grid.run_dir), best, best_m, grid.hasher_runs, r.run_dir, tm, gm)
