"""Grid expansion: a Config becomes a list of concrete `Command`s, plus a duration estimate."""

from __future__ import annotations

import itertools
import os
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.config import ARTICLE_FLAGS, HASHER_FLAGS, REPO_ROOT, XXH_ALGOS, Config, Group
from harness.units import format_size

FIO_JSON = "{FIO_JSON}"  # placeholder in fio argv, replaced by a fresh path per execution
TRACE = "{TRACE}"  # the word after a hasher's --trace, replaced by the trace file's path
# fio parses its --filename (':' separates files, '\\' is not an escape, a missing file is created
# and laid out): the run hands it a path of its own making that names the test file (see run.py).
FIO_FILE = "{FIO_FILE}"
HASHING_TOOLS = ("hasher", "b3sum")  # tools whose stdout is b3sum-format and is checked
BLAKE3_GROUP = "blake3-in-memory"


class PlanError(Exception):
    """A problem found while expanding the plan (missing file, ...)."""


@dataclass(frozen=True)
class FileSpec:
    path: str  # absolute
    size: int
    generate: bool = False  # create it (random data) if missing
    owned: bool = False  # ringsum named it (data directory): also generated again if of the wrong size


@dataclass(frozen=True)
class Command:
    label: str  # stable, unique, human-readable
    slug: str  # label made safe for file names
    tool: str  # hasher, fio, cat, dd, b3sum, xxhsum
    variant: str  # hasher binary name, or the baseline tool
    group: str
    file: str
    file_size: int
    argv: tuple[str, ...]
    block_size: int | None = None
    queue_depth: int | None = None
    buffers: int | None = None
    direct: bool | None = None
    buffered: bool | None = None
    process_in_inner_loop: bool | None = None
    drain: bool | None = None
    link: bool | None = None
    fixed_buffers: bool | None = None
    fixed_file: bool | None = None
    sqpoll: bool | None = None
    submit_and_wait: bool | None = None
    iopoll: bool | None = None
    parallel_hash: bool | None = None
    fadvise_sequential: bool | None = None
    dontcache: bool | None = None
    huge_pages: bool | None = None
    num_threads: int | None = None
    mmap: bool | None = None
    extra: str = ""
    trace_argv: tuple[str, ...] | None = None  # hashers: argv with `--trace {TRACE}`

    @property
    def hashes(self) -> bool:
        return self.tool in HASHING_TOOLS

    def argv_with(self, fio_json: str, fio_file: str) -> list[str]:
        """Only fio's own option words change: a test file named like a placeholder stays as it is."""
        subst = {f"--output={FIO_JSON}": f"--output={fio_json}", f"--filename={FIO_FILE}": f"--filename={fio_file}"}
        return [subst.get(a, a) for a in self.argv] if self.tool == "fio" else list(self.argv)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["argv"] = list(self.argv)
        d["trace_argv"] = list(self.trace_argv) if self.trace_argv else None
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Command":
        d = dict(d)
        d["argv"] = tuple(d["argv"])
        d["trace_argv"] = tuple(d["trace_argv"]) if d.get("trace_argv") else None
        return Command(**d)


@dataclass
class Plan:
    commands: list[Command]
    files: list[FileSpec]
    rounds: int
    runs_per_round: int
    cache: str
    notes: list[str] = field(default_factory=list)

    @property
    def timed_executions(self) -> int:
        return len(self.commands) * self.rounds * self.runs_per_round

    @property
    def traced_executions(self) -> int:
        return sum(1 for c in self.commands if c.trace_argv)


def find_tool(name: str) -> Path | None:
    """b3sum is looked up in <repo>/.tools/bin first, every tool then on PATH."""
    local = REPO_ROOT / ".tools" / "bin" / name
    if local.is_file() and os.access(local, os.X_OK):
        return local
    found = shutil.which(name)
    return Path(found) if found else None


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
        if group.kind == "hasher":
            # constraints see the resolved buffer count
            resolved = dict(knobs, buffers=knobs["buffers"].resolve(knobs["queue_depth"]))
        else:
            resolved = knobs
        if not all(c.holds(resolved) for c in group.constraints):
            continue
        out.append(knobs)
    return out


def _commands_for(config: Config, group: Group, knobs: dict[str, Any], f: FileSpec,
                  tag: str) -> Command:
    file = f.path
    common: dict[str, Any] = dict(group=group.name, file=file, file_size=f.size)
    if group.kind == "hasher":
        prog = str(hasher_binary(config, group))
        bs, qd = knobs["block_size"], knobs["queue_depth"]
        buf = knobs["buffers"].resolve(qd)
        flags = {knob: knobs[knob] for knob in HASHER_FLAGS}
        opts = ["--block-size", format_size(bs), "--queue-depth", str(qd), "--buffers", str(buf)]
        opts += [HASHER_FLAGS[knob][0] for knob, on in flags.items() if on]
        if group.style == "positional":
            beyond = [knob for knob, on in flags.items() if on and knob not in ARTICLE_FLAGS]
            if beyond:
                raise PlanError(f"group {group.name!r}: the positional style cannot express {', '.join(beyond)}")
            args = [str(bs // 1024), str(qd), str(int(flags["direct"])), str(int(flags["process_in_inner_loop"])),
                    str(buf), str(int(flags["drain"])), str(int(flags["link"]))]
            # uring_b3sum takes its arguments as b3sum does: the article's form only after --positional.
            argv = [prog, *(["--positional"] if group.variant == "uring_b3sum" else []), file, *args]
            label = f"{group.variant} {' '.join(args)}"
            extra = "positional"
        else:
            argv = [prog, *opts, "--", file]
            # A group with its own binary is told apart from the built variant by its name.
            label = f"{group.name if group.path else group.variant} bs={format_size(bs)} qd={qd} buf={buf}"
            label += "".join(f" {HASHER_FLAGS[knob][1]}" for knob, on in flags.items() if on)
            extra = ""
        return Command(label=label + tag, slug="", tool="hasher", variant=group.variant,
                       argv=tuple(argv), block_size=bs, queue_depth=qd, buffers=buf, **flags,
                       extra=extra,
                       trace_argv=tuple([prog, *opts, "--trace", TRACE, "--", file]) if group.trace else None,
                       **common)
    tool = group.kind
    exe = str(find_tool(tool) or tool)
    if tool == "cat":
        return Command(label="cat" + tag, slug="", tool=tool, variant=tool, argv=(exe, "--", file), **common)
    if tool == "dd":
        bs, direct = knobs["bs"], knobs["direct"]
        argv = [exe, f"if={file}", "of=/dev/null", f"bs={bs}"] + ["iflag=direct"] * direct + ["status=none"]
        label = f"dd bs={format_size(bs)}" + " iflag=direct" * direct
        return Command(label=label + tag, slug="", tool=tool, variant=tool, argv=tuple(argv),
                       block_size=bs, direct=direct, **common)
    if tool == "b3sum":
        nt, no_mmap = knobs["num_threads"], knobs["no_mmap"]
        flags = (["--num-threads", str(nt)] if nt is not None else []) + ["--no-mmap"] * no_mmap
        label = " ".join(["b3sum", *flags])
        return Command(label=label + tag, slug="", tool=tool, variant=tool, argv=(exe, *flags, "--", file),
                       num_threads=nt, mmap=not no_mmap, **common)
    if tool == "xxhsum":
        algo = knobs["algo"]
        flags = [] if algo == "xxh64" else [f"-H{XXH_ALGOS[algo]}"]
        return Command(label=" ".join(["xxhsum", *flags]) + tag, slug="", tool=tool, variant=tool,
                       argv=(exe, *flags, "--", file), extra="" if algo == "xxh64" else algo, **common)
    if tool == "fio":
        bs, depth, direct = knobs["bs"], knobs["iodepth"], knobs["direct"]
        argv = [exe, "--name=ringsum", f"--filename={FIO_FILE}", "--allow_file_create=0", "--rw=read",
                f"--bs={bs}", "--ioengine=io_uring", f"--iodepth={depth}", f"--direct={int(direct)}",
                "--numjobs=1", f"--size={f.size}", "--invalidate=0",
                "--output-format=json", f"--output={FIO_JSON}"]
        label = f"fio bs={format_size(bs)} iodepth={depth} direct={int(direct)}"
        return Command(label=label + tag, slug="", tool=tool, variant=tool, argv=tuple(argv),
                       block_size=bs, queue_depth=depth, direct=direct, **common)
    raise AssertionError(f"unknown group kind {group.kind}")


def blake3_groups(config: Config) -> list[Group]:
    """Warm mode measures single-core and all-core BLAKE3 speed: b3sum 1 thread and default."""
    have = set()
    for g in config.groups:
        if g.kind == "b3sum":
            for knobs in _expand_grid(g):
                if not knobs["no_mmap"]:
                    have.add(knobs["num_threads"])
    missing = tuple(nt for nt in (1, None) if nt not in have)
    if not missing:
        return []
    return [Group(kind="b3sum", name=BLAKE3_GROUP, variant="b3sum",
                  grid={"num_threads": missing, "no_mmap": (False,)}, key="(added for warm mode)")]


def build_plan(config: Config, files: list[FileSpec]) -> Plan:
    if not files:
        raise PlanError(f"{config.path}: no test file: set run.file or run.file_size, or pass --file/--size")
    groups = list(config.groups)
    notes = []
    if config.run.cache == "warm" and config.limit:
        extra = blake3_groups(config)
        if extra:
            groups += extra
            notes.append("warm mode: added b3sum --num-threads 1 / default for BLAKE3's in-memory speed")
    commands: list[Command] = []
    seen: dict[str, str] = {}
    slugs: set[str] = set()
    added: list[str] = []  # commands of the limit group the config did not have
    for f in files:
        tag = f" [{Path(f.path).name}]" if len(files) > 1 else ""
        for g in groups + list(config.limit_groups):
            for knobs in _expand_grid(g):
                c = _commands_for(config, g, knobs, f, tag)
                if c.label in seen:
                    if g not in config.limit_groups:  # the limit group overlaps the config's own readers on purpose
                        notes.append(f"group {g.name}: {c.label!r} already in group {seen[c.label]}; kept once")
                    continue
                if g in config.limit_groups:
                    if c.tool == "fio" and f.size % (c.block_size or 1):
                        continue  # fio would not read the file's tail: not the same bytes
                    if f is files[0]:
                        added.append(c.label)
                seen[c.label] = g.name
                slug = base = _slugify(c.label)
                n = 2
                while slug in slugs:
                    slug, n = f"{base}-{n}", n + 1
                slugs.add(slug)
                fields = {**asdict(c), "slug": slug}
                if not config.run.trace:
                    fields["trace_argv"] = None
                commands.append(Command(**fields))
    empty = [g for g in config.groups if not _expand_grid(g)]
    if config.groups and len(empty) == len(config.groups):
        raise PlanError(f"{config.path}: the exclude/constraints rules leave no command to run")
    notes += [f"group {g.name}: every combination excluded; it runs nothing" for g in empty]
    if added:
        notes.append(f"speed limit: added the read-only commands {', '.join(added)} "
                     "(the limit group; `[baselines] limit = false` turns it off)")
    return Plan(commands=commands, files=list(files), rounds=config.run.rounds,
                runs_per_round=config.run.runs_per_round, cache=config.run.cache, notes=notes)


# --- duration estimate ---

def _threads_used(c: Command, cores: int) -> int:
    if c.tool == "b3sum":
        return c.num_threads or cores
    if c.tool == "hasher" and "multithread" in c.variant:
        return cores
    return 1


def estimate_execution_s(c: Command, cache: str, config: Config, cores: int | None = None) -> float:
    """Nominal seconds for one execution (without per-run overhead)."""
    nom = config.run.nominal
    cores = cores or os.cpu_count() or 1
    read_Bps = nom.read_Bps if cache == "cold" else 8e9  # warm: a memory copy
    read = c.file_size / read_Bps
    if c.hashes:
        hash_s = c.file_size / (nom.hash_per_core_Bps * min(_threads_used(c, cores), cores))
        return max(read, hash_s) if (c.tool == "hasher" or cache == "warm") else read + hash_s * 0.2
    if c.tool == "xxhsum":
        return max(read, c.file_size / 6e9)
    if c.tool == "fio":
        return read + 0.3  # fio's own start-up (measured ~0.3 s)
    return read


@dataclass
class Estimate:
    timed_s: float
    traced_s: float
    setup_s: float

    @property
    def total_s(self) -> float:
        return self.timed_s + self.traced_s + self.setup_s


def estimate(plan: Plan, config: Config) -> Estimate:
    over = config.run.nominal.overhead_s if plan.cache == "cold" else config.run.nominal.overhead_s * 0.6
    per_round = sum(estimate_execution_s(c, plan.cache, config) + over for c in plan.commands)
    timed = per_round * plan.rounds * plan.runs_per_round
    traced = config.run.probes * sum(estimate_execution_s(c, plan.cache, config) + over
                                     for c in plan.commands if c.trace_argv)
    # reference b3sum (+ file generation at ~0.5 GB/s when needed) per file
    setup = sum(f.size / config.run.nominal.read_Bps + 1.0 + (f.size / 5e8 if f.generate else 0)
                for f in plan.files)
    return Estimate(timed_s=timed, traced_s=traced, setup_s=setup)


def format_duration(s: float) -> str:
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
