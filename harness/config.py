"""Sweep configuration: TOML -> validated, frozen dataclasses.

Every error is a `ConfigError` whose message names the file and the key path,
e.g. ``configs/x.toml: hashers[1].queue_depth: expected a positive integer, got "four"``.
Array indices in key paths count from 0. Unknown keys are errors (typos must not be
silently ignored), and so are empty grids.

Schema (all keys optional unless noted)::

    [run]
    rounds = 5                 # positive int
    runs_per_round = 1         # timed executions of each command per round
    cache = "cold"             # "cold" (drop page cache before every run) or "warm"
    file = "path"              # or a list of paths; relative to the working directory
    file_size = "1G"           # or a list; files generated in data_dir when no file is given
    data_dir = "build/data"    # relative to the repository root
    timeout_s = 120            # per timed execution; a hanging command is recorded as failed
    trace = true               # untimed runs per hasher configuration with --trace, which also
    probes = 1                 #   record behaviour counters (harness/counters.py): how many
    probe_cache = "cold"       # page cache before those runs (default: as `cache`)
    seed = 1234                # shuffle seed (default: random, recorded in meta.json)
    bin_dir = "build/bin"      # hasher binaries; default $RINGSUM_BIN_DIR or build/bin
    resident_tolerance = 0.01  # resident fraction above which a cold run is flagged
    [run.nominal]              # used only by the duration estimate of `ringsum plan`
    read = "1G"                # cold read speed, bytes/s
    hash_per_core = "3G"       # in-memory BLAKE3 speed of one core, bytes/s
    overhead_s = 0.15          # per execution: hyperfine start + prepare (sync, drop, check)

    [[hashers]]                # a hasher sweep; one group per table
    name = "singlethread"      # group name (default: variant)
    variant = "liburing_b3sum_singlethread"   # required: binary name in bin_dir
    path = "/abs/or/relative/prog"            # explicit binary (overrides bin_dir/variant)
    style = "options"          # or "positional": the article's `PROG FILE 512 2 1 0 2 0 0`
    block_size = ["64K", "512K"]
    queue_depth = [1, 4]
    buffers = "queue_depth"    # int, "queue_depth", "2*queue_depth", or a list of those
    direct = [true, false]
    process_in_inner_loop = false
    drain = false
    link = false
    exclude = [{ direct = false, block_size = "2M" }]    # drop combinations matching all keys
    constraints = ["block_size * buffers <= 64M"]        # keep only combinations satisfying all

    [baselines]                # each value: true, a table, or a list of tables
    cat = true
    dd = { bs = ["64K", "2M"], direct = [false, true] }
    b3sum = { num_threads = [1, 2, "all"], no_mmap = [false, true] }
    xxhsum = { algo = ["xxh64"] }
    fio = { bs = ["512K"], iodepth = [2, 4], direct = [true] }
    limit = true               # add the `limit` group (LIMIT_BASELINES) of read-only commands
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.units import format_size, parse_size

REPO_ROOT = Path(__file__).resolve().parent.parent

HASHER_VARIANTS = ("liburing_b3sum_singlethread", "liburing_b3sum_multithread", "b3sum_pread", "uring_b3sum")
BASELINE_TOOLS = ("cat", "dd", "b3sum", "xxhsum", "fio")
READ_TOOLS = ("cat", "dd", "fio")  # read the file and nothing else: the speed limit is the fastest of them
# The `limit` group every config gets unless `[baselines] limit = false`: enough read-only commands
# to find the fastest plain read of the file (cat's read-ahead, small and large buffered reads,
# io_uring reads buffered and O_DIRECT, shallow with the article's best and deep). Commands the
# config already has are not added twice.
LIMIT_BASELINES: dict[str, Any] = {
    "cat": {},
    "dd": {"bs": ["64K", "1M", "2M"]},
    "fio": [{"bs": "512K", "iodepth": 2, "direct": True},
            {"bs": "2M", "iodepth": 8, "direct": True},
            {"bs": "512K", "iodepth": 8, "direct": False}],
}
LIMIT_KEY = "baselines.limit"
XXH_ALGOS = {"xxh32": 0, "xxh64": 1, "xxh128": 2, "xxh3": 3}


class ConfigError(Exception):
    """A configuration problem, already formatted as `file: key: problem`."""


def _one_line(text: str) -> str:
    """Keys and values from the file may hold line breaks or other controls: escape them, keep one line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return repr(value)


# --- knob value parsers: each returns the canonical value or raises ValueError ---

def _size(v: Any) -> int:
    n = parse_size(v)
    if n <= 0:
        raise ValueError(f"expected a positive size like 512K, got {_show(v)}")
    return n


def _posint(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"expected a positive integer, got {_show(v)}")
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"expected true or false, got {_show(v)}")
    return v


_BUFFERS_RE = re.compile(r"^\s*(?:(\d+)\s*\*\s*)?queue_depth\s*$")


def _buffers(v: Any) -> "Buffers":
    """buffers: an absolute count, or a multiple of queue_depth ("queue_depth", "2*queue_depth")."""
    if isinstance(v, str):
        m = _BUFFERS_RE.match(v)
        if m and (m.group(1) is None or int(m.group(1)) > 0):
            return Buffers(per_queue_depth=int(m.group(1) or 1))
        raise ValueError(f'expected a positive integer, "queue_depth" or "N*queue_depth", got {_show(v)}')
    return Buffers(count=_posint(v))


def _threads(v: Any) -> int | None:
    if v == "all":
        return None
    try:
        return _posint(v)
    except ValueError:
        raise ValueError(f'expected a positive integer or "all", got {_show(v)}') from None


def _xxh_algo(v: Any) -> str:
    if not isinstance(v, str) or v not in XXH_ALGOS:
        raise ValueError(f"expected one of {', '.join(XXH_ALGOS)}, got {_show(v)}")
    return v


@dataclass(frozen=True)
class Buffers:
    """Number of buffers: either `count`, or `per_queue_depth` x queue_depth."""

    count: int | None = None
    per_queue_depth: int | None = None

    def resolve(self, queue_depth: int) -> int:
        return self.count if self.count is not None else (self.per_queue_depth or 1) * queue_depth

    def __str__(self) -> str:
        if self.count is not None:
            return str(self.count)
        return "queue_depth" if self.per_queue_depth == 1 else f"{self.per_queue_depth}*queue_depth"


# The hashers' on/off knobs: knob name -> (command-line flag, word in the command's label).
# The first four are the article's; the positional style can express only those.
HASHER_FLAGS: dict[str, tuple[str, str]] = {
    "direct": ("--direct", "direct"),
    "buffered": ("--buffered", "buffered"),
    "process_in_inner_loop": ("--process-in-inner-loop", "inner"),
    "drain": ("--drain", "drain"),
    "link": ("--link", "link"),
    "fixed_buffers": ("--fixed-buffers", "fixedbuf"),
    "fixed_file": ("--fixed-file", "fixedfile"),
    "sqpoll": ("--sqpoll", "sqpoll"),
    "submit_and_wait": ("--submit-and-wait", "submitwait"),
    "iopoll": ("--iopoll", "iopoll"),
    "parallel_hash": ("--parallel-hash", "parhash"),
    "fadvise_sequential": ("--fadvise-sequential", "seq"),
    "dontcache": ("--dontcache", "dontcache"),
    "huge_pages": ("--huge-pages", "huge"),
}
ARTICLE_FLAGS = ("direct", "process_in_inner_loop", "drain", "link")

# knob name -> (parser, default values) for each kind of group
KNOBS: dict[str, dict[str, tuple[Callable[[Any], Any], tuple[Any, ...]]]] = {
    "hasher": {
        "block_size": (_size, (512 << 10,)),
        "queue_depth": (_posint, (4,)),
        "buffers": (_buffers, (Buffers(per_queue_depth=1),)),
        **{flag: (_bool, (False,)) for flag in HASHER_FLAGS},
    },
    "cat": {},
    "dd": {"bs": (_size, (1 << 20,)), "direct": (_bool, (False,))},
    "b3sum": {"num_threads": (_threads, (None,)), "no_mmap": (_bool, (False,))},
    "xxhsum": {"algo": (_xxh_algo, ("xxh64",))},
    "fio": {"bs": (_size, (512 << 10,)), "iodepth": (_posint, (2,)), "direct": (_bool, (True,))},
}


_CONSTRAINT_RE = re.compile(
    r"^\s*(?P<a>\w+)\s*(?:\*\s*(?P<b>\w+)\s*)?(?P<op><=|>=|==|!=|<|>)\s*(?P<c>\w+)\s*$"
)


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

    kind: str  # "hasher" or a baseline tool name
    name: str
    variant: str  # hasher binary name, or the tool name
    grid: dict[str, tuple[Any, ...]]
    exclude: tuple[dict[str, tuple[Any, ...]], ...] = ()
    constraints: tuple[Constraint, ...] = ()
    path: str | None = None  # explicit hasher binary
    style: str = "options"  # hasher argv style: "options" or "positional"
    trace: bool = True  # hashers: one extra untimed --trace run per configuration
    key: str = ""  # where it came from in the file, for messages


@dataclass(frozen=True)
class Nominal:
    read_Bps: float = 1.0e9  # measured: cold 1 GiB reads on the 2-core VM, 0.35-2.9 s, mean ~1 s
    hash_per_core_Bps: float = 3e9
    overhead_s: float = 0.15  # measured: hyperfine start + prepare (sync, drop, cachestat) ~0.1-0.2 s


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
    nominal: Nominal = field(default_factory=Nominal)


@dataclass(frozen=True)
class Config:
    path: str
    run: RunSettings
    groups: tuple[Group, ...]
    raw: dict[str, Any]  # the TOML as parsed, for meta.json
    limit_groups: tuple[Group, ...] = ()  # the `limit` group (LIMIT_BASELINES), unless turned off
    limit: bool = True  # `[baselines] limit`: readers for the read limit, b3sum for BLAKE3's when warm

    def bin_dir(self) -> Path:
        d = self.run.bin_dir or os.environ.get("RINGSUM_BIN_DIR") or "build/bin"
        p = Path(d)
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
                "nominal": vars(self.run.nominal),
            },
            "groups": [group(g) for g in self.groups],
            "limit_groups": [group(g) for g in self.limit_groups],
            "toml": self.raw,
        }


BASELINE_PREFIX = "baseline:"


def with_baseline_build(config: Config, bin_dir: str | Path) -> Config:
    """A/B in one run: every hasher group again with the binary of the same name in `bin_dir`,
    named BASELINE_PREFIX + its name, so that each command and its twin share every round."""
    directory = Path(bin_dir).absolute()
    twins = []
    for g in config.groups:
        if g.kind != "hasher":
            continue
        name = g.name if g.path else g.variant
        binary = directory / (Path(g.path).name if g.path else g.variant)
        twins.append(dataclasses.replace(g, name=BASELINE_PREFIX + name, path=str(binary),
                                         key=f"{g.key} (baseline build {directory})"))
    return dataclasses.replace(config, groups=config.groups + tuple(twins))


class _Ctx:
    """Carries the file name for error messages."""

    def __init__(self, path: str) -> None:
        self.path = path

    def err(self, key: str, msg: str) -> ConfigError:
        text = f"{self.path}: {key}: {msg}" if key else f"{self.path}: {msg}"
        return ConfigError(_one_line(text))

    def table(self, value: Any, key: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.err(key, f"expected a table, got {_show(value)}")
        return value

    def check_keys(self, table: dict[str, Any], key: str, allowed: set[str] | dict[str, Any]) -> None:
        for k in table:
            if k not in allowed:
                where = f"{key}.{k}" if key else k
                raise self.err(where, f"unknown key (allowed: {', '.join(sorted(allowed)) or 'none'})")

    def values(self, value: Any, key: str, parse: Callable[[Any], Any]) -> tuple[Any, ...]:
        items = value if isinstance(value, list) else [value]
        if not items:
            raise self.err(key, "empty list; give at least one value")
        out = []
        for i, item in enumerate(items):
            try:
                out.append(parse(item))
            except ValueError as e:
                raise self.err(f"{key}[{i}]" if isinstance(value, list) else key, str(e)) from None
        if len(set(out)) != len(out):
            raise self.err(key, "duplicate values")
        return tuple(out)


def _parse_constraint(ctx: _Ctx, text: Any, key: str, knobs: dict[str, Any]) -> Constraint:
    if not isinstance(text, str):
        raise ctx.err(key, f'expected a string like "block_size * buffers <= 64M", got {_show(text)}')
    m = _CONSTRAINT_RE.match(text)
    if not m:
        raise ctx.err(key, f'cannot parse {_show(text)}; expected "A [* B] OP C" with OP one of <= < >= > == !=')

    def operand(tok: str) -> str | int:
        if tok in knobs:
            return tok
        try:
            return parse_size(tok)
        except ValueError:
            raise ctx.err(key, f"{tok!r} is neither a knob ({', '.join(knobs)}) nor a number/size") from None

    left = tuple(operand(t) for t in (m.group("a"), m.group("b")) if t)
    return Constraint(text=text, left=left, op=m.group("op"), right=operand(m.group("c")))


def _parse_group(ctx: _Ctx, kind: str, table: dict[str, Any], key: str, default_name: str) -> Group:
    knobs = KNOBS[kind]
    common = {"name", "exclude", "constraints"}
    extra = {"variant", "path", "style", "trace"} if kind == "hasher" else set()
    ctx.check_keys(table, key, set(knobs) | common | extra)

    variant, path, style, trace = kind, None, "options", True
    if kind == "hasher":
        if "variant" not in table:
            raise ctx.err(f"{key}.variant", f"missing (e.g. {HASHER_VARIANTS[0]!r})")
        variant = table["variant"]
        if not isinstance(variant, str) or not re.fullmatch(r"[A-Za-z0-9_.+-]+", variant):
            raise ctx.err(f"{key}.variant", f"expected a program name, got {_show(variant)}")
        default_name = variant
        path = table.get("path")
        if path is not None and (not isinstance(path, str) or not path):
            raise ctx.err(f"{key}.path", f"expected a path string, got {_show(path)}")
        style = table.get("style", "options")
        if style not in ("options", "positional"):
            raise ctx.err(f"{key}.style", f'expected "options" or "positional", got {_show(style)}')
        trace = table.get("trace", True)
        if not isinstance(trace, bool):
            raise ctx.err(f"{key}.trace", f"expected true or false, got {_show(trace)}")

    name = table.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        raise ctx.err(f"{key}.name", f"expected a non-empty string, got {_show(name)}")

    grid = {}
    for knob, (parse, default) in knobs.items():
        grid[knob] = ctx.values(table[knob], f"{key}.{knob}", parse) if knob in table else default
    if kind == "hasher" and style == "positional":
        for bs in grid["block_size"]:
            if bs % 1024:
                raise ctx.err(f"{key}.block_size", f"positional style needs whole KiB, got {bs}")

    exclude = []
    ex = table.get("exclude", [])
    if not isinstance(ex, list):
        raise ctx.err(f"{key}.exclude", f"expected a list of tables, got {_show(ex)}")
    for i, rule in enumerate(ex):
        rkey = f"{key}.exclude[{i}]"
        rule = ctx.table(rule, rkey)
        if not rule:
            raise ctx.err(rkey, "empty rule would exclude everything")
        ctx.check_keys(rule, rkey, knobs)
        exclude.append({k: ctx.values(v, f"{rkey}.{k}", knobs[k][0]) for k, v in rule.items()})

    cons = table.get("constraints", [])
    if not isinstance(cons, list):
        raise ctx.err(f"{key}.constraints", f"expected a list of strings, got {_show(cons)}")
    constraints = tuple(
        _parse_constraint(ctx, c, f"{key}.constraints[{i}]", knobs) for i, c in enumerate(cons)
    )
    return Group(kind=kind, name=name, variant=variant, grid=grid, exclude=tuple(exclude),
                 constraints=constraints, path=path, style=style, trace=trace, key=key)


def _parse_run(ctx: _Ctx, table: dict[str, Any]) -> RunSettings:
    allowed = {"rounds", "runs_per_round", "cache", "file", "file_size", "data_dir", "timeout_s",
               "trace", "probes", "probe_cache", "seed", "bin_dir", "resident_tolerance", "nominal"}
    ctx.check_keys(table, "run", allowed)
    kw: dict[str, Any] = {}

    def get(k: str, parse: Callable[[Any], Any]) -> None:
        if k in table:
            try:
                kw[k] = parse(table[k])
            except ValueError as e:
                raise ctx.err(f"run.{k}", str(e)) from None

    get("rounds", _posint)
    get("runs_per_round", _posint)
    get("probes", _posint)
    get("trace", _bool)

    def cache(v: Any) -> str:
        if v not in ("cold", "warm"):
            raise ValueError(f'expected "cold" or "warm", got {_show(v)}')
        return v

    def number(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise ValueError(f"expected a positive number, got {_show(v)}")
        return float(v)

    def fraction(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise ValueError(f"expected a number between 0 and 1, got {_show(v)}")
        return float(v)

    def string(v: Any) -> str:
        if not isinstance(v, str) or not v:
            raise ValueError(f"expected a non-empty string, got {_show(v)}")
        return v

    def seed(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"expected a non-negative integer, got {_show(v)}")
        return v

    get("cache", cache)
    get("probe_cache", cache)
    get("timeout_s", number)
    get("resident_tolerance", fraction)
    get("data_dir", string)
    get("bin_dir", string)
    get("seed", seed)
    if "file" in table:
        kw["files"] = ctx.values(table["file"], "run.file", string)
    if "file_size" in table:
        kw["file_sizes"] = ctx.values(table["file_size"], "run.file_size", _size)
    if "nominal" in table:
        nom = ctx.table(table["nominal"], "run.nominal")
        ctx.check_keys(nom, "run.nominal", {"read", "hash_per_core", "overhead_s"})
        nkw: dict[str, float] = {}
        try:
            if "read" in nom:
                nkw["read_Bps"] = float(_size(nom["read"]))
            if "hash_per_core" in nom:
                nkw["hash_per_core_Bps"] = float(_size(nom["hash_per_core"]))
        except ValueError as e:
            raise ctx.err("run.nominal", str(e)) from None
        if "overhead_s" in nom:
            try:
                nkw["overhead_s"] = number(nom["overhead_s"])
            except ValueError as e:
                raise ctx.err("run.nominal.overhead_s", str(e)) from None
        kw["nominal"] = Nominal(**nkw)
    return RunSettings(**kw)


def parse_config(text: str, path: str) -> Config:
    """Parse and validate TOML text; `path` is only used in messages and meta.json."""
    ctx = _Ctx(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ctx.err("", f"invalid TOML: {e}") from None
    ctx.check_keys(raw, "", {"run", "hashers", "baselines"})

    run = _parse_run(ctx, ctx.table(raw.get("run", {}), "run"))

    groups: list[Group] = []
    hashers = raw.get("hashers", [])
    if not isinstance(hashers, list):
        raise ctx.err("hashers", "expected an array of tables ([[hashers]])")
    for i, h in enumerate(hashers):
        key = f"hashers[{i}]"
        groups.append(_parse_group(ctx, "hasher", ctx.table(h, key), key, ""))

    baselines = ctx.table(raw.get("baselines", {}), "baselines")
    ctx.check_keys(baselines, "baselines", {*BASELINE_TOOLS, "limit"})
    groups += _baseline_groups(ctx, baselines, "baselines", "")
    limit = baselines.get("limit", True)
    if not isinstance(limit, bool):
        raise ctx.err(LIMIT_KEY, f"expected true or false, got {_show(limit)}")
    limit_groups = _baseline_groups(ctx, LIMIT_BASELINES, LIMIT_KEY, "limit-") if limit else []

    if not groups:
        raise ctx.err("", "no commands: add [[hashers]] or [baselines]")
    seen: dict[str, str] = {}
    for g in groups + limit_groups:
        if g.name in seen:
            raise ctx.err(f"{g.key}.name", f"duplicate group name {g.name!r} (also {seen[g.name]})")
        seen[g.name] = g.key
    return Config(path=path, run=run, groups=tuple(groups), raw=raw, limit_groups=tuple(limit_groups),
                  limit=limit)


def _baseline_groups(ctx: _Ctx, baselines: dict[str, Any], where: str, prefix: str) -> list[Group]:
    """The groups of a [baselines] table: per tool true, false, a table or a list of tables."""
    groups = []
    for tool in BASELINE_TOOLS:
        if tool not in baselines:
            continue
        value = baselines[tool]
        key = f"{where}.{tool}"
        if value is False:
            continue
        if value is True:
            value = {}
        if isinstance(value, dict):
            groups.append(_parse_group(ctx, tool, value, key, prefix + tool))
        elif isinstance(value, list):
            if not value:
                raise ctx.err(key, "empty list; give at least one table or use false")
            for j, t in enumerate(value):
                k = f"{key}[{j}]"
                name = prefix + (tool if j == 0 else f"{tool}-{j}")
                groups.append(_parse_group(ctx, tool, ctx.table(t, k), k, name))
        else:
            raise ctx.err(key, f"expected true, false, a table or a list of tables, got {_show(value)}")
    return groups


def load_config(path: str | os.PathLike[str]) -> Config:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: config file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: cannot read config: {e}") from None
    return parse_config(text, str(path))


def describe_size(n: int) -> str:
    return format_size(n)
