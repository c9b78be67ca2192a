"""Checks before anything runs: tools, binaries, root for cold runs, paths hyperfine can carry,
and the official b3sum's reference for each dataset (a file's hash, a tree's manifest)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from harness.catalog.tools import COMMAND, HASHER, READER, REFERENCE_HASH, find_tool, the_tool
from harness.datasets.dataset import Dataset, manifest_difference, manifest_digest, write_list
from harness.machine import page_cache as cachemod
from harness.machine.processes import run_group
from harness.pipeline.plan import Plan


HEX64 = re.compile(r"^\\?([0-9a-f]{64})\s")  # b3sum starts the line with a backslash when it escapes the path


class SetupError(Exception):
    """Something missing before the run can start (tool, binary, root, file). Exit 2."""


def required_tools(plan: Plan) -> dict[str, str]:
    """name -> executable for every tool the plan needs (hyperfine, and the reference hash for the digests)."""
    reference = the_tool(REFERENCE_HASH)
    need = {"hyperfine", reference} | {c.tool for c in plan.commands if c.tool not in (HASHER, READER, COMMAND)}
    out = {}
    for name in sorted(need):
        p = find_tool(name)
        if p is None:
            hint = "run `make deps`" + (f" ({reference} goes to .tools/bin)" if name == reference else "")
            raise SetupError(f"{name} not found on PATH; {hint}")
        out[name] = str(p)
    engines = sorted({a.split("=", 1)[1] for c in plan.commands if c.tool == "fio" for a in c.argv
                      if a.startswith("--ioengine=")})
    if engines:
        check_fio_engines(out["fio"], engines)
    return out


def check_fio_engines(fio: str, engines: list[str]) -> None:
    """Every engine a plan names is one the installed fio has (`fio --enghelp`): a missing one would
    fail every round of its rows."""
    rc, out, err = run_group([fio, "--enghelp"], timeout=30)
    have = {line.strip() for line in out.splitlines()[1:] if line.strip()}
    missing = [e for e in engines if e not in have]
    if rc != 0 or not have:
        raise SetupError(f"{fio} --enghelp: {(err or out).strip() or f'exit {rc}'}: cannot tell which engines it has")
    if missing:
        raise SetupError(f"{fio} has no ioengine {', '.join(missing)} (`fio --enghelp` lists those it has)")


def check_binaries(plan: Plan) -> None:
    for c in plan.commands:
        exe = Path(c.argv[0])
        if c.tool == HASHER and not (exe.is_file() and os.access(exe, os.X_OK)):
            raise SetupError(f"hasher binary {exe} not found or not executable; run `make` "
                             "(or set RINGSUM_BIN_DIR / --bin-dir / path = ...)")
        if c.tool in (READER, COMMAND) and not (exe.is_file() and os.access(exe, os.X_OK)):
            raise SetupError(f"group {c.group}: {exe} not found or not executable (argv[0] is looked up "
                             "in .tools/bin, then on PATH)")
        if c.tool != HASHER and not (exe.is_file() and os.access(exe, os.X_OK)):
            raise SetupError(f"{c.tool} not found ({exe}); run `make deps`")


def check_cache_mode(cache: str) -> None:
    if cache == "cold" and not cachemod.is_root():
        raise SetupError("cold mode needs root to drop the page cache; run as root or pass --warm")
    if cache == "cold" and not os.access(cachemod.DROP_CACHES, os.W_OK):
        raise SetupError(f"cold mode cannot write {cachemod.DROP_CACHES} (read-only /proc/sys, a container?); "
                         "pass --warm")


def check_paths(files: list[Dataset], out: str) -> None:
    """hyperfine takes each command as UTF-8 text: a path that is not UTF-8 cannot reach it intact; the
    run directory must be creatable under --out."""
    for what, path in [*(("test file", f.path) for f in files), ("--out directory", str(Path(out).absolute()))]:
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise SetupError(f"{what} {path.encode('utf-8', 'surrogateescape')!r} is not valid UTF-8, "
                             "which hyperfine cannot pass on; rename it") from None
    target = Path(out).absolute()
    there = next(p for p in (target, *target.parents) if p.exists())
    if not os.access(there, os.W_OK | os.X_OK):  # before the test file is generated or anything runs
        why = "a read-only filesystem" if there.is_dir() and os.statvfs(there).f_flag & os.ST_RDONLY else "not writable"
        raise SetupError(f"--out {out}: {there} is {why}; nothing was run")


def b3sum_reference(b3sum: str, path: str, timeout: float) -> str:
    rc, out, err = run_group([b3sum, "--", path], timeout)
    m = HEX64.match(out)
    if rc != 0 or not m:
        raise SetupError(f"b3sum failed on {path}: {err.strip() or out.strip() or f'exit {rc}'}")
    return m.group(1)


def parse_hash(text: str) -> str | None:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) != 1:
        return None
    m = HEX64.match(lines[0])
    return m.group(1) if m else None


@dataclass(frozen=True)
class Reference:
    """b3sum's answer for one dataset, kept in the run directory: a file's hash, or a tree's
    manifest (b3sum's lines for its files; `digest` then names the set of lines)."""

    digest: str
    file_list: str  # the dataset's files, NUL-separated: what {list} and xargs read
    manifest: str | None = None  # a tree's: b3sum's lines

    def judge(self, output: str) -> str | None:
        """None when the command printed b3sum's answer, else what is wrong with it."""
        if self.manifest is None:
            got = parse_hash(output)
            return None if got == self.digest else f"got {got or 'no hash line'}"
        if manifest_digest(output) == self.digest:
            return None
        return manifest_difference(output, Path(self.manifest).read_text(errors="replace"))


def dataset_reference(b3sum: str, d: Dataset, run_dir: Path, index: int, timeout: float) -> Reference:
    """b3sum's reference for dataset number `index`, and its file list, written into the run directory."""
    file_list = run_dir / "datasets" / f"{index}.list0"
    file_list.parent.mkdir(exist_ok=True)
    if not d.is_tree:
        file_list.write_bytes(os.fsencode(d.path) + b"\0")
        return Reference(b3sum_reference(b3sum, d.path, timeout), str(file_list))
    try:
        found = write_list(d.path, file_list)
    except OSError as e:
        raise SetupError(f"cannot list the tree {d.path}: {e.strerror} ({e.filename})") from None
    if found != (d.files, d.size):
        raise SetupError(f"tree {d.path} changed since planned: {found[0]} files of {found[1]} bytes, "
                         f"not {d.files} of {d.size}")
    xargs = str(find_tool("xargs") or "xargs")
    rc, out, err = run_group([xargs, "-0", "-a", str(file_list), b3sum, "--"], timeout)
    if rc != 0:
        raise SetupError(f"b3sum failed on the tree {d.path}: {(err.strip().splitlines() or [f'exit {rc}'])[-1]}")
    digest = manifest_digest(out)
    if digest is None:
        raise SetupError(f"b3sum printed something other than hash lines for the tree {d.path}")
    manifest = run_dir / "datasets" / f"{index}.b3"
    manifest.write_text(out)
    return Reference(digest, str(file_list), str(manifest))
