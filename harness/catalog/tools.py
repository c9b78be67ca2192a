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


def _xxhsum(exe: str, knobs: dict[str, Any], d: Dataset) -> ToolCommand:
    algo = knobs["algo"]
    flags = [] if algo == "xxh64" else [f"-H{XXH_ALGOS[algo]}"]
    return ToolCommand(_reading(d, [exe, *flags, "--"]), " ".join(["xxhsum", *flags]),
                       {"extra": "" if algo == "xxh64" else algo})


def _fio(exe: str, knobs: dict[str, Any], d: Dataset) -> ToolCommand | None:
    if d.is_tree:
        return None  # fio --opendir lays out a job per file: many times slower than cat (docs/trees.md)
    size = d.size
    bs, depth, direct = knobs["bs"], knobs["iodepth"], knobs["direct"]
    argv = [exe, "--name=ringsum", f"--filename={FIO_FILE}", "--allow_file_create=0", "--rw=read",
            f"--bs={bs}", "--ioengine=io_uring", f"--iodepth={depth}", f"--direct={int(direct)}",
            "--numjobs=1", f"--size={size}", "--invalidate=0",
            "--output-format=json", f"--output={FIO_JSON}"]
    return ToolCommand(argv, f"fio bs={format_size(bs)} iodepth={depth} direct={int(direct)}",
                       {"block_size": bs, "queue_depth": depth, "direct": direct})


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
    Tool("fio", {"bs": (config_values.size, (512 << 10,)), "iodepth": (config_values.posint, (2,)),
                 "direct": (config_values.boolean, (True,))}, _fio,
         roles=frozenset({LIMIT_READER, SELF_TIMED}), start_s=0.3,  # start-up: a guess for estimates
         version=lambda out: out.strip().removeprefix("fio-"),
         # io_uring reads buffered and O_DIRECT, shallow with the article's best and deep
         limit_grid=[{"bs": "512K", "iodepth": 2, "direct": True}, {"bs": "2M", "iodepth": 8, "direct": True},
                     {"bs": "512K", "iodepth": 8, "direct": False}]),
)
TOOLS = {t.name: t for t in TOOL_LIST}
# The tool of a [[commands]] entry: a plain reader (reads_only = true), or any other program.
READER, COMMAND = "reader", "command"
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
