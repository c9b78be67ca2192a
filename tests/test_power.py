"""`make check-power` in small (harness/check/power.py): real builds with injected faults, one real run of
them in shuffled rounds, each condition judged by the check's own code, then made-up checks
resampled from the run's rounds. The queue depth forced to 1 is caught by the counters in every
check, real or resampled, and 5% more CPU work by the instruction counts; an identical build is not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.check import decide, power
from test_check_ab import CONFIG as CHECK_CONFIG, MODE

REPO = Path(__file__).resolve().parent.parent

CONFIG = CHECK_CONFIG.replace("rounds = 6", "rounds = 3")  # the A/B test's single-thread config, 3 rounds


def test_power_study_catches_depth1_and_not_an_identical_build(tmp_path: Path) -> None:
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(8 << 20))
    config = tmp_path / "power.toml"
    config.write_text(CONFIG.replace("@MODE@", MODE).replace("@FILE@", str(data)))
    env = {k: v for k, v in os.environ.items() if k != "RINGSUM_FAULTS"}
    out = tmp_path / "power"
    r = subprocess.run([sys.executable, "-m", "harness.check.power", "--config", str(config), "--repeats", "1",
                        "--conditions", "unchanged,depth1,slow5", "--resampled", "4", "--out", str(out)],
                       cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    real, resampled = (out / "power.md").read_text().split("Resampled checks")
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in real.splitlines() if line.startswith("| ")}
    # real checks: condition -> checks, caught, by instructions, by counters, by wall time pooled, ...
    assert rows["unchanged"][:4] == ["1", "0", "0", "0"], rows
    assert rows["depth1"][:2] == ["1", "1"] and rows["depth1"][3] == "1", rows
    assert rows["slow5"][:3] == ["1", "1", "1"], rows
    made_up = [line for line in resampled.splitlines() if line.startswith(("| depth1 ", "| unchanged ", "| slow5 "))]
    assert made_up == ["| unchanged | 4 | 0 | 0.00% |", "| slow5 | 4 | 4 | 100.00% |",
                       "| depth1 | 4 | 4 | 100.00% |"], resampled


def test_the_kept_study_judges_again_as_it_was_kept() -> None:
    """docs/ledger/README.md's gate table is drawn from the kept verdicts: the kept runs, judged again
    by today's check, give the same verdicts (the first runs of each kept study, for time)."""
    kept = sorted((REPO / "docs" / "ledger").glob("*/check-power/*/verdicts.json"))
    assert kept, "no kept check-power study"
    settings = decide.Settings(threshold=power.CI_THRESHOLD, confidence=power.CI_CONFIDENCE)
    for verdicts in kept:
        saved = {(v["run_dir"], v["condition"]): v["exit_code"] for v in json.loads(verdicts.read_text())}
        for run_dir in sorted((verdicts.parent / "runs").iterdir())[:2]:
            for v in power.judge(run_dir, settings):
                assert saved[(run_dir.name, v.condition)] == v.exit_code, (verdicts, run_dir.name, v.condition)
