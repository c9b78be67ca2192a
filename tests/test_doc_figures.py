"""The measured figures of the docs are generated from the run directories kept under docs/
(analysis/doc_figures.py): the docs are in sync with them, a marker is filled from a run
directory, and a bad marker is one line naming the file and line."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from analysis import doc_figures

pytestmark = pytest.mark.independent

REPO = Path(__file__).resolve().parent.parent
KEPT = "docs/decisions/quick-run"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository root with one small kept run: summary.json, meta.json and runs.csv of a real one."""
    run = tmp_path / "docs" / "runs" / "small-run"
    run.mkdir(parents=True)
    for name in ("summary.json", "meta.json", "runs.csv"):
        shutil.copy(REPO / KEPT / name, run / name)
    return tmp_path


def generate(root: Path, *args: str) -> int:
    return doc_figures.main(["--root", str(root), *args])


def test_the_docs_are_in_sync_with_their_kept_runs(capsys):
    assert generate(REPO, "--check") == 0, capsys.readouterr().err


def test_a_marker_is_filled_from_the_run_directory(repo):
    page = repo / "docs" / "page.md"
    page.write_text("Limit <!-- fig docs/runs/small-run time limit -->?<!-- /fig --> and\n"
                    '<!-- fig docs/runs/small-run ratio "uring_b3sum bs=4M qd=8 buf=16" "b3sum" 3 -->?<!-- /fig -->,\n'
                    '<!-- fig docs/runs/small-run wins "uring_b3sum bs=4M qd=8 buf=16" "b3sum" -->?<!-- /fig -->.\n'
                    "<!-- machine docs/runs/small-run -->?<!-- /machine -->\n")
    assert generate(repo, str(page)) == 0
    text = page.read_text()
    assert "time limit -->0.498 s<!-- /fig -->" in text
    assert re.search(r'"b3sum" 3 -->0\.\d{3} \[0\.\d{3}, \d\.\d{3}\]<!-- /fig -->', text), text
    assert re.search(r'"b3sum" -->\d+ of \d+<!-- /fig -->', text), text
    assert "AMD EPYC" in text and "`68c61e3153fa`" in text and "2.16 GB/s" in text


def test_regenerating_changes_nothing_and_check_then_passes(repo):
    page = repo / "docs" / "page.md"
    page.write_text("<!-- fig docs/runs/small-run headline -->old<!-- /fig -->\n"
                    "<!-- table docs/runs/small-run ranking -->\n<!-- /table -->\n")
    assert generate(repo, "--check", str(page)) == 1
    assert "old" in page.read_text()  # --check writes nothing
    assert generate(repo, str(page)) == 0
    once = page.read_text()
    assert generate(repo, str(page)) == 0
    assert page.read_text() == once
    assert generate(repo, "--check", str(page)) == 0


@pytest.mark.parametrize("marker, problem", [
    ("<!-- fig docs/runs/small-run speed -->?<!-- /fig -->", "unknown figure 'speed'"),
    ('<!-- fig docs/runs/small-run time "cat -->?<!-- /fig -->', "bad query"),
    ("<!-- fig docs/runs/small-run wins cat -->?<!-- /fig -->", "wins takes 2 words after it, got 1"),
    ('<!-- fig docs/runs/small-run time "no such command" -->?<!-- /fig -->', "no command 'no such command'"),
    ("<!-- fig docs/runs/gone-run rounds -->?<!-- /fig -->", "no summary.json"),
    ("<!-- fig docs/runs/linked-run rounds -->?<!-- /fig -->", "linked-run is a symlink"),
    ("<!-- fig docs/runs/linking-run rounds -->?<!-- /fig -->", "linking-run/summary.json is a symlink"),
    ("<!-- fig results/small-run rounds -->?<!-- /fig -->", "not under docs/"),
    ("<!-- table docs/runs/small-run pie -->\n<!-- /table -->", "table marker wants"),
])
def test_a_bad_marker_is_one_line_naming_file_and_line(repo, capsys, marker, problem):
    runs = repo / "docs" / "runs"
    (runs / "linked-run").symlink_to(runs / "small-run")
    (runs / "linking-run").mkdir()
    (runs / "linking-run" / "summary.json").symlink_to(runs / "small-run" / "summary.json")
    shutil.copytree(repo / "docs" / "runs" / "small-run", repo / "results" / "small-run")
    page = repo / "docs" / "page.md"
    page.write_text(f"# A page\n\n{marker}\n")
    assert generate(repo, str(page)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fatal: docs/page.md:3: ") and problem in err, err
    assert page.read_text() == f"# A page\n\n{marker}\n"
