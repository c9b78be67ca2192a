"""Hostile files given to the hashers themselves: one larger than 4 GiB (an offset cut to 32 bits would
hash the wrong bytes) and a symlink loop. Split from tests/test_hostile_input.py, whose runs share the
machine: these touch only files of their own and run beside the machine line (tests/conftest.py), on
one worker (the 4 GiB file and its reference hash are made once)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import BinaryIO

import pytest

from hashers_support import VARIANTS, b3sum_lines, program, ring_path, run, shared_data_file

pytestmark = [pytest.mark.independent, pytest.mark.together]

GiB = 1 << 30


@pytest.fixture(scope="module")
def sparse_over_4g() -> Path:
    """4 GiB + 12345 bytes, mostly a hole, with random bytes at the start, around the 4 GiB mark and at
    the end, so that an offset cut to 32 bits would hash the wrong bytes."""
    size = 4 * GiB + 12345

    def write(f: BinaryIO) -> None:
        rng = random.Random(4)
        f.truncate(size)
        for offset in (0, 4 * GiB - 100_000, size - 5000):
            f.seek(offset)
            f.write(rng.randbytes(min(200_000, size - offset)))

    return shared_data_file("sparse-4G+12345.bin", size, write)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("direct", [False, True])
def test_file_larger_than_4g(variant, direct, sparse_over_4g):
    args = [*ring_path(variant), "--block-size", "1M", "--queue-depth", "8"] + ["--direct"] * direct
    result = run([program(variant), *args, sparse_over_4g], timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b3sum_lines([sparse_over_4g])  # hashed once a worker (hashers_support)


@pytest.mark.parametrize("variant", VARIANTS)
def test_symlink_loop(variant, tmp_path: Path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    result = run([program(variant), tmp_path / "a"], timeout=30)
    assert result.returncode == 1 and result.stdout == b""
    assert result.stderr.decode() == f"{variant}: {tmp_path / 'a'}: Too many levels of symbolic links (os error 40)\n"
