"""Every hasher variant prints exactly what the official b3sum prints, over a grid of knobs and file sizes."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import random

import pytest

from hashers_support import KiB, MiB, VARIANTS, Knobs, article_form, b3sum_lines, data_file, program, ring_path, run

pytestmark = pytest.mark.independent

FIXED_SIZES = [0, 1, 1023, 1024, 1025, 4095, 4096, 4097]
# Three sizes from one seeded generator (a generator seeded anew for each drew the same size three
# times: 60.1 MiB, hashed three times over in every case).
_SIZES = random.Random(20261121)
RANDOM_SIZES = sorted(_SIZES.randrange(1, 64 * MiB) for _ in range(3)) + [64 * MiB]
# How many of these a case hashes (RINGSUM_HASHER_LARGE_SIZES): by default the two smallest, 11.2 and
# 33.7 MiB, which end in a partial block and wrap 43 of the grid's 45 rings at least twice (the
# other two, 33 and 64 MiB, are wrapped by their own edges: files_for). The larger two (60.1 MiB,
# 64 MiB) reach no path these do not, and cost 3 times the grid's time (`pytest -n 2
# tests/test_hashers.py`: 62 s against 21 s); RINGSUM_HASHER_LARGE_SIZES=4 hashes them too. The
# sanitizer runs (tests/test_sanitizers.py) hash the smallest alone: they look at each path's memory
# accesses and threads, which it reaches as well.
LARGE_SIZES = RANDOM_SIZES[:int(os.environ.get("RINGSUM_HASHER_LARGE_SIZES", "2"))]

BLOCK_SIZES_DIRECT = [4 * KiB, 8 * KiB, 64 * KiB, 128 * KiB, 512 * KiB, 1 * MiB, 4 * MiB]
BLOCK_SIZES_BUFFERED = [1000, 12345, 65537]
QUEUE_DEPTHS = [1, 2, 3, 4, 8, 16, 32, 64]
RING_MEMORY_CAP = 256 * MiB


def buffer_counts(queue_depth: int) -> list[int]:
    """Fewer, as many and more buffers than the queue depth, and the extremes."""
    return sorted({1, 2, max(1, queue_depth // 2), queue_depth, queue_depth + 1, min(64, 2 * queue_depth), 64})


def knob_grid() -> list[Knobs]:
    """A seeded sample of the full grid, topped up until every value of every knob occurs."""
    full = [
        Knobs(bs, qd, n, direct, inner, drain, link)
        for bs in BLOCK_SIZES_DIRECT + BLOCK_SIZES_BUFFERED
        for qd in QUEUE_DEPTHS
        for n in buffer_counts(qd)
        for direct, inner, drain, link in itertools.product([False, True], repeat=4)
        if not (direct and bs % 4096) and bs * n <= RING_MEMORY_CAP
    ]
    rng = random.Random(4)
    # Issue 18's page knobs on a few rings of their own: uncached reads of blocks smaller than a page
    # read each page from the disk again (14 s an entry), slower but no harder.
    chosen = [Knobs(512 * KiB, 4, 4), Knobs(512 * KiB, 2, 2, direct=True), Knobs(128 * KiB, 20, 8),
              Knobs(64 * KiB, 3, 5, dontcache=True), Knobs(12345, 2, 2, huge_pages=True),
              Knobs(4 * MiB, 8, 16, direct=True, huge_pages=True)]
    # The io_uring feature knobs ride along at random: each on in about a third of the sample.
    # (--parallel-hash and --serial-hash together are a usage error: the first wins.)
    features = ("fixed_buffers", "fixed_file", "sqpoll", "submit_and_wait", "parallel_hash", "serial_hash",
                "fadvise_sequential")
    sampled = [dataclasses.replace(k, **{f: rng.random() < 0.35 for f in features}) for k in rng.sample(full, 36)]
    chosen += [dataclasses.replace(k, serial_hash=k.serial_hash and not k.parallel_hash) for k in sampled]
    for field, values in [("block_size", BLOCK_SIZES_DIRECT + BLOCK_SIZES_BUFFERED), ("queue_depth", QUEUE_DEPTHS),
                          ("buffers", [1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65])]:
        for value in values:
            if not any(getattr(k, field) == value for k in chosen):
                chosen.append(rng.choice([k for k in full if getattr(k, field) == value]))
    return chosen


GRID = knob_grid()


def test_grid_covers_every_knob_value():
    for field in Knobs.FLAGS:
        assert {getattr(k, field) for k in GRID} == {False, True}, field
    assert {k.block_size for k in GRID} >= set(BLOCK_SIZES_DIRECT + BLOCK_SIZES_BUFFERED)
    assert {k.queue_depth for k in GRID} >= set(QUEUE_DEPTHS)
    assert any(k.buffers < k.queue_depth for k in GRID) and any(k.buffers > k.queue_depth for k in GRID)
    assert {1, 64} <= {k.buffers for k in GRID}
    assert len(set(RANDOM_SIZES)) == len(RANDOM_SIZES), RANDOM_SIZES


def files_for(knobs: Knobs):
    """The fixed and random sizes, plus the ring's own edges: block size and whole ring, each exact (no
    partial last block) and plus or minus 1."""
    edges = {knobs.block_size + d for d in (-1, 0, 1)}
    ring_bytes = knobs.block_size * knobs.buffers
    if ring_bytes <= 64 * MiB:
        edges |= {ring_bytes - 1, ring_bytes, ring_bytes + 1}
    return [data_file(size) for size in FIXED_SIZES + LARGE_SIZES + sorted(edges)]


@pytest.mark.parametrize("knobs", GRID, ids=str)
@pytest.mark.parametrize("variant", VARIANTS)
def test_hash_equals_b3sum(variant, knobs):
    paths = files_for(knobs)
    result = run([program(variant), *ring_path(variant), *knobs.argv(), *paths])
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b3sum_lines(paths)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("article_args", [["512", "2", "1", "0", "2", "0", "0"], ["128", "20", "0", "0", "8", "0", "0"]])
def test_article_positional_form(variant, article_args):
    path = data_file(5 * MiB + 3)
    positional = article_form(variant)
    result = run([program(variant), *positional, path, *article_args])
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b3sum_lines([path])


@pytest.mark.parametrize("variant", VARIANTS)
def test_many_files_in_one_call(variant):
    paths = [data_file(size) for size in (0, 1, 4097, 3 * MiB + 1, 4097)]
    result = run([program(variant), *ring_path(variant), "--block-size", "64K", *paths])
    assert result.returncode == 0
    assert result.stdout == b3sum_lines(paths)


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_reports_count_every_file(variant, tmp_path):
    """--effective's line per file and --effective-summary's per way (uring_b3sum's ring and stream: two,
    the summary's table grown once) count the same files and bytes, under the sanitizers too."""
    paths = [data_file(size) for size in (0, 1, 4097, 3 * MiB + 1)]
    stdin = random.Random(5).randbytes(70_000)
    reports = {}
    for option in ("--effective", "--effective-summary"):
        report = tmp_path / option.lstrip("-")
        result = run([program(variant), *ring_path(variant), option, report, *paths, "-"], input=stdin)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[:len(paths)] == b3sum_lines(paths).splitlines()
        reports[option] = [json.loads(line) for line in report.read_text().splitlines()]
    per_file, summary = reports["--effective"], reports["--effective-summary"]
    assert [line["index"] for line in per_file] == list(range(len(paths) + 1))
    assert sum(line["files"] for line in summary) == len(paths) + 1
    assert sum(line["ring_bytes"] for line in summary) == sum(line["ring_bytes"] for line in per_file)
    assert {line["path"] for line in summary} == {line["path"] for line in per_file}
