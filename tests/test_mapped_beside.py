"""Small cached files hashed from memory side by side, one a core (hashers/ring_consume.c): the same
hashes as b3sum's, beside the ring's small files and the large mapped files split across the cores,
and a file truncated while it waits among them is reported as changed, never hashed wrong or a crash.
The trees are on tmpfs: always cached, whatever cache drop runs beside them."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hashers_support import B3SUM, BIN_DIR, FAULTS_BIN, KiB, MiB, tmpfs_dir

pytestmark = pytest.mark.independent   # its own files only


@pytest.fixture
def tree() -> Iterator[Path]:
    with tmpfs_dir("ringsum-beside") as path:
        yield path


def fill(tree: Path, sizes: list[int]) -> list[Path]:
    files = [tree / f"f{i:03d}" for i in range(len(sizes))]
    for f, size in zip(files, sizes):
        f.write_bytes(os.urandom(size))
    return files


def hashing_of(effective: Path) -> list[str]:
    return [json.loads(line)["hashing"] for line in effective.read_text().splitlines()]


@pytest.mark.parametrize("threads", [[], ["--num-threads", "1"]])
def test_a_mixed_cached_tree_hashes_as_b3sum(tree: Path, tmp_path: Path, threads: list[str]) -> None:
    """Ring files under --memory-min (1280K), mapped files of 1280K to 4M side by side, mapped files
    over 4M split across the cores, an empty file, in an order that mixes them; on one thread nothing
    is beside."""
    sizes = [3 * MiB, 1280 * KiB, 64 * KiB, 4 * MiB, 5 * MiB, 0, 2 * MiB + 1, 1 * MiB, 700 * KiB, 4 * MiB + 4096,
             1536 * KiB, 1280 * KiB, 3 * MiB - 1]
    files = fill(tree, sizes)
    effective = tmp_path / "effective.json"
    r = subprocess.run([str(BIN_DIR / "uring_b3sum"), *threads, "--effective", str(effective), *map(str, files)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == subprocess.run([str(B3SUM), *map(str, files)], capture_output=True, text=True,
                                      check=True).stdout
    hashing = hashing_of(effective)
    beside = {i for i, how in enumerate(hashing) if how == "beside"}
    assert all(1280 * KiB <= sizes[i] <= 4 * MiB for i in beside), hashing
    if threads or len(os.sched_getaffinity(0)) < 2:
        assert not beside, hashing
    else:
        assert beside, hashing  # 7 mapped files of 1280K to 4M, opened at once: some run of them is beside


def mapped(pid: int, files: list[Path]) -> list[Path]:
    maps = Path(f"/proc/{pid}/maps").read_text()
    return [f for f in files if str(f) in maps]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="files go side by side on two cores or more")
def test_a_file_truncated_beside_others_is_reported_changed(tree: Path) -> None:
    """hashlag:150 holds each mapped file 150 ms before it is hashed. Two of them mapped at once are
    side by side (alone, a file is mapped only while it is hashed): one is cut to 4K meanwhile.
    It faults, and is reported as changed; the others keep their hashes."""
    files = fill(tree, [1280 * KiB] * 8)   # mapped: --memory-min is 1280K
    expected = {line.split()[1]: line for line in subprocess.run(
        [str(B3SUM), *map(str, files)], capture_output=True, text=True, check=True).stdout.splitlines()}
    proc = subprocess.Popen([str(FAULTS_BIN / "uring_b3sum"), *map(str, files)], text=True,
                            env={**os.environ, "RINGSUM_FAULTS": "hashlag:150"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(side := mapped(proc.pid, files)) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, "no two files were ever mapped at once"
        time.sleep(0.005)
    cut = side[-1]
    os.truncate(cut, 4 * KiB)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert err.startswith(f"uring_b3sum: {cut}: file"), err
    assert len(err.splitlines()) == 1, err
    assert out.splitlines() == [expected[str(f)] for f in files if f != cut]
