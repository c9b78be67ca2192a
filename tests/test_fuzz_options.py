"""libFuzzer on the hashers' option parser (tests/fuzz/fuzz_options.c), with ASan and UBSan.

A fixed budget in CI: RINGSUM_FUZZ_RUNS executions (default 300,000: 9 s at the 33,000 a second seen
on a Zen 3 core). Run longer with `make fuzz FUZZ_SECONDS=600`, which takes the machine's lock (on a
shared benchmark machine: `flock "$(.venv/bin/python -m harness.machine.state lock-path)" ...`) and runs
`RINGSUM_FUZZ_SECONDS=600 .venv/bin/python -m pytest -q -s tests/test_fuzz_options.py`.
Every file in tests/fuzz/corpus/ (the seeds, and any input that once crashed: save it there)
is replayed first, so a crash found once stays a regression test.
"""

from __future__ import annotations

import fcntl
import os
import re
import resource
import shutil
import subprocess
from pathlib import Path

import pytest

from hashers_support import REPO

pytestmark = pytest.mark.independent

FUZZ_DIR = REPO / "tests" / "fuzz"
CORPUS = FUZZ_DIR / "corpus"
TARGET = REPO / "build" / "fuzz" / "fuzz_options"
CLANG = shutil.which("clang-14") or shutil.which("clang")
# libFuzzer's out-of-memory check reads the process's peak RSS (getrusage), which Linux carries from
# the parent over fork and exec: a worker that had mapped a sparse 4 GiB file (tests/test_hostile_files.py)
# left the fuzzer at 4230 MB before its first input, and it stopped as out of memory. Its limit is
# libFuzzer's default, 2 GiB, over what it inherits; one allocation stays limited to 2 GiB.
RSS_LIMIT_MB = 2048


def build_target() -> Path:
    """The Makefile knows the parser's files and makes the variants' table from their declarations."""
    if CLANG is None:
        pytest.skip("clang not installed (apt-get install clang-14 libclang-rt-14-dev)")
    if next((REPO / "build" / "vendor").glob("blake3-*/c"), None) is None:
        pytest.skip("BLAKE3 sources not fetched (run make)")
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    # The module's tests may run on two workers at once: one make at a time, or one test runs the
    # binary while the other's make is still writing it ("Text file busy").
    with open(TARGET.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(["make", "-s", "-C", str(REPO), f"CLANG={CLANG}", str(TARGET.relative_to(REPO))],
                                capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return TARGET


def fuzz(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    inherited_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return subprocess.run([str(build_target()), "-close_fd_mask=3", f"-rss_limit_mb={RSS_LIMIT_MB + inherited_mb}",
                           f"-malloc_limit_mb={RSS_LIMIT_MB}", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_corpus_replays_without_a_crash(tmp_path):
    seeds = sorted(CORPUS.iterdir())
    assert len(seeds) >= 10
    result = fuzz([str(s) for s in seeds], tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr[-4000:]


def test_fuzz_option_parser(tmp_path):
    seconds = int(os.environ.get("RINGSUM_FUZZ_SECONDS", "0"))
    budget = [f"-max_total_time={seconds}"] if seconds else [f"-runs={os.environ.get('RINGSUM_FUZZ_RUNS', '300000')}"]
    work = tmp_path / "corpus"
    work.mkdir()
    result = fuzz([*budget, "-print_final_stats=1", str(work), str(CORPUS)], tmp_path, timeout=seconds + 300)
    crashes = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "leak-", "timeout-", "oom-")))
    assert result.returncode == 0 and not crashes, (
        f"fuzzer found {crashes}: copy them into {CORPUS} and report them\n{result.stderr[-4000:]}")
    stats = dict(re.findall(r"^stat::(\w+):\s+(\d+)", result.stderr, re.M))
    print(f"\nfuzz_options: {stats['number_of_executed_units']} executions, "
          f"{stats['average_exec_per_sec']} exec/s, {stats['new_units_added']} new units, 0 crashes")
    assert int(stats["number_of_executed_units"]) > 0
