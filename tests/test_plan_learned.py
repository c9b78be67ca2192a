"""`ringsum plan`'s estimate learns from earlier runs on the same machine: real run directories (the
kept runs of docs/cold-path, copied into a results directory as this machine's) make it closer to
what those runs took, and whatever else lies in the results directory is skipped, never followed."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from harness.catalog.variants import REPO_ROOT
from harness.datasets.dataset import Dataset
from harness.pipeline.config import load_config
from harness.pipeline.earlier_runs import learn, this_machine
from harness.pipeline.estimate import estimate
from harness.pipeline.plan import build_plan

pytestmark = pytest.mark.independent

KEPT = REPO_ROOT / "docs" / "cold-path"


def kept_as_this_machine(name: str, results: Path, dataset: str | Path, into: str | None = None) -> Path:
    """A copy of a kept run directory in `results`, its meta.json saying it ran on this machine."""
    run_dir = results / (into or name)
    shutil.copytree(KEPT / name, run_dir)
    meta = json.loads((run_dir / "meta.json").read_text())
    meta["fingerprint"]["fingerprint_id"] = this_machine(dataset)
    (run_dir / "meta.json").write_text(json.dumps(meta))
    return run_dir


def measured_s(run_dir: Path) -> float:
    """How long the run's timed executions took, first start to last end (no setup, no traced runs)."""
    rows = list(csv.DictReader((run_dir / "runs.csv").open()))
    starts = sorted((datetime.fromisoformat(r["started_at"].replace("Z", "+00:00")), r) for r in rows)
    (first, _), (last, row) = starts[0], starts[-1]
    return (last - first).total_seconds() + float(row["wall_s"] or 0)


def plan_of(run_dir: Path):  # type: ignore[no-untyped-def]
    """The plan of the run's own config, on a dataset of its size."""
    config = load_config(run_dir / "config.toml")
    assert not config.run.trace  # the measured span below holds no traced run
    (dataset,) = [f for f in json.loads((run_dir / "meta.json").read_text())["files"] if not f.get("copy_of")]
    return config, build_plan(config, [Dataset(dataset["path"], dataset["size"])])


@pytest.mark.parametrize("name", ["tuned-run", "hot-run", "adapt-run"])
def test_learned_estimate_is_closer_to_what_the_run_took(name, tmp_path):
    config, plan = plan_of(KEPT / name)
    run_dir = kept_as_this_machine(name, tmp_path, REPO_ROOT)
    learned = learn(tmp_path, this_machine(REPO_ROOT))
    assert learned is not None and learned.run_dirs == (run_dir,)
    nominal, learnt = estimate(plan, config), estimate(plan, config, learned)
    took = measured_s(run_dir)
    assert nominal.basis == "nominal" and learnt.basis == "learned"
    assert f"{len(plan.commands)} of {len(plan.commands)} commands measured before" in learnt.basis_text
    assert learnt.timed_s != pytest.approx(nominal.timed_s, rel=0.02)
    assert abs(learnt.timed_s - took) < abs(nominal.timed_s - took), (learnt.timed_s, nominal.timed_s, took)
    assert learnt.timed_s == pytest.approx(took, rel=0.10)


def test_a_different_cache_mode_or_size_teaches_nothing_about_the_commands(tmp_path):
    """A warm run says nothing of a cold plan's commands, nor a 1 GiB file of a 16 MiB one."""
    config, plan = plan_of(KEPT / "tuned-run")
    kept_as_this_machine("hot-run", tmp_path, REPO_ROOT)
    learned = learn(tmp_path, this_machine(REPO_ROOT))
    assert learned is not None
    assert estimate(plan, config, learned) == estimate(plan, config) and estimate(plan, config).basis == "nominal"
    warm_config, warm_plan = plan_of(KEPT / "hot-run")
    small = build_plan(warm_config, [Dataset("/x", 16 << 20)])
    assert all(learned.execution_s(c, "warm") is None for c in small.commands)
    assert all(learned.execution_s(c, "warm") is not None for c in warm_plan.commands)


def test_symlinks_and_broken_run_directories_are_skipped(tmp_path):
    me = this_machine(REPO_ROOT)
    elsewhere, results = tmp_path / "elsewhere", tmp_path / "results"
    results.mkdir()
    good = kept_as_this_machine("tuned-run", elsewhere, REPO_ROOT)
    (results / "linked-run").symlink_to(good)  # a planted symlink: never followed
    for name in ("meta-linked", "runs-linked", "fifo", "corrupt-meta", "corrupt-row", "short-row", "unfinished", "other-machine",
                 "no-runs", "empty-runs"):
        kept_as_this_machine("tuned-run", results, REPO_ROOT, into=name)
    (results / "meta-linked" / "meta.json").unlink()
    (results / "meta-linked" / "meta.json").symlink_to(good / "meta.json")
    (results / "runs-linked" / "runs.csv").unlink()
    (results / "runs-linked" / "runs.csv").symlink_to(good / "runs.csv")
    (results / "fifo" / "runs.csv").unlink()
    os.mkfifo(results / "fifo" / "runs.csv")  # opening it for reading would wait for a writer forever
    (results / "corrupt-meta" / "meta.json").write_bytes(b"\xff{not json")
    rows = (results / "corrupt-row" / "runs.csv").read_text().splitlines()
    header = rows[0].split(",")
    bad = rows[1].split(",")
    bad[header.index("wall_s")] = "fast"
    (results / "corrupt-row" / "runs.csv").write_text("\n".join([rows[0], ",".join(bad), *rows[2:]]) + "\n")
    (results / "short-row" / "runs.csv").write_text("\n".join([*rows, ",".join(rows[1].split(",")[:3])]) + "\n")
    for name, change in (("unfinished", {"finished_at": None}), ("other-machine", {"fingerprint": {"fingerprint_id": "0" * 12}})):
        meta = json.loads((results / name / "meta.json").read_text()) | change
        (results / name / "meta.json").write_text(json.dumps(meta))
    (results / "no-runs" / "runs.csv").unlink()
    (results / "empty-runs" / "runs.csv").write_text("")
    (results / "README.md").write_text("not a run\n")
    assert learn(results, me) is None
    assert learn(tmp_path / "missing", me) is None

    real = kept_as_this_machine("tuned-run", results, REPO_ROOT, into="real-run")
    with (real / "runs.csv").open("a") as f:
        f.write("torn,last,li")  # a kill while writing: the whole rows before it still count
    learned = learn(results, me)
    assert learned is not None and learned.run_dirs == (real,)


def ringsum_plan(config: Path, results: Path, data: Path, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", "plan", str(config), "--out", str(results),
                           "--dir", str(data), "--size", "1G", *more],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)


def test_plan_says_where_its_estimate_came_from(tmp_path):
    data, results = tmp_path / "data", tmp_path / "results"
    data.mkdir()
    results.mkdir()
    config = KEPT / "hot-run" / "config.toml"
    nominal = ringsum_plan(config, results, data)
    assert nominal.returncode == 0, nominal.stderr
    assert "estimate basis: nominal read 1.0 GB/s, 0.09 s overhead per execution (config run.nominal)" in nominal.stdout

    run_dir = kept_as_this_machine("hot-run", results, data / "ringsum-1G.bin")
    me = this_machine(data / "ringsum-1G.bin")
    learned = ringsum_plan(config, results, data)
    assert learned.returncode == 0, learned.stderr
    assert f"estimate basis: learned from 1 earlier run on this machine ({me}): 16 of 16 commands" in learned.stdout
    duration = [line for line in learned.stdout.splitlines() if line.startswith("estimated duration:")]
    assert duration and duration != [line for line in nominal.stdout.splitlines() if line.startswith("estimated duration:")]

    shown = json.loads(ringsum_plan(config, results, data, "--json").stdout)
    assert shown["estimate"]["basis"] == "learned" and shown["estimate"]["learned_from"] == [str(run_dir)]
    assert shown["estimate_s"] == shown["estimate"]["total_s"]
