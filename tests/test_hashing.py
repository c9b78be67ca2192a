"""How uring_b3sum hashes the blocks it reads: on one core while the reads are behind, on every core
while they are ahead (the block after the one being hashed is read already), as --parallel-hash,
--serial-hash, --num-threads and the CPUs it may use say; and the small-file O_DIRECT rule for any
many-file invocation. Read from each run's --effective report; the faults build's readlag and
hashlag put the reads behind or ahead without depending on how fast this machine is."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from hashers_support import B3SUM, BIN_DIR, FAULTS_BIN, REPO, MiB, evict, tmpfs_dir, tmpfs_file

pytestmark = pytest.mark.independent   # its own files only: evicted by fadvise, never the whole cache



@pytest.fixture(scope="module")
def cached() -> Iterator[Path]:
    """6 MiB on tmpfs: each block is there at once unless a lag says otherwise."""
    with tmpfs_file("ringsum-hashing", 6 * MiB) as path:
        yield path


def hash_with(argv: list[str], report: Path, faults: str = "", cpus: set[int] | None = None,
              wrapper: tuple[str, ...] = ()) -> list[dict]:
    """Runs a hasher (under a wrapper) with --effective REPORT, checks its hash against b3sum's,
    returns the report."""
    env = {**os.environ, "RINGSUM_FAULTS": faults} if faults else None
    r = subprocess.run([*wrapper, argv[0], "--effective", str(report), *argv[1:]], capture_output=True, text=True,
                       timeout=120, env=env, preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    assert r.returncode == 0, r.stderr
    files = [a for a in argv[1:] if not a.startswith("-") and Path(a).exists()]
    expected = subprocess.run([str(B3SUM), *files], capture_output=True, text=True, check=True).stdout
    assert r.stdout == expected
    return [json.loads(line) for line in report.read_text().splitlines()]


def ring_argv(binary: Path, path: Path, *options: str) -> list[str]:
    return [str(binary), "--path", "ring", "--buffered", "--block-size", "1M", *options, str(path)]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to hash on")
def test_reads_ahead_of_one_core_hash_on_every_core(cached: Path, tmp_path: Path) -> None:
    """hashlag:50: each block waits 50 ms before it is hashed, while a 1 MiB read from tmpfs takes
    well under one: the next block is there every time but at the last one."""
    [line] = hash_with(ring_argv(FAULTS_BIN / "uring_b3sum", cached), tmp_path / "e.jsonl", "hashlag:50")
    assert (line["hashing"], line["hash_threads"], line["ring_bytes"]) == ("when-behind", len(os.sched_getaffinity(0)), 6 * MiB)
    # the last block has no next; a producer held off 50 ms by the machine may cost one more
    assert line["parallel_bytes"] >= 4 * MiB


def test_reads_behind_the_hashing_hash_on_one_core(cached: Path, tmp_path: Path) -> None:
    """depth:1,readlag:50: one read at a time, each queued 50 ms late, so the next block is never
    there while one is hashed (hashing 1 MiB takes about a millisecond)."""
    [line] = hash_with(ring_argv(FAULTS_BIN / "uring_b3sum", cached), tmp_path / "e.jsonl", "depth:1,readlag:50")
    assert line["ring_bytes"] == 6 * MiB and line["parallel_bytes"] == 0


@pytest.mark.parametrize("options, cpus, hashing, share", [
    (["--parallel-hash"], None, "parallel", 1.0),
    (["--serial-hash"], None, "serial", 0.0),
    (["--num-threads", "1"], None, "serial", 0.0),
    ([], {0}, "serial", 0.0),   # one CPU to run on: nothing to hash beside it
])
def test_the_knobs_and_the_cores_decide(cached: Path, tmp_path: Path, options: list[str], cpus: set[int] | None,
                                        hashing: str, share: float) -> None:
    [line] = hash_with(ring_argv(FAULTS_BIN / "uring_b3sum", cached, *options), tmp_path / "e.jsonl",
                       "hashlag:5", cpus)
    assert line["hashing"] == hashing and line["parallel_bytes"] == share * line["ring_bytes"] == share * 6 * MiB
    assert (line["hash_threads"] == 1) == (hashing == "serial")


def test_without_io_uring_the_pread_loop_hashes_as_asked(cached: Path, tmp_path: Path) -> None:
    """One cell, no next block to see: serial unless --parallel-hash; --verbose claims nothing of a ring."""
    wrapper = (str(REPO / "build" / "tests" / "without_io_uring"), "ENOSYS")
    [line] = hash_with([str(BIN_DIR / "uring_b3sum"), "--path", "ring", str(cached)], tmp_path / "e.jsonl",
                       wrapper=wrapper)
    assert (line["path"], line["hashing"], line["parallel_bytes"]) == ("pread", "serial", 0)
    [line] = hash_with([str(BIN_DIR / "uring_b3sum"), "--path", "ring", "--parallel-hash", str(cached)],
                       tmp_path / "p.jsonl", wrapper=wrapper)
    assert (line["path"], line["hashing"]) == ("pread", "parallel")
    verbose = subprocess.run([*wrapper, str(BIN_DIR / "uring_b3sum"), "--path", "ring", "-v", str(cached)],
                             capture_output=True, text=True, timeout=60, check=True)
    assert "read through the ring" not in verbose.stderr and "reading with pread()" in verbose.stderr


def test_the_article_programs_hash_on_one_core(cached: Path, tmp_path: Path) -> None:
    """Only uring_b3sum adapts: the article's programs stay as the article wrote them."""
    argv = [str(BIN_DIR / "liburing_b3sum_multithread"), "--block-size", "1M", str(cached)]
    [line] = hash_with(argv, tmp_path / "e.jsonl")
    assert (line["hashing"], line["parallel_bytes"], line["ring_bytes"]) == ("serial", 0, 6 * MiB)


def test_both_ways_at_once_is_a_usage_error(cached: Path) -> None:
    r = subprocess.run([str(BIN_DIR / "uring_b3sum"), "--parallel-hash", "--serial-hash", str(cached)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert "--parallel-hash and --serial-hash contradict each other" in r.stderr


def test_verbose_says_how_the_blocks_were_hashed(cached: Path) -> None:
    """Its last line, where uring_b3sum chose; nothing where a knob chose for it. (The window's and the
    waits' lines, which come before it, are tests/test_window.py's and tests/test_consumer_spin.py's.)"""
    def last_line(*options: str, cpus: set[int] | None = None) -> str:
        r = subprocess.run(ring_argv(BIN_DIR / "uring_b3sum", cached, "-v", *options), capture_output=True, text=True,
                           timeout=60, check=True, preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
        return [line for line in r.stderr.splitlines()
                if ": window " not in line and ": the hashing waited for the next block " not in line][-1]

    assert last_line("--serial-hash").endswith("1024K blocks, 8 deep, 16 buffers): --path ring or --no-mmap")
    assert last_line("--parallel-hash").endswith("1024K blocks, 8 deep, 16 buffers): --path ring or --no-mmap")
    assert last_line(cpus={0}) == ("uring_b3sum: the blocks read through the ring hashed on one core: "
                                   "one hashing thread (the CPUs it may use, or --num-threads)")
    if len(os.sched_getaffinity(0)) > 1:
        line = last_line()
        assert line.startswith("uring_b3sum: ") and line.endswith(
            f"% of the 6.0 MiB read through the ring hashed on {len(os.sched_getaffinity(0))} cores "
            "(the next block was read already), the rest on one"), line


@pytest.mark.skipif(os.geteuid() != 0, reason="evicting a file another user wrote needs root")
def test_small_cold_files_named_together_are_read_with_o_direct(tmp_path: Path) -> None:
    """The small-file rule (--direct-min 0 is 4K for many files) holds for a list as under -r:
    xargs uring_b3sum on a tree's files reads them as uring_b3sum -r on the tree does."""
    files = [tmp_path / f"{i}.bin" for i in range(3)]
    for f in files:
        f.write_bytes(os.urandom(64 << 10))
        evict(f)
    lines = hash_with([str(BIN_DIR / "uring_b3sum"), *map(str, files)], tmp_path / "list.jsonl")
    assert [line["direct"] for line in lines] == [True, True, True]
    evict(files[0])
    [alone] = hash_with([str(BIN_DIR / "uring_b3sum"), str(files[0])], tmp_path / "alone.jsonl")
    assert alone["direct"] is False   # one small file alone: under a block, buffered as before


@pytest.fixture
def small_files() -> Iterator[list[Path]]:
    """24 files of 64 KiB on tmpfs (each a whole file in one ring block, read at once)."""
    with tmpfs_dir("ringsum-small") as d:
        files = [d / f"{i:02d}.bin" for i in range(24)]
        for f in files:
            f.write_bytes(os.urandom(64 << 10))
        yield files


def small_argv(files: list[Path], *options: str) -> list[str]:
    return [str(FAULTS_BIN / "uring_b3sum"), "--path", "ring", "--buffered", *options, *map(str, files)]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to hash on")
def test_small_files_ahead_of_one_core_are_hashed_side_by_side(small_files: list[Path], tmp_path: Path) -> None:
    """hashlag:20: each file waits 20 ms before it is hashed, while the producer reads the next ones
    from tmpfs in microseconds, so after the first few every cell is available: the run of whole
    small files is hashed side by side (each file's bytes counted as hashed on every core), and the
    hashes and their order are b3sum's (hash_with checks). sidetrial:0: tried from the first file, not
    after 8 MiB of them."""
    lines = hash_with(small_argv(small_files), tmp_path / "e.jsonl", "hashlag:20,sidetrial:0")
    assert [line["index"] for line in lines] == list(range(24))
    assert all(line["ring_bytes"] == 64 << 10 and line["hashing"] == "when-behind" for line in lines)
    side_by_side = [line["parallel_bytes"] == 64 << 10 for line in lines]
    # the first file can find nothing after it; a producer held off by the machine may cost a few more
    assert sum(side_by_side) >= 12, side_by_side


@pytest.mark.parametrize("options, cpus", [(["--serial-hash"], None), (["--num-threads", "1"], None), ([], {0})])
def test_small_files_stay_on_one_core_when_told(small_files: list[Path], tmp_path: Path, options: list[str],
                                                cpus: set[int] | None) -> None:
    lines = hash_with(small_argv(small_files, *options), tmp_path / "e.jsonl", "hashlag:5", cpus)
    assert len(lines) == 24 and all(line["parallel_bytes"] == 0 and line["hashing"] == "serial" for line in lines)


def test_a_run_closes_only_what_it_opened(small_files: list[Path]) -> None:
    """The ring's slots that no file used hold no descriptor: teardown once closed fd 0 for each (their
    direct_fd zeroed, not -1), which is stdin, or whatever else holds fd 0 then."""
    argv = ["strace", "-f", "-e", "trace=close", str(BIN_DIR / "uring_b3sum"), *map(str, small_files[:2])]
    traced = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert traced.returncode == 0 and len(traced.stdout.splitlines()) == 2
    assert not re.search(r"\bclose\(0\)", traced.stderr), traced.stderr
