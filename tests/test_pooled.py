"""analysis.pooled: a kept A/A table made again from its run directories, and its one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RAM_AA = REPO / "docs" / "cold-path" / "ram-aa-zen3"


def pooled(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis.pooled", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def test_the_ram_aa_table_comes_back_from_its_runs() -> None:
    """By group (the wrappers'): the README's 123-round figures, which its own pairs.py printed."""
    r = pooled(*(str(RAM_AA / f"run-{i}") for i in (1, 2, 3)), "--pair", "w-deep", "w-defaults",
               "--pair", "w-same", "w-defaults")
    assert r.returncode == 0, r.stderr
    rows = {line.split(" | ")[0].lstrip("| "): line for line in r.stdout.splitlines()[2:]}
    kept = (RAM_AA / "pairs.txt").read_text()
    for row in ("w-deep / w-defaults", "w-same / w-defaults"):
        assert rows[row] in kept, rows[row]
    assert "1.002 [0.967, 1.025], 61 of 123 |" in rows["w-deep / w-defaults"]


def test_a_name_no_run_has_is_one_line(tmp_path: Path) -> None:
    r = pooled(str(RAM_AA / "run-1"), "--pair", "w-deep", "nothing")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no command labelled or grouped 'nothing'" in r.stderr
    r = pooled(str(tmp_path), "--pair", "a", "b")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not a run directory (no runs.csv)" in r.stderr


def test_one_setting_named_two_ways() -> None:
    """"X|Y": the first a run has; the row names both."""
    r = pooled(str(RAM_AA / "run-1"), "--pair", "deep16|w-deep", "w-defaults")
    assert r.returncode == 0, r.stderr
    assert "| deep16 or w-deep / w-defaults | 1.011 [0.872, 1.091], 20 of 41 |" in r.stdout
