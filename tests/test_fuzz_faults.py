"""Randomized fault schedules for the io_uring hashers (the RINGSUM_FAULTS test hook, build/faults/bin).

Each case draws a file size, knobs (block size, queue depth, buffers, --link, --drain, --direct,
--process-in-inner-loop, --fixed-buffers, --fixed-file, --submit-and-wait) and a schedule of
short reads, EAGAIN, EINTR and ECANCELED at random completion numbers, sometimes with one EIO.
The hasher must print the official b3sum's line and exit 0, or, only when an EIO was scheduled,
print `prog: path: Input/output error (os error 5)`, no hash line, and exit 1; never hang.

Seeded and of fixed size for CI; explore with RINGSUM_FAULT_SEED=<n> RINGSUM_FAULT_CASES=<n>.
A failure prints the command line that reproduces it.
"""

from __future__ import annotations

import os
import random
import shlex
import subprocess
from functools import cache

import pytest

from hashers_support import FAULTS_BIN, KiB, MiB, URING_VARIANTS, b3sum_lines, data_file, ring_path, run

pytestmark = pytest.mark.independent

SEED = int(os.environ.get("RINGSUM_FAULT_SEED", "20240607"))
CASES = int(os.environ.get("RINGSUM_FAULT_CASES", "400"))
# No block ends in a tail of a few bytes: the hook's "short" halves a result, and half of 1 byte is a
# 0-byte read, which is end of file, not a short read (test_short_read_of_one_byte_is_not_end_of_file).
SIZES = [4095, 4196, 64 * KiB, 1 * MiB + 12345, 3 * MiB + 333]
TRANSIENT = ["short", "eagain", "eintr", "ecanceled"]


@cache
def oracle(size: int) -> bytes:
    return b3sum_lines([data_file(size)])


def draw_case(rng: random.Random) -> tuple[str, list[str], int, str, bool]:
    variant = rng.choice(URING_VARIANTS)
    size = rng.choice(SIZES)
    direct = rng.random() < 0.3
    block = rng.choice([4, 8, 16, 64, 128, 256]) * KiB if direct else rng.choice([4096, 5000, 16 * KiB, 65537, 256 * KiB])
    depth = rng.randint(1, 16)
    buffers = rng.randint(1, 20)
    args = [*ring_path(variant), "--block-size", str(block), "--queue-depth", str(depth), "--buffers", str(buffers)]
    args += [flag for flag, p in [("--direct", direct), ("--link", rng.random() < 0.4), ("--drain", rng.random() < 0.2),
                                  ("--process-in-inner-loop", rng.random() < 0.3),
                                  ("--fixed-buffers", rng.random() < 0.2), ("--fixed-file", rng.random() < 0.2),
                                  ("--submit-and-wait", rng.random() < 0.3)] if p]
    blocks = -(-size // block)
    last = 2 * blocks + 4  # completions: at least one per block, more with faults
    schedule = [f"{rng.choice(TRANSIENT)}:{rng.randint(1, last)}" for _ in range(rng.randint(0, 12))]
    eio = rng.random() < 0.25
    if eio:
        schedule.insert(rng.randrange(len(schedule) + 1), f"eio:{rng.randint(1, last)}")
    return variant, args, size, ",".join(schedule[:16]), eio


def test_random_fault_schedules():
    rng = random.Random(SEED)
    failures, compared, io_errors = [], 0, 0
    for case in range(CASES):
        variant, args, size, faults, eio = draw_case(rng)
        path = data_file(size)
        prog = FAULTS_BIN / variant
        if not prog.exists():
            pytest.skip(f"{prog} missing: make build/faults/bin/{variant}")
        repro = f"RINGSUM_FAULTS={faults} {prog} {shlex.join(args)} {path}"
        try:
            result = run([prog, *args, path], env={**os.environ, "RINGSUM_FAULTS": faults}, timeout=30)
        except subprocess.TimeoutExpired:
            failures.append(f"case {case}: hung: {repro}")
            continue
        if result.returncode == 0 and result.stdout == oracle(size) and not result.stderr:
            compared += 1
        elif (eio and result.returncode == 1 and result.stdout == b""
              and result.stderr.decode() == f"{variant}: {path}: Input/output error (os error 5)\n"):
            io_errors += 1
        else:
            failures.append(f"case {case}: exit {result.returncode}, stdout {result.stdout[:80]!r}, "
                            f"stderr {result.stderr[:200]!r}: {repro}")
    print(f"\nfault schedules: {CASES} cases (seed {SEED}), {compared} hashes equal to b3sum, "
          f"{io_errors} clean EIO errors, {len(failures)} failures")
    assert not failures, "\n".join(failures[:20])
    assert compared > CASES // 2


@pytest.mark.parametrize("variant", URING_VARIANTS)
def test_short_read_of_one_byte_is_not_end_of_file(variant):
    path = data_file(1)
    result = run([FAULTS_BIN / variant, *ring_path(variant), path], env={**os.environ, "RINGSUM_FAULTS": "short:1"}, timeout=30)
    assert (result.returncode, result.stdout) == (0, oracle(1)), result.stderr
