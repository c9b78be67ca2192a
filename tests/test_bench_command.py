"""`ringsum bench` end to end, as a hyperfine user runs it: command lines with -L, --warmup,
--show-output and the three exports, on a small cached file (it takes the run lock: the machine line)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROUNDS, WARMUP = 2, 2


def test_bench_runs_command_lines_with_warmup_shown_output_and_exports(tmp_path: Path, b3sum_path: Path) -> None:
    counter = tmp_path / "executions"
    # each execution of the counted command leaves a line: the warm-up ones too
    counted = f"sh -c 'echo x >> {counter}; exec cat -- \"$0\" > /dev/null' {{file}}"
    out = {kind: tmp_path / f"bench.{kind}" for kind in ("json", "csv", "md")}
    r = subprocess.run(
        [sys.executable, "-m", "harness", "bench", "-L", "t", "1,2", f"{b3sum_path} --num-threads {{t}} {{file}}",
         counted, "-n", "b3", "-n", "counted", "--size", "2M", "--dir", str(tmp_path), "--rounds", str(ROUNDS),
         "--warmup", str(WARMUP), "--show-output", "--out", str(tmp_path / "runs"),
         "--export-json", str(out["json"]), "--export-csv", str(out["csv"]), "--export-markdown", str(out["md"])],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    labels = {"b3 t=1", "b3 t=2", "counted", "b3sum"}

    doc = json.loads(out["json"].read_text())
    assert {x["command"] for x in doc["results"]} == labels
    assert all(len(x["times"]) == ROUNDS and x["exit_codes"] == [0] * ROUNDS for x in doc["results"])
    assert {x["command"]: x.get("parameters") for x in doc["results"]}["b3 t=2"] == {"t": "2"}
    with open(out["csv"], newline="") as f:
        rows = list(csv.DictReader(f))
    assert {row["command"] for row in rows} == labels and {row["parameter_t"] for row in rows} == {"1", "2", ""}
    assert sum(line.endswith("| 1.00 |") for line in out["md"].read_text().splitlines()) == 1

    # warm: WARMUP untimed executions before each timed one
    assert counter.read_text().count("x") == ROUNDS * (1 + WARMUP)
    # --show-output: every hashing execution's line, as b3sum prints it
    data = tmp_path / "ringsum-2M.bin"
    shown = [line for line in r.stderr.splitlines() if line.endswith(f"  {data}")]
    assert len(shown) == 3 * ROUNDS and len({line.split()[0] for line in shown}) == 1
    run_dir = next((tmp_path / "runs").iterdir())
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["config"]["run"]["cache"] == "warm" and meta["config"]["run"]["warmup"] == WARMUP
    assert "[[commands]]" in (run_dir / "config.toml").read_text()
