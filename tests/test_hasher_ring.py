"""The ring under pressure: injected kernel faults, the trace, bounded memory, and tiny rings run thousands of times."""

from __future__ import annotations

import csv
import os
import random
import re

import pytest

from hashers_support import (
    FAULTS_BIN, MiB, URING_VARIANTS, VARIANTS, b3sum_lines, data_file, program, ring_path, run,
)

pytestmark = pytest.mark.independent



@pytest.mark.parametrize("variant", URING_VARIANTS)
@pytest.mark.parametrize("faults", [
    "short:1", "short:2,short:3,short:9", "eagain:1,eagain:2", "eintr:4", "ecanceled:3,ecanceled:4,ecanceled:5",
    "short:2,ecanceled:3,ecanceled:4", "eagain:7,short:8,eintr:9,ecanceled:10",
])
@pytest.mark.parametrize("args", [["--block-size", "64K", "--queue-depth", "4", "--link"],
                                  ["--block-size", "64K", "--queue-depth", "8", "--buffers", "3", "--direct", "--link"],
                                  ["--block-size", "4K", "--queue-depth", "2", "--buffers", "2", "--drain"]])
def test_transient_faults_still_give_the_right_hash(variant, faults, args):
    """Short reads are completed, EAGAIN/EINTR retried, and cancelled cells re-issued, never hashed."""
    path = data_file(1 * MiB + 12345)
    result = run([FAULTS_BIN / variant, *ring_path(variant), *args, path], env={**os.environ, "RINGSUM_FAULTS": faults})
    assert result.returncode == 0, result.stderr
    assert result.stdout == b3sum_lines([path])


@pytest.mark.parametrize("variant", URING_VARIANTS)
@pytest.mark.parametrize("completion", [1, 5, 17])
def test_io_error_gives_an_error_and_no_hash(variant, completion):
    paths = [data_file(1 * MiB + 12345), data_file(4097)]
    result = run([FAULTS_BIN / variant, *ring_path(variant), "--block-size", "64K", *paths],
                 env={**os.environ, "RINGSUM_FAULTS": f"eio:{completion}"}, timeout=30)
    assert result.returncode == 1
    assert result.stderr.decode().startswith(f"{variant}: {paths[0]}: Input/output error (os error 5)\n")
    # Completions are counted per file: the small second file has only one, so only eio:1 hits it too.
    if completion == 1:
        assert result.stdout == b""
        assert result.stderr.decode().endswith(f"{variant}: {paths[1]}: Input/output error (os error 5)\n")
    else:
        assert result.stderr.decode() == f"{variant}: {paths[0]}: Input/output error (os error 5)\n"
        assert result.stdout == b3sum_lines(paths[1:])


@pytest.mark.parametrize("variant", VARIANTS)
def test_trace_rows_add_up(variant, tmp_path):
    path = data_file(64 * MiB)
    trace = tmp_path / "trace.csv"
    block, depth, buffers = 256 * 1024, 4, 6
    result = run([program(variant), *ring_path(variant), "--block-size", str(block), "--queue-depth", str(depth),
                  "--buffers", str(buffers), "--trace", trace, path])
    assert result.returncode == 0 and result.stdout == b3sum_lines([path])
    with open(trace) as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["time_ns", "in_flight", "reaped", "blocks_hashed", "bytes_hashed", "peak_in_flight"]
    times = [int(r["time_ns"]) for r in rows]
    assert times == sorted(times)
    assert sum(int(r["blocks_hashed"]) for r in rows) == 64 * MiB // block
    assert int(rows[-1]["bytes_hashed"]) == 64 * MiB
    assert all(0 <= int(r["in_flight"]) <= int(r["peak_in_flight"]) <= depth for r in rows)
    # The ring's first fill is the whole depth, whenever the consumer looks; pread reads one at a time.
    assert max(int(r["peak_in_flight"]) for r in rows) == (depth if variant in URING_VARIANTS else 1)
    assert sum(int(r["reaped"]) for r in rows) == 64 * MiB // block
    assert all(int(r["blocks_hashed"]) <= buffers for r in rows), "a consumer run is at most one lap of the ring"


def peak_rss_kib(argv) -> tuple[int, bytes]:
    """GNU time's maximum RSS: the child of a small process, so no high-water mark of ours is inherited."""
    result = run(["/usr/bin/time", "-f", "%M", *argv])
    assert result.returncode == 0, result.stderr
    return int(result.stderr.decode().split()[-1]), result.stdout


@pytest.mark.parametrize("variant", VARIANTS)
def test_memory_is_bounded_by_the_ring(variant, tmp_path):
    """Peak RSS for a 256 MiB (sparse) file, 64 laps of the ring, is the ring plus a constant, the same
    as for a 1 MiB file: memory that grew with the file by 1 part in 40 would show."""
    big = tmp_path / "sparse-256M.bin"
    with open(big, "wb") as f:
        f.truncate(256 << 20)
    ring = [*ring_path(variant), "--block-size", "1M", "--queue-depth", "4", "--buffers", "4"]
    small_rss, _ = peak_rss_kib([program(variant), *ring, data_file(1 * MiB)])
    big_rss, out = peak_rss_kib([program(variant), *ring, big])
    assert out == b3sum_lines([big])
    ring_kib = 4 * 1024
    assert big_rss <= small_rss + ring_kib + 2048, (small_rss, big_rss)
    assert big_rss < 32 * 1024, big_rss


@pytest.mark.parametrize("variant", VARIANTS)
def test_tiny_rings_thousands_of_times(variant, tmp_path):
    """Rings of 1 and 2 buffers with tiny blocks: every file of every run hashes right, and nothing hangs."""
    rng = random.Random(7)
    paths = []
    for i in range(40):
        path = tmp_path / f"tiny-{i}.bin"
        # Up to 1500 bytes: with 1-byte blocks and 2 buffers that is still 750 laps of the ring per file.
        path.write_bytes(rng.randbytes(rng.randrange(0, 1500)))
        paths.append(path)
    expected = b3sum_lines(paths)
    hashed = 0
    for buffers in (1, 2):
        for depth in (1, 2, 3):
            for block in (1, 7, 64, 511, 4096):
                for extra in ([], ["--process-in-inner-loop"], ["--link"], ["--drain"]):
                    args = [*ring_path(variant), "--block-size", str(block), "--queue-depth", str(depth),
                            "--buffers", str(buffers), *extra]
                    result = run([program(variant), *args, *paths], timeout=60)
                    assert result.returncode == 0, (args, result.stderr)
                    assert result.stdout == expected, args
                    hashed += len(paths)
    direct = [data_file(s) for s in (4096, 8192 + 1, 20000)]
    expected_direct = b3sum_lines(direct)
    for _ in range(100):
        result = run([program(variant), *ring_path(variant), "--direct", "--block-size", "4K", "--queue-depth", "2",
                      "--buffers", "1", *direct], timeout=60)
        assert result.returncode == 0 and result.stdout == expected_direct, result.stderr
        hashed += len(direct)
    assert hashed >= 5000


@pytest.mark.parametrize("variant", URING_VARIANTS)
def test_sqpoll_with_reads_that_complete_at_once(variant):
    """Cached reads under SQPOLL can complete before the SQ thread moves the SQ head: never an EBUSY."""
    path = data_file(8 * MiB + 1)
    expected = b3sum_lines([path])
    for depth in (1, 2, 3):
        for _ in range(15):
            result = run([program(variant), *ring_path(variant), "--sqpoll", "--block-size", "64K",
                          "--queue-depth", str(depth), path])
            assert result.returncode == 0 and result.stdout == expected, result.stderr


@pytest.mark.parametrize("variant", URING_VARIANTS)
@pytest.mark.parametrize("options", [[], ["--direct"], ["--link"]], ids=["buffered", "direct", "link"])
def test_a_last_read_that_stops_at_the_size_needs_no_probe_past_it(variant, options, tmp_path):
    """A file's last read asks a 4K past the size seen at open, so a read that stops at the size
    found the end: no pread() past it. A file that fills its last block still gets the probe, and
    so does every file read in IOSQE_IO_LINK chains, where a short read would cancel the rest."""
    short = [data_file(5000), data_file(64 * 1024 + 1)]   # each ends inside a 128K block
    full = data_file(256 * 1024)                           # two whole 128K blocks: nothing read past it
    log = tmp_path / "strace.log"
    result = run(["strace", "-f", "-e", "trace=pread64", "-o", log, program(variant), *ring_path(variant), *options,
                  "--block-size", "128K", *short, full])
    assert result.returncode == 0 and result.stdout == b3sum_lines([*short, full]), result.stderr
    # the probe reads one byte at the size (the loader's own pread64 calls read more); a call another
    # thread interrupts is logged in two pieces, the second ("<... pread64 resumed>") with its arguments
    probes = re.findall(r"[(>].*, 1, (\d+)\)\s+= 0$", log.read_text(), re.MULTILINE)
    assert probes == (["5000", "65537", "262144"] if "--link" in options else ["262144"]), log.read_text()
