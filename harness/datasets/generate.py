"""Datasets: which file or tree each run reads, and generating the ones that are missing.

A file named with --file (or run.file) is the user's: ringsum reads it and never writes it. With
--size as well it is created when missing; an existing file of another size is an error (drop
--size to use it as it is). Files ringsum names itself (ringsum-<size>.bin in the data directory,
from --size alone or run.file_size) are its own: one of the wrong size (a copy cut short) is
generated again. A new file appears only complete: it is written to a temporary name and linked
into place without replacing anything that appeared meanwhile.

A directory named with --file (or a [[datasets]] path) is a tree of the user's, read and never
written. A [[datasets]] recipe is a tree of ringsum's own in the data directory,
ringsum-tree-<name>-<recipe id>: written under a temporary name and renamed into place when
complete, generated again when it is not as its recipe makes it.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
from pathlib import Path
from typing import Callable

from harness.datasets.dataset import TREE, Dataset, TreeRecipe, tree_shape
from harness.units import format_size


class FileError(Exception):
    """A test file cannot be used or made (exit 2, nothing ran)."""


def owned_name(size: int) -> str:
    return f"ringsum-{format_size(size)}.bin"


def users_path(path: Path, want: int | None) -> Dataset:
    """A file or tree the user named, read and never written; with `want` (--size), a file made when missing."""
    path = path.expanduser().absolute()
    if path.is_dir() and not path.is_symlink():
        if want is not None:
            raise FileError(f"{path} is a directory: --size makes a file; drop --size to read the tree")
        return _users_tree(path)
    return _users_file(path, want)


def _users_tree(path: Path) -> Dataset:
    try:
        files, total = tree_shape(path)
    except OSError as e:
        raise FileError(f"cannot read the tree {path}: {e.strerror} ({e.filename})") from None
    if total == 0:
        raise FileError(f"tree {path} holds no bytes in regular files (throughput would mean nothing)")
    return Dataset(str(path), total, kind=TREE, files=files)


def owned_tree(d: Path, name: str, recipe: TreeRecipe | None) -> Dataset:
    """ringsum's own tree of a [[datasets]] recipe, in the data directory `d`."""
    assert recipe is not None
    path = (d.expanduser() / f"ringsum-tree-{name}-{recipe.ident()}").absolute()
    return Dataset(str(path), sum(recipe.sizes()), kind=TREE, files=recipe.files, generate=True, owned=True,
                   recipe=recipe)


def _users_file(path: Path, want: int | None) -> Dataset:
    if path.exists() and not path.is_file():
        raise FileError(f"test file {path} is not a regular file")
    if want is not None and not path.exists():
        return Dataset(str(path), want, generate=True)
    if not path.exists():
        raise FileError(f"test file not found: {path} (pass --size to generate it)")
    n = path.stat().st_size
    if want is not None and n != want:
        raise FileError(f"test file {path} is {n} bytes, not the {want} of --size; ringsum never "
                        "rewrites a file it did not create: drop --size to use it as it is, or name a new path")
    if n == 0:
        raise FileError(f"test file is empty: {path} (throughput of an empty file means nothing)")
    return Dataset(str(path), n)


def owned_file(d: Path, size: int) -> Dataset:
    """ringsum's own file of `size` bytes, in the data directory `d`."""
    return Dataset(str((d.expanduser() / owned_name(size)).absolute()), size, generate=True, owned=True)


def describe(spec: Dataset) -> str:
    """What a run will do with the dataset, as `plan` shows it."""
    p = Path(spec.path)
    if spec.is_tree:
        if not p.exists():
            return "missing: generated" if spec.generate else "missing: the run will refuse it"
        return "exists" if _tree_as_planned(spec) else (
            "not as made: generated again" if spec.owned else "changed since planned: the run will refuse it")
    if p.is_file() and p.stat().st_size == spec.size:
        return "exists"
    if not p.exists():
        return "missing: generated"
    if spec.owned and p.is_file():
        return f"is {p.stat().st_size} bytes: generated again"
    return "changed since planned: the run will refuse it"


def _tree_as_planned(spec: Dataset) -> bool:
    p = Path(spec.path)
    if p.is_symlink() or not p.is_dir():
        return False
    try:
        return tree_shape(p) == (spec.files, spec.size)
    except OSError:
        return False


def ensure_dataset(spec: Dataset, log: Callable[[str], None]) -> None:
    if not spec.is_tree:
        return ensure_file(spec, log)
    p = Path(spec.path)
    if _tree_as_planned(spec):
        return
    if not spec.owned:
        raise FileError(f"tree {p} changed since planned (not {spec.files} files of {spec.size} bytes in all); "
                        "ringsum never writes into a tree it did not create")
    assert spec.recipe is not None
    log(f"generating {spec.recipe.describe()} ({format_size(spec.size)}) in {p}")
    tmp = p.with_name(f".{p.name}.partial-{secrets.token_hex(4)}")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        _write_tree(tmp, spec.recipe)
        if p.is_symlink() or p.exists():
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()  # ours, not as made
        os.rename(tmp, p)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise FileError(f"no space left to generate the {format_size(spec.size)} tree {p}; "
                            "free some or pass --dir elsewhere") from None
        raise FileError(f"cannot generate the tree {p}: {e.strerror}") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _write_tree(root: Path, recipe: TreeRecipe) -> None:
    """Every file's bytes from one seeded stream, so a recipe makes the same tree everywhere; each
    file created new (O_EXCL, no symlink followed) under a directory made here."""
    # Deferred for start-up time: numpy loads only when a tree is generated.
    import numpy as np  # only here: the rest of the driver starts without it

    rng = np.random.Generator(np.random.PCG64(recipe.seed))
    root.mkdir(mode=0o755)
    made: set[str] = set()
    for rel, size in zip(recipe.relative_paths(), recipe.sizes()):
        parent, _, name = rel.rpartition("/")
        if parent not in made:
            (root / parent).mkdir(mode=0o755)
            made.add(parent)
        fd = os.open(root / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with open(fd, "wb") as f:
            left = size
            while left:
                n = min(8 << 20, left)
                f.write(rng.bytes(n))
                left -= n
    os.sync()  # a cold run must not find the first files still dirty in the page cache


def ensure_file(spec: Dataset, log: Callable[[str], None]) -> None:
    p = Path(spec.path)
    if p.is_file() and p.stat().st_size == spec.size:
        return
    if not spec.generate or (p.exists() and not spec.owned):
        raise FileError(f"test file {p} is missing or not {spec.size} bytes (it changed); "
                        "ringsum does not rewrite a file it did not create")
    log(f"generating {format_size(spec.size)} of random data in {p}")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileError(f"cannot create {p.parent} for the test file: {e.strerror}") from None
    tmp = p.with_name(f".{p.name}.partial-{secrets.token_hex(4)}")
    try:
        _write_random(tmp, spec.size)
        if spec.owned:
            os.replace(tmp, p)
        else:
            os.link(tmp, p)  # never replaces a file that appeared meanwhile
    except FileExistsError:
        raise FileError(f"test file {p} appeared while it was being generated; run again to use it") from None
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            st = os.statvfs(p.parent)
            raise FileError(f"no space left to generate the {format_size(spec.size)} test file {p} "
                            f"({format_size(st.f_bavail * st.f_frsize)} free on its filesystem); "
                            "free some or pass --dir/--file elsewhere") from None
        raise FileError(f"cannot generate the test file {p}: {e.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)


def _write_random(path: Path, size: int, chunk: int = 8 << 20) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with open(fd, "wb") as f:
        left = size
        while left:
            n = min(chunk, left)
            f.write(os.urandom(n))
            left -= n
        f.flush()
        os.fsync(f.fileno())
