"""`ringsum history`: the store, PELT's change points, and the page. The store here is filled from
a kept A/A run directory (docs/decisions/aa-run: a build beside an identical reference build) as
twelve made-up commits, the last five with every ratio 20% higher: the change the page must mark,
with its interval, and nowhere else."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from analysis.history_page import write_page
from harness.history import store
from harness.history.changes import changes, noise, pelt

pytestmark = pytest.mark.independent

REPO = Path(__file__).resolve().parent.parent
KEPT = REPO / "docs" / "decisions" / "aa-run"
LABEL = "uring_b3sum bs=4M qd=8 buf=16"


def test_pelt_finds_a_step_and_nothing_in_noise():
    rng = np.random.default_rng(3)
    flat = np.log(0.020 * (1 + 0.01 * rng.standard_normal(20)))
    assert pelt(list(flat)) == []
    stepped = np.log(np.r_[np.full(10, 0.020), np.full(10, 0.024)] * (1 + 0.01 * rng.standard_normal(20)))
    assert pelt(list(stepped)) == [10]
    assert pelt([0.0]) == [] and noise([0.0]) == 0.01
    two = [0.0] * 6 + [0.3] * 6 + [0.0] * 6
    assert pelt(two, sigma=0.01) == [6, 12]


def test_a_change_has_its_size_and_interval():
    rng = np.random.default_rng(4)
    rounds = [list(0.020 * (1 + 0.02 * rng.standard_normal(15))) for _ in range(6)]
    rounds += [list(0.025 * (1 + 0.02 * rng.standard_normal(15))) for _ in range(6)]
    (c,) = changes([float(np.median(r)) for r in rounds], rounds)
    assert c.index == 6 and c.low < c.ratio < c.high and 1.15 < c.low and c.high < 1.35


def _store(tmp_path: Path) -> Path:
    points = store.points_of(KEPT)
    assert LABEL in points and points[LABEL].n == 20 and "baseline:" + LABEL not in points
    fingerprint = json.loads((KEPT / "meta.json").read_text())["fingerprint"]
    history = tmp_path / "history"
    for i in range(12):
        factor = 1.2 if i >= 7 else 1.0
        scaled = {lbl: replace(p, ratio=p.ratio * factor, low=p.low * factor, high=p.high * factor,
                               ratios=[r * factor for r in p.ratios]) for lbl, p in points.items()}
        store.save(history, store.Record(sha=f"{i:02d}" + "a" * 38, subject=f"commit {i}",
                                         committed_at=f"2026-11-{i + 1:02d}T00:00:00+00:00", depth=100 + i,
                                         measured_at="2026-11-25T00:00:00Z",
                                         fingerprint_id=fingerprint["fingerprint_id"], reference="ab" * 20,
                                         machine="the kept run's machine",
                                         config="configs/quick.toml", points=scaled))
    return history


def test_the_page_marks_the_step_with_its_interval(tmp_path):
    history = _store(tmp_path)
    machines = store.load(history)
    (records,) = machines.values()
    assert [r.subject for r in records] == [f"commit {i}" for i in range(12)]
    page = write_page(history, tmp_path / "page").read_text()
    assert page.count("<svg") == len(records[0].points)  # one chart per command
    assert f"<td>{LABEL}</td><td><code>07aaaaaaaaaa</code> commit 7</td><td class='slower'>x1.200" in page
    assert "commit 3</td><td class" not in page  # no change where there is none


def test_another_machine_is_a_line_of_its_own(tmp_path):
    history = _store(tmp_path)
    (record_dir,) = [p for p in history.glob("*/00*")]
    other = json.loads((record_dir / store.RECORD_JSON).read_text()) | {"fingerprint_id": "0therma4chine"}
    store.save(history, store.Record.from_json(other))
    machines = store.load(history)
    assert sorted(len(r) for r in machines.values()) == [1, 12]
    page = write_page(history, tmp_path / "page").read_text()
    assert page.count("<h2>Machine ") == 2


def test_a_broken_or_planted_store_is_one_line(tmp_path):
    history = _store(tmp_path)
    (some,) = [p for p in history.glob("*/03*")]
    (some / store.RECORD_JSON).write_text("{not json")
    r = subprocess.run([sys.executable, "-m", "harness", "history", "show", "--store", str(history)],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not a history record" in r.stderr
    planted = tmp_path / "planted"
    planted.symlink_to(history)
    with pytest.raises(store.StoreError, match="no history store here"):
        store.load(planted)
    assert math.isfinite(store.points_of(KEPT)[LABEL].ratio)


def test_a_step_its_own_rounds_do_not_show_is_no_change():
    """PELT sees the medians step by 10%; the rounds behind them spread by half either way, so the
    step's interval holds 1 and no change is marked."""
    rng = np.random.default_rng(5)
    medians = [1.0] * 4 + [1.1] * 4
    assert pelt([math.log(m) for m in medians]) == [4]
    rounds = [list(m * np.exp(0.5 * rng.standard_normal(5))) for m in medians]
    assert changes(medians, rounds) == []
