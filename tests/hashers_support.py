"""Shared pieces of the hasher tests: where the programs are, test files, and the two oracles."""

from __future__ import annotations

import json
import os
import pty
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import blake3
import pytest

from harness.machine import page_cache

REPO = Path(__file__).resolve().parents[1]
BIN_DIR = Path(os.environ.get("RINGSUM_BIN_DIR", REPO / "build" / "bin"))
SHM = Path("/dev/shm")
FAULTS_BIN = REPO / "build" / "faults" / "bin"   # the fault-injection build (hashers/faults.c)


@contextmanager
def tmpfs_file(name: str, size: int) -> Iterator[Path]:
    """SIZE random bytes on tmpfs, removed afterwards (skipped where there is none): read through
    the ring (--path ring --buffered) each block is there at once, and no cache drop of a test beside
    this one can send its reads to the disk."""
    if not SHM.is_dir():
        pytest.skip(f"needs tmpfs at {SHM}")
    path = SHM / f"{name}-{os.getpid()}.bin"
    path.write_bytes(os.urandom(size))
    try:
        yield path
    finally:
        path.unlink()


@contextmanager
def tmpfs_dir(name: str) -> Iterator[Path]:
    """An empty directory on tmpfs, removed with what it holds afterwards (skipped where there is
    none): its files are always cached, whatever cache drop runs beside."""
    if not SHM.is_dir():
        pytest.skip(f"needs tmpfs at {SHM}")
    path = SHM / f"{name}-{os.getpid()}-{time.monotonic_ns()}"
    path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path)


def _described() -> dict[str, dict]:
    """Each built program -> its --knobs-json "variant_info": the list the Makefile wrote beside
    the bin dir (share/ringsum/variants), and what each program says of itself."""
    listed = BIN_DIR.parent / "share" / "ringsum" / "variants"
    if not listed.is_file():
        return {}
    out = {}
    for name in listed.read_text().split():
        done = subprocess.run([str(BIN_DIR / name), "--knobs-json"], capture_output=True, timeout=30)
        out[name] = json.loads(done.stdout)["variant_info"] if done.returncode == 0 else {}
    return out


DESCRIBED = _described()
ALL_VARIANTS = list(DESCRIBED)
VARIANTS = os.environ.get("RINGSUM_VARIANTS", ",".join(ALL_VARIANTS)).split(",")
URING_VARIANTS = [v for v in VARIANTS if DESCRIBED.get(v, {}).get("io_uring")]


def article_form(variant: str) -> list[str]:
    """The article's form of the arguments: a program whose own are b3sum's takes it after --positional."""
    return ["--positional"] if DESCRIBED.get(variant, {}).get("positional_flag") else []
B3SUM = REPO / ".tools" / "bin" / "b3sum"
# Test files live on the build disk, not tmpfs, so that O_DIRECT reads really go to a device.
DATA_DIR = REPO / "build" / "test-data"
EMPTY_HASH = blake3.blake3(b"").hexdigest()
KiB, MiB = 1 << 10, 1 << 20


def make(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """make in the checkout, silent, which must succeed."""
    done = subprocess.run(["make", "-s", "-C", str(REPO), *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"make {' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def program(variant: str) -> Path:
    path = BIN_DIR / variant
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run make")
    return path


def ring_path(variant: str) -> list[str]:
    """uring_b3sum hashes a cached file from memory; tests of the ring make it read through the ring."""
    return ["--path", "ring"] if DESCRIBED.get(variant, {}).get("chooses_path") else []


def run(argv: list[str | Path], timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, timeout=timeout, **kwargs)


def ringsum(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The driver's command line (`python -m harness ARGS`) from the checkout, its output captured."""
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env)


def inner_pytest(module: str, env: dict[str, str], basetemp: Path) -> subprocess.CompletedProcess[str]:
    """A test module run by a pytest of its own, on one worker, with ENV added to this one's (the
    sanitizer builds' runs): its outcome, once it passed; a failure quotes the inner run's failures."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                           "--basetemp", str(basetemp), module],
                          cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True, timeout=580)
    failures = [ln for ln in done.stdout.splitlines() if ln.startswith(("FAILED", "ERROR"))]
    assert done.returncode == 0, "\n".join(failures) + "\n" + done.stdout[-4000:] + done.stderr[-2000:]
    return done


def beside_the_line_env(lock: Path) -> dict[str, str]:
    """The environment a ringsum run needs to run beside the machine line (tests/conftest.py): a run
    lock of its own, and the system settings left alone (RINGSUM_SYSTEM_SETTINGS=leave)."""
    return {"RINGSUM_LOCK": str(lock), "RINGSUM_SYSTEM_SETTINGS": "leave"}


def shared_data_file(name: str, size: int, write: Callable[[BinaryIO], None]) -> Path:
    """DATA_DIR/name, made by `write` unless it is there with `size` bytes. Written under a name of this
    writer's own, then renamed over: a test worker (or a nested run, tests/test_sanitizers.py) making
    the same file at once writes the same bytes, and no reader ever sees a file cut short."""
    path = DATA_DIR / name
    if not path.exists() or path.stat().st_size != size:
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=DATA_DIR, prefix=f".{path.name}.", delete=False) as f:
            write(f)
        os.chmod(f.name, 0o644)  # as open() would have made it: other users' tests read it
        os.replace(f.name, path)
    return path


def data_file(size: int, name: str | None = None) -> Path:
    """A file of `size` random bytes, the same bytes for the same size on every run."""
    def write(f: BinaryIO) -> None:
        rng, left = random.Random(size), size
        while left:
            chunk = min(left, 4 * MiB)
            f.write(rng.randbytes(chunk))
            left -= chunk

    return shared_data_file(name or f"{size}.bin", size, write)


def evict(path: Path, offset: int = 0, length: int = 0) -> None:
    """Drop one file (or `length` bytes of it from `offset`; 0: to its end) from the page cache,
    leaving everything else alone. POSIX_FADV_DONTNEED skips a page the kernel still holds (a file
    just written can have some in the journal's hands for a moment), so it is asked again until
    cachestat() finds none, and a range it cannot drop is an error, not a test that flips."""
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            page_cache.cached_pages(fd, offset, length)
        except OSError:  # a kernel without cachestat(): the one drop is all there is to ask
            os.fsync(fd)
            os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)
            return
        if not page_cache.evict(fd, offset, length):
            raise AssertionError(f"{path}: still in the page cache after 100 tries to drop it")
    finally:
        os.close(fd)


# Each file's line of b3sum's output, checked against blake3-py, by the path given and what
# identifies the file's content here (a file rewritten gets a new inode, size or change time):
# tests/test_hashers.py's grid hashes the same files in each of its cases, and their references
# took as long as the hashers under test.
_REFERENCES: dict[tuple, bytes] = {}


def _identity(path: Path) -> tuple:
    st = os.stat(path)
    return (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def b3sum_lines(paths: list[Path]) -> bytes:
    """The official b3sum's output for these paths, each line checked against the Python blake3 package."""
    keys = [_identity(p) for p in paths]
    todo = list(dict.fromkeys(k for k in keys if k not in _REFERENCES))
    if todo:
        result = run([B3SUM, *(k[0] for k in todo)])
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines(keepends=True)
        assert len(lines) == len(todo), result.stdout
        for key, line in zip(todo, lines):
            expected = blake3.blake3(max_threads=blake3.blake3.AUTO).update_mmap(key[0]).hexdigest()
            assert line.lstrip(b"\\")[:64].decode() == expected, f"b3sum and blake3-py disagree on {key[0]}"
            _REFERENCES[key] = line
    return b"".join(_REFERENCES[k] for k in keys)


@dataclass(frozen=True)
class Knobs:
    block_size: int
    queue_depth: int
    buffers: int
    direct: bool = False
    inner_loop: bool = False
    drain: bool = False
    link: bool = False
    fixed_buffers: bool = False
    fixed_file: bool = False
    sqpoll: bool = False
    submit_and_wait: bool = False
    parallel_hash: bool = False
    serial_hash: bool = False
    fadvise_sequential: bool = False
    dontcache: bool = False
    huge_pages: bool = False

    FLAGS = {"direct": ("--direct", "d"), "inner_loop": ("--process-in-inner-loop", "i"), "drain": ("--drain", "D"),
             "link": ("--link", "L"), "fixed_buffers": ("--fixed-buffers", "B"), "fixed_file": ("--fixed-file", "F"),
             "sqpoll": ("--sqpoll", "S"), "submit_and_wait": ("--submit-and-wait", "W"),
             "parallel_hash": ("--parallel-hash", "H"), "serial_hash": ("--serial-hash", "h"),
             "fadvise_sequential": ("--fadvise-sequential", "A"),
             "dontcache": ("--dontcache", "C"), "huge_pages": ("--huge-pages", "U")}

    def argv(self) -> list[str]:
        args = ["--block-size", str(self.block_size), "--queue-depth", str(self.queue_depth),
                "--buffers", str(self.buffers)]
        return args + [option for field, (option, _) in self.FLAGS.items() if getattr(self, field)]

    def __str__(self) -> str:
        flags = "".join(letter for field, (_, letter) in self.FLAGS.items() if getattr(self, field))
        return f"bs{self.block_size}-qd{self.queue_depth}-n{self.buffers}-{flags or 'plain'}"


def run_on_terminal(argv: list, stdout_too: bool, env: dict | None = None,
                    stdin: int | None = None) -> tuple[int, bytes, bytes]:
    """Run with stderr (and stdout if stdout_too) on a pseudo-terminal; returns (exit, stdout, terminal)."""
    master, slave = pty.openpty()
    received = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                return
            if not chunk:
                return
            received.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        done = subprocess.run([str(a) for a in argv], stdin=stdin, stderr=slave,
                              stdout=slave if stdout_too else subprocess.PIPE,
                              env={**os.environ, **(env or {})}, timeout=120)
    finally:
        os.close(slave)
        reader.join(timeout=30)
        os.close(master)
    # The terminal turns \n into \r\n on output; the screen is the same either way.
    return done.returncode, done.stdout or b"", bytes(received).replace(b"\r\n", b"\n")
