"""hashers/side_pool.c alone (tests/helpers/side_pool_stress.c): pools of 1-6 threads hash batches of
0-16 jobs against a stand-in for BLAKE3 that counts each job's runs, plain and under ThreadSanitizer.
Every job must run exactly once, on its own batch's data, though the caller reuses the buffers as
soon as a batch returns: a pool that returned before its helpers finished, or hashed a job twice,
prints the job and exits 1 (a build without the wait for the last jobs failed in 38 of 160,743
batches)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.independent

BUILD = Path(__file__).resolve().parent.parent / "build" / "tests"


@pytest.mark.parametrize("program", ["side_pool_stress", "side_pool_stress_tsan"])
def test_every_job_runs_once_on_its_own_batch(program: str) -> None:
    done = subprocess.run([str(BUILD / program), "1.5"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "ThreadSanitizer" not in done.stderr, done.stderr[-3000:]
    m = re.fullmatch(r"batches (\d+) pools (\d+) bad 0\n", done.stdout)
    assert m and int(m[1]) > 1000, done.stdout
