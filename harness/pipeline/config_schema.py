"""What a config is once read (harness/pipeline/config.py reads the TOML): the run settings, the groups of
commands with their knob grids and constraints, and an A/B run's baseline twins."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.catalog.tools import HASHER, TOOLS
from harness.catalog.variants import REPO_ROOT, default_bin_dir
from harness.conditions.spec import ConditionGrid
from harness.datasets.dataset import TreeRecipe
from harness.config_values import Buffers


BASELINE_TOOLS = tuple(TOOLS)


class ConfigError(Exception):
    """A configuration problem, already formatted as `file: key: problem`."""


@dataclass(frozen=True)
class Constraint:
    """`A [* B] OP C`; operands are knob names or literals (integers, sizes like 64M)."""

    text: str
    left: tuple[str | int, ...]
    op: str
    right: str | int

    def holds(self, knobs: dict[str, Any]) -> bool:
        def val(x: str | int) -> int:
            v = knobs[x] if isinstance(x, str) else x
            return int(v)  # bools count as 0/1

        lhs = 1
        for term in self.left:
            lhs *= val(term)
        rhs = val(self.right)
        return {
            "<=": lhs <= rhs, "<": lhs < rhs, ">=": lhs >= rhs,
            ">": lhs > rhs, "==": lhs == rhs, "!=": lhs != rhs,
        }[self.op]


@dataclass(frozen=True)
class Group:
    """One group of commands: a hasher sweep or a baseline tool with its grid."""

    kind: str  # HASHER (harness/catalog/tools.py) or a baseline tool name
    name: str
    variant: str  # hasher binary name, or the tool name
    grid: dict[str, tuple[Any, ...]]
    exclude: tuple[dict[str, tuple[Any, ...]], ...] = ()
    constraints: tuple[Constraint, ...] = ()
    path: str | None = None  # explicit hasher binary
    style: str = "options"  # hasher argv style: "options" or "positional"
    trace: bool = True  # hashers: one extra untimed --trace run per configuration
    key: str = ""  # where it came from in the file, for messages
    argv: tuple[str, ...] = ()  # [[commands]]: the program and its words, {file} and {param} placeholders
    reads_only: bool = False  # [[commands]]: a plain reader, one of the speed limit's
    blake3: bool = False  # [[commands]]: prints the file's BLAKE3 hash as b3sum does; checked


@dataclass(frozen=True)
class Nominal:
    read_Bps: float = 1.0e9  # a round guess for estimates, before a run has measured the disk
    hash_per_core_Bps: float = 3e9
    overhead_s: float = 0.15  # per execution: hyperfine's start and the prepare (sync, drop, cachestat)


@dataclass(frozen=True)
class RunSettings:
    rounds: int = 5
    runs_per_round: int = 1
    cache: str = "cold"
    files: tuple[str, ...] = ()
    file_sizes: tuple[int, ...] = ()
    data_dir: str = "build/data"
    timeout_s: float = 120.0
    trace: bool = True
    probes: int = 1  # traced executions per hasher configuration (behaviour counters)
    probe_cache: str | None = None  # their page cache mode; None: as `cache`
    seed: int | None = None
    bin_dir: str | None = None
    resident_tolerance: float = 0.01
    warmup: int = 0  # warm runs: untimed executions of a command just before each timed one (hyperfine's --warmup)
    nominal: Nominal = field(default_factory=Nominal)


@dataclass(frozen=True)
class DatasetDecl:
    """A [[datasets]] table: an existing file or tree (`path`), or a tree ringsum generates."""

    name: str
    path: str | None = None
    recipe: TreeRecipe | None = None


@dataclass(frozen=True)
class Config:
    path: str
    run: RunSettings
    groups: tuple[Group, ...]
    raw: dict[str, Any]  # the TOML as parsed, for meta.json
    limit_groups: tuple[Group, ...] = ()  # the `limit` group (LIMIT_BASELINES), unless turned off
    limit: bool = True  # `[baselines] limit`: readers for the read limit, b3sum for BLAKE3's when warm
    datasets: tuple[DatasetDecl, ...] = ()  # [[datasets]]: instead of run.file / run.file_size
    conditions: ConditionGrid = field(default_factory=lambda: ConditionGrid({}))  # [conditions]

    def bin_dir(self) -> Path:
        if not self.run.bin_dir:
            return default_bin_dir()
        p = Path(self.run.bin_dir)
        return p if p.is_absolute() else REPO_ROOT / p

    def data_dir(self) -> Path:
        p = Path(self.run.data_dir)
        return p if p.is_absolute() else REPO_ROOT / p

    def to_json(self) -> dict[str, Any]:
        """The resolved configuration (JSON-friendly)."""
        def conv(v: Any) -> Any:
            if isinstance(v, Buffers):
                return str(v)
            return v

        def group(g: Group) -> dict[str, Any]:
            return {
                "kind": g.kind, "name": g.name, "variant": g.variant, "path": g.path,
                "style": g.style,
                "grid": {k: [conv(x) for x in v] for k, v in g.grid.items()},
                "exclude": [{k: [conv(x) for x in v] for k, v in e.items()} for e in g.exclude],
                "constraints": [c.text for c in g.constraints],
                **({"argv": list(g.argv), "reads_only": g.reads_only, "blake3": g.blake3} if g.kind == "command" else {}),
            }

        return {
            "path": self.path,
            "run": {
                "rounds": self.run.rounds,
                "runs_per_round": self.run.runs_per_round,
                "cache": self.run.cache,
                "files": list(self.run.files),
                "file_sizes": list(self.run.file_sizes),
                "data_dir": self.run.data_dir,
                "timeout_s": self.run.timeout_s,
                "trace": self.run.trace,
                "probes": self.run.probes,
                "probe_cache": self.run.probe_cache,
                "seed": self.run.seed,
                "bin_dir": str(self.bin_dir()),
                "resident_tolerance": self.run.resident_tolerance,
                "warmup": self.run.warmup,
                "nominal": vars(self.run.nominal),
            },
            "datasets": [dataclasses.asdict(d) for d in self.datasets],
            "groups": [group(g) for g in self.groups],
            "limit_groups": [group(g) for g in self.limit_groups],
            "conditions": [c.to_json() | {"name": c.name} for c in self.conditions.expand()],
            "toml": self.raw,
        }


BASELINE_PREFIX = "baseline:"


def with_baseline_build(config: Config, bin_dir: str | Path) -> Config:
    """A/B in one run: every hasher group again with the binary of the same name in `bin_dir`,
    named BASELINE_PREFIX + its name, so that each command and its twin share every round."""
    directory = Path(bin_dir).absolute()
    twins = []
    for g in config.groups:
        if g.kind != HASHER:
            continue
        name = g.name if g.path else g.variant
        binary = directory / (Path(g.path).name if g.path else g.variant)
        twins.append(dataclasses.replace(g, name=BASELINE_PREFIX + name, path=str(binary),
                                         key=f"{g.key} (baseline build {directory})"))
    return dataclasses.replace(config, groups=config.groups + tuple(twins))


PLACEHOLDER = re.compile(r"\{(\w+)\}")


DATASET_PLACEHOLDERS = ("file", "dataset")  # {file} or {dataset}: the file, or the tree's root directory
LIST_WORD = "{list}"  # a whole word: the dataset's files, NUL-separated, in a file (for `xargs -0 -a`)
