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
    cached_share = 0.5         # cold only, a file only: after the drop, read it back and evict all
                               #   but this share, in 2 MiB pieces chosen by round (default: none)
    file = "path"              # or a list of paths; relative to the working directory
    file_size = "1G"           # or a list; files generated in data_dir when no file is given
    data_dir = "build/data"    # relative to the repository root
    timeout_s = 120            # per timed execution; a hanging command is recorded as failed
    trace = true               # untimed runs per hasher configuration with --trace, which also
    probes = 1                 #   record behaviour counters (harness/pipeline/counters.py): how many
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
    style = "options"          # or "positional": the article's `PROG FILE 512 2 1 0 2 0 0`, or
                               #   "defaults": no knob option at all, the hasher's own defaults
    block_size = ["64K", "512K"]
    queue_depth = [1, 4]
    buffers = "queue_depth"    # int, "queue_depth", "2*queue_depth", or a list of those
    direct = [true, false]
    drain = [false, true]      # and every other knob of `ringsum knobs`; a flag the variant has on
                               #   unasked (uring_b3sum's huge_pages) cannot be false
    exclude = [{ direct = false, block_size = "2M" }]    # drop combinations matching all keys
    constraints = ["block_size * buffers <= 64M"]        # keep only combinations satisfying all

    [[commands]]               # any program as a baseline (no Python change); one group per table
    name = "sha"               # required: group name
    argv = ["sha{bits}sum", "{file}"]   # required: {file} or {dataset} the file or tree, {list} its
                                        #   files NUL-separated in a file (a word of its own), {PARAM}
    params = { bits = [1, 256] }        # optional: one command per combination (hyperfine's -L)
    reads_only = true          # a plain reader: it counts for the speed limit
    blake3 = true              # prints the file's BLAKE3 hash as b3sum does: checked like b3sum's

    [[datasets]]               # what the commands read, instead of run.file / run.file_size
    name = "64K"               # required: names it in labels and its generated directory
    path = "/srv/photos"       # an existing file or directory tree: only ever read; or a tree made
    files = 16384              #   from a recipe: how many files (64 to a directory: per_dir)
    file_size = "64K"          #   every file this size, or log-normal sizes:
    median = "32K"             #   around this, sigma = 2.0, at most max_size = "256M",
    empty = 0.02               #   this share of them empty
    seed = 1                   #   the bytes' (default 1): the same recipe makes the same tree

    [conditions]               # machine conditions: device, read_cap, cores, simd (harness/conditions/spec.py)

    [baselines]                # each value: true, a table, or a list of tables
    cat = true
    dd = { bs = ["64K", "2M"], direct = [false, true] }
    b3sum = { num_threads = [1, 2, "all"], no_mmap = [false, true] }
    xxhsum = { algo = ["xxh64"] }
    fio = { bs = ["512K"], iodepth = [2, 4], direct = [true] }
    limit = true               # add the `limit` group (LIMIT_BASELINES) of read-only commands
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Callable

from harness.catalog.knobs import KnobsError, flags_on_by_default, hasher_knobs, load_knobs
from harness.conditions.spec import ConditionError, grid_from_table
from harness.pipeline.config_schema import (BASELINE_TOOLS, DATASET_PLACEHOLDERS, LIST_WORD, PLACEHOLDER, Config, ConfigError, Constraint,
                                   DatasetDecl, Group, Nominal, RUN_KEYS, RunSettings)
from harness.catalog.tools import HASHER, TOOLS, TOOL_LIST
from harness.catalog.variants import VARIANTS
from harness.datasets.dataset import TreeRecipe
from harness.config_values import Parser, buffers, count, fraction, posint, positive, show, size, string
from harness.units import parse_size

# The `limit` group every config gets unless `[baselines] limit = false`: enough read-only commands
# to find the fastest plain read of the file (cat's read-ahead, small and large buffered reads,
# io_uring reads buffered and O_DIRECT, shallow with the article's best and deep). Commands the
# config already has are not added twice.
LIMIT_BASELINES: dict[str, Any] = {tool.name: tool.limit_grid for tool in TOOL_LIST if tool.limit_grid is not None}
LIMIT_KEY = "baselines.limit"
MAX_TREE_FILES = 1 << 20


def _one_line(text: str) -> str:
    """Keys and values from the file may hold line breaks or other controls: escape them, keep one line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


_CONSTRAINT_RE = re.compile(r"^\s*(?P<a>\w+)\s*(?:\*\s*(?P<b>\w+)\s*)?(?P<op><=|>=|==|!=|<|>)\s*(?P<c>\w+)\s*$")


class _Ctx:
    """Carries the file name for error messages, and the hashers' knob table once a hasher group needs it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._hasher_knobs: dict[str, tuple[Parser, tuple[Any, ...]]] | None = None

    def hasher_knobs(self) -> dict[str, tuple[Parser, tuple[Any, ...]]]:
        if self._hasher_knobs is None:
            try:
                self._hasher_knobs = hasher_knobs(load_knobs())
            except KnobsError as e:
                raise self.err("hashers", str(e)) from None
        return self._hasher_knobs

    def err(self, key: str, msg: str) -> ConfigError:
        text = f"{self.path}: {key}: {msg}" if key else f"{self.path}: {msg}"
        return ConfigError(_one_line(text))

    def table(self, value: Any, key: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.err(key, f"expected a table, got {show(value)}")
        return value

    def check_keys(self, table: dict[str, Any], key: str, allowed: set[str] | dict[str, Any]) -> None:
        for k in table:
            if k not in allowed:
                where = f"{key}.{k}" if key else k
                raise self.err(where, f"unknown key (allowed: {', '.join(sorted(allowed)) or 'none'})")

    def parsed(self, table: dict[str, Any], key: str, parsers: dict[str, Parser]) -> dict[str, Any]:
        """The table's keys that have a parser, parsed; an error names `key`.k."""
        out = {}
        for k, parse in parsers.items():
            if k in table:
                try:
                    out[k] = parse(table[k])
                except ValueError as e:
                    raise self.err(f"{key}.{k}", str(e)) from None
        return out

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
        raise ctx.err(key, f'expected a string like "block_size * buffers <= 64M", got {show(text)}')
    m = _CONSTRAINT_RE.match(text)
    if not m:
        raise ctx.err(key, f'cannot parse {show(text)}; expected "A [* B] OP C" with OP one of <= < >= > == !=')

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
    knobs = ctx.hasher_knobs() if kind == HASHER else TOOLS[kind].knobs
    common = {"name", "exclude", "constraints"}
    extra = {"variant", "path", "style", "trace"} if kind == HASHER else set()
    ctx.check_keys(table, key, set(knobs) | common | extra)

    variant, path, style, trace = kind, None, "options", True
    if kind == HASHER:
        if "variant" not in table:
            raise ctx.err(f"{key}.variant", f"missing (e.g. {VARIANTS[0] if VARIANTS else 'uring_b3sum'!r})")
        variant = table["variant"]
        if not isinstance(variant, str) or not re.fullmatch(r"[A-Za-z0-9_.+-]+", variant):
            raise ctx.err(f"{key}.variant", f"expected a program name, got {show(variant)}")
        default_name = variant
        path = table.get("path")
        if path is not None and (not isinstance(path, str) or not path):
            raise ctx.err(f"{key}.path", f"expected a path string, got {show(path)}")
        style = table.get("style", "options")
        if style not in ("options", "positional", "defaults"):
            raise ctx.err(f"{key}.style", f'expected "options", "positional" or "defaults", got {show(style)}')
        given = sorted(set(table) & set(knobs))
        if style == "defaults" and given:
            raise ctx.err(f"{key}.{given[0]}", 'style = "defaults" runs the hasher with no knob option: drop it')
        trace = table.get("trace", True)
        if not isinstance(trace, bool):
            raise ctx.err(f"{key}.trace", f"expected true or false, got {show(trace)}")

    name = table.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        raise ctx.err(f"{key}.name", f"expected a non-empty string, got {show(name)}")

    grid = {}
    for knob, (parse, default) in knobs.items():
        grid[knob] = ctx.values(table[knob], f"{key}.{knob}", parse) if knob in table else default
    for k in flags_on_by_default(load_knobs(), variant) if kind == HASHER and style == "options" else ():
        if k.name in table and False in grid[k.name]:  # off would be the same command again, under a new label
            raise ctx.err(f"{key}.{k.name}", f"{variant} has {k.option} on by default and no option turns it off: "
                                             f"false would run the same command as true (leave {k.name} out)")
        grid[k.name] = (True,)  # as it runs, so the row records it
    if kind == HASHER and style == "positional":
        for bs in grid["block_size"]:
            if bs % 1024:
                raise ctx.err(f"{key}.block_size", f"positional style needs whole KiB, got {bs}")

    exclude = []
    ex = table.get("exclude", [])
    if not isinstance(ex, list):
        raise ctx.err(f"{key}.exclude", f"expected a list of tables, got {show(ex)}")
    for i, rule in enumerate(ex):
        rkey = f"{key}.exclude[{i}]"
        rule = ctx.table(rule, rkey)
        if not rule:
            raise ctx.err(rkey, "empty rule would exclude everything")
        ctx.check_keys(rule, rkey, knobs)
        exclude.append({k: ctx.values(v, f"{rkey}.{k}", knobs[k][0]) for k, v in rule.items()})

    cons = table.get("constraints", [])
    if not isinstance(cons, list):
        raise ctx.err(f"{key}.constraints", f"expected a list of strings, got {show(cons)}")
    constraints = tuple(
        _parse_constraint(ctx, c, f"{key}.constraints[{i}]", knobs) for i, c in enumerate(cons)
    )
    return Group(kind=kind, name=name, variant=variant, grid=grid, exclude=tuple(exclude), constraints=constraints,
                 path=path, style=style, knobs_given=bool(set(table) & set(knobs)), trace=trace, key=key)


def _param(v: Any) -> str | int:
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise ValueError(f"expected a string or an integer, got {show(v)}")
    return v


def _parse_commands(ctx: _Ctx, table: dict[str, Any], key: str) -> Group:
    """[[commands]]: any program as a baseline, its argv with {file} and {PARAM} placeholders, each
    PARAM a value or a list (one command per combination, as hyperfine's -L)."""
    ctx.check_keys(table, key, {"name", "argv", "params", "reads_only", "blake3"})
    name = table.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ctx.err(f"{key}.name", f"expected a non-empty string, got {show(name)}" if name is not None else "missing")
    argv = table.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
        raise ctx.err(f"{key}.argv", f'expected a non-empty list of words like ["sha256sum", "{{file}}"], got {show(argv)}')
    params = ctx.table(table.get("params", {}), f"{key}.params")
    grid = {p: ctx.values(v, f"{key}.params.{p}", _param) for p, v in params.items()}
    used = {m for a in argv for m in PLACEHOLDER.findall(a)}
    for p in sorted(used - set(grid) - {*DATASET_PLACEHOLDERS, "list"}):
        raise ctx.err(f"{key}.argv", f"{{{p}}} is neither {{file}} nor one of params ({', '.join(grid) or 'none'}); "
                                     "the dataset's words are {file} (or {dataset}) and {list}")
    for p in sorted(set(grid) - used):
        raise ctx.err(f"{key}.params.{p}", f"not used in argv (put {{{p}}} in a word)")
    if "list" in used and LIST_WORD not in argv:
        raise ctx.err(f"{key}.argv", "{list} is a word of its own (a path), as in [\"xargs\", \"-0\", \"-a\", \"{list}\", ...]")
    if not used & {*DATASET_PLACEHOLDERS, "list"}:
        raise ctx.err(f"{key}.argv", "no {file}, {dataset} or {list}: the command must read the dataset")
    flags = {}
    for flag in ("reads_only", "blake3"):
        flags[flag] = table.get(flag, False)
        if not isinstance(flags[flag], bool):
            raise ctx.err(f"{key}.{flag}", f"expected true or false, got {show(flags[flag])}")
    return Group(kind="command", name=name, variant=name, grid=grid, key=key, argv=tuple(argv), **flags)


def _parse_run(ctx: _Ctx, table: dict[str, Any]) -> RunSettings:
    ctx.check_keys(table, "run", set(RUN_KEYS))
    kw = ctx.parsed(table, "run", {k: f.metadata["parse"] for k, f in RUN_KEYS.items()
                                   if f.metadata.get("parse") and not f.metadata["many"]})
    for k, f in RUN_KEYS.items():
        if f.metadata.get("many") and k in table:
            kw[f.name] = ctx.values(table[k], f"run.{k}", f.metadata["parse"])
    if kw.get("warmup") and kw.get("cache", "cold") != "warm":
        raise ctx.err("run.warmup", 'goes with cache = "warm": a cold execution starts from a dropped page cache')
    if kw.get("cached_share") is not None and kw.get("cache", "cold") != "cold":
        raise ctx.err("run.cached_share", 'goes with cache = "cold": the share read back after the drop')
    if "nominal" in table:
        nom = ctx.table(table["nominal"], "run.nominal")
        ctx.check_keys(nom, "run.nominal", {"read", "hash_per_core", "overhead_s"})
        nkw: dict[str, float] = {}
        try:
            if "read" in nom:
                nkw["read_Bps"] = float(size(nom["read"]))
            if "hash_per_core" in nom:
                nkw["hash_per_core_Bps"] = float(size(nom["hash_per_core"]))
        except ValueError as e:
            raise ctx.err("run.nominal", str(e)) from None
        if "overhead_s" in nom:
            try:
                nkw["overhead_s"] = positive(nom["overhead_s"])
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
    ctx.check_keys(raw, "", {"run", "hashers", "commands", "baselines", "datasets", "conditions"})

    run = _parse_run(ctx, ctx.table(raw.get("run", {}), "run"))
    datasets = raw.get("datasets", [])
    if not isinstance(datasets, list):
        raise ctx.err("datasets", "expected an array of tables ([[datasets]])")
    decls = tuple(_parse_dataset(ctx, ctx.table(t, f"datasets[{i}]"), f"datasets[{i}]") for i, t in enumerate(datasets))
    if decls and (run.files or run.file_sizes):
        raise ctx.err("datasets", "give either [[datasets]] or run.file / run.file_size, not both")
    names = [d.name for d in decls]
    for i, n in enumerate(names):
        if n in names[:i]:
            raise ctx.err(f"datasets[{i}].name", f"duplicate dataset name {n!r}")

    groups: list[Group] = []
    hashers = raw.get("hashers", [])
    if not isinstance(hashers, list):
        raise ctx.err("hashers", "expected an array of tables ([[hashers]])")
    for i, h in enumerate(hashers):
        key = f"hashers[{i}]"
        groups.append(_parse_group(ctx, HASHER, ctx.table(h, key), key, ""))

    commands = raw.get("commands", [])
    if not isinstance(commands, list):
        raise ctx.err("commands", "expected an array of tables ([[commands]])")
    groups += [_parse_commands(ctx, ctx.table(t, f"commands[{i}]"), f"commands[{i}]") for i, t in enumerate(commands)]

    baselines = ctx.table(raw.get("baselines", {}), "baselines")
    ctx.check_keys(baselines, "baselines", {*BASELINE_TOOLS, "limit"})
    groups += _baseline_groups(ctx, baselines, "baselines", "")
    limit = baselines.get("limit", True)
    if not isinstance(limit, bool):
        raise ctx.err(LIMIT_KEY, f"expected true or false, got {show(limit)}")
    limit_groups = _baseline_groups(ctx, LIMIT_BASELINES, LIMIT_KEY, "limit-") if limit else []

    if not groups:
        raise ctx.err("", "no commands: add [[hashers]] or [baselines]")
    seen: dict[str, str] = {}
    for g in groups + limit_groups:
        if g.name in seen:
            raise ctx.err(f"{g.key}.name", f"duplicate group name {g.name!r} (also {seen[g.name]})")
        seen[g.name] = g.key
    try:
        conditions = grid_from_table(ctx.table(raw.get("conditions", {}), "conditions"))
    except ConditionError as e:
        raise ctx.err("", str(e)) from None
    return Config(path=path, run=run, groups=tuple(groups), raw=raw, limit_groups=tuple(limit_groups),
                  limit=limit, datasets=decls, conditions=conditions)


def _parse_dataset(ctx: _Ctx, table: dict[str, Any], key: str) -> DatasetDecl:
    recipe_keys = {"files", "file_size", "median", "sigma", "max_size", "empty", "seed", "per_dir"}
    ctx.check_keys(table, key, {"name", "path"} | recipe_keys)
    name = table.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ctx.err(f"{key}.name", "missing" if name is None else
                      f"expected a name of letters, digits, '.', '_' and '-', got {show(name)}")
    if "path" in table:
        if set(table) & recipe_keys:
            raise ctx.err(key, f"a path is read as it is: drop {', '.join(sorted(set(table) & recipe_keys))}")
        if not isinstance(table["path"], str) or not table["path"]:
            raise ctx.err(f"{key}.path", f"expected a non-empty string, got {show(table['path'])}")
        return DatasetDecl(name=name, path=table["path"])
    if "files" not in table:
        raise ctx.err(key, "expected a path, or a recipe with files = N")
    if ("file_size" in table) == ("median" in table):
        raise ctx.err(key, "a recipe takes file_size (every file) or median (log-normal sizes), one of them")
    if "file_size" in table and set(table) & {"sigma", "max_size", "empty"}:
        raise ctx.err(key, "sigma, max_size and empty shape log-normal sizes: give median, not file_size")

    kw = ctx.parsed(table, key, {"files": posint, "file_size": size, "median": size, "sigma": positive,
                                 "max_size": size, "empty": fraction, "seed": count, "per_dir": posint})
    if kw["files"] > MAX_TREE_FILES:
        raise ctx.err(f"{key}.files", f"{kw['files']} is more than the {MAX_TREE_FILES} ringsum generates")
    recipe = TreeRecipe(**kw)
    if sum(recipe.sizes()) == 0:
        raise ctx.err(key, "every file of this recipe is empty: throughput would mean nothing")
    return DatasetDecl(name=name, recipe=recipe)


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
            raise ctx.err(key, f"expected true, false, a table or a list of tables, got {show(value)}")
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

