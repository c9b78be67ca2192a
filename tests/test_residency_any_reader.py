"""Whether a file is in the page cache is known to any reader, not only to its owner: cachestat()
(and mincore()) refuse a caller without write access, so a reader of shared data was told "cold" and
read a cached file from the disk. uring_b3sum then samples by non-blocking reads (RWF_NOWAIT)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from harness.machine.page_cache import cached_pages
from hashers_support import MiB, b3sum_lines, data_file, evict, program, run

URING_B3SUM = "uring_b3sum"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                                reason="needs root (to own the file) and setpriv (to read it as nobody)")


@pytest.fixture
def shared_file() -> Iterator[Path]:
    """A root-owned file, mode 644, in a directory others may enter, on the build disk (O_DIRECT works)."""
    base = data_file(8 * MiB + 3).parent
    d = Path(tempfile.mkdtemp(prefix="residency-", dir=base))
    try:
        d.chmod(0o755)
        path = d / "shared.bin"
        path.write_bytes(data_file(8 * MiB + 3).read_bytes())
        path.chmod(0o644)
        yield path
    finally:
        shutil.rmtree(d)


def _how(path: Path, as_nobody: bool) -> tuple[bytes, bytes]:
    """What uring_b3sum said it did (--verbose), and its output."""
    argv = [*(NOBODY if as_nobody else []), str(program(URING_B3SUM)), "--verbose", str(path)]
    result = run(argv)
    assert result.returncode == 0, result.stderr
    return result.stderr, result.stdout


def _cached_bytes(path: Path) -> int:
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def test_a_reader_who_does_not_own_a_cached_file_hashes_it_from_memory(shared_file: Path) -> None:
    for searched in (shared_file.parent, data_file(1).parent, data_file(1).parent.parent):
        if not os.stat(searched).st_mode & 0o001:
            pytest.skip(f"{searched} is closed to others: nobody could not reach the file")
    shared_file.read_bytes()
    for as_nobody in (True, False):
        said, hashed = _how(shared_file, as_nobody)
        assert b"hashing from the page cache" in said and hashed == b3sum_lines([shared_file]), (as_nobody, said)


def test_a_reader_who_does_not_own_a_cold_file_reads_it_from_the_disk_and_leaves_the_cache_as_it_was(
        shared_file: Path) -> None:
    """Cold, and three quarters evicted: the ring and O_DIRECT for owner and reader alike. The reader's
    sampling reads ahead no more than the pages it asks (POSIX_FADV_RANDOM), and stops at a quarter."""
    for searched in (shared_file.parent, data_file(1).parent, data_file(1).parent.parent):
        if not os.stat(searched).st_mode & 0o001:
            pytest.skip(f"{searched} is closed to others: nobody could not reach the file")
    evict(shared_file)
    said, hashed = _how(shared_file, as_nobody=True)
    assert b"through the io_uring ring" in said and b"O_DIRECT" in said, said
    assert _cached_bytes(shared_file) <= 64 * 4096
    assert hashed == b3sum_lines([shared_file])
    for as_nobody in (True, False):
        evict(shared_file, 0, 6 * MiB)   # b3sum_lines reads it all back
        said, hashed = _how(shared_file, as_nobody)
        assert b"through the io_uring ring" in said and b"O_DIRECT" in said, (as_nobody, said)
        assert hashed == b3sum_lines([shared_file])


def test_a_reader_who_does_not_own_a_partly_cached_file_reads_each_block_from_where_it_is(shared_file: Path) -> None:
    """cachestat() refused, each block is probed by reading a few of its pages (RWF_NOWAIT): the cached
    blocks come from the cache, the missing one with O_DIRECT, and stays out of it but for a probed page."""
    for searched in (shared_file.parent, data_file(1).parent, data_file(1).parent.parent):
        if not os.stat(searched).st_mode & 0o001:
            pytest.skip(f"{searched} is closed to others: nobody could not reach the file")
    for as_nobody in (True, False):
        shared_file.read_bytes()
        evict(shared_file, 4 * MiB, 4 * MiB)   # the second of its three blocks
        said, hashed = _how(shared_file, as_nobody)
        assert b"part of it in the page cache" in said, (as_nobody, said)
        assert b"2 of its 3 blocks read from the page cache, the rest with O_DIRECT" in said, (as_nobody, said)
        with open(shared_file, "rb") as f:   # before b3sum_lines, which reads it all
            assert cached_pages(f.fileno(), 4 * MiB, 4 * MiB) < 64, as_nobody   # the probes' pages only
        assert hashed == b3sum_lines([shared_file])


def test_a_reader_refused_by_cachestat_is_not_asked_again_for_every_block(shared_file: Path, tmp_path: Path) -> None:
    """The refusal is learnt once, when the file is found partly cached: its 1M blocks are probed by
    reading, with no cachestat() each (syscall 451, which strace 6.1 names by number). The owner, who
    is answered, asks it for every block."""
    for searched in (shared_file.parent, data_file(1).parent, data_file(1).parent.parent):
        if not os.stat(searched).st_mode & 0o001:
            pytest.skip(f"{searched} is closed to others: nobody could not reach the file")
    asked = {}
    for as_nobody in (True, False):
        shared_file.read_bytes()
        evict(shared_file, 4 * MiB, 4 * MiB)   # its fifth to eighth 1M blocks (a large folio drops whole)
        log = tmp_path / f"strace-{as_nobody}.log"
        argv = ["strace", "-f", "-o", str(log), *(NOBODY if as_nobody else []), str(program(URING_B3SUM)),
                "--verbose", "--block-size", "1M", str(shared_file)]
        result = run(argv)
        said = f"as nobody: {as_nobody}: {result.stderr.decode(errors='replace')}"
        assert result.returncode == 0, said
        assert b"5 of its 9 blocks read from the page cache, the rest with O_DIRECT" in result.stderr, said
        assert result.stdout == b3sum_lines([shared_file])
        calls = [line for line in log.read_text().splitlines() if "syscall_0x1c3(" in line or "cachestat(" in line]
        asked[as_nobody] = calls
    assert all("EPERM" in line for line in asked[True]) and 1 <= len(asked[True]) <= 3, asked[True]
    assert len(asked[False]) >= 9, asked[False]   # the residency test, then a question a block


def test_a_probe_that_reads_its_page_itself_is_told_by_the_threads_read_count(shared_file: Path) -> None:
    """What hashers/residency.c's page_cached() rests on: RWF_NOWAIT on a missing page starts its read
    before answering EAGAIN, and a read done in time is copied out as a hit; the read itself shows in
    the thread's ru_inblock, as it is submitted. Every probe of the evicted file moves it, none of the
    cached file's does."""
    page = os.sysconf("SC_PAGESIZE")
    size = shared_file.stat().st_size

    def probes(fd: int) -> list[tuple[bool, bool]]:
        """(answered with data, read from the device by the probe) for 64 pages across the file."""
        out, buf = [], bytearray(page)
        for i in range(64):
            before = resource.getrusage(resource.RUSAGE_THREAD).ru_inblock
            try:
                answered = os.preadv(fd, [buf], (size // 64 * i) & ~(page - 1), os.RWF_NOWAIT) > 0
            except BlockingIOError:
                answered = False
            out.append((answered, resource.getrusage(resource.RUSAGE_THREAD).ru_inblock > before))
        return out

    fd = os.open(shared_file, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        shared_file.read_bytes()
        cached = probes(fd)
        evict(shared_file)
        evicted = probes(fd)
    finally:
        os.close(fd)
    assert all(answered and not read for answered, read in cached), cached
    assert all(read for _, read in evicted), evicted
