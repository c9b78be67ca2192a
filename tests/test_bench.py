"""`python -m harness.bench` on a real run of a pair of builds (the same binary under both labels
here: the pairing and the ratios are what is checked, not which build is faster)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.bench import main as bench_main
from harness.bench import paired_builds
from harness.judge.results import command_stats, read_runs

REPO = Path(__file__).resolve().parent.parent
RINGSUM = REPO / ".venv" / "bin" / "ringsum"
URING_B3SUM = REPO / "build" / "bin" / "uring_b3sum"

CONFIG = f"""
[run]
rounds = 3
cache = "warm"
file_size = "2M"
timeout_s = 30

[[hashers]]
variant = "uring_b3sum"
trace = false

[[hashers]]
name = "blake3join-uring_b3sum"
variant = "uring_b3sum"
path = "{URING_B3SUM}"
trace = false

[baselines]
limit = false
b3sum = true
cat = true
"""


@pytest.fixture(scope="module")
def pair_run(tmp_path_factory) -> Path:
    if not RINGSUM.exists() or not URING_B3SUM.exists():
        pytest.skip("no .venv/bin/ringsum or build/bin (run `make deps all`)")
    base = tmp_path_factory.mktemp("bench")
    config = base / "pair.toml"
    config.write_text(CONFIG)
    proc = subprocess.run([str(RINGSUM), "run", str(config), "--dir", str(base), "--out", str(base / "out")],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = (base / "out").iterdir()
    return run_dir


def test_pairs_each_build_with_its_other_and_with_b3sum(pair_run):
    stats = command_stats(read_runs(pair_run)).set_index("label")
    (row,) = paired_builds(pair_run)
    assert row["command"] == "uring_b3sum bs=512K qd=4 buf=4"
    assert row["other"] == "BLAKE3's join" and row["n"] == 3
    mine = stats.loc[row["command"], "median_s"]
    theirs = stats.loc["blake3join-" + row["command"], "median_s"]
    assert row["this_s"] == pytest.approx(mine) and row["other_s"] == pytest.approx(theirs)
    assert row["ratio"] == pytest.approx(mine / theirs)
    assert row["this_vs_b3sum"] == pytest.approx(mine / stats.loc["b3sum", "median_s"])


def test_cli_prints_the_pair_and_refuses_what_it_cannot_pair(pair_run, tmp_path, capsys):
    assert bench_main([str(pair_run)]) == 0
    assert "BLAKE3's join" in capsys.readouterr().out
    assert bench_main([str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err
    proc = subprocess.run([sys.executable, "-m", "harness.bench", str(pair_run / "nope")], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
