"""The ring-buffer protocol's spin model (hashers/model/ring.pml), checked through verify.sh.

Each test runs one `verify.sh --check ...`: spin -a, gcc, pan, and verify.sh's reading of
pan's report. The teeth tests ask for `pass` on deliberately broken variants and require a
FAIL, so a model whose assertions cannot fire, or a report reader that always says PASS,
fails here.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.independent

MODEL_DIR = Path(__file__).resolve().parent.parent / "hashers" / "model"
VERIFY = MODEL_DIR / "verify.sh"

# (queue depth, buffers, blocks): buffers = depth, < depth, > depth, buffers = 1, depth = 1;
# the blocks wrap the ring at least twice.
SMALL_CONFIGS = [(2, 2, 5), (1, 2, 5), (2, 1, 4), (3, 2, 5), (2, 3, 7)]


@pytest.fixture(scope="module", autouse=True)
def spin_installed():
    # spin is a declared dependency (Makefile APT_PACKAGES): missing it is a failure, not a skip.
    for tool in ("spin", "gcc"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} not found: the model checks need it; run `make deps-apt` "
                        f"(or apt-get install {tool})", pytrace=False)


def verify(expect, design, qd, buffers, blocks, kind, *knobs, env=None):
    """Run one check; returns (exit status, output), and prints the output for the log."""
    argv = ["bash", str(VERIFY), "--check", expect, design, str(qd), str(buffers), str(blocks),
            kind, *knobs]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})
    output = proc.stdout + proc.stderr
    print(output)
    return proc.returncode, output


@pytest.mark.parametrize("kind", ["safety", "liveness"])
@pytest.mark.parametrize("qd,buffers,blocks", SMALL_CONFIGS)
@pytest.mark.parametrize("design", ["SINGLE", "MULTI"])
def test_correct_designs_pass(design, qd, buffers, blocks, kind):
    status, output = verify("pass", design, qd, buffers, blocks, kind)
    assert status == 0, output
    line = output.splitlines()[0]
    assert line.startswith(f"PASS model={design} qd={qd} buffers={buffers} blocks={blocks} "
                           f"check={kind} states="), output
    assert int(re.search(r"states=(\d+)", line)[1]) > 0


@pytest.mark.parametrize("design,knob", [("SINGLE", "RETRIES=2"), ("MULTI", "RETRIES=2"),
                                         ("SINGLE", "PROCESS_IN_INNER_LOOP=1")])
def test_correct_designs_pass_with_knobs(design, knob):
    for kind in ("safety", "liveness"):
        status, output = verify("pass", design, 2, 2, 5, kind, knob)
        assert status == 0, output


def test_the_producer_deepening_once_keeps_the_protocol():
    """uring_b3sum's producer grows its depth and the cells it uses once (hashers/ring_depth.c): from
    one cell and one read to two of each, at any point it would sleep. Deepened one cell past the
    ring, the model must fail."""
    knobs = ("DEEPENS", "FIRST_CELLS=1", "DEEP_DEPTH=2")
    for kind in ("safety", "liveness"):
        status, output = verify("pass", "MULTI", 1, 2, 5, kind, *knobs)
        assert status == 0, output
    status, output = verify("pass", "MULTI", 1, 2, 5, "safety", *knobs, "BUG_DEEPEN_OVER")
    assert status == 1 and "found=assertion" in output.splitlines()[0], output


def test_multi_blocking_deadlocks_with_a_printed_trail():
    status, output = verify("deadlock", "MULTI_BLOCKING", 2, 2, 5, "safety")
    assert status == 0, output
    assert "found=deadlock" in output.splitlines()[0]
    assert "counterexample (spin -t -p -g" in output

    trail = output.split("counterexample", 1)[1].splitlines()
    waits = [i for i, line in enumerate(trail) if "wait for a completion" in line]
    assert waits, output
    # the fatal decision: the producer waits for a completion with nothing in flight
    last_wait = waits[-1]
    assert "in_flight=0" in trail[last_wait], output
    # no cell's read is in flight (each is available or hashed), so no completion can ever come
    assert re.search(r"cells: 0=(AVAILABLE|CONSUMED) 1=(AVAILABLE|CONSUMED); in_flight=0", trail[last_wait + 1]), output
    # then the trail ends with every process blocked: the producer in its wait for a CQE,
    # the consumer on its futex, nothing in flight and every cell consumed
    stuck = output.split("where each process is stuck:", 1)[1]
    assert re.search(r"producer +ring\.pml:\d+ +len\(cq\) > 0;", stuck), output
    assert re.search(r"consumer +ring\.pml:\d+ +consumer_woken", stuck), output
    assert re.search(r"at the end: cells: 0=CONSUMED 1=CONSUMED; in_flight=0", stuck), output


@pytest.mark.parametrize("kind,found", [("safety", "deadlock"), ("liveness", "cycle")])
def test_multi_blocking_fails_when_asked_to_pass(kind, found):
    status, output = verify("pass", "MULTI_BLOCKING", 2, 2, 5, kind)
    assert status == 1, output
    assert output.startswith("FAIL model=MULTI_BLOCKING"), output
    assert f"found={found}" in output.splitlines()[0], output


@pytest.mark.parametrize("design,bug,found", [
    ("MULTI", "BUG_REUSE_UNCONSUMED", "assertion"),
    ("SINGLE", "BUG_RETRY_AVAILABLE", "assertion"),
    ("MULTI", "BUG_RETRY_AVAILABLE", "assertion"),
    ("SINGLE", "BUG_DOUBLE_HASH", "assertion"),
    ("MULTI", "BUG_DOUBLE_HASH", "assertion"),
    ("MULTI", "BUG_LOST_WAKEUP", "deadlock"),
    ("MULTI", "BUG_AHEAD_UNREAD", "assertion"),
    ("MULTI", "BUG_AHEAD_MISCOUNT", "assertion"),
])
def test_deliberate_bugs_are_caught(design, bug, found):
    status, output = verify("pass", design, 2, 2, 5, "safety", bug)
    assert status == 1, output
    line = output.splitlines()[0]
    assert line.startswith(f"FAIL model={design}") and f"found={found}" in line, output


def test_a_search_out_of_memory_is_a_failure():
    """pan stops at -DMEMLIM with "reached -DMEMLIM bound", its search unfinished: verify.sh once
    read that as a pass (the full run's MULTI 4/4/8 RETRIES=2 and a check of the depth's growth)."""
    status, output = verify("pass", "MULTI", 2, 3, 7, "safety", env={"RINGSUM_MODEL_MEMLIM": "32"})
    assert status == 1, output
    assert "out of memory (-DMEMLIM=32)" in output.splitlines()[0], output


def test_a_search_cut_short_is_a_failure():
    status, output = verify("pass", "MULTI", 2, 2, 5, "safety", env={"RINGSUM_MODEL_DEPTH": "50"})
    assert status == 1, output
    assert "search depth too small" in output.splitlines()[0], output
