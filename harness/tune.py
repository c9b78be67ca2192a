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
   interleaved in 5 rounds with b3sum, fio at their block sizes and depths, and the limit group's
   readers (the speed limit: per round, the fastest plain read). The winner is the finalist with
   the lowest median in this stage, unless others are tied with it (their per-round ratio's
   interval contains 1, harness/stats.py): then the tie-break rule (`TIE_BREAK`) picks among them.

Hasher executions are capped at a quarter of the full grid's (points x rounds) and `--budget`
caps the estimated time (`ringsum plan`'s estimate, scaled by how long the stages so far really
took, not counting waits for the lock). The final stage is reserved first, the semifinal may
take half of the rest; what does not fit is cut, rounds first, then the configurations at the end
of the list (the neighbours of the lower-ranked points), and each cut is said. The tune directory
gets `tuned.toml` (a config with the winner alone, for `ringsum run`), `tuned.options` (the best
`uring_b3sum` setting as its defaults file; `--install` copies it to
`$XDG_CONFIG_HOME/ringsum/uring_b3sum.options`) and `tune.json` (every stage, every median).

`--compare-full-grid [RUN_DIR]` then runs the full grid (or reads a finished run of it) and
re-measures tune's winner and the grid's best interleaved, so the ratio of their medians is fair.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import math
import os
import shutil
import statistics
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterator

from harness import results as res
from harness import stats, verdict
from harness.config import REPO_ROOT, Config, load_config, parse_config
from harness.knobs import load_knobs
from harness.plan import Command, FileSpec, build_plan, estimate, knob_word
from harness.units import format_rate, format_size

DEFAULT_SPACE = REPO_ROOT / "configs" / "tune.toml"
COARSE_ROUNDS = 2
REFINE_TOP = 3  # points whose neighbours a refinement stage measures
REFINE_ROUNDS = 2
REFINE_STAGES = 3
SEMIFINALISTS = 10  # the best so far, re-measured together to pick the finalists
SEMIFINAL_ROUNDS = 3
FINALISTS = 3
FINAL_ROUNDS = 5
MIN_FINAL_ROUNDS = 3
COMPARE_ROUNDS = 10  # tune's winner against the grid's best
GRID_FRACTION = Fraction(1, 4)  # hasher executions allowed, as a fraction of the full grid's
DEFAULT_VARIANT = "uring_b3sum"  # the program users run: tuned.options is its best setting
OPTIONS_NAME = "uring_b3sum.options"
TIE_BREAK = ("the least buffer memory (block size x buffers), then the fewest options switched on, "
             "then the lower median")


class TuneError(Exception):
    """A problem found before or between stages; one line, exit 2."""


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- the space ---

@dataclass(frozen=True)
class Key:
    """Where a point sits in the space; neighbours differ in one field."""

    variant: str
    block_size: int
    queue_depth: int
    buffers_per_qd: Fraction
    direct: bool
    flags: tuple[str, ...]  # the other knobs: the flags that are on, numbers as name=value


def key_of(c: Command) -> Key:
    assert c.block_size and c.queue_depth and c.buffers
    return Key(c.variant, c.block_size, c.queue_depth, Fraction(c.buffers, c.queue_depth), bool(c.direct),
               tuple(name if value is True else f"{name}={value}" for name, value in c.knobs.items() if value))


def _spread(ladder: list[Any]) -> list[Any]:
    """Every other value, starting from the second: each value left out is next to one kept."""
    return ladder[1::2] if len(ladder) > 1 else list(ladder)


@dataclass
class Space:
    config: Config  # the space config, cache mode and overrides applied
    file: FileSpec
    points: list[Command]  # hasher commands, in the config's order
    by_key: dict[Key, Command] = field(init=False)
    by_label: dict[str, Command] = field(init=False)

    def __post_init__(self) -> None:
        self.by_key = {key_of(c): c for c in self.points}
        self.by_label = {c.label: c for c in self.points}

    def ladder(self, name: str) -> list[Any]:
        return sorted({getattr(k, name) for k in self.by_key})

    @property
    def variants(self) -> list[str]:
        return list(dict.fromkeys(c.variant for c in self.points))

    @property
    def grid_runs(self) -> int:
        return len(self.points) * self.config.run.rounds * self.config.run.runs_per_round

    def coarse(self) -> list[Command]:
        blocks, depths = set(_spread(self.ladder("block_size"))), set(_spread(self.ladder("queue_depth")))
        fewest = self.ladder("buffers_per_qd")[0]
        return [c for k, c in self.by_key.items()
                if k.block_size in blocks and k.queue_depth in depths and k.buffers_per_qd == fewest]

    def neighbours(self, c: Command) -> list[Command]:
        """Block size and queue depth one step either way, the other buffer counts, O_DIRECT
        toggled, then the other variants; only those in the space."""
        k = key_of(c)
        near: list[Key] = []
        for name in ("block_size", "queue_depth", "buffers_per_qd"):
            ladder = self.ladder(name)
            i = ladder.index(getattr(k, name))
            near += [dataclasses.replace(k, **{name: ladder[j]}) for j in (i - 1, i + 1) if 0 <= j < len(ladder)]
        near.append(dataclasses.replace(k, direct=not k.direct))
        near += [dataclasses.replace(k, variant=v) for v in self.variants if v != k.variant]
        return [self.by_key[n] for n in near if n in self.by_key]


def load_space(path: str | os.PathLike[str], file: str | None = None, size: int | None = None,
               dir_: str | None = None, warm: bool = False, bin_dir: str | None = None,
               variants: list[str] | None = None) -> Space:
    """The space config with the command line's overrides; raises TuneError, ConfigError, SetupError."""
    from harness.files import resolve_files
    from harness.run import Options, apply_overrides

    config = apply_overrides(load_config(path), Options(config_path=str(path), warm=warm, bin_dir=bin_dir))
    config = dataclasses.replace(config, run=dataclasses.replace(config.run, trace=False))
    for g in config.groups:
        if g.kind == "hasher" and (g.path or g.style != "options"):
            raise TuneError(f"{path}: {g.key}: tune needs built variants with options "
                            "(no `path`, no positional style)")
    files = resolve_files(config, file, size, dir_)
    if len(files) != 1:
        raise TuneError(f"{path}: tune needs exactly one test file, got {len(files)}; pass --file or --size")
    plan = build_plan(config, files)
    points = [c for c in plan.commands if c.tool == "hasher"]
    if not points:
        raise TuneError(f"{path}: no hasher commands to tune")
    if variants:
        have = list(dict.fromkeys(c.variant for c in points))
        unknown = [v for v in variants if v not in have]
        if unknown:
            raise TuneError(f"unknown variant {unknown[0]!r}; the space has {', '.join(have)}")
        points = [c for c in points if c.variant in variants]
    return Space(config=config, file=files[0], points=points)


# --- stages ---

@dataclass
class Stage:
    """One run: hasher points, rounds, and the baselines of the final stage."""

    name: str
    points: list[Command]
    rounds: int
    fio: list[tuple[int, int, bool]] = field(default_factory=list)  # (bs, iodepth, direct)
    b3sum: bool = False
    limit: bool = False  # the limit group's readers (config.LIMIT_BASELINES)


@dataclass
class StageResult:
    walls: dict[str, list[float]]  # label -> wall times of successful, hash-checked executions
    hasher_runs: int  # timed hasher executions, failed ones included
    baseline_runs: int
    elapsed_s: float
    run_dir: str | None = None
    times: dict[str, verdict.RoundTimes] = field(default_factory=dict)  # label -> round -> seconds, baselines too
    limit: verdict.SpeedLimit | None = None
    b3sum: str | None = None  # the fastest b3sum command
    fingerprint_id: str | None = None
    failed: list[str] = field(default_factory=list)  # labels with a failed or mismatched execution
    mismatched: list[str] = field(default_factory=list)  # labels that printed a wrong hash


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))  # a TOML basic string


def config_text(space: Space, stage: Stage, comment: str = "") -> str:
    """A ringsum config that runs exactly the stage: one hasher group per point."""
    run, nominal = space.config.run, space.config.run.nominal
    lines = [f"# {comment}" if comment else f"# ringsum tune: {stage.name}", "", "[run]",
             f"rounds = {stage.rounds}", f"cache = {_toml(run.cache)}", f"timeout_s = {_toml(run.timeout_s)}",
             "trace = false", f"resident_tolerance = {_toml(run.resident_tolerance)}",
             f"nominal = {{ read = {int(nominal.read_Bps)}, hash_per_core = {int(nominal.hash_per_core_Bps)}, "
             f"overhead_s = {_toml(nominal.overhead_s)} }}"]
    if run.bin_dir:
        lines.append(f"bin_dir = {_toml(run.bin_dir)}")
    for i, c in enumerate(stage.points, 1):
        lines += ["", "[[hashers]]", f"name = {_toml(f'point-{i}')}", f"variant = {_toml(c.variant)}",
                  *knob_toml_lines(c)]
    lines += ["", "[baselines]", f"limit = {_toml(stage.limit)}"]
    if stage.b3sum:
        lines.append("b3sum = true")
    if stage.fio:
        tables = [f"{{ bs = {_toml(format_size(bs))}, iodepth = {qd}, direct = {_toml(d)} }}"
                  for bs, qd, d in stage.fio]
        lines.append(f"fio = [{', '.join(tables)}]")
    return "\n".join(lines) + "\n"


def estimate_s(space: Space, stage: Stage) -> float:
    """`ringsum plan`'s nominal duration of the stage."""
    config = parse_config(config_text(space, stage), stage.name)
    return estimate(build_plan(config, [space.file]), config).total_s


def fio_for(points: list[Command]) -> list[tuple[int, int, bool]]:
    """fio at the points' block sizes, depths and O_DIRECT settings (fio fails on blocks past the file's end)."""
    return list(dict.fromkeys((c.block_size or 0, c.queue_depth or 0, bool(c.direct)) for c in points
                              if (c.block_size or 0) <= c.file_size))


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def ranked(walls: dict[str, list[float]], labels: list[str] | None = None) -> list[tuple[str, float]]:
    """(label, median wall) of the labels with successful executions, fastest first."""
    out = [(lbl, statistics.median(ws)) for lbl, ws in walls.items()
           if ws and (labels is None or lbl in labels)]
    return sorted(out, key=lambda t: (t[1], t[0]))


# --- measuring a stage for real ---

@contextlib.contextmanager
def _no_installed_defaults() -> Iterator[None]:
    """uring_b3sum reads installed defaults (an earlier `tune --install`); a flag there (--direct)
    cannot be turned off on the command line, so stages run without them."""
    old = os.environ.get("URING_B3SUM_OPTIONS")
    os.environ["URING_B3SUM_OPTIONS"] = os.devnull
    try:
        yield
    finally:
        if old is None:
            del os.environ["URING_B3SUM_OPTIONS"]
        else:
            os.environ["URING_B3SUM_OPTIONS"] = old


def _parse_time(s: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")) if s else None


def read_stage(run_dir: Path) -> StageResult:
    """A finished run directory as a StageResult."""
    df = res.read_runs(run_dir)
    meta = res.read_json(run_dir / res.META_JSON)
    walls: dict[str, list[float]] = {}
    failed: list[str] = []
    mismatched: list[str] = []
    for r in df.itertuples():
        good = r.exit_code == 0 and r.hash_ok is not False and r.wall_s is not None
        walls.setdefault(r.label, [])
        if good:
            walls[r.label].append(float(r.wall_s))
        elif r.label not in failed:
            failed.append(r.label)
        if r.hash_ok is False and r.label not in mismatched:
            mismatched.append(r.label)
    started, finished = _parse_time(meta.get("started_at")), _parse_time(meta.get("finished_at"))
    times = verdict.by_round(df)
    b3sums = verdict.fastest(times, list(dict.fromkeys(df.loc[df["tool"] == "b3sum", "label"])))
    return StageResult(
        walls=walls, hasher_runs=int((df["tool"] == "hasher").sum()),
        baseline_runs=int((df["tool"] != "hasher").sum()),
        elapsed_s=(finished - started).total_seconds() if started and finished else 0.0,
        run_dir=str(run_dir), times=times, limit=verdict.speed_limit(df),
        b3sum=b3sums[0][0] if b3sums else None,
        fingerprint_id=(meta.get("fingerprint") or {}).get("fingerprint_id"), failed=failed,
        mismatched=mismatched)


Measure = Callable[[Stage, str], StageResult]  # (stage, directory name) -> result


def real_measure(space: Space, tune_dir: Path) -> Measure:
    """Each stage: its config in tune_dir/<base>.toml, its run directory under tune_dir/<base>/."""
    from harness.run import Options, run

    def measure(stage: Stage, base: str) -> StageResult:
        cfg = tune_dir / f"{base}.toml"
        cfg.write_text(config_text(space, stage, f"ringsum tune: {base}"), encoding="utf-8")
        out = tune_dir / base
        opts = Options(config_path=str(cfg), file=space.file.path,  # yes: --budget bounds tune's time
                       size=space.file.size if space.file.generate else None, out=str(out), yes=True)
        with _no_installed_defaults(), contextlib.redirect_stdout(sys.stderr):
            outcome = run(opts)
        code = outcome.code
        if code == 130:
            raise KeyboardInterrupt
        if outcome.run_dir is None:
            raise TuneError(f"{base} wrote no run directory under {out}")
        result = read_stage(outcome.run_dir)
        if code != 0:
            _log(f"tune: {base}: {len(result.failed)} configurations had failed or mismatched executions; "
                 f"they rank by their good executions only ({', '.join(result.failed[:3])})")
        return result

    return measure


# --- the search ---

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
    speed_limit: dict[str, Any]  # verdict.SpeedLimit.to_json() of the final stage ({} without readers)
    vs_limit: dict[str, Any] | None  # the winner's time / the speed limit, per round (stats.Estimate)
    vs_b3sum: dict[str, Any] | None  # the winner against the fastest b3sum (verdict.Versus)
    fingerprint_id: str | None
    cuts: list[str]
    tie_break: str = TIE_BREAK


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
        return len(stage.points) * stage.rounds, self.scale() * estimate_s(self.space, stage)

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
        lead = f"; fastest {best[0][0]} ({best[0][1]:.3f} s)" if best else ""
        self.log(f"tune: stage {len(self.stages)} {stage.name}: {len(stage.points)} configurations x "
                 f"{stage.rounds} round{'s' * (stage.rounds > 1)}, {r.hasher_runs} hasher executions{lead}")
        return r

    def order(self) -> list[str]:
        """The space's measured configurations, by pooled median, fastest first."""
        return [lbl for lbl, _ in ranked(self.walls, list(self.space.by_label))]


def _first_stages(space: Space) -> tuple[Stage, int]:
    """The coarse stage, and how many finalists the final stage will have at most."""
    return (Stage("coarse", space.coarse(), COARSE_ROUNDS),
            min(len(space.points), FINALISTS + (DEFAULT_VARIANT in space.variants)))


def _final_stage(points: list[Command], rounds: int) -> Stage:
    return Stage("final", points, rounds, fio=fio_for(points), b3sum=True, limit=True)


def pick(space: Space, r: StageResult, finalists: list[tuple[str, float]]) -> tuple[str, float, list[str]]:
    """The fastest of `finalists` (label, median; fastest first), or, when others are tied with it
    in r's rounds, the first of the tied by TIE_BREAK. Returns (label, median, tied labels)."""
    medians = dict(finalists)
    best = finalists[0][0]
    tied = [best, *verdict.tied_with(r.times, best, list(medians))]

    def rule(label: str) -> tuple[int, int, float]:
        c = space.by_label[label]
        switched_on = sum(bool(c.knob_values()[k.name]) for k in load_knobs().flags)
        return (c.block_size or 0) * (c.buffers or 0), switched_on, medians[label]

    winner = min(tied, key=rule)
    return winner, medians[winner], tied if len(tied) > 1 else []


def check_limits(space: Space, budget_s: float | None) -> None:
    """The coarse stage (1 round) and the final (fewest rounds) must fit the cap and the budget."""
    coarse, n_final = _first_stages(space)
    max_runs = math.floor(space.grid_runs * GRID_FRACTION)
    min_runs = len(coarse.points) + n_final * MIN_FINAL_ROUNDS
    if min_runs > max_runs:
        raise TuneError(f"the space is too small to tune: the coarse and final stages need {min_runs} "
                        f"hasher executions, more than a quarter of the full grid's {space.grid_runs}; "
                        "run the grid itself")
    min_final = _final_stage(space.points[:n_final], MIN_FINAL_ROUNDS)
    min_s = estimate_s(space, dataclasses.replace(coarse, rounds=1)) + estimate_s(space, min_final)
    if budget_s is not None and budget_s < min_s:
        raise TuneError(f"budget {budget_s / 60:.1f} min is too small: the coarse stage "
                        f"({len(coarse.points)} configurations) and the final re-measurement need about "
                        f"{math.ceil(min_s / 60)} min")


def search(space: Space, measure: Measure, budget_s: float | None = None,
           log: Callable[[str], None] = _log) -> Outcome:
    """Coarse, refine, semifinal, final; within a quarter of the grid's executions and the budget."""
    max_runs = math.floor(space.grid_runs * GRID_FRACTION)
    coarse, n_final = _first_stages(space)
    stand_in = _final_stage(space.points[:n_final], FINAL_ROUNDS)  # before the finalists are known
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
    final = _final_stage(_final_points(space, order), final.rounds)
    r = book.measure(final)
    finalists = ranked(r.walls, [c.label for c in final.points])
    if not finalists:
        raise TuneError(f"every finalist failed in the final stage; see {r.run_dir}")
    winner, winner_median, tied = pick(space, r, finalists)
    defaults = [(lbl, m) for lbl, m in finalists if space.by_label[lbl].variant == DEFAULT_VARIANT]
    best_default = pick(space, r, defaults)[:2] if defaults else None
    mine = r.times.get(winner, {})
    return Outcome(stages=book.stages, winner=winner, winner_median_s=winner_median,
                   finalists=finalists, best_default=best_default, tied=tied, hasher_runs=book.runs,
                   baseline_runs=sum(s["baseline_runs"] for s in book.stages), grid_runs=space.grid_runs,
                   grid_points=len(space.points), file_size=space.file.size, final_rounds=final.rounds,
                   speed_limit=r.limit.to_json() if r.limit else {},
                   vs_limit=verdict.paired(mine, r.limit.per_round).to_json() if r.limit else None,
                   vs_b3sum=(verdict.Versus(r.b3sum, verdict.paired(mine, r.times[r.b3sum])).to_json()
                             if r.b3sum else None),
                   fingerprint_id=r.fingerprint_id, cuts=book.cuts)


# --- outputs ---

def options_lines(c: Command) -> list[str]:
    """The knobs as uring_b3sum's defaults file: one long option per line, the numbers first."""
    table, values = load_knobs(), c.knob_values()
    return ([f"{k.option} {knob_word(k, values[k.name])}" for k in table if not k.is_flag]
            + [k.option for k in table.flags if values[k.name]])


def knob_toml_lines(c: Command) -> list[str]:
    """A hasher's knobs as a [[hashers]] table's keys: every number, the flags that are on."""
    table, values = load_knobs(), c.knob_values()
    return ([f"{k.name} = {_toml(knob_word(k, values[k.name]) if k.type == 'size' else values[k.name])}"
             for k in table if not k.is_flag] + [f"{k.name} = true" for k in table.flags if values[k.name]])


def tuned_toml(space: Space, c: Command, comment: str) -> str:
    """A config with the winner alone, run as the space's own runs are."""
    run = space.config.run
    source = (f"file_size = {_toml(format_size(space.file.size))}" if space.file.generate
              else f"file = {_toml(space.file.path)}")
    lines = [f"# {comment}", "# Measure it again: ringsum run <this file>", "", "[run]",
             f"rounds = {FINAL_ROUNDS}", f"cache = {_toml(run.cache)}", source, f"timeout_s = {_toml(run.timeout_s)}",
             "", "[[hashers]]", 'name = "tuned"', f"variant = {_toml(c.variant)}", *knob_toml_lines(c)]
    return "\n".join(lines) + "\n"


def install_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ringsum" / OPTIONS_NAME


def write_outputs(space: Space, o: Outcome, tune_dir: Path, install: bool) -> list[Path]:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    where = f"machine {o.fingerprint_id or '?'}, {stamp}, {format_size(space.file.size)} file, {space.config.run.cache}"
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
        if install:
            dest = install_path()
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dest)
            written.append(dest)
    res.write_json_atomic(tune_dir / "tune.json", {
        **dataclasses.asdict(o), "space": str(space.config.path), "file": dataclasses.asdict(space.file),
        "cache": space.config.run.cache, "max_hasher_runs": math.floor(space.grid_runs * GRID_FRACTION)})
    return written


def summary(o: Outcome) -> list[str]:
    """What tune found, for the terminal."""
    def line(lbl: str, m: float) -> str:
        return f"{lbl}  median {m:.3f} s"

    def ratio(e: dict[str, Any]) -> str:
        return stats.Estimate(**e).text(2)

    out = [f"best: {line(o.winner, o.winner_median_s)} over {o.final_rounds} interleaved rounds "
           f"({format_rate(o.file_size / o.winner_median_s)})"]
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
    for lbl, m in o.finalists:
        if lbl != o.winner:
            out.append(f"  finalist: {line(lbl, m)}")
    out.append(f"runs: {o.hasher_runs} hasher executions (+{o.baseline_runs} of readers and b3sum) vs {o.grid_runs} for the "
               f"full grid ({o.grid_points} configurations x {o.grid_runs // o.grid_points} rounds): "
               f"{o.hasher_runs / o.grid_runs:.1%}")
    out += [f"cut: {c}" for c in o.cuts]
    return out


# --- the full-grid comparison ---

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


def new_tune_dir(out: Path) -> Path:
    from harness.results import utcnow
    from harness.rundir import host_name

    base = f"tune-{utcnow().strftime('%Y%m%dT%H%M%SZ')}-{host_name()}"
    d, n = out / base, 2
    while d.exists():
        d, n = out / f"{base}-{n}", n + 1
    d.mkdir(parents=True)
    return d


def preflight(space: Space) -> None:
    """What the stages would find missing (root for cold mode, binaries, fio, hyperfine, b3sum)."""
    from harness.plan import Plan
    from harness.preflight import check_binaries, check_cache_mode, required_tools

    check_cache_mode(space.config.run.cache)
    check_binaries(Plan(space.points, [space.file], 1, 1, space.config.run.cache))
    final = Stage("final", space.points[:1], 1, fio=fio_for(space.points[:1]), b3sum=True)
    config = parse_config(config_text(space, final), "final")
    required_tools(build_plan(config, [space.file]))


def tune(space: Space, out: Path, budget_s: float | None = None, install: bool = False,
         compare: bool = False, grid_run_dir: Path | None = None, measure: Measure | None = None) -> int:
    """`ringsum tune`: search, write the outputs, print the result (and the grid comparison)."""
    preflight(space)
    check_limits(space, budget_s)
    if install and DEFAULT_VARIANT not in space.variants:
        raise TuneError(f"--install: {DEFAULT_VARIANT} is not in the space; there would be nothing to install")
    tune_dir = new_tune_dir(out)
    _log(f"tune directory: {tune_dir}")
    measure = measure or real_measure(space, tune_dir)
    o = search(space, measure, budget_s)
    written = write_outputs(space, o, tune_dir, install)
    for text in summary(o):
        print(text)
    print("wrote: " + ", ".join(str(p) for p in written))
    wrong = sorted({lbl for s in o.stages for lbl in s["mismatched"]})
    if wrong:
        _log(f"ringsum: HASH MISMATCH against the official b3sum (left out of the ranking): {'; '.join(wrong[:5])}")
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
