"""What a config is once read (harness/pipeline/config.py reads the TOML): the run settings, the groups of
commands with their knob grids and constraints, and an A/B run's baseline twins."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.catalog.tools import HASHER, TOOLS
from harness.catalog.variants import REPO_ROOT, default_bin_dir
from harness.conditions.spec import ConditionGrid
from harness.datasets.dataset import TreeRecipe
from harness.config_values import Buffers, boolean, cache_mode, count, fraction, posint, positive, share, size, string


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
    knobs_given: bool = True  # hashers: the group names a knob (else it runs the sweep's knob defaults)
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


def _key(default: Any, parse: Callable[[Any], Any], toml: str | None = None, many: bool = False) -> Any:
    """A [run] key, declared once: its TOML name (default: the field's), how a value is read, and
    whether it takes a list (harness/pipeline/config.py reads them all from here)."""
    return field(default=default, metadata={"parse": parse, "toml": toml, "many": many})


@dataclass(frozen=True)
class RunSettings:
    rounds: int = _key(5, posint)
    runs_per_round: int = _key(1, posint)
    cache: str = _key("cold", cache_mode)
    cached_share: float | None = _key(None, share)  # cold runs: this share of the file read back first
    files: tuple[str, ...] = _key((), string, "file", many=True)
    file_sizes: tuple[int, ...] = _key((), size, "file_size", many=True)
    data_dir: str = _key("build/data", string)
    timeout_s: float = _key(120.0, positive)
    trace: bool = _key(True, boolean)
    probes: int = _key(1, posint)  # traced executions per hasher configuration (behaviour counters)
    probe_cache: str | None = _key(None, cache_mode)  # their page cache mode; None: as `cache`
    seed: int | None = _key(None, count)
    bin_dir: str | None = _key(None, string)
    resident_tolerance: float = _key(0.01, fraction)
    warmup: int = _key(0, count)  # warm runs: untimed executions of a command just before each timed one
    nominal: Nominal = field(default_factory=Nominal)  # a table of its own (config.py)


# [run]'s keys as a config writes them -> the field (only `nominal` has no parser: a table)
RUN_KEYS = {f.metadata.get("toml") or f.name: f for f in dataclasses.fields(RunSettings)}


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
            "run": {f.name: str(self.bin_dir()) if f.name == "bin_dir" else vars(v) if f.name == "nominal"
                    else list(v) if isinstance(v, tuple) else v
                    for f in dataclasses.fields(RunSettings) for v in [getattr(self.run, f.name)]},
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
