"""How long a plan will take to run (`ringsum plan`, and `ringsum run`'s check before a long one):
from what earlier runs on this machine measured (harness/pipeline/earlier_runs.py) wherever they apply,
else from the config's nominal figures (`[run.nominal]`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.catalog.tools import HASHER, REFERENCE_HASH, TOOLS, tools_with
from harness.catalog.variants import variant as registered_variant
from harness.pipeline.config_schema import Config
from harness.pipeline.earlier_runs import Learned

if TYPE_CHECKING:
    from harness.pipeline.plan import Command, Plan

# Each further file of a tree, read one after another: a cold tree of small files takes cat many
# times as long as one file of the same bytes (docs/trees.md, from docs/cold-path/list-run).
PER_FILE_COLD_S, PER_FILE_WARM_S = 1.8e-4, 2e-5
RAM_READ_BPS = 8e9  # a cached file, or a cold one on the RAM device: a memory copy


def _threads_used(c: Command, cores: int) -> int:
    if c.tool in tools_with(REFERENCE_HASH):
        return c.num_threads or cores
    registered = registered_variant(c.variant) if c.tool == HASHER else None
    if registered and registered.parallel:
        return cores
    return 1


def estimate_execution_s(c: Command, cache: str, config: Config, cores: int | None = None,
                         learned: Learned | None = None) -> float:
    """Seconds for one execution (without per-run overhead): as earlier runs on this machine
    measured it when they did (harness/pipeline/earlier_runs.py), else from the config's nominal figures."""
    measured = learned.execution_s(c, cache) if learned else None
    if measured is not None:
        return measured
    nom = config.run.nominal
    cores = min(cores or os.cpu_count() or 1, c.condition.cores or 1 << 16)
    disk_Bps = (learned.read_Bps(cache, c.condition.name) if learned else None) or nom.read_Bps
    read_Bps = disk_Bps if cache == "cold" and c.condition.device == "disk" else RAM_READ_BPS
    read_Bps = min(read_Bps, c.condition.read_cap or read_Bps)
    read = c.file_size / read_Bps + (c.files - 1) * (PER_FILE_COLD_S if cache == "cold" else PER_FILE_WARM_S)
    if c.hashes:
        hash_s = c.file_size / (nom.hash_per_core_Bps * min(_threads_used(c, cores), cores))
        return max(read, hash_s) if (c.tool == HASHER or cache == "warm") else read + hash_s * 0.2
    tool = TOOLS.get(c.tool)
    if tool and tool.hash_Bps:
        return max(read, c.file_size / tool.hash_Bps)
    return read + (tool.start_s if tool else 0.0)


@dataclass
class Estimate:
    timed_s: float
    traced_s: float
    setup_s: float
    basis: str = "nominal"  # "learned": from earlier runs on this machine, for some commands at least
    basis_text: str = ""  # where the figures came from, in words

    @property
    def total_s(self) -> float:
        return self.timed_s + self.traced_s + self.setup_s

    def to_json(self) -> dict[str, Any]:
        return {"total_s": self.total_s, "timed_s": self.timed_s, "traced_s": self.traced_s,
                "setup_s": self.setup_s, "basis": self.basis, "basis_text": self.basis_text}


def estimate(plan: Plan, config: Config, learned: Learned | None = None) -> Estimate:
    """The run's duration; with `learned`, what this machine measured before stands in for the
    nominal figures wherever it applies."""
    nom = config.run.nominal
    measured_over = learned.overhead_s(plan.cache) if learned else None
    over = measured_over if measured_over is not None else nom.overhead_s * (1 if plan.cache == "cold" else 0.6)
    # a share kept cached: each prepare step also reads the file back from the device
    back_Bps = (((learned.read_Bps("cold", plan.conditions[0].name) if learned else None) or nom.read_Bps)
                if config.run.cached_share is not None else None)
    seconds = {c.label: estimate_execution_s(c, plan.cache, config, learned=learned) + over
               + (c.file_size / back_Bps if back_Bps else 0.0) for c in plan.commands}
    warmups = config.run.warmup if plan.cache == "warm" else 0  # untimed executions before each timed one
    timed = sum(s + (s - over) * warmups for s in seconds.values()) * plan.rounds * plan.runs_per_round
    traced = config.run.probes * sum(seconds[c.label] for c in plan.commands if c.trace_argv)
    # reference b3sum (+ generating the data, when needed, at a guessed 0.4 GB/s) per dataset
    setup = sum(f.size / nom.read_Bps + 1.0 + f.files * PER_FILE_COLD_S
                + (f.size / 4e8 if f.generate else 0) for f in plan.datasets)
    disk_Bps = learned.read_Bps(plan.cache, plan.conditions[0].name) if learned and plan.cache == "cold" else None
    nominal = (f"nominal read {nom.read_Bps / 1e9:.1f} GB/s" if disk_Bps is None else
               f"the nominal figures but the read rate measured, {disk_Bps / 1e9:.1f} GB/s")
    known = sum(1 for c in plan.commands if learned and learned.execution_s(c, plan.cache) is not None)
    if learned is None or (not known and measured_over is None and disk_Bps is None):
        return Estimate(timed, traced, setup, "nominal",
                        f"{nominal}, {over:g} s overhead per execution (config run.nominal)")
    return Estimate(timed, traced, setup, "learned",
                    f"{learned.describe()}: {known} of {len(plan.commands)} commands measured before"
                    + (f", the others from {nominal}" if known < len(plan.commands) else "")
                    + f"; {over:.2f} s overhead per execution "
                    + ("measured" if measured_over is not None else "nominal"))


def format_duration(s: float) -> str:
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
