"""Test files: which file each run reads, and generating the ones that are missing.

A file named with --file (or run.file) is the user's: ringsum reads it and never writes it. With
--size as well it is created when missing; an existing file of another size is an error (drop
--size to use it as it is). Files ringsum names itself (ringsum-<size>.bin in the data directory,
from --size alone or run.file_size) are its own: one of the wrong size (a copy cut short) is
generated again. A new file appears only complete: it is written to a temporary name and linked
into place without replacing anything that appeared meanwhile.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path
from typing import Callable

from harness.config_schema import Config
from harness.plan import FileSpec
from harness.units import format_size


class FileError(Exception):
    """A test file cannot be used or made (exit 2, nothing ran)."""


def owned_name(size: int) -> str:
    return f"ringsum-{format_size(size)}.bin"


def resolve_files(config: Config, file: str | None, size: int | None, dir_: str | None) -> list[FileSpec]:
    """--file/--size/--dir override the config's run.file / run.file_size."""
    if size is not None and size <= 0:
        raise FileError("--size must be at least 1 byte")
    if file:
        return [_users_file(Path(file), size)]
    if size is not None:
        return [_owned_file(Path(dir_) if dir_ else config.data_dir(), size)]
    if config.run.files:
        return [_users_file(Path(f), None) for f in config.run.files]
    d = Path(dir_) if dir_ else config.data_dir()
    return [_owned_file(d, n) for n in config.run.file_sizes]


def _users_file(path: Path, want: int | None) -> FileSpec:
    path = path.expanduser().absolute()
    if path.exists() and not path.is_file():
        raise FileError(f"test file {path} is not a regular file")
    if want is not None and not path.exists():
        return FileSpec(str(path), want, generate=True)
    if not path.exists():
        raise FileError(f"test file not found: {path} (pass --size to generate it)")
    n = path.stat().st_size
    if want is not None and n != want:
        raise FileError(f"test file {path} is {n} bytes, not the {want} of --size; ringsum never "
                        "rewrites a file it did not create: drop --size to use it as it is, or name a new path")
    if n == 0:
        raise FileError(f"test file is empty: {path} (throughput of an empty file means nothing)")
    return FileSpec(str(path), n)


def _owned_file(d: Path, size: int) -> FileSpec:
    return FileSpec(str((d.expanduser() / owned_name(size)).absolute()), size, generate=True, owned=True)


def describe(spec: FileSpec) -> str:
    """What a run will do with the file, as `plan` shows it."""
    p = Path(spec.path)
    if p.is_file() and p.stat().st_size == spec.size:
        return "exists"
    if not p.exists():
        return "missing: generated"
    if spec.owned and p.is_file():
        return f"is {p.stat().st_size} bytes: generated again"
    return "changed since planned: the run will refuse it"


def ensure_file(spec: FileSpec, log: Callable[[str], None]) -> None:
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
