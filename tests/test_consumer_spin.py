"""uring_b3sum's consumer spins a while for the next block before it sleeps, but only while the
producer is awake on another core (hashers/ring_wake.c): on the producer's own core a spin would only
keep the producer off it. --verbose counts the waits each way; the hashes stay b3sum's."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hashers_support import BIN_DIR, b3sum_lines, tmpfs_dir

FILES = 400
WAITS = re.compile(r"the hashing waited for the next block (\d+) times: (\d+) spinning first \(up to 50 us, the "
                   r"producer busy on another core\), (\d+) asleep in the end")


def hash_list(files: list[Path], tmp_path: Path, *wrapper: str, variant: str = "uring_b3sum") -> tuple[bytes, str]:
    """Stdout and --verbose's words for the files given as a list: every one a block of the ring."""
    names = tmp_path / "names"
    names.write_bytes(b"".join(bytes(f) + b"\0" for f in files))
    argv = [*wrapper, str(BIN_DIR / variant), "--verbose", "--no-wisdom", "--files0-from", str(names)]
    r = subprocess.run(argv, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout, r.stderr.decode()


def small_files(d: Path) -> list[Path]:
    files = [d / f"f{i:04d}" for i in range(FILES)]
    for f in files:
        f.write_bytes(os.urandom(16 << 10))
    return files


def test_on_one_core_it_never_spins(tmp_path: Path) -> None:
    """Producer and consumer on one core: not one spin, every wait asleep, the hashes b3sum's."""
    if shutil.which("taskset") is None:
        pytest.skip("needs taskset (util-linux)")
    core = min(os.sched_getaffinity(0))
    with tmpfs_dir("spin-one") as d:
        files = small_files(d)
        out, said = hash_list(files, tmp_path, "taskset", "-c", str(core))
        assert out == b3sum_lines(files)
    waits = WAITS.search(said)
    assert waits, said
    total, spun, slept = map(int, waits.groups())
    assert (spun, slept) == (0, total) and total > 0, waits.group(0)


def test_the_waits_add_up_and_the_hashes_hold(tmp_path: Path) -> None:
    """On every core it may use: a wait ends asleep unless its spin caught the block, and the output
    is b3sum's."""
    with tmpfs_dir("spin-all") as d:
        files = small_files(d)
        out, said = hash_list(files, tmp_path)
        assert out == b3sum_lines(files)
    waits = WAITS.search(said)
    if waits:       # a run whose producer always kept ahead never waited
        total, spun, slept = map(int, waits.groups())
        assert slept <= total and total - slept <= spun <= total, waits.group(0)

