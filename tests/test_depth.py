"""uring_b3sum's queue depth grows once (hashers/ring.c): with neither --queue-depth, --buffers nor
--window given, 8 reads and 16 of its 32 buffers at first, then 32 of each, no more bytes in flight
than 8 blocks, once the hashing waits for the reads (the window grew) and the producer, about to
sleep, has every read out, O_DIRECT and none finished: the device is the wait. The faults build's
devlag:MS holds every read that long in the kernel (a slow device), so the reads are out and
unfinished whatever this machine's speed; every run's output is checked against b3sum's."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hashers_support import BIN_DIR, FAULTS_BIN, MiB, b3sum_lines, tmpfs_dir, tmpfs_file

pytestmark = pytest.mark.independent   # its own files only

DEEPENED = "up to 32 reads in flight (no more bytes than 8 blocks) and 32 buffers from block "
FIRST_DEPTH = "8 reads in flight at most, 16 buffers: "


@pytest.fixture(scope="module")
def tree() -> Iterator[list[Path]]:
    """256 files of 64 KiB on tmpfs, which takes O_DIRECT: cached, read buffered unless --direct."""
    with tmpfs_dir("ringsum-depth") as top:
        files = [top / f"f{i:03d}" for i in range(256)]
        for i, path in enumerate(files):
            path.write_bytes(os.urandom(64 * 1024 - i))
        yield files


def hash_with(paths: list[Path], *options: str, faults: str = "", tmp_path: Path,
              binary: Path = FAULTS_BIN) -> tuple[str, int, list[dict]]:
    """--verbose's words, the most reads the trace saw in flight, the --effective lines; the output is b3sum's."""
    trace, effective = tmp_path / "trace.csv", tmp_path / "effective.jsonl"
    env = {**os.environ, "RINGSUM_FAULTS": faults} if faults else {k: v for k, v in os.environ.items()
                                                                     if k != "RINGSUM_FAULTS"}
    r = subprocess.run([str(binary / "uring_b3sum"), "--verbose", "--no-wisdom", "--trace", str(trace),
                        "--effective", str(effective), *options, *map(str, paths)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.encode() == b3sum_lines(paths)
    with open(trace, newline="") as f:
        peak = max(int(row["peak_in_flight"]) for row in csv.DictReader(f))
    lines = [json.loads(line) for line in effective.read_text().splitlines()]
    return r.stderr, peak, lines


def test_a_slow_device_deepens_the_queue_for_small_files(tree: list[Path], tmp_path: Path) -> None:
    said, peak, lines = hash_with(tree, "--direct", faults="devlag:20", tmp_path=tmp_path)
    assert DEEPENED in said and "(8 and 16 before)" in said, said
    assert 8 < peak <= 32, said
    depths = [line["queue_depth"] for line in lines]
    assert depths[0] == 8 and depths[-1] == 32 and sorted(depths) == depths, depths
    assert lines[0]["buffers"] == 16 and lines[-1]["buffers"] == 32


def test_a_big_files_blocks_keep_their_bytes_in_flight(tmp_path: Path) -> None:
    """64 blocks of 1M: deeper in requests, but never more than 8 blocks' bytes out."""
    with tmpfs_file("ringsum-depth-big", 64 * MiB) as big:
        said, peak, _ = hash_with([big], "--direct", "--block-size", "1M", faults="devlag:20", tmp_path=tmp_path)
    assert DEEPENED in said, said
    assert peak <= 8, said


@pytest.mark.parametrize("options, faults, most, words", [
    ((), "devlag:20", 8, FIRST_DEPTH + "the reads were behind, but never all out, O_DIRECT and unfinished"),
    (("--direct", "--queue-depth", "8"), "devlag:20", 8, None),
    (("--direct", "--buffers", "16"), "devlag:20", 8, None),
    (("--direct", "--window", "16"), "devlag:20", 8, None),
    (("--direct",), "devlag:20,depth:2", 2, None),
])
def test_buffered_reads_and_a_given_depth_keep_it(tree: list[Path], tmp_path: Path, options: tuple[str, ...],
                                                  faults: str, most: int, words: str | None) -> None:
    """Cached files read buffered can be copies on io-wq's threads, not a device's wait; a depth,
    buffers or window given is what runs (the regression check's depth:N fault included)."""
    said, peak, lines = hash_with(tree, *options, faults=faults, tmp_path=tmp_path)
    assert "reads in flight (no more bytes" not in said and peak <= most, said
    assert (words in said) if words else ("reads in flight" not in said), said
    assert {line["queue_depth"] for line in lines} == {most}


def test_the_release_build_keeps_the_depth_of_a_cached_tree(tree: list[Path], tmp_path: Path) -> None:
    """The release build on the same cached tree, read buffered: the depth stays (said, if the reads
    were behind)."""
    said, peak, lines = hash_with(tree, tmp_path=tmp_path, binary=BIN_DIR)
    assert "reads in flight (no more bytes" not in said and peak <= 8, said
    assert {line["queue_depth"] for line in lines} == {8}
