"""`ringsum tune`'s space and stages: the points of a space config, their neighbours, and each stage
as a config of its own (rounds, points, fio and readers beside them) with its estimate and rankings."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import statistics
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterator

import pandas as pd
import tomli_w

from harness import stats
from harness.catalog.knobs import load_knobs, switched_on
from harness.catalog.tools import HASHER, REFERENCE_HASH, tools_with
from harness.catalog.variants import VariantsError, variant_list
from harness.judge import robust
from harness.conditions.spec import Condition, ConditionGrid
from harness.datasets.dataset import Dataset
from harness.judge import results as res
from harness.judge import verdict
from harness.judge.speed_limit import by_round, speed_limit, SpeedLimit
from harness.pipeline.config import load_config, parse_config
from harness.pipeline.config_schema import Config
from harness.pipeline.estimate import estimate
from harness.pipeline.plan import Command, build_plan, knob_word, resolve_files
from harness.pipeline.run import run
from harness.pipeline.run_request import Options, apply_overrides
from harness.progress import log
from harness.tune.settings import DEFAULT_SPACE, FINAL_ROUNDS, MIN_FINAL_ROUNDS  # noqa: F401 (re-exported)
from harness.units import format_size

COARSE_ROUNDS = 2
REFINE_TOP = 3  # points whose neighbours a refinement stage measures
REFINE_ROUNDS = 2
REFINE_STAGES = 3
SEMIFINALISTS = 10  # the best so far, re-measured together to pick the finalists
SEMIFINAL_ROUNDS = 3
FINALISTS = 3
COMPARE_ROUNDS = 10  # tune's winner against the grid's best
GRID_FRACTION = Fraction(1, 4)  # hasher executions allowed, as a fraction of the full grid's


def __getattr__(name: str) -> str | None:
    """DEFAULT_VARIANT: the program users run, the variant that reads an options file and wisdom,
    for which `tune --install` writes its best setting (None before a build). Asked of the built
    variants when first imported, as they describe themselves."""
    if name != "DEFAULT_VARIANT":
        raise AttributeError(name)
    try:
        tuned = next((v for v in variant_list() if v.defaults_file), None)
    except VariantsError:
        tuned = None
    return tuned.name if tuned else None



class TuneError(Exception):
    """A problem found before or between stages; one line, exit 2."""


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
    """A flag the variant has on unasked is no step away: the same point for every variant."""
    assert c.block_size and c.queue_depth and c.buffers
    asked = switched_on(load_knobs(), c.variant, c.knobs)
    return Key(c.variant, c.block_size, c.queue_depth, Fraction(c.buffers, c.queue_depth), bool(c.direct),
               tuple(name if value is True else f"{name}={value}" for name, value in c.knobs.items()
                     if value and (value is not True or name in asked)))


def _spread(ladder: list[Any]) -> list[Any]:
    """Every other value, starting from the second: each value left out is next to one kept."""
    return ladder[1::2] if len(ladder) > 1 else list(ladder)


@dataclass
class Space:
    config: Config  # the space config, cache mode and overrides applied
    file: Dataset
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
               variants: list[str] | None = None, conditions: dict[str, tuple[Any, ...]] | None = None) -> Space:
    """The space config with the command line's overrides; raises TuneError, ConfigError, SetupError."""

    config = apply_overrides(load_config(path), Options(config_path=str(path), warm=warm, bin_dir=bin_dir,
                                                        conditions=conditions or {}))
    config = dataclasses.replace(config, run=dataclasses.replace(config.run, trace=False))
    for g in config.groups:
        if g.kind == HASHER and (g.path or g.style != "options"):
            raise TuneError(f"{path}: {g.key}: tune needs built variants with options "
                            "(no `path`, no positional style)")
    files = resolve_files(config, file, size, dir_)
    if len(files) != 1:
        raise TuneError(f"{path}: tune needs exactly one dataset (a file or a tree), got {len(files)}; pass --file or --size")
    # the points are configurations; each stage runs them under every condition
    plan = build_plan(dataclasses.replace(config, conditions=ConditionGrid({})), files)
    points = [c for c in plan.commands if c.tool == HASHER]
    if not points:
        raise TuneError(f"{path}: no hasher commands to tune")
    if variants:
        have = list(dict.fromkeys(c.variant for c in points))
        unknown = [v for v in variants if v not in have]
        if unknown:
            raise TuneError(f"unknown variant {unknown[0]!r}; the space has {', '.join(have)}")
        points = [c for c in points if c.variant in variants]
    return Space(config=config, file=files[0], points=points)


@dataclass
class Stage:
    """One run: hasher points, rounds, and the baselines of the final stage."""

    name: str
    points: list[Command]
    rounds: int
    fio: list[tuple[int, int, bool]] = field(default_factory=list)  # (bs, iodepth, direct)
    b3sum: bool = False
    limit: bool = False  # the limit group's readers (config.LIMIT_BASELINES)
    defaults: str | None = None  # a variant run with no options (uring_b3sum: what a record must beat)


@dataclass
class StageResult:
    walls: dict[str, list[float]]  # label -> wall times of successful, hash-checked executions
    hasher_runs: int  # timed hasher executions, failed ones included
    baseline_runs: int
    elapsed_s: float
    run_dir: str | None = None
    times: dict[str, stats.RoundTimes] = field(default_factory=dict)  # label -> round -> seconds, baselines too
    limit: SpeedLimit | None = None
    b3sum: str | None = None  # the fastest b3sum command
    fingerprint_id: str | None = None
    failed: list[str] = field(default_factory=list)  # labels with a failed or mismatched execution
    mismatched: list[str] = field(default_factory=list)  # labels that printed a wrong hash
    robust: robust.RobustPick | None = None  # under several conditions: the stage's robust pick


def config_text(space: Space, stage: Stage, comment: str = "") -> str:
    """A ringsum config that runs exactly the stage: one hasher group per point (TOML by tomli-w)."""
    run, nominal = space.config.run, space.config.run.nominal
    table: dict[str, Any] = {"run": {
        "rounds": stage.rounds, "cache": run.cache, "timeout_s": run.timeout_s, "trace": False,
        "resident_tolerance": run.resident_tolerance,
        "nominal": {"read": int(nominal.read_Bps), "hash_per_core": int(nominal.hash_per_core_Bps),
                    "overhead_s": nominal.overhead_s}, **({"bin_dir": run.bin_dir} if run.bin_dir else {})}}
    table |= conditions_table(space.config.conditions)
    table["hashers"] = [{"name": f"point-{i}", "variant": c.variant, **knob_table(c)} for i, c in enumerate(stage.points, 1)]
    if stage.defaults:
        table["hashers"].append({"name": "defaults", "variant": stage.defaults, "style": "defaults"})
    table["baselines"] = {"limit": stage.limit, **({"b3sum": True} if stage.b3sum else {})}
    if stage.fio:
        table["baselines"]["fio"] = [{"bs": format_size(bs), "iodepth": qd, "direct": d} for bs, qd, d in stage.fio]
    return f"# {comment or 'ringsum tune: ' + stage.name}\n\n" + tomli_w.dumps(table)


def conditions_table(grid: ConditionGrid) -> dict[str, Any]:
    """A [conditions] table that expands to the grid's conditions, listed one by one."""
    conds = grid.expand()
    if conds == [Condition()]:
        return {}

    def value(dim: str, v: Any) -> Any:
        return {"read_cap": "none", "cores": "all"}.get(dim, v) if v is None else v

    dims = ("device", "read_cap", "cores", "simd")
    values = {d: list(dict.fromkeys(getattr(c, d) for c in conds)) for d in dims}
    missing = [p for p in ConditionGrid({d: tuple(values[d]) for d in dims}).expand() if p not in conds]
    table: dict[str, Any] = {d: [value(d, v) for v in values[d]] for d in dims}
    if missing:
        table["exclude"] = [{d: value(d, getattr(p, d)) for d in dims} for p in missing]
    return {"conditions": table}


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
    """(label, score) of the labels with successful executions, best first. The score is the median
    wall time; under several conditions (labels tagged " @<condition>") it is the robust pick's
    measure (harness/judge/robust.py) on pooled medians: the worst over the conditions of the median /
    the condition's best median, for the configurations measured in every condition."""
    medians = {lbl: statistics.median(ws) for lbl, ws in walls.items() if ws}
    tagged = {lbl: lbl.rsplit(" @", 1) for lbl in medians if " @" in lbl}
    if not tagged:
        out = [(lbl, m) for lbl, m in medians.items() if labels is None or lbl in labels]
        return sorted(out, key=lambda t: (t[1], t[0]))
    by_cond: dict[str, dict[str, float]] = {}
    for lbl, (config, cond) in tagged.items():
        if labels is None or config in labels:
            by_cond.setdefault(cond, {})[config] = medians[lbl]
    everywhere = set.intersection(*(set(m) for m in by_cond.values())) if by_cond else set()
    out = [(k, max(m[k] / min(m.values()) for m in by_cond.values())) for k in everywhere]
    return sorted(out, key=lambda t: (t[1], t[0]))


def score_text(space: Space, score: float) -> str:
    return f"{score:.3f} s" if len(space.config.conditions.expand()) == 1 else f"worst {score:.3f} x a condition's best"


@contextlib.contextmanager
def _no_installed_defaults() -> Iterator[None]:
    """uring_b3sum reads a user's options file and its wisdom (an earlier `tune --install`); a flag
    there cannot be turned off on the command line, so stages run without either."""
    names = ("URING_B3SUM_OPTIONS", "URING_B3SUM_WISDOM")
    old = {name: os.environ.get(name) for name in names}
    os.environ.update({name: os.devnull for name in names})
    try:
        yield
    finally:
        for name, value in old.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


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
        # an execution with no exit code or time (killed, or its binary replaced under it) failed
        good = pd.notna(r.exit_code) and r.exit_code == 0 and r.hash_ok is not False and pd.notna(r.wall_s)
        walls.setdefault(r.label, [])
        if good:
            walls[r.label].append(float(r.wall_s))
        elif r.label not in failed:
            failed.append(r.label)
        if r.hash_ok is False and r.label not in mismatched:
            mismatched.append(r.label)
    started, finished = _parse_time(meta.get("started_at")), _parse_time(meta.get("finished_at"))
    times = by_round(df)
    first = verdict.one_condition(df)  # the speed limit and b3sum of the first condition
    b3sums = verdict.fastest(times, list(dict.fromkeys(first.loc[first["tool"].isin(tools_with(REFERENCE_HASH)), "label"])))
    return StageResult(
        walls=walls, hasher_runs=int((df["tool"] == HASHER).sum()),
        baseline_runs=int((df["tool"] != HASHER).sum()),
        elapsed_s=(finished - started).total_seconds() if started and finished else 0.0,
        run_dir=str(run_dir), times=times, limit=speed_limit(first),
        b3sum=b3sums[0][0] if b3sums else None,
        fingerprint_id=(meta.get("fingerprint") or {}).get("fingerprint_id"), failed=failed,
        mismatched=mismatched, robust=verdict.robust_pick(df) if len(verdict.condition_names(df)) > 1 else None)


Measure = Callable[[Stage, str], StageResult]  # (stage, directory name) -> result


def real_measure(space: Space, tune_dir: Path) -> Measure:
    """Each stage: its config in tune_dir/<base>.toml, its run directory under tune_dir/<base>/."""

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
            log(f"tune: {base}: {len(result.failed)} configurations had failed or mismatched executions; "
                 f"they rank by their good executions only ({', '.join(result.failed[:3])})")
        return result

    return measure


def knob_table(c: Command) -> dict[str, Any]:
    """A hasher's knobs as a [[hashers]] table's keys: every number, the flags that are on."""
    table, values = load_knobs(), c.knob_values()
    return ({k.name: knob_word(k, values[k.name]) if k.type == "size" else values[k.name] for k in table if not k.is_flag}
            | {k.name: True for k in table.flags if values[k.name]})
