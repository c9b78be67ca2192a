"""analysis.paired_table: docs/cold-path.md's tables, from the run directories kept beside it."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from analysis.paired_table import main, table

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
