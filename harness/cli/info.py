"""The `ringsum` subcommands that describe and run nothing: plan (what a config would run, and for
how long), knobs (the hashers' options as they describe themselves) and sysinfo (the machine)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import shutil
from pathlib import Path
from typing import Any

from harness.catalog.tools import HASHER
from harness.catalog.variants import variant_list
from harness.conditions.spec import condition_overrides, plan_lines
from harness.datasets.generate import describe
from harness.machine.sysinfo import human, sysinfo
from harness.pipeline.config import ConfigError, load_config
from harness.pipeline.earlier_runs import learn, this_machine
from harness.pipeline.estimate import estimate, estimate_execution_s, format_duration
from harness.pipeline.option_probe import HasherRejects, check_hashers
from harness.pipeline.plan import build_plan, resolve_files
from harness.pipeline.run_request import LONG_PLAN_S, Options, apply_overrides
from harness.units import format_size
from harness.catalog.knobs import load_knobs, markdown_table, terminal_view


def cmd_plan(a: argparse.Namespace) -> int:
    opts = Options(config_path=a.config, rounds=a.rounds, warm=a.warm, warmup=a.warmup, bin_dir=a.bin_dir,
                   conditions=condition_overrides(a))
    config = apply_overrides(load_config(a.config), opts)
    files = resolve_files(config, a.file, a.size, a.dir)
    plan = build_plan(config, files)
    learned = learn(Path(a.out), this_machine(files[0].path))
    est = estimate(plan, config, learned)
    missing = sorted({c.argv[0] for c in plan.commands if c.tool == HASHER and not Path(c.argv[0]).is_file()})
    if missing:
        plan.notes.append(f"hasher options not checked: {missing[0]} is not built (make)")
    else:
        try:
            check_hashers(plan, config.run.timeout_s)
        except HasherRejects as e:
            raise ConfigError(f"{config.path}: {e}") from None
    if a.json:
        print(json.dumps({"commands": [c.to_json() for c in plan.commands],
                          "files": [f.to_json() for f in files], "estimate_s": est.total_s,
                          "estimate": est.to_json() | {"learned_from": [str(d) for d in learned.run_dirs]
                                                       if learned else []},
                          "conditions": [c.to_json() | {"name": c.name} for c in plan.conditions],
                          "timed_executions": plan.timed_executions,
                          "traced_executions": plan.traced_executions}, indent=2))
        return 0
    print(f"config: {config.path}")
    print(f"cache: {plan.cache}   rounds: {plan.rounds} x {plan.runs_per_round}   "
          f"timeout: {config.run.timeout_s:g} s per execution")
    for f in files:
        print(f"{f.kind}: {f.path} ({f.describe() if f.is_tree else format_size(f.size)}, {describe(f)})")
    print()
    group = None
    for i, c in enumerate(plan.commands, 1):
        if c.group != group:
            group = c.group
            print(f"[{group}]")
        per = estimate_execution_s(c, plan.cache, config, learned=learned)
        print(f"{i:>4}. {c.label}   (~{per:.2f} s{', +1 traced run' if c.trace_argv else ''})")
        print(f"      {shlex.join(c.argv)}")
    for line in plan_lines(plan.conditions):
        print(line)
    for n in plan.notes:
        print(f"note: {n}")
    print()
    print(f"{len(plan.commands)} commands x {plan.rounds} rounds x {plan.runs_per_round} = "
          f"{plan.timed_executions} timed executions + {plan.traced_executions} traced runs")
    print(f"estimated duration: {format_duration(est.total_s)}  (timed {format_duration(est.timed_s)}, "
          f"traced {format_duration(est.traced_s)}, setup {format_duration(est.setup_s)})")
    print(f"estimate basis: {est.basis_text}")
    if est.total_s > LONG_PLAN_S:
        print("over an hour: `ringsum run` starts it only with --yes")
    return 0


def cmd_sysinfo(a: argparse.Namespace) -> int:
    info = sysinfo(a.file)
    print(json.dumps(info, indent=2) if a.json else human(info), end="\n" if a.json else "")
    return 0


def cmd_knobs(a: argparse.Namespace) -> int:
    table = load_knobs(a.bin_dir)
    if a.json:
        print(json.dumps([dataclasses.asdict(k) for k in table], indent=2))
    elif a.markdown:
        print(markdown_table(table), end="")
    else:
        programs = [(v.name, v.summary) for v in variant_list(a.bin_dir)]
        print(terminal_view(table, shutil.get_terminal_size().columns, programs), end="")
    return 0

