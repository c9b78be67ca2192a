"""analysis.paired_table: the kept runs' tables (docs/cold-path/*/README.md), from the run directories themselves."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from analysis.paired_table import _verdict, main, table, tuned_table
from harness.stats import Estimate

pytestmark = pytest.mark.independent   # reads kept run directories only

KEPT = Path(__file__).resolve().parents[1] / "docs" / "cold-path"


def test_a_row_is_the_rounds_paired() -> None:
    """The list run: `list` against b3sum, recomputed here from runs.csv by hand."""
    text = table(KEPT / "list-run")
    runs = pd.read_csv(KEPT / "list-run" / "runs.csv")
    wall = runs.pivot_table(index="round", columns="label", values="wall_s")
    by_hand = (wall["list"] / wall["b3sum"]).median()
    limit = wall[["cat", "cat jobs=16", "tar"]].min(axis=1)
    row = next(line for line in text.splitlines() if line.startswith("| list |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == f"{wall['list'].median():.3f} s"
    assert cells[2].startswith(f"{(wall['list'] / limit).median():.2f} [")
    assert cells[3].startswith(f"{by_hand:.2f} [") and cells[3].endswith(f"({(wall['list'] < wall['b3sum']).sum()} of 11)")
    assert "fingerprint `" in text and "`?`" not in text


def test_every_condition_and_b3sum_gets_its_column(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(KEPT / "hot-run")]) == 0
    out = capsys.readouterr().out
    assert re.findall(r"^\*\*(\S+)\*\*", out, re.M) == ["1core", "as-is"]
    assert out.count("| command | median | × limit | × b3sum (faster in) | × b3sum --num-threads 1 (faster in) |") == 2


def test_not_a_run_directory_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fatal: ") and err.count("\n") == 1


def test_the_tuned_table_is_a_row_a_condition_recomputed_by_hand() -> None:
    """The tuned run: each condition's fastest tuned shape by median, the defaults over it paired per
    round, the fastest reader by median, and the defaults' CPU time over the condition's cores
    against the limit, recomputed from runs.csv."""
    text = tuned_table(KEPT / "tuned-run")
    runs = pd.read_csv(KEPT / "tuned-run" / "runs.csv")
    rows = {cells[0]: cells for cells in ([c.strip() for c in line.strip("|").split("|")]
                                          for line in text.splitlines() if line.startswith("| ") and "---" not in line)}
    assert sorted(rows) == ["1core", "as-is", "condition", "ram", "ram+1core"]
    for condition, group in runs[runs["exit_code"] == 0].groupby("condition"):
        wall = group.pivot_table(index="round", columns="label", values="wall_s")
        tuned = [c for c in wall.columns if c.startswith("uring_b3sum bs=")]
        best = min(tuned, key=lambda c: wall[c].median())
        mine = wall[f"uring_b3sum defaults @{condition}"]
        reader = min((c for c in wall.columns if c.startswith(("cat", "dd"))), key=lambda c: wall[c].median())
        readers = wall[[c for c in wall.columns if c.startswith(("cat", "dd"))]]
        cores = 1 if condition.endswith("1core") else 2   # the tuned run's machine: 2 cores
        cpu = group.assign(cpu=group["user_s"] + group["sys_s"]).pivot_table(index="round", columns="label",
                                                                            values="cpu")
        cells = rows[condition]
        assert cells[3].endswith(f"({best.removeprefix('uring_b3sum ').split(' @')[0]})")
        assert cells[5].startswith(f"{(mine / wall[best]).median():.3f} [")
        assert cells[7].startswith(f"{(mine / wall[reader]).median():.2f} [")
        assert cells[7].endswith(f"({reader.split(' @')[0]})")
        floor = cpu[f"uring_b3sum defaults @{condition}"] / cores / readers.min(axis=1)
        assert cells[8].startswith(f"{floor.median():.2f} [")


@pytest.mark.parametrize(("low", "high", "said"), [
    (0.95, 1.03, "within 3%"), (0.95, 1.031, "not shown either way"), (1.031, 1.2, "more than 3% behind")])
def test_the_verdict_on_three_percent(low: float, high: float, said: str) -> None:
    assert _verdict(Estimate(median=(low + high) / 2, low=low, high=high, n=11, confidence=0.95)) == said


def test_a_run_without_a_tuned_group_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--tuned", str(KEPT / "hot-run")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fatal: ") and "group 'tuned'" in err and err.count("\n") == 1
