"""Page cache control and residency measurement.

Residency uses the `cachestat` syscall (Linux >= 6.5, nr 451 on x86_64 and the generic
table) through ctypes, with an `mmap` + `mincore` fallback.

Also a small command line used as hyperfine's `--prepare` step::

    python -m harness.machine.page_cache prepare --drop --file F --log L    # cold: sync, drop, measure
    python -m harness.machine.page_cache prepare --warm --file F --log L    # warm: read if needed, measure
    python -m harness.machine.page_cache prepare --drop --keep 0.5 --seed 3 --file F --log L
                                        # partly cached: drop, read it back, evict pieces but a share
    python -m harness.machine.page_cache resident FILE...

`prepare` appends one JSON line {"file", "resident", "method", "dropped", "time"} to the log;
it exits 0 even when the file is still resident (the driver flags that), non-zero only when
it could not do its job, and then the line is {"file", "error", "time"} (the driver stops).
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import mmap
import os
import platform
import random
import sys
import time
from pathlib import Path

from harness.datasets.dataset import tree_files

PAGE = os.sysconf("SC_PAGE_SIZE")
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
_SYS_CACHESTAT = {"x86_64": 451, "aarch64": 451, "riscv64": 451}.get(platform.machine())


class CacheError(Exception):
    pass


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Stat(ctypes.Structure):
    _fields_ = [("nr_cache", ctypes.c_uint64), ("nr_dirty", ctypes.c_uint64),
                ("nr_writeback", ctypes.c_uint64), ("nr_evicted", ctypes.c_uint64),
                ("nr_recently_evicted", ctypes.c_uint64)]


@functools.cache
def _libc() -> ctypes.CDLL:
    """The C library Python itself runs on (dlopen(NULL): its symbols are the process's), not a
    search by name: ctypes.util.find_library runs ldconfig, 16 ms of every hyperfine prepare."""
    return ctypes.CDLL(None, use_errno=True)


def _pages(size: int) -> int:
    return (size + PAGE - 1) // PAGE


def cached_pages(fd: int, offset: int = 0, length: int = 0) -> int:
    """Pages of an open file's range (length 0: to its end) in the page cache, via cachestat(2).
    Raises OSError if unsupported or refused."""
    if _SYS_CACHESTAT is None:
        raise OSError(38, "cachestat: unknown syscall number on this architecture")
    rng, st = _Range(offset, length), _Stat()
    rc = _libc().syscall(ctypes.c_long(_SYS_CACHESTAT), ctypes.c_int(fd), ctypes.byref(rng),
                         ctypes.byref(st), ctypes.c_uint(0))
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"cachestat: {os.strerror(err)}")
    return int(st.nr_cache)


def resident_pages_cachestat(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(resident pages, total pages) via cachestat(2). Raises OSError if unsupported."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return cached_pages(fd), _pages(os.fstat(fd).st_size)
    finally:
        os.close(fd)


def resident_pages_mincore(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(resident pages, total pages) via mmap + mincore(2) (libc calls, no page is touched)."""
    libc = _libc()
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        total = _pages(size)
        resident = 0
        chunk = 1 << 30  # map at most 1 GiB at a time
        for off in range(0, size, chunk):
            length = min(chunk, size - off)
            addr = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, off)
            if addr in (None, ctypes.c_void_p(-1).value):
                err = ctypes.get_errno()
                raise OSError(err, f"mmap: {os.strerror(err)}")
            try:
                vec = (ctypes.c_ubyte * _pages(length))()
                if libc.mincore(addr, length, vec) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"mincore: {os.strerror(err)}")
                resident += sum(b & 1 for b in bytes(vec))
            finally:
                libc.munmap(addr, length)
        return resident, total
    finally:
        os.close(fd)


def resident_pages(path: str | os.PathLike[str]) -> tuple[int, int, str]:
    """(resident pages, total pages, the method used) of one file."""
    try:
        return (*resident_pages_cachestat(path), "cachestat")
    except OSError as e:
        if e.errno not in (38, 1):  # ENOSYS, EPERM (seccomp): fall back; anything else is real
            raise
        return (*resident_pages_mincore(path), "mincore")


def resident_fraction(path: str | os.PathLike[str]) -> tuple[float, str]:
    """Fraction of the file's pages in the page cache (a tree's: over all its files' pages), and the method."""
    r = t = 0
    method = "cachestat"
    for f in _files_of(path):
        fr, ft, method = resident_pages(f)
        r, t = r + fr, t + ft
    return (r / t if t else 1.0), method


def _is_tree(path: str | os.PathLike[str]) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def _files_of(path: str | os.PathLike[str]) -> list[str]:
    return [f for f, _ in tree_files(path)] if _is_tree(path) else [os.fspath(path)]


def is_root() -> bool:
    return os.geteuid() == 0


def drop_caches(path: str | os.PathLike[str] | None = None) -> None:
    """sync, then `echo 1 > /proc/sys/vm/drop_caches`; also fadvise(DONTNEED) on `path`. For a tree,
    `echo 3`: a cold tree's directories and inodes are read from the disk too, as a fresh walk's are."""
    os.sync()
    tree = path is not None and _is_tree(path)
    _drop("3" if tree else "1")
    if path is not None and not tree:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _drop(what: str) -> None:
    try:
        with open(DROP_CACHES, "w") as f:
            f.write(what + "\n")
    except PermissionError:
        raise CacheError("cannot write /proc/sys/vm/drop_caches (not root?)") from None
    except OSError as e:
        raise CacheError(f"cannot write /proc/sys/vm/drop_caches: {e}") from None


def read_file(path: str | os.PathLike[str], chunk: int = 8 << 20) -> int:
    """Read the whole file through the page cache; returns bytes read."""
    n = 0
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(chunk)
        view = memoryview(buf)
        while True:
            got = f.readinto(view)
            if not got:
                return n
            n += got


def make_warm(path: str | os.PathLike[str], attempts: int = 3) -> float:
    """Read the file (a tree's every file) until it is (nearly) fully resident; returns the final fraction."""
    return _warmed(path, attempts)[0]


def _warmed(path: str | os.PathLike[str], attempts: int = 3) -> tuple[float, str]:
    """make_warm(), with the last measurement's method: what prepare() logs, without measuring again (a
    tree's measurement opens every file: 0.24 s for the ledger's 16,384)."""
    frac, method = resident_fraction(path)
    for _ in range(attempts):
        if frac >= 0.999:
            break
        for f in _files_of(path):
            read_file(f)
        frac, method = resident_fraction(path)
    return frac, method


# A partly cached file's pieces: what is evicted is 2 MiB at a time, as reclaim of large folios would.
PIECE = 2 << 20


def evict(fd: int, offset: int = 0, length: int = 0, tries: int = 100) -> bool:
    """Drop `length` bytes of an open file from `offset` (0: to its end) from the page cache; whether
    cachestat() then finds none of them. POSIX_FADV_DONTNEED skips a dirty page and one the kernel
    still holds (a file just written can have some in the journal's hands for a moment): asked again.
    Raises OSError where cachestat() is unknown or refused."""
    for attempt in range(tries):
        if attempt:
            time.sleep(0.02)
        os.fsync(fd)
        os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)
        if cached_pages(fd, offset, length) == 0:
            return True
    return False


def keep_share(path: str | os.PathLike[str], share: float, seed: int) -> None:
    """Read the whole file back (large reads: large folios), then evict all but `share` of its 2 MiB
    pieces, chosen at random by `seed`: the same seed, the same pieces, for every command of a round."""
    if _is_tree(path):
        raise CacheError(f"{path}: a share of a tree is not kept (a file only)")
    read_file(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        pieces = -(-os.fstat(fd).st_size // PIECE)
        for piece in sorted(random.Random(seed).sample(range(pieces), pieces - round(share * pieces))):
            if not evict(fd, piece * PIECE, PIECE):
                raise CacheError(f"{path}: bytes {piece * PIECE}.. stay in the page cache after 100 evictions")
    finally:
        os.close(fd)


def prepare(path: str, log: str | None, drop: bool, warm: bool, keep: float | None = None,
            seed: int = 0) -> dict[str, object]:
    if drop:
        drop_caches(path)
    if keep is not None:
        keep_share(path, keep, seed)
    frac, method = _warmed(path) if warm else resident_fraction(path)
    if drop and _is_tree(path):
        _drop("3")  # measuring opened every file: their inodes and directories go again, the data was never read
    rec = {"file": path, "resident": round(frac, 6), "method": method, "dropped": drop,
           **({"kept": keep, "seed": seed} if keep is not None else {}), "time": time.time()}
    if log:
        with open(log, "a") as f:
            f.write(json.dumps(rec) + "\n")  # read back by the driver on this machine: no fsync
    return rec


def _log_error(log: str, path: str, error: str) -> None:
    try:
        with open(log, "a") as f:
            f.write(json.dumps({"file": path, "error": error, "time": time.time()}) + "\n")
    except OSError:
        pass  # the driver sees no record at all and reports hyperfine's failure instead


def read_last_record(log: str | os.PathLike[str]) -> dict[str, object] | None:
    try:
        lines = Path(log).read_text().splitlines()
    except FileNotFoundError:
        return None
    for line in reversed(lines):
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            continue
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.machine.page_cache")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="hyperfine --prepare step: drop or warm, then measure")
    p.add_argument("--file", required=True)
    p.add_argument("--log")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--drop", action="store_true")
    g.add_argument("--warm", action="store_true")
    p.add_argument("--keep", type=float, metavar="SHARE",
                   help="with --drop: read the file back, then evict all but this share of its 2 MiB pieces")
    p.add_argument("--seed", type=int, default=0, help="which pieces --keep keeps (default 0)")
    p.add_argument("--settle", type=float, default=0.0, metavar="SECONDS",
                   help="then wait this long without reading (a read-capped condition, harness/conditions/emulation.py)")
    r = sub.add_parser("resident", help="print the resident fraction of files")
    r.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "prepare":
            if a.keep is not None and not (a.drop and 0 < a.keep < 1):
                raise CacheError("--keep SHARE goes with --drop, and SHARE between 0 and 1")
            prepare(a.file, a.log, a.drop, a.warm, a.keep, a.seed)
            # blk-throttle lets a group read at the cap times the time since its slice began: the
            # reads of this step's own start would leave the command a credit of faster reads.
            time.sleep(a.settle)
        else:
            for f in a.files:
                frac, method = resident_fraction(f)
                print(f"{frac:.4f}\t{method}\t{f}")
    except (CacheError, OSError) as e:
        print(f"ringsum cache: {e}", file=sys.stderr)
        if a.cmd == "prepare" and a.log:
            _log_error(a.log, a.file, str(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
