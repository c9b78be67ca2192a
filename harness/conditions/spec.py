"""Machine conditions: the same commands measured on the machine as other machines would be.

A condition is where the test file lives (the disk, or a copy on a RAM-backed block device), a read
rate cap on that device, how many cores the command may run on, and the SIMD level BLAKE3 is built
for. A config's `[conditions]` table (or `--device`, `--read-cap`, `--cores`, `--simd`) lists values
per dimension; every combination its `exclude` rules leave is a condition, and every command of the
plan runs under every condition in the same shuffled rounds::

    [conditions]
    device = ["disk", "ram"]     # "ram": a copy of the dataset on a loop device over a tmpfs file
    read_cap = ["none", "1G"]    # bytes/s on the file's block device (cgroup v1 blkio throttle)
    cores = ["all", 1]           # the command and every thread it starts run on the first N CPUs
    simd = ["full", "avx2"]      # "avx2": BLAKE3 without AVX-512; "sse41": without AVX-512 and AVX2
    exclude = [{ device = "ram", read_cap = "1G" }]

This module describes conditions; harness/conditions/emulation.py makes them real on the machine.
"""

from __future__ import annotations

import argparse
import itertools
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from harness.units import format_size, parse_size

DEVICES = ("disk", "ram")
SIMD_LEVELS = ("full", "avx2", "sse41")  # "full": whatever BLAKE3 finds on the CPU at run time
# The CPU flags a level needs to mean anything: avx2 on a CPU without AVX2 would run SSE4.1 code.
SIMD_CPU_FLAGS = {"full": (), "avx2": ("avx2",), "sse41": ("sse4_1",)}
DIMENSIONS = ("device", "read_cap", "cores", "simd")
CONDITION_COLUMNS = ("condition", *DIMENSIONS)
AS_IS = "as-is"


class ConditionError(ValueError):
    """A condition that is not well formed (the config reader adds the key path)."""


@dataclass(frozen=True)
class Condition:
    device: str = "disk"
    read_cap: int | None = None  # bytes/s; None: the device's own rate
    cores: int | None = None  # None: every CPU the driver may use
    simd: str = "full"

    @property
    def name(self) -> str:
        """Short, stable, and safe in labels and file names: "ram+cap1G+1core+avx2", or "as-is"."""
        parts = [self.device] if self.device != "disk" else []
        if self.read_cap:
            parts.append(f"cap{format_size(self.read_cap)}")
        if self.cores:
            parts.append(f"{self.cores}core" + ("s" if self.cores > 1 else ""))
        if self.simd != "full":
            parts.append(self.simd)
        return "+".join(parts) or AS_IS

    def describe(self) -> str:
        return ", ".join([
            "a RAM-backed block device" if self.device == "ram" else "the disk",
            f"reads capped at {format_size(self.read_cap)}/s" if self.read_cap else "no read cap",
            f"{self.cores} core{'s' if self.cores != 1 else ''}" if self.cores else "every core",
            "BLAKE3 " + {"full": "with every SIMD level", "avx2": "without AVX-512",
                         "sse41": "without AVX-512 and AVX2"}[self.simd]])

    def columns(self) -> dict[str, Any]:
        """runs.csv's condition columns."""
        return {"condition": self.name, **asdict(self)}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any] | None) -> "Condition":
        return Condition(**d) if d else Condition()


# --- values of each dimension, as the config and the command line write them ---

def _device(v: Any) -> str:
    if v not in DEVICES:
        raise ConditionError(f"expected one of {', '.join(map(repr, DEVICES))}, got {v!r}")
    return str(v)


def _read_cap(v: Any) -> int | None:
    if v is False or v in ("none", "off"):
        return None
    if isinstance(v, bool):
        raise ConditionError(f'expected a rate like "1G" (bytes/s) or "none", got {v!r}')
    try:
        rate = parse_size(v) if isinstance(v, str) else int(v)
    except (ValueError, TypeError):
        raise ConditionError(f'expected a rate like "1G" (bytes/s) or "none", got {v!r}') from None
    if rate < 1 << 20:
        raise ConditionError(f"{v!r} is under 1 MiB/s: a cold read of the file would outlast the timeout")
    return rate


def _cores(v: Any) -> int | None:
    if v == "all":
        return None
    if isinstance(v, str) and v.isdigit():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ConditionError(f'expected a number of cores (1 or more) or "all", got {v!r}')
    return v


def _simd(v: Any) -> str:
    if v not in SIMD_LEVELS:
        raise ConditionError(f"expected one of {', '.join(map(repr, SIMD_LEVELS))}, got {v!r}")
    return str(v)


PARSERS: dict[str, Callable[[Any], Any]] = {"device": _device, "read_cap": _read_cap, "cores": _cores, "simd": _simd}


@dataclass(frozen=True)
class ConditionGrid:
    """Values per dimension and the combinations to leave out; `expand()` gives the conditions."""

    values: dict[str, tuple[Any, ...]]
    exclude: tuple[dict[str, tuple[Any, ...]], ...] = ()

    def expand(self) -> list[Condition]:
        out = []
        for combo in itertools.product(*(self.values.get(d, (getattr(Condition(), d),)) for d in DIMENSIONS)):
            point = dict(zip(DIMENSIONS, combo))
            if any(all(point[k] in vals for k, vals in rule.items()) for rule in self.exclude):
                continue
            out.append(Condition(**point))
        return out

    def with_values(self, overrides: dict[str, tuple[Any, ...]]) -> "ConditionGrid":
        """The command line's values replace the config's for their dimensions; its exclude rules stay."""
        return ConditionGrid({**self.values, **overrides}, self.exclude)


def parse_values(dimension: str, items: list[Any]) -> tuple[Any, ...]:
    out = tuple(PARSERS[dimension](v) for v in items)
    if len(set(out)) != len(out):
        raise ConditionError("duplicate values")
    return out


def grid_from_table(table: dict[str, Any]) -> ConditionGrid:
    """A config's [conditions] table; an error names its key (conditions.cores[1]: ...)."""
    def values(value: Any, key: str) -> tuple[Any, ...]:
        items = value if isinstance(value, list) else [value]
        if not items:
            raise ConditionError(f"{key}: empty list; give at least one value")
        try:
            return parse_values(key.rsplit(".", 1)[-1], items)
        except ConditionError as e:
            raise ConditionError(f"{key}: {e}") from None

    for k in table:
        if k not in (*DIMENSIONS, "exclude"):
            raise ConditionError(f"conditions.{k}: unknown key (allowed: {', '.join(sorted((*DIMENSIONS, 'exclude')))})")
    grid = {d: values(table[d], f"conditions.{d}") for d in DIMENSIONS if d in table}
    rules = table.get("exclude", [])
    if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
        raise ConditionError(f"conditions.exclude: expected a list of tables, got {rules!r}")
    exclude = []
    for i, rule in enumerate(rules):
        rkey = f"conditions.exclude[{i}]"
        if not rule:
            raise ConditionError(f"{rkey}: empty rule would exclude everything")
        for k in rule:
            if k not in DIMENSIONS:
                raise ConditionError(f"{rkey}.{k}: unknown key (allowed: {', '.join(DIMENSIONS)})")
        exclude.append({d: values(v, f"{rkey}.{d}") for d, v in rule.items()})
    out = ConditionGrid(grid, tuple(exclude))
    if not out.expand():
        raise ConditionError("conditions.exclude: the rules leave no condition to run")
    return out


def parse_cli(dimension: str, text: str) -> tuple[Any, ...]:
    """`--cores all,1`: comma-separated values of one dimension."""
    words = [w.strip() for w in text.split(",")]
    if not all(words):
        raise ConditionError(f"empty value in {text!r}")
    return parse_values(dimension, words)


# --- where a condition's programs and files are ---

def simd_bin_dir(bin_dir: Path, level: str) -> Path:
    """The hashers built for a SIMD level sit beside the build's bin (`make simd`): build/simd-avx2/bin."""
    return bin_dir if level == "full" else bin_dir.parent / f"simd-{level}" / "bin"


def simd_b3sum(b3sum: str, level: str) -> str:
    """b3sum built for a SIMD level (`make simd`): .tools/simd-avx2/bin/b3sum beside .tools/bin/b3sum."""
    if level == "full":
        return b3sum
    p = Path(b3sum)
    return str(p.parent.parent / f"simd-{level}" / "bin" / p.name)


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def simd_level_of_cpu(flags: set[str] | None = None) -> str:
    """The widest BLAKE3 path this CPU runs: "avx512", "avx2", "sse41" or "portable"."""
    flags = cpu_flags() if flags is None else flags
    if {"avx512f", "avx512vl"} <= flags:
        return "avx512"
    for level, need in (("avx2", "avx2"), ("sse41", "sse4_1")):
        if need in flags:
            return level
    return "portable"


def usable_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


# --- the command line: --device, --read-cap, --cores, --simd ---

def _condition_arg(dimension: str) -> Any:
    def parse(s: str) -> tuple[Any, ...]:
        try:
            return parse_cli(dimension, s)
        except ConditionError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return parse


def add_condition_args(p: argparse.ArgumentParser) -> None:
    """Machine conditions (harness/conditions/spec.py): each replaces the config's [conditions] values."""
    g = p.add_argument_group("machine conditions (comma-separated values; each replaces the config's)")
    g.add_argument("--device", type=_condition_arg("device"), metavar="LIST",
                   help="disk (the file where it is), ram (a copy on a RAM-backed block device)")
    g.add_argument("--read-cap", type=_condition_arg("read_cap"), metavar="LIST",
                   help="bytes/s on the file's block device, or none (e.g. none,1G)")
    g.add_argument("--cores", type=_condition_arg("cores"), metavar="LIST", help="CPUs to run on, or all (e.g. all,1)")
    g.add_argument("--simd", type=_condition_arg("simd"), metavar="LIST",
                   help="BLAKE3 build: full, avx2 (no AVX-512), sse41 (no AVX2 either); `make simd` builds them")


def condition_overrides(a: argparse.Namespace) -> dict[str, tuple[Any, ...]]:
    return {d: v for d in ("device", "read_cap", "cores", "simd") if (v := getattr(a, d, None)) is not None}


def plan_lines(conditions: list[Condition]) -> list[str]:
    """What `ringsum plan` says of the conditions (nothing for the machine as it is alone)."""
    if conditions == [Condition()]:
        return []
    return ["conditions:"] + [f"  {c.name}: {c.describe()}" for c in conditions]
