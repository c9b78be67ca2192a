"""A file partly in the page cache (hashers/input.c, open_mixed): uring_b3sum reads each block from the
cache when every page of it is there, and the rest with O_DIRECT through a second descriptor, so the
cached part is not read again from the device and the missing part is not faulted in page by page.
Every run's output is checked against b3sum's; the cache is checked block by block before and after."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.machine.page_cache import cached_pages
from hashers_support import BIN_DIR, MiB, b3sum_lines, beside_the_line_env, data_file, evict, ringsum

BLOCK = 4 * MiB
SIZE = 8 * BLOCK + 5            # nine blocks, the last of 5 bytes
EVICTED = (1, 3, 5, 7)          # under 3/4 left in the cache: not hashed from memory

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: O_DIRECT and eviction on the build disk")


@pytest.fixture
def own_file() -> Iterator[Path]:
    """A copy of its own, on the build disk (tmpfs keeps its pages), that no other test reads."""
    d = Path(tempfile.mkdtemp(prefix="mixed-", dir=data_file(SIZE).parent))
    try:
        path = d / "partly.bin"
        path.write_bytes(data_file(SIZE).read_bytes())
        yield path
    finally:
        shutil.rmtree(d)


def blocks_cached(path: Path) -> list[bool]:
    """Each block: every one of its pages in the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return [cached_pages(fd, b * BLOCK, min(BLOCK, SIZE - b * BLOCK)) * 4096 >= min(BLOCK, SIZE - b * BLOCK)
                for b in range(-(-SIZE // BLOCK))]
    finally:
        os.close(fd)


def partly_cached(path: Path) -> list[bool]:
    path.read_bytes()
    for b in EVICTED:
        evict(path, b * BLOCK, BLOCK)
    cached = blocks_cached(path)
    assert cached == [b not in EVICTED for b in range(9)], cached
    return cached


def hash_it(path: Path, *options: str, tmp_path: Path) -> tuple[str, dict]:
    """--verbose's words and the --effective line; the output is b3sum's."""
    effective = tmp_path / "effective.jsonl"
    r = subprocess.run([str(BIN_DIR / "uring_b3sum"), "--verbose", "--no-wisdom", "--effective", str(effective),
                        *options, str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    line = json.loads(effective.read_text())
    effective.unlink()
    return r.stderr, line


def test_each_block_is_read_from_where_it_is(own_file: Path, tmp_path: Path) -> None:
    before = partly_cached(own_file)
    said, line = hash_it(own_file, tmp_path=tmp_path)
    assert "each block from the page cache if all there, else O_DIRECT): part of it in the page cache" in said, said
    assert (line["path"], line["direct"], line["cached_blocks"]) == ("ring", "mixed", 5), line
    assert "5 of its 9 blocks read from the page cache, the rest with O_DIRECT" in said, said
    # the missing blocks came with O_DIRECT: still not in the cache; the cached ones were not dropped
    assert blocks_cached(own_file) == before
    assert subprocess.run([str(BIN_DIR / "uring_b3sum"), "--no-wisdom", str(own_file)], capture_output=True,
                          timeout=120).stdout == b3sum_lines([own_file])


def test_a_file_with_nothing_cached_or_of_one_block_is_read_whole(own_file: Path, tmp_path: Path) -> None:
    evict(own_file)
    said, line = hash_it(own_file, tmp_path=tmp_path)
    assert (line["direct"], line["cached_blocks"]) == (True, 0) and ", O_DIRECT): under 3/4" in said, line
    partly_cached(own_file)
    said, line = hash_it(own_file, "--block-size", "64M", tmp_path=tmp_path)   # under one block: buffered, whole
    assert (line["direct"], line["cached_blocks"]) == (False, 0) and "part of it" not in said, line


@pytest.mark.parametrize("options, expected", [
    (("--direct",), ("ring", True, 0)), (("--buffered",), ("ring", False, 0)),
    (("--path", "memory"), ("memory", False, 0)),
    (("--no-mmap",), ("ring", "mixed", 5)),       # never from a mapping: the ring, still block by block
])
def test_an_option_that_says_how_is_obeyed(own_file: Path, tmp_path: Path, options: tuple[str, ...],
                                           expected: tuple) -> None:
    partly_cached(own_file)
    said, line = hash_it(own_file, *options, tmp_path=tmp_path)
    assert (line["path"], line["direct"], line["cached_blocks"]) == expected, (options, line)
    assert ("part of it in the page cache" in said) == (expected[1] == "mixed"), said


def test_a_run_keeps_its_share_before_each_command_and_records_the_read_block_by_block(own_file: Path,
                                                                                      tmp_path: Path) -> None:
    """`cached_share` (configs/partial-cache.toml): the page cache prepared before every command."""
    config = tmp_path / "c.toml"
    config.write_text('[run]\nrounds = 2\ncache = "cold"\ncached_share = 0.5\ntrace = false\n[[hashers]]\n'
                      'variant = "uring_b3sum"\nstyle = "defaults"\n[baselines]\nlimit = false\ncat = true\n')
    r = ringsum("run", str(config), "--file", str(own_file), "--out", str(tmp_path / "out"),
                env={**os.environ, **beside_the_line_env(tmp_path / "lock")}, timeout=300)
    assert r.returncode == 0, r.stderr
    (run_dir,) = (tmp_path / "out").iterdir()
    with open(run_dir / "runs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and all(abs(float(row["resident_before"]) - 0.5) < 2 * MiB / SIZE for row in rows), rows
    hasher = [row for row in rows if row["tool"] == "hasher"]
    assert [(row["effective_direct"], row["hash_ok"], row["error"]) for row in hasher] == [("mixed", "True", "")] * 2
    assert "cold cache, 0.5 of it read back, 2 rounds" in (run_dir / "summary.txt").read_text()
