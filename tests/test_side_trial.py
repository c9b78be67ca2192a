"""The ring's small files side by side or one by one, measured in the process (hashers/ring_consume.c):
periods of 64 small files each way in turn, 8 pairs, the median pair's faster way taking the rest, once
8 MiB of them went one by one and the helper started (hashers/side_pool.c). The faults build's sidelag and onelag slow one
way down, so the test knows which must win, and its sidetrial:0 has the trial begin at the first file;
the timing of a real run is a benchmark's (docs/cold-path/side-trial-zen5-run, side-load-zen5), not a
test's. The trees are on tmpfs: every file there at once, cached whatever cache drop runs beside."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hashers_support import B3SUM, BIN_DIR, FAULTS_BIN, tmpfs_dir

pytestmark = [pytest.mark.independent,   # its own files only
              pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="side by side needs two cores")]

TRIAL_FILES = 16 * 64   # 8 pairs of periods of 64 files


def small_tree(files: int) -> Iterator[Path]:
    with tmpfs_dir("ringsum-side") as path:
        for i in range(files):   # 16 KiB and up, a few sizes, all under the side-by-side bound (256 KiB)
            (path / f"f{i:05d}").write_bytes(os.urandom(16384 + 4096 * (i % 5) + i % 7))
        yield path


@pytest.fixture(scope="module")
def tree() -> Iterator[Path]:
    yield from small_tree(TRIAL_FILES + 150)


def hash_tree(binary: Path, tree: Path, *options: str, faults: str = "") -> str:
    """--verbose's line on the small files (or ""), the hashes checked against b3sum's."""
    env = {**os.environ, "RINGSUM_FAULTS": faults} if faults else None
    r = subprocess.run([str(binary), "--verbose", *options, "-r", str(tree)], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    files = sorted(str(p) for p in tree.iterdir())
    expected = subprocess.run([str(B3SUM), *files], capture_output=True, text=True, check=True).stdout
    assert sorted(r.stdout.splitlines()) == sorted(expected.splitlines())
    return "\n".join(line for line in r.stderr.splitlines() if ": small files " in line)


@pytest.mark.parametrize("faults, way", [("sidelag:300", "one by one"), ("onelag:300", "side by side")])
def test_the_slower_way_loses(tree: Path, faults: str, way: str) -> None:
    """300 us before each small file hashed one way: that way takes 0.3 s a period more than the other."""
    line = hash_tree(FAULTS_BIN / "uring_b3sum", tree, faults=f"{faults},sidetrial:0")
    m = re.fullmatch(r"uring_b3sum: small files (side by side|one by one), measured here: side by side / one by "
                     r"one ([0-9.]+), the median of 8 pairs of periods of 64 files", line)
    assert m, line
    assert m[1] == way and (float(m[2]) > 2 if way == "one by one" else float(m[2]) < 0.5), line


def test_too_few_small_files_keep_them_side_by_side() -> None:
    for tree in small_tree(300):
        line = hash_tree(FAULTS_BIN / "uring_b3sum", tree, faults="sidetrial:0")
        assert line == "uring_b3sum: small files side by side: too few to measure (4 periods of 16)", line


def threads_and_libraries(argv: list[str]) -> tuple[int, bool]:
    """How many threads the run started, and whether it loaded parallel_hash.so or TBB (strace)."""
    traced = subprocess.run(["strace", "-f", "-e", "trace=openat,clone3,clone", *argv], capture_output=True,
                            text=True, timeout=120)
    assert traced.returncode == 0, traced.stderr[-2000:]
    return (len(re.findall(r"^(?:\[pid +\d+\] )?clone3?\(", traced.stderr, re.MULTILINE)),
            "parallel_hash.so" in traced.stderr or "libtbb" in traced.stderr)


def test_a_few_small_files_go_one_by_one_and_start_nothing() -> None:
    """Under 8 MiB of small files the run starts no helper for side by side, only the producer's
    thread: a trial that a run of a few small files would not win back (docs/cold-path/side-pool-zen5)."""
    for tree in small_tree(300):   # 300 files of 16-32 KiB: 7.1 MiB
        line = hash_tree(BIN_DIR / "uring_b3sum", tree)
        size = sum(p.stat().st_size for p in tree.iterdir())
        assert line == (f"uring_b3sum: small files one by one: {(size + 1023) >> 10} KiB of them, side by side is tried "
                        "after 8192 KiB"), line
        assert threads_and_libraries([str(BIN_DIR / "uring_b3sum"), "-r", str(tree)]) == (1, False)


def test_side_by_side_loads_neither_tbb_nor_libstdcxx(tree: Path) -> None:
    """Past 8 MiB the trial runs on one helper thread of plain C (hashers/side_pool.c) beside the
    producer's: TBB, libstdc++ and their relocation cost a run of 512 files a quarter of its time."""
    line = hash_tree(BIN_DIR / "uring_b3sum", tree)
    assert re.search(r": small files side by side: too few to measure \(\d+ periods|measured here", line), line
    assert threads_and_libraries([str(BIN_DIR / "uring_b3sum"), "-r", str(tree)]) == (2, False)


@pytest.mark.parametrize("option", ["--serial-hash", "--parallel-hash"])
def test_a_given_hashing_has_no_trial(tree: Path, option: str) -> None:
    assert hash_tree(BIN_DIR / "uring_b3sum", tree, option) == ""


def test_more_than_128_files_named_start_the_helper_before_the_run() -> None:
    """Named on the command line (xargs's runs), more than 128 files start the helper before the
    producer's thread, and the trial with the first file; 128 of them, under 8 MiB, never do."""
    for tree in small_tree(129):
        files = sorted(str(p) for p in tree.iterdir())
        for named, threads in ((files, 2), (files[:128], 1)):
            assert threads_and_libraries([str(BIN_DIR / "uring_b3sum"), *named]) == (threads, False)
        # started first, the trial measures from the first file, and --verbose says how far it got
        said = subprocess.run([str(BIN_DIR / "uring_b3sum"), "--verbose", *files], capture_output=True, text=True,
                              timeout=60)
        assert said.returncode == 0 and len(said.stdout.splitlines()) == len(files)
        assert "uring_b3sum: small files side by side: too few to measure (2 periods of 16)" in said.stderr.splitlines()


def test_no_more_helpers_than_a_batch_has_files() -> None:
    """A batch is the run of cells holding whole files: with one buffer there is never a second file
    beside the first, so no helper starts, however many cores."""
    for tree in small_tree(129):
        files = sorted(str(p) for p in tree.iterdir())
        binary = str(BIN_DIR / "uring_b3sum")
        assert threads_and_libraries([binary, "-q", "1", "-n", "1", *files]) == (1, False)
        assert threads_and_libraries([binary, "-q", "1", "-n", "2", *files]) == (2, False)
        hashed = subprocess.run([binary, "-q", "1", "-n", "1", *files], capture_output=True, text=True, timeout=60)
        expected = subprocess.run([str(B3SUM), *files], capture_output=True, text=True, check=True).stdout
        assert hashed.returncode == 0 and hashed.stdout == expected
