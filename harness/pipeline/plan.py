"""Grid expansion: a Config becomes a list of concrete `Command`s (harness/pipeline/estimate.py says how long they take)."""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from harness.catalog.knobs import Knob, load_knobs, switched_on
from harness.catalog.tools import (B3SUM_OUTPUT, COMMAND, FIO_FILE, FIO_JSON, HASHER, READER, REFERENCE_HASH, SELF_TIMED,
                                   TOOLS, find_tool, the_tool, tools_with)
from harness.catalog.variants import variant as registered_variant
from harness.conditions.emulation import ram_copies
from harness.conditions.spec import Condition, simd_b3sum, simd_bin_dir
from harness.datasets.dataset import LIST_PLACEHOLDER, Dataset
from harness.datasets.generate import FileError, owned_file, owned_tree, users_path
from harness.pipeline.config_schema import BASELINE_PREFIX, DATASET_PLACEHOLDERS, LIST_WORD, PLACEHOLDER, Config, Group
from harness.config_values import Buffers, buffers
from harness.units import format_size

TRACE = "{TRACE}"  # the word after a hasher's --trace, replaced by the trace file's path
HASHING_TOOLS = (HASHER, *tools_with(B3SUM_OUTPUT))  # their stdout is b3sum-format and is checked
BLAKE3_GROUP = "blake3-in-memory"


class PlanError(Exception):
    """A problem found while expanding the plan (missing file, ...)."""


@dataclass(frozen=True)
class Command:
    label: str  # stable, unique, human-readable
    slug: str  # label made safe for file names
    tool: str  # hasher, fio, cat, dd, b3sum, xxhsum
    variant: str  # hasher binary name, or the baseline tool
    group: str
    file: str
    file_size: int  # bytes read: the file's, or the sum over the tree's files
    argv: tuple[str, ...]
    block_size: int | None = None
    queue_depth: int | None = None
    buffers: int | None = None
    direct: bool | None = None
    knobs: dict[str, Any] = field(default_factory=dict)  # hashers: the table's other knobs (harness/catalog/knobs.py)
    num_threads: int | None = None
    mmap: bool | None = None
    extra: str = ""
    trace_argv: tuple[str, ...] | None = None  # hashers: argv with `--trace {TRACE}`
    blake3: bool = False  # a [[commands]] entry that prints the BLAKE3 hash as b3sum does
    files: int = 1  # in the dataset
    condition: Condition = field(default_factory=Condition)  # the machine condition it runs under

    def knob_values(self) -> dict[str, Any]:
        """A hasher's every knob by name, in the table's order (the shared ones first)."""
        return {"block_size": self.block_size, "queue_depth": self.queue_depth, "buffers": self.buffers,
                "direct": self.direct, **self.knobs}

    @property
    def hashes(self) -> bool:
        return self.tool in HASHING_TOOLS or self.blake3

    def argv_with(self, fio_json: str, fio_file: str, file_list: str) -> list[str]:
        """Only whole placeholder words change (fio's own option words, the file list): a test file
        named like a placeholder stays as it is."""
        subst = {LIST_PLACEHOLDER: file_list}
        if self.tool in tools_with(SELF_TIMED):
            subst |= {f"--output={FIO_JSON}": f"--output={fio_json}", f"--filename={FIO_FILE}": f"--filename={fio_file}"}
        return [subst.get(a, a) for a in self.argv]

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["argv"] = list(self.argv)
        d["trace_argv"] = list(self.trace_argv) if self.trace_argv else None
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Command":
        d = dict(d)
        # a plan.json written before the knob table kept each knob as a field of its own
        own = {f.name for f in fields(Command)}
        d["knobs"] = {**{k: d.pop(k) for k in list(d) if k not in own}, **d.get("knobs", {})}
        d["argv"] = tuple(d["argv"])
        d["trace_argv"] = tuple(d["trace_argv"]) if d.get("trace_argv") else None
        d["condition"] = Condition.from_json(d.get("condition"))
        return Command(**d)


@dataclass
class Plan:
    commands: list[Command]
    datasets: list[Dataset]
    rounds: int
    runs_per_round: int
    cache: str
    notes: list[str] = field(default_factory=list)
    conditions: list[Condition] = field(default_factory=lambda: [Condition()])

    @property
    def timed_executions(self) -> int:
        return len(self.commands) * self.rounds * self.runs_per_round

    @property
    def traced_executions(self) -> int:
        return sum(1 for c in self.commands if c.trace_argv)

    @property
    def programs(self) -> list[tuple[Condition, str]]:
        """Each command's condition and the program it runs, for harness/conditions/emulation.py."""
        return [(c.condition, c.argv[0]) for c in self.commands]


def hasher_binary(config: Config, group: Group) -> Path:
    if group.path:
        p = Path(group.path).expanduser()
        return p if p.is_absolute() else (Path.cwd() / p)
    return config.bin_dir() / group.variant


def _slugify(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "cmd"


def _expand_grid(group: Group) -> list[dict[str, Any]]:
    keys = list(group.grid)
    out = []
    for combo in itertools.product(*(group.grid[k] for k in keys)):
        knobs = dict(zip(keys, combo))
        if any(all(knobs[k] in vals for k, vals in rule.items()) for rule in group.exclude):
            continue
        if group.kind == HASHER:
            # constraints see the resolved buffer count
            resolved = dict(knobs, buffers=knobs["buffers"].resolve(knobs["queue_depth"]))
        else:
            resolved = knobs
        if not all(c.holds(resolved) for c in group.constraints):
            continue
        out.append(knobs)
    return out


def effective_key(c: Command) -> tuple | None:
    """What a built variant will run with: each knob its variant acts on, at the value given or, for
    a `defaults` group, the variant's own default, and a flag the variant has on as on; and whether
    its ring may deepen, which it does only where no depth, buffers or window was given (so the
    defaults are not their own numbers given). Two commands with the same key are one configuration
    under two labels (None: not a built hasher)."""
    variant = registered_variant(c.variant) if c.tool == HASHER and c.extra != "positional" else None
    if variant is None:
        return None
    given = c.knob_values()
    grows = variant.grows_depth and given["queue_depth"] is None and given["buffers"] is None and not given.get("window")
    out = []
    for k in load_knobs():
        if c.variant not in k.variants:
            continue  # checked, then ignored
        own = dict(k.variant_defaults).get(c.variant, k.default)
        value = given.get(k.name)
        if value is None:
            value = buffers(own).resolve(dict(out)["queue_depth"]) if k.type == "buffers" else own
        out.append((k.name, True if k.is_flag and own is True else value))
    return (c.variant, c.argv[0], c.file, c.condition, tuple(out), grows)


def knob_word(k: Knob, value: Any) -> str:
    """A knob's value as its option and the label take it: sizes as 512K."""
    return format_size(value) if k.type == "size" else str(value)


def _hasher_command(config: Config, group: Group, knobs: dict[str, Any], common: dict[str, Any], tag: str,
                    tree: bool) -> Command:
    """A hasher's argv and label from the knob table: every number is passed, every flag that is on;
    the label names the article's numbers, any other that is not at its default, and the flags on
    that the variant has off by default.
    A tree is walked by the hasher itself (--recursive)."""
    table = load_knobs()
    prog = str(hasher_binary(config, group))
    file = common["file"]
    walk = ["--recursive"] if tree else []
    values = {name: v.resolve(knobs["queue_depth"]) if isinstance(v, Buffers) else v for name, v in knobs.items()}
    opts: list[str] = []
    words: list[str] = []
    asked = switched_on(table, group.variant, values)
    for k in table:
        value = values[k.name]
        if k.is_flag:
            opts += [k.option] * value
            words += [k.label] * (k.name in asked)
        else:
            opts += [k.option, knob_word(k, value)]
            if k.positional or value != k.default:
                words.append(f"{k.label}={knob_word(k, value)}")
    if group.style == "positional" and walk:
        raise PlanError(f"group {group.name!r}: the positional style reads one file, not the tree {file}")
    if group.style == "defaults":
        values = dict.fromkeys(values)  # the hasher's own: not known here, not in the label
        opts, words = [], ["defaults"]
    if group.style == "positional":
        beyond = [k.name for k in table if not k.positional and values[k.name] != k.default]
        if beyond:
            raise PlanError(f"group {group.name!r}: the positional style cannot express {', '.join(beyond)}")
        article = sorted((k for k in table if k.positional), key=lambda k: k.positional)
        args = [str(values[k.name] // 1024 if k.type == "size" else int(values[k.name])) for k in article]
        registered = registered_variant(group.variant, config.bin_dir()) or registered_variant(group.variant)
        flag = ["--positional"] if registered and registered.positional_flag else []
        argv = [prog, *flag, file, *args]
        label = f"{group.variant} {' '.join(args)}"
        extra = "positional"
    else:
        argv = [prog, *opts, *walk, "--", file]
        # A group with its own binary is told apart from the built variant by its name.
        label = " ".join([group.name if group.path else group.variant, *words])
        extra = ""
    return Command(label=label + tag, slug="", tool=HASHER, variant=group.variant, argv=tuple(argv),
                   block_size=values["block_size"], queue_depth=values["queue_depth"], buffers=values["buffers"],
                   direct=values["direct"], knobs={name: values[name] for name in table.own}, extra=extra,
                   trace_argv=tuple([prog, *opts, *walk, "--trace", TRACE, "--", file]) if group.trace else None,
                   **common)


def _custom_command(group: Group, params: dict[str, Any], common: dict[str, Any], tag: str) -> Command:
    """A [[commands]] entry: its argv with the placeholders filled, the program found as tools are."""
    values = {**{k: str(v) for k, v in params.items()}, **{p: common["file"] for p in DATASET_PLACEHOLDERS}}
    argv = [LIST_PLACEHOLDER if word == LIST_WORD else PLACEHOLDER.sub(lambda m: values[m.group(1)], word)
            for word in group.argv]
    if "/" not in argv[0]:
        argv[0] = str(find_tool(argv[0]) or argv[0])
    label = " ".join([group.name, *(f"{k}={v}" for k, v in params.items())])
    return Command(label=label + tag, slug="", tool=READER if group.reads_only else COMMAND, variant=group.name,
                   argv=tuple(argv), blake3=group.blake3, extra=" ".join(f"{k}={v}" for k, v in params.items()),
                   **common)


def _commands_for(config: Config, group: Group, knobs: dict[str, Any], d: Dataset,
                  tag: str) -> Command | None:
    """The group's command for one point of its grid on one dataset; None: the tool cannot read it
    (dd or fio and a tree, parallel cat and one file)."""
    common: dict[str, Any] = dict(group=group.name, file=d.path, file_size=d.size, files=d.files)
    if group.kind == HASHER:
        return _hasher_command(config, group, knobs, common, tag, d.is_tree)
    if group.kind == "command":
        return _custom_command(group, knobs, common, tag)
    tool = TOOLS[group.kind]
    made = tool.command(str(find_tool(tool.name) or tool.name), knobs, d)
    if made is None:
        return None
    return Command(label=made.label + tag, slug="", tool=tool.name, variant=tool.name, argv=tuple(made.argv),
                   **made.fields, **common)


def blake3_groups(config: Config) -> list[Group]:
    """Warm mode measures single-core and all-core BLAKE3 speed: b3sum 1 thread and default."""
    reference, have = the_tool(REFERENCE_HASH), set()
    for g in config.groups:
        if g.kind == reference:
            for knobs in _expand_grid(g):
                if not knobs["no_mmap"]:
                    have.add(knobs["num_threads"])
    missing = tuple(nt for nt in (1, None) if nt not in have)
    if not missing:
        return []
    return [Group(kind=reference, name=BLAKE3_GROUP, variant=reference,
                  grid={"num_threads": missing, "no_mmap": (False,)}, key="(added for warm mode)")]


def _under(config: Config, c: Command, group: Group, cond: Condition, tag: str) -> Command:
    """The command as it runs under a condition: the SIMD level's build of BLAKE3's programs."""
    label = c.label + tag
    if cond.simd == "full" or c.tool not in (HASHER, *tools_with(REFERENCE_HASH)):
        return dataclasses.replace(c, label=label, condition=cond)
    if c.tool == HASHER and group.path:
        raise PlanError(f"group {group.name!r}: simd {cond.simd!r} needs the hashers `make simd` builds, "
                        f"not the binary {group.path}")
    prog = (str(simd_bin_dir(config.bin_dir(), cond.simd) / group.variant) if c.tool == HASHER
            else simd_b3sum(c.argv[0], cond.simd))
    trace = (prog, *c.trace_argv[1:]) if c.trace_argv else None
    return dataclasses.replace(c, label=label, condition=cond, argv=(prog, *c.argv[1:]), trace_argv=trace)


def resolve_files(config: Config, file: str | None, size: int | None, dir_: str | None) -> list[Dataset]:
    """The datasets a run reads (harness/datasets/generate.py says whose they are): --file/--size/--dir
    override the config's [[datasets]], run.file and run.file_size."""
    if size is not None and size <= 0:
        raise FileError("--size must be at least 1 byte")
    if file:
        return [users_path(Path(file), size)]
    d = Path(dir_) if dir_ else config.data_dir()
    if size is not None:
        return [owned_file(d, size)]
    if config.datasets:
        return [dataclasses.replace(users_path(Path(x.path), None) if x.path else owned_tree(d, x.name, x.recipe),
                                    label=x.name) for x in config.datasets]
    if config.run.files:
        return [users_path(Path(f), None) for f in config.run.files]
    return [owned_file(d, n) for n in config.run.file_sizes]


def build_plan(config: Config, files: list[Dataset]) -> Plan:
    if not files:
        raise PlanError(f"{config.path}: no test file: set run.file or run.file_size, or pass --file/--size")
    conditions = config.conditions.expand()
    if not conditions:
        raise PlanError(f"{config.path}: the [conditions] exclude rules leave no condition with these values")
    trees = [f.path for f in files if f.is_tree]
    if config.run.cached_share is not None and trees:
        raise PlanError(f"{config.path}: run.cached_share keeps a share of a file, and {trees[0]} is a tree")
    copies = ram_copies(files) if any(c.device == "ram" for c in conditions) else {}
    groups = list(config.groups)
    notes = []
    if config.run.cache == "warm" and config.limit:
        extra = blake3_groups(config)
        if extra:
            groups += extra
            notes.append("warm mode: added b3sum --num-threads 1 / default for BLAKE3's in-memory speed")
    for g in groups:  # a user asking for "uring_b3sum" as installed would be surprised (configs.md)
        known = registered_variant(g.variant, config.bin_dir()) if g.kind == HASHER and not g.knobs_given else None
        if known and g.style == "options" and (known.chooses_path or known.defaults_file):
            notes.append(f"group {g.name}: no knob given, so it runs the sweep's knob defaults, not {g.variant} "
                         'as installed (style = "defaults" runs it with no option)')
    commands: list[Command] = []
    seen: dict[str, str] = {}
    runs_as: dict[tuple, str] = {}  # a hasher's effective configuration -> the label it runs under
    merged: set[str] = set()  # labels kept once under another
    slugs: set[str] = set()
    added: list[str] = []  # commands of the limit group the config did not have
    for cond, source in itertools.product(conditions, files):
        f = copies[source.path] if cond.device == "ram" else source
        tag = (f" [{f.name}]" if len(files) > 1 else "") + (f" @{cond.name}" if len(conditions) > 1 else "")
        for g in groups + list(config.limit_groups):
            for knobs in _expand_grid(g):
                c = _commands_for(config, g, knobs, f, "")
                if c is None:
                    continue
                c = _under(config, c, g, cond, tag)
                if c.label in seen:
                    if g.name == seen[c.label]:  # two points of one grid the tool runs alike (fio's engines)
                        notes.append(f"group {g.name}: two points run as {c.label!r} (knobs the tool ignores "
                                     "there); kept once")
                    elif g not in config.limit_groups:  # the limit group overlaps the config's own readers on purpose
                        notes.append(f"group {g.name}: {c.label!r} already in group {seen[c.label]}; kept once")
                    continue
                # a group's own binary (`path`: another build, an A/B run's baseline) is its own command
                same = None if g.path else effective_key(c)
                if same is not None and same in runs_as:
                    notes.append(f"group {g.name}: {c.label!r} runs as {runs_as[same]!r} does (the same "
                                 "effective configuration); kept once")
                    merged.add(c.label)
                    continue
                if c.label.startswith(BASELINE_PREFIX) and c.label[len(BASELINE_PREFIX):] in merged:
                    continue  # the twin of a command kept once: its other twin is the baseline's already
                if same is not None:
                    runs_as[same] = c.label
                if g in config.limit_groups:
                    if c.tool in tools_with(SELF_TIMED) and f.size % (c.block_size or 1):
                        continue  # it would not read the file's tail (whole blocks only): not the same bytes
                    if source is files[0] and cond == conditions[0]:
                        added.append(c.label)
                seen[c.label] = g.name
                slug = base = _slugify(c.label)
                n = 2
                while slug in slugs:
                    slug, n = f"{base}-{n}", n + 1
                slugs.add(slug)
                commands.append(dataclasses.replace(c, slug=slug, trace_argv=c.trace_argv if config.run.trace else None))
    # A group its own rules empty is a mistake, even beside others: a sweep of the baselines alone
    # would end "no hasher ran" after the whole run.
    empty = [g for g in config.groups if not _expand_grid(g)]
    if config.groups and len(empty) == len(config.groups):
        raise PlanError(f"{config.path}: the exclude/constraints rules leave no command to run")
    if empty:
        raise PlanError(f"{config.path}: group {empty[0].name}: the exclude/constraints rules leave it no "
                        "command to run; loosen them or remove the group")
    if added:
        notes.append(f"speed limit: added the read-only commands {', '.join(added)} "
                     "(the limit group; `[baselines] limit = false` turns it off)")
    if any(c.simd != "full" for c in conditions) and any(g.kind == "command" and g.blake3 for g in config.groups):
        notes.append("simd: [[commands]] entries run as they are under every SIMD level (ringsum cannot rebuild them)")
    if len(conditions) > 1:
        notes.append(f"conditions: {len(conditions)} ({', '.join(c.name for c in conditions)}); "
                     "every command runs under each, in the same rounds")
    return Plan(commands=commands, datasets=list(files) + list(copies.values()), rounds=config.run.rounds,
                runs_per_round=config.run.runs_per_round, cache=config.run.cache, notes=notes,
                conditions=conditions)


def round_orders(labels: list[str], rounds: int, runs_per_round: int, seed: int) -> list[list[str]]:
    """Each round: every label `runs_per_round` times, freshly shuffled; consecutive rounds differ
    whenever more than one order is possible."""
    rng = random.Random(seed)
    orders: list[list[str]] = []
    base = [lbl for lbl in labels for _ in range(runs_per_round)]
    for _ in range(rounds):
        order = list(base)
        for _attempt in range(20):
            rng.shuffle(order)
            if not orders or order != orders[-1] or len(set(base)) < 2:
                break
        orders.append(order)
    return orders


def added_round_orders(orders: list[list[str]], labels: list[str], count: int, runs_per_round: int,
                       seed: int) -> list[list[str]]:
    """--until-decided: `count` more round orders of `labels`, shuffled by a generator seeded from the
    run's seed and the round number (a resumed run makes the same ones)."""
    out = []
    for rnd in range(len(orders) + 1, len(orders) + count + 1):
        order = [lbl for lbl in labels for _ in range(runs_per_round)]
        random.Random(seed * 1_000_003 + rnd).shuffle(order)
        out.append(order)
    return out
