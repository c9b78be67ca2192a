"""What a run is asked to do (`Options`, from the command line), and everything checked about it
before anything runs (`validate_new_run`): the config with its overrides, the files, the plan,
the tools, the machine and the hashers' acceptance of their options."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.catalog.knobs import KnobsError, load_knobs
from harness.conditions import emulation
from harness.datasets.dataset import Dataset
from harness.judge import sequential
from harness.pipeline.config import ConfigError, load_config, parse_config
from harness.pipeline.config_schema import Config, with_baseline_build
from harness.pipeline.estimate import estimate, format_duration
from harness.pipeline.option_probe import HasherRejects, check_hashers
from harness.pipeline.plan import Plan, build_plan, resolve_files
from harness.pipeline.preflight import SetupError, check_binaries, check_cache_mode, check_paths, required_tools


@dataclass
class Options:
    config_path: str | None
    file: str | None = None
    size: int | None = None
    dir: str | None = None
    out: str = "results"
    rounds: int | None = None
    resume: str | None = None
    warm: bool = False
    bin_dir: str | None = None
    seed: int | None = None
    against: str | None = None  # a baseline build's bin dir: its hashers run beside these (A/B)
    yes: bool = False  # start a plan estimated over LONG_PLAN_S
    conditions: dict[str, tuple[Any, ...]] = dataclasses.field(default_factory=dict)  # --cores all,1 ...
    until_decided: bool = False  # add rounds to the contenders until a winner is named (harness/judge/sequential.py)
    budget_s: float | None = None  # with until_decided: time for the added rounds
    max_rounds: int | None = None  # with until_decided: rounds at most
    warmup: int | None = None  # untimed executions before each timed one (a warm run)
    show_output: bool = False  # print each execution's output, as hyperfine --show-output
    config_text: str | None = None  # the config itself, when it is no file (`ringsum bench`); config_path names it


LONG_PLAN_S = 3600.0


def apply_overrides(config: Config, opts: Options) -> Config:
    run = config.run
    changes: dict[str, Any] = {}
    if opts.rounds is not None:
        changes["rounds"] = opts.rounds
    if opts.warm or opts.warmup:
        changes["cache"] = "warm"
        changes["probe_cache"] = None
        changes["cached_share"] = None  # warm: all of it
    if opts.warmup is not None:
        changes["warmup"] = opts.warmup
    if opts.bin_dir is not None:
        changes["bin_dir"] = str(Path(opts.bin_dir).absolute())
    if opts.seed is not None:
        changes["seed"] = opts.seed
    if changes:
        config = dataclasses.replace(config, run=dataclasses.replace(run, **changes))
    if opts.conditions:
        config = dataclasses.replace(config, conditions=config.conditions.with_values(opts.conditions))
    if opts.against is not None:
        config = with_baseline_build(config, opts.against)
    return config


def given_config(opts: Options) -> Config:
    """The config file, or the config given as text (named by config_path in messages)."""
    assert opts.config_path is not None
    if opts.config_text is not None:
        return parse_config(opts.config_text, opts.config_path)
    return load_config(opts.config_path)


@dataclass
class Validated:
    config: Config
    files: list[Dataset]
    plan: Plan
    tools: dict[str, str]
    sequential: sequential.Sequential | None = None  # --until-decided: its looks, fixed before the first round


def validate_new_run(opts: Options) -> Validated:
    """Everything that can be checked before anything runs (config, files, tools, root)."""
    if opts.config_path is None:
        raise ConfigError("no config given")
    config = apply_overrides(given_config(opts), opts)
    files = resolve_files(config, opts.file, opts.size, opts.dir)
    plan = build_plan(config, files)
    check_cache_mode(plan.cache)
    if config.run.probe_cache and plan.traced_executions:
        check_cache_mode(config.run.probe_cache)
    tools = required_tools(plan)
    try:
        emulation.check_machine(plan.conditions, plan.datasets, plan.programs)
    except emulation.EmulationError as e:
        raise SetupError(str(e)) from None
    check_binaries(plan)
    check_paths(files, opts.out)
    try:
        check_hashers(plan, config.run.timeout_s)
    except HasherRejects as e:
        raise ConfigError(f"{config.path}: {e}") from None
    looks = None
    if opts.until_decided:
        try:
            sequential.check_plan(plan)
            looks = sequential.Sequential.for_run(plan.rounds, opts.budget_s, opts.max_rounds)
        except sequential.SequentialError as e:
            raise ConfigError(f"{config.path}: {e}") from None
    est = estimate(plan, config).total_s
    if looks:  # at worst every command runs up to max_rounds, or the budget is spent
        est = min(est * looks.max_rounds / plan.rounds, est + (opts.budget_s or float("inf")))
    if est > LONG_PLAN_S and not opts.yes:
        raise SetupError(f"{config.path}: the plan is estimated at {format_duration(est)} "
                         f"({plan.timed_executions} timed executions); pass --yes to start it "
                         "(see `ringsum plan`)")
    return Validated(config, files, plan, tools, looks)
