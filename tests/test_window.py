"""The ring's window (hashers/ring_consume.c): how many blocks the reads may run ahead of the hashing,
each read into the buffer freed last. uring_b3sum starts at 12M of blocks and gives the reads every
buffer once the hashing has waited for them over 2/3 of the first period (8 blocks) or over half of
two in a row;
--window N fixes it. The faults build's readlag and hashlag put the reads behind or ahead without
depending on how fast this machine is; every run's hash is checked against b3sum's."""

from __future__ import annotations

import csv
import os
import re
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from hashers_support import B3SUM, BIN_DIR, FAULTS_BIN, MiB, tmpfs_file

pytestmark = pytest.mark.independent   # its own files only



@pytest.fixture(scope="module")
def data() -> Iterator[Path]:
    """40 MiB on tmpfs: each block is there at once unless a lag says otherwise."""
    with tmpfs_file("ringsum-window", 40 * MiB) as path:
        yield path


def run(binary: Path, path: Path, *options: str, faults: str = "") -> subprocess.CompletedProcess[str]:
    """Hashes PATH with --verbose through the ring; its hash must be b3sum's."""
    env = {**os.environ, "RINGSUM_FAULTS": faults} if faults else None
    r = subprocess.run([str(binary), "--verbose", "--path", "ring", *options, str(path)], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    expected = subprocess.run([str(B3SUM), str(path)], capture_output=True, text=True, check=True).stdout
    assert r.stdout == expected
    return r


def window_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ": window " in line]


# 1M blocks, 16 buffers: the measured window is 12 blocks, and its first period begins at the 12th
# block hashed and ends at the 20th.
RING = ("--buffered", "--block-size", "1M", "--buffers", "16", "--queue-depth", "8")


def test_reads_behind_get_every_buffer_after_the_first_period(data: Path) -> None:
    """readlag:5: each read is queued 5 ms late, and hashing 1 MiB takes about a millisecond, so
    the hashing waits most of every period."""
    r = run(FAULTS_BIN / "uring_b3sum", data, *RING, faults="readlag:5")
    [line] = window_lines(r.stderr)
    m = re.search(r"window every buffer \(16\) from block (\d+) on: the hashing waited for the reads (\d+)% of the "
                  r"time at 12 blocks \(over 2/3 of the first period", line)
    assert m, line
    assert int(m.group(1)) == 20 and int(m.group(2)) > 66


def test_reads_ahead_keep_the_small_window(data: Path) -> None:
    """hashlag:5: each block waits 5 ms before it is hashed, while a 1 MiB read from tmpfs takes
    well under one: the hashing never sleeps for a read in the periods it looks at."""
    r = run(FAULTS_BIN / "uring_b3sum", data, *RING, faults="hashlag:5")
    [line] = window_lines(r.stderr)
    m = re.search(r"window 12 blocks \(12M\): the hashing waited for the reads at most (\d+)% of the time in (\d+) "
                  r"periods of 8 blocks \(never over 1/2 twice in a row", line)
    assert m, line
    assert int(m.group(2)) == (40 - 12) // 8 and int(m.group(1)) < 50


def test_a_fixed_window_bounds_the_reads_in_flight(data: Path, tmp_path: Path) -> None:
    """--window 2 with a queue 8 deep: never more than 2 reads in flight, whatever the timing (the
    trace's peak per consumer run); no measurement is said to have been made."""
    trace = tmp_path / "trace.csv"
    r = run(BIN_DIR / "uring_b3sum", data, *RING, "--window", "2", "--trace", str(trace))
    assert window_lines(r.stderr) == []
    rows = list(csv.DictReader(trace.open()))
    assert rows and max(int(row["peak_in_flight"]) for row in rows) <= 2
    r = run(BIN_DIR / "uring_b3sum", data, *RING, "--window", "16", "--trace", str(trace))
    assert max(int(row["peak_in_flight"]) for row in csv.DictReader(trace.open())) > 2


def test_a_ring_too_small_for_a_smaller_window_says_so(data: Path) -> None:
    r = run(BIN_DIR / "uring_b3sum", data, "--buffered", "--block-size", "4M", "--buffers", "3")
    assert window_lines(r.stderr) == ["uring_b3sum: window every buffer (3): no fewer would hold 12M"]


def test_a_file_too_short_to_measure_says_so(data: Path) -> None:
    """40 MiB in 4M blocks: 10 blocks, under the 3 of the first window and a period of 8."""
    r = run(BIN_DIR / "uring_b3sum", data, "--buffered", "--block-size", "4M")
    assert window_lines(r.stderr) == ["uring_b3sum: window 3 blocks (12M): under 11 blocks through the ring, too "
                                      "few to measure the reads"]


@pytest.mark.parametrize("program, options", [
    ("uring_b3sum", ("--window", "1", "--buffers", "4")),
    ("uring_b3sum", ("--window", "3", "--buffers", "5", "--fixed-buffers")),
    ("uring_b3sum", ("--window", "2", "--buffers", "6", "--direct")),
    ("uring_b3sum", ("--buffers", "64", "--queue-depth", "16")),
    ("liburing_b3sum_singlethread", ("--window", "1", "--buffers", "4", "--queue-depth", "4")),
    ("liburing_b3sum_singlethread", ("--window", "2", "--buffers", "4", "--submit-and-wait")),
    ("liburing_b3sum_multithread", ("--window", "3", "--buffers", "8", "--fixed-buffers")),
])
def test_every_window_hashes_right(data: Path, program: str, options: tuple[str, ...]) -> None:
    """The buffer freed last goes to the next read: any window, any buffer count, registered buffers
    (READ_FIXED names the buffer, not the cell) and O_DIRECT, in each loop."""
    argv = [str(BIN_DIR / program), "--block-size", "256K", *options, str(data)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    expected = subprocess.run([str(B3SUM), str(data)], capture_output=True, text=True, check=True).stdout
    assert r.stdout.split()[0] == expected.split()[0]


@pytest.mark.parametrize("value, message", [
    ("x", "window"),
    ("-1", "window"),
    ("4294967296", "window"),
])
def test_a_bad_window_is_one_line(data: Path, value: str, message: str) -> None:
    r = subprocess.run([str(BIN_DIR / "uring_b3sum"), "--window", value, str(data)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr, r.stderr
