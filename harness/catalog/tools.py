"""The baseline tools, each declared once: its config knobs, how its command line and label are
made, its roles (what code asks for instead of its name) and its estimate; the charts colour it
by role. A tool not listed here needs no Python at all: a config's `[[commands]]` entry runs any
program.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.catalog.variants import REPO_ROOT
from harness.datasets.dataset import LIST_PLACEHOLDER, Dataset
from harness import config_values
from harness.units import format_size

FIO_JSON = "{FIO_JSON}"  # placeholder in fio argv, replaced by a fresh path per execution
# fio parses its --filename (':' separates files, '\\' is not an escape, a missing file is created
# and laid out): the run hands it a path of its own making that names the test file (see run.py).
FIO_FILE = "{FIO_FILE}"
XXH_ALGOS = {"xxh32": 0, "xxh64": 1, "xxh128": 2, "xxh3": 3}


@dataclass(frozen=True)
class ToolCommand:
    argv: list[str]
    label: str
    fields: dict[str, Any] = field(default_factory=dict)  # Command fields it fills: block_size, direct, ...


# What a tool is to the harness. Code asks for a role (tools_with, the_tool), never for a tool's name.
LIMIT_READER = "limit reader"  # reads the data and nothing else: the speed limit is the fastest of them
PLAIN_READ = "plain read"  # the article's `cat FILE > /dev/null`: the summary's and the check's first reference
REFERENCE_HASH = "reference hash"  # the official BLAKE3: the expected digests, the hasher to beat, one build per SIMD level
B3SUM_OUTPUT = "b3sum-format output"  # prints `HASH  NAME` lines: checked against the reference digests
SELF_TIMED = "self-timed"  # times its own reading into a JSON file of the run's naming; reads whole blocks only
OTHER_HASH = "other hash"  # hashes, but not BLAKE3: its output is not checked, its speed is its own


@dataclass(frozen=True)
class Tool:
    name: str
    knobs: dict[str, tuple[config_values.Parser, tuple[Any, ...]]]  # config key -> (parser, default values)
    command: Callable[[str, dict[str, Any], Dataset], ToolCommand | None]  # (exe, knobs, dataset); None: n/a
    roles: frozenset[str] = frozenset()
    pipe_output: bool = False  # its output goes through a pipe, not to /dev/null (which it would notice)
    start_s: float = 0.0  # its own start-up, for the estimate
    hash_Bps: float | None = None  # its hashing speed on one core, when it hashes but is not BLAKE3
    version: Callable[[str], str] | None = None  # its version, read from its `--version` output (meta.json)
    limit_grid: Any = None  # a limit reader's settings that a config's `limit` group adds (harness/pipeline/config.py)

    @property
    def reads_only(self) -> bool:
        return LIMIT_READER in self.roles


def _xxh_algo(v: Any) -> str:
    if not isinstance(v, str) or v not in XXH_ALGOS:
        raise ValueError(f"expected one of {', '.join(XXH_ALGOS)}, got {config_values.show(v)}")
    return v


def _each_file(d: Dataset, argv: list[str], jobs: int = 1) -> list[str]:
    """A tree's files handed to a program by xargs from the run's file list: `jobs` at once, each
    with about a quarter of its share of the files."""
    xargs = str(find_tool("xargs") or "xargs")
    batch = ["-P", str(jobs), "-n", str(max(1, -(-d.files // (4 * jobs))))] if jobs > 1 else []
    return [xargs, "-0", "-a", LIST_PLACEHOLDER, *batch, *argv]


def _cat(exe: str, knobs: dict[str, Any], d: Dataset) -> ToolCommand | None:
    jobs = knobs["jobs"]
    if not d.is_tree:
        return ToolCommand([exe, "--", d.path], "cat") if jobs == 1 else None
    return ToolCommand(_each_file(d, [exe, "--"], jobs), "cat" + f" jobs={jobs}" * (jobs > 1))


def _tar(exe: str, knobs: dict[str, Any], d: Dataset) -> ToolCommand | None:
    return ToolCommand([exe, "-c", "-f", "-", "-C", d.path, "."], "tar") if d.is_tree else None


def _dd(exe: str, knobs: dict[str, Any], d: Dataset) -> ToolCommand | None:
    if d.is_tree:
        return None
    bs, direct = knobs["bs"], knobs["direct"]
    argv = [exe, f"if={d.path}", "of=/dev/null", f"bs={bs}"] + ["iflag=direct"] * direct + ["status=none"]
    return ToolCommand(argv, f"dd bs={format_size(bs)}" + " iflag=direct" * direct, {"block_size": bs, "direct": direct})


def _reading(d: Dataset, argv: list[str]) -> list[str]:
    """A program that takes file names reads one file, or the tree's files through xargs."""
    return _each_file(d, argv) if d.is_tree else [*argv, d.path]


def _b3sum(exe: str, knobs: dict[str, Any], d: Dataset) -> ToolCommand:
    nt, no_mmap = knobs["num_threads"], knobs["no_mmap"]
    flags = (["--num-threads", str(nt)] if nt is not None else []) + ["--no-mmap"] * no_mmap
    return ToolCommand(_reading(d, [exe, *flags, "--"]), " ".join(["b3sum", *flags]),
                       {"num_threads": nt, "mmap": not no_mmap})


def _b2sum(exe: str, knobs: dict[str, Any], d: Dataset) -> ToolCommand:
    return ToolCommand(_reading(d, [exe, "--"]), "b2sum")


def _xxhsum(exe: str, knobs: dict[str, Any], d: Dataset) -> ToolCommand:
    algo = knobs["algo"]
    flags = [] if algo == "xxh64" else [f"-H{XXH_ALGOS[algo]}"]
    return ToolCommand(_reading(d, [exe, *flags, "--"]), " ".join(["xxhsum", *flags]),
                       {"extra": "" if algo == "xxh64" else algo})


# fio's engines a config may name: the note's question is whether io_uring pays over plain reads.
FIO_ENGINES = ("sync", "psync", "libaio", "io_uring")
ASYNC_ENGINES = ("libaio", "io_uring")  # they keep iodepth requests in flight; sync and psync one
FIO_RANDOM = "rw=randread"  # in a fio command's extra: a random read, never one of the speed limit's readers


def _fio_engine(v: Any) -> str:
    if v not in FIO_ENGINES:
        raise ValueError(f"expected one of {', '.join(FIO_ENGINES)}, got {config_values.show(v)}")
    return v


def _fio_rw(v: Any) -> str:
    if v not in ("read", "randread"):
        raise ValueError(f'expected "read" (in order) or "randread" (an extra row, never the limit), got {config_values.show(v)}')
    return v


def _fio_batch(v: Any) -> int | str:
    """An iodepth_batch_* count: a positive integer, or "iodepth" (as deep as the queue)."""
    if v == "iodepth":
        return v
    try:
        return config_values.posint(v)
    except ValueError:
        raise ValueError(f'expected a positive integer or "iodepth", got {config_values.show(v)}') from None


def fio_runs_alike(knobs: dict[str, Any]) -> dict[str, Any]:
    """The knobs as fio acts on them: a sync engine keeps one request in flight and ignores depth and
    batching; io_uring's own options mean nothing to another engine; batching nothing at depth 1.
    Two points of a grid that run alike then get one label, and the plan keeps one of them."""
    k = dict(knobs)
    if k["ioengine"] not in ASYNC_ENGINES:
        k["iodepth"] = 1
    if k["ioengine"] != "io_uring":
        k.update(fixedbufs=False, registerfiles=False, sqthread_poll=False)
    batch = ("iodepth_batch_submit", "iodepth_batch_complete_min", "iodepth_batch_complete_max")
    for name in batch:
        k[name] = None if k["iodepth"] == 1 or k[name] is None else k["iodepth"] if k[name] == "iodepth" else k[name]
    return k


def _fio(exe: str, knobs: dict[str, Any], d: Dataset) -> ToolCommand | None:
    if d.is_tree:
        return None  # fio --opendir lays out a job per file: many times slower than cat (docs/trees.md)
    k = fio_runs_alike(knobs)
    bs, depth, direct = k["bs"], k["iodepth"], k["direct"]
    batch = [k["iodepth_batch_submit"], k["iodepth_batch_complete_min"], k["iodepth_batch_complete_max"]]
    own = [f"--iodepth_batch_submit={batch[0]}"] * (batch[0] is not None) \
        + [f"--iodepth_batch_complete_min={batch[1]}"] * (batch[1] is not None) \
        + [f"--iodepth_batch_complete_max={batch[2]}"] * (batch[2] is not None) \
        + ["--fixedbufs=1"] * k["fixedbufs"] + ["--registerfiles=1"] * k["registerfiles"] \
        + ["--sqthread_poll=1"] * k["sqthread_poll"]
    argv = [exe, "--name=ringsum", f"--filename={FIO_FILE}", "--allow_file_create=0", f"--rw={k['rw']}",
            f"--bs={bs}", f"--ioengine={k['ioengine']}", f"--iodepth={depth}", *own, f"--direct={int(direct)}",
            "--numjobs=1", f"--size={d.size}", "--invalidate=0", "--output-format=json", f"--output={FIO_JSON}"]
    # the label as before for fio's defaults here (io_uring, in order, no batching), then what differs
    extra = " ".join([f"engine={k['ioengine']}"] * (k["ioengine"] != "io_uring") + [FIO_RANDOM] * (k["rw"] != "read")
                     + ["batch=" + "/".join(str(b or "-") for b in batch)] * any(b is not None for b in batch)
                     + [name for name in ("fixedbufs", "registerfiles", "sqthread_poll") if k[name]])
    return ToolCommand(argv, f"fio bs={format_size(bs)} iodepth={depth} direct={int(direct)}" + f" {extra}" * bool(extra),
                       {"block_size": bs, "queue_depth": depth, "direct": direct, "extra": extra})


TOOL_LIST = (
    # one file: cat; a tree: cat, and 16 cats at once through xargs
    Tool("cat", {"jobs": (config_values.posint, (1,))}, _cat,
         roles=frozenset({LIMIT_READER, PLAIN_READ}), limit_grid={"jobs": [1, 16]}),
    Tool("tar", {}, _tar, roles=frozenset({LIMIT_READER}), pipe_output=True,
         limit_grid={}),  # trees only, as dd and fio are files only
    Tool("dd", {"bs": (config_values.size, (1 << 20,)), "direct": (config_values.boolean, (False,))}, _dd,
         roles=frozenset({LIMIT_READER}), limit_grid={"bs": ["64K", "1M", "2M"]}),
    Tool("b3sum", {"num_threads": (config_values.threads, (None,)), "no_mmap": (config_values.boolean, (False,))},
         _b3sum, roles=frozenset({REFERENCE_HASH, B3SUM_OUTPUT}), version=lambda out: out.split()[-1]),
    Tool("xxhsum", {"algo": (_xxh_algo, ("xxh64",))}, _xxhsum, roles=frozenset({OTHER_HASH}),
         hash_Bps=6e9, version=lambda out: re.search(r"\d+\.\d+\.\d+", out).group(0)),
    Tool("b2sum", {}, _b2sum, roles=frozenset({OTHER_HASH}), hash_Bps=6e8,
         version=lambda out: re.search(r"\d+\.\d+", out).group(0)),
    Tool("fio", {"bs": (config_values.size, (512 << 10,)), "iodepth": (config_values.posint, (2,)),
                 "direct": (config_values.boolean, (True,)), "ioengine": (_fio_engine, ("io_uring",)),
                 "rw": (_fio_rw, ("read",)), "iodepth_batch_submit": (_fio_batch, (None,)),
                 "iodepth_batch_complete_min": (_fio_batch, (None,)), "iodepth_batch_complete_max": (_fio_batch, (None,)),
                 "fixedbufs": (config_values.boolean, (False,)), "registerfiles": (config_values.boolean, (False,)),
                 "sqthread_poll": (config_values.boolean, (False,))}, _fio,
         roles=frozenset({LIMIT_READER, SELF_TIMED}), start_s=0.3,  # start-up: a guess for estimates
         version=lambda out: out.strip().removeprefix("fio-"),
         # io_uring reads buffered and O_DIRECT, shallow with the article's best and deep
         limit_grid=[{"bs": "512K", "iodepth": 2, "direct": True}, {"bs": "2M", "iodepth": 8, "direct": True},
                     {"bs": "512K", "iodepth": 8, "direct": False}]),
)
TOOLS = {t.name: t for t in TOOL_LIST}
# The tool of a [[commands]] entry: a plain reader (reads_only = true), or any other program.
READER, COMMAND = "reader", "command"
# The tool of a [[hashers]] group: one of ringsum's own programs (harness/catalog/variants.py).
HASHER = "hasher"
# Read the file and nothing else: the speed limit is the fastest of them.
READ_TOOLS = tuple(t.name for t in TOOL_LIST if t.reads_only) + (READER,)


def tools_with(role: str) -> tuple[str, ...]:
    """The names of the tools that play `role`, in the registry's order."""
    return tuple(t.name for t in TOOL_LIST if role in t.roles)


def the_tool(role: str) -> str:
    """The one tool that plays `role` (the reference hash, the plain read)."""
    (name,) = tools_with(role)
    return name


def find_tool(name: str) -> Path | None:
    """b3sum is looked up in <repo>/.tools/bin first, every tool then on PATH."""
    local = REPO_ROOT / ".tools" / "bin" / name
    if local.is_file() and os.access(local, os.X_OK):
        return local
    found = shutil.which(name)
    return Path(found) if found else None
