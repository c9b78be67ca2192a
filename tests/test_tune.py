"""`ringsum tune`: a real tune of a small space on a 16 MiB file (warm), one over two conditions (every
core and one), the search on the default space with simulated measurements (the executions it would
use, counted without running), the budget and the one-line errors.

The real tunes are warm, with a lock and state of their own, and leave the system settings alone
(RINGSUM_SYSTEM_SETTINGS=leave): the module runs beside the machine line (tests/conftest.py), its
tests on one worker (the tune they read is made once)."""

from __future__ import annotations

import json
import math
import os
import shutil
import random
import subprocess
import sys
from pathlib import Path

import pytest

from harness.datasets.dataset import Dataset
from harness.pipeline.config import parse_config
from harness.pipeline.plan import build_plan
from harness.judge.results import read_runs
from harness.tune import wisdom
from harness.tune import search as tune
from harness.tune import space as tune_space
from hashers_support import beside_the_line_env

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("RINGSUM_BIN_DIR", REPO / "build" / "bin"))

SMALL_SPACE = """
[run]
rounds = 10
cache = "cold"
timeout_s = 30

[[hashers]]
variant = "liburing_b3sum_multithread"
block_size = ["256K", "1M"]
queue_depth = [2, 4]
direct = [true, false]

[[hashers]]
variant = "uring_b3sum"
block_size = ["256K", "1M"]
queue_depth = [2, 4]
direct = [true, false]
"""


pytestmark = [pytest.mark.independent, pytest.mark.together, pytest.mark.usefixtures("beside_the_line")]


def ringsum(*args: str, env: dict[str, str | None] | None = None) -> subprocess.CompletedProcess[str]:
    """`ringsum ARGS`; env's entries over this process's, None removing one."""
    merged = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True,
                          env=merged, timeout=300)


def b3sum_exe() -> str:
    local = REPO / ".tools" / "bin" / "b3sum"
    return str(local) if local.is_file() else "b3sum"


# --- a real tune ---

@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    if not (BIN / "uring_b3sum").is_file():
        pytest.skip("hashers not built (run `make`)")
    d = tmp_path_factory.mktemp("tune")
    (d / "space.toml").write_text(SMALL_SPACE)
    data = d / "data.bin"
    data.write_bytes(os.urandom(16 << 20))
    config_home = d / "config"
    r = ringsum("tune", "--space", str(d / "space.toml"), "--file", str(data), "--warm", "--out", str(d / "out"),
                "--install", env={**beside_the_line_env(d / "lock"), "XDG_CONFIG_HOME": str(config_home),
                                  "URING_B3SUM_WISDOM": None})
    assert r.returncode == 0, r.stderr
    (tune_dir,) = (d / "out").iterdir()
    return {"dir": tune_dir, "stdout": r.stdout, "file": data, "config_home": config_home}


def stage_dirs(tune_dir: Path) -> list[Path]:
    """The run directory of each stage, in order."""
    stages = sorted((p for p in tune_dir.iterdir() if p.is_dir() and p.name.startswith("stage-")),
                    key=lambda p: int(p.name.split("-")[1]))
    return [next(p.iterdir()) for p in stages]


def test_each_stage_is_a_run_directory(tuned):
    runs = stage_dirs(tuned["dir"])
    names = [r.parent.name.split("-", 2)[2] for r in runs]
    assert names[0] == "coarse" and names[-1] == "final"
    for r in runs:
        assert (r / "runs.csv").is_file() and (r / "meta.json").is_file()
        assert (r.parent.parent / f"{r.parent.name}.toml").is_file()


def test_an_execution_with_no_exit_code_counts_as_failed(tuned, tmp_path):
    """A stage whose runs.csv lost an execution's exit code and time (killed under it) is read, that
    command counted as failed, not a crash on pandas' missing value."""
    import csv
    from harness.tune import space
    stage = tmp_path / "stage"
    shutil.copytree(stage_dirs(tuned["dir"])[0], stage)
    with open(stage / "runs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    victim = next(r for r in rows if r["tool"] == "hasher")
    victim["exit_code"] = victim["wall_s"] = ""
    with open(stage / "runs.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert victim["label"] in space.read_stage(stage).failed


def test_winner_is_the_fastest_finalist_or_the_tie_break_pick(tuned):
    final = read_runs(stage_dirs(tuned["dir"])[-1])
    ok = final[(final["tool"] == "hasher") & (final["exit_code"] == 0) & (final["hash_ok"] == True)]  # noqa: E712
    hashers = ok[ok["label"] != "uring_b3sum defaults"]  # raced for --install, not a finalist
    medians = hashers.groupby("label")["wall_s"].median()
    assert len(medians) >= 2
    tuned_toml = (tuned["dir"] / "tuned.toml").read_text()
    config = parse_config(tuned_toml, "tuned.toml")
    plan = build_plan(config, [Dataset(str(tuned["file"]), 16 << 20)])
    (winner,) = [c for c in plan.commands if c.tool == "hasher"]  # warm mode adds b3sum for the limit
    # Tied with the fastest: the per-round ratio's interval contains 1; with at most 5 rounds that
    # interval is the ratios' min to max (harness/stats.py).
    walls = hashers.pivot(index="round", columns="label", values="wall_s").astype(float)
    assert len(walls) <= 5
    fastest = medians.idxmin()
    ratios = walls[fastest].to_numpy()[:, None] / walls.to_numpy()
    tied = [fastest] + [lbl for lbl, lo, hi in zip(walls.columns, ratios.min(axis=0), ratios.max(axis=0))
                        if lbl != fastest and lo <= 1 <= hi]
    data = json.loads((tuned["dir"] / "tune.json").read_text())
    assert sorted(data["tied"]) == (sorted(tied) if len(tied) > 1 else [])
    # the best uring_b3sum setting against uring_b3sum's defaults, in the same final rounds
    by_round = ok.pivot(index="round", columns="label", values="wall_s").astype(float)
    best = data["best_default"][0]
    versus = (by_round[best] / by_round["uring_b3sum defaults"]).dropna()
    assert data["best_default_vs_defaults"]["median"] == pytest.approx(versus.median())
    assert data["best_default_vs_defaults"]["high"] == pytest.approx(versus.max())  # 5 rounds: min to max
    if len(tied) > 1:
        memory = {lbl: plan_knobs(lbl) for lbl in tied}
        assert winner.label == min(tied, key=lambda lbl: (memory[lbl], medians[lbl]))
        assert "TIE: " in tuned["stdout"] and data["tie_break"] in tuned["stdout"]
    else:
        assert winner.label == fastest
    assert f"best: {winner.label}  median {medians[winner.label]:.3f} s" in tuned["stdout"]


def plan_knobs(label: str) -> tuple[int, int]:
    """Buffer memory and options switched on, from a hasher label ('... bs=1M qd=4 buf=8 direct')."""
    words = label.split()
    knobs = dict(w.split("=") for w in words if "=" in w)
    size = int(knobs["bs"][:-1]) << {"K": 10, "M": 20}[knobs["bs"][-1]]
    return size * int(knobs["buf"]), sum("=" not in w for w in words[1:])


def test_runs_used_are_counted_and_capped(tuned):
    runs = [read_runs(r) for r in stage_dirs(tuned["dir"])]
    hasher = sum(int((df["tool"] == "hasher").sum()) for df in runs)
    other = sum(int((df["tool"] != "hasher").sum()) for df in runs)
    grid = 16 * 10
    assert f"runs: {hasher} hasher executions (+{other} of readers and b3sum) vs {grid} for the full grid" in tuned["stdout"]
    assert hasher <= grid // 4


def test_tuned_options_are_accepted_by_uring_b3sum_and_install_writes_wisdom_for_the_work_tuned(tuned):
    """tuned.options works as an options file; --install made a record for a cached file (the tune ran
    warm) on this machine and device, holding none of the space's knobs: they are the ring's, and a
    cached file is hashed from memory, so the defaults stand (an options file used to force them on
    every kind of work)."""
    options = tuned["dir"] / "tuned.options"
    lines = [ln for ln in options.read_text().splitlines() if not ln.startswith("#")]
    assert lines and all(ln.startswith("--") for ln in lines)
    assert not (tuned["config_home"] / "ringsum" / "uring_b3sum.options").exists()
    (record,) = wisdom.read_records(tuned["config_home"] / "ringsum" / "wisdom")
    assert record.work == "cached-file" and record.options == () and record.by == tuned["dir"].name
    assert record.key == wisdom.key_of(BIN / "uring_b3sum", tuned["file"])
    want = subprocess.run([b3sum_exe(), str(tuned["file"])], capture_output=True, text=True, check=True).stdout
    env = {k: v for k, v in os.environ.items() if k not in ("URING_B3SUM_OPTIONS", wisdom.ENV)}
    for argv, extra in [([str(BIN / "uring_b3sum"), *" ".join(lines).split()], {"URING_B3SUM_OPTIONS": os.devnull}),
                        ([str(BIN / "uring_b3sum"), "--verbose"], {"XDG_CONFIG_HOME": str(tuned["config_home"])})]:
        got = subprocess.run([*argv, "--path", "ring", str(tuned["file"])], capture_output=True, text=True,
                             env={**env, **extra})
        assert got.returncode == 0 and got.stdout == want, got.stderr
    assert "wisdom for cached-file work" in got.stderr and ": the defaults" in got.stderr


# --- the search without running: simulated measurements ---

def landscape(c: tune.Command) -> float:
    """A smooth made-up cost with its optimum inside the space: 2M blocks, depth 8, buffers 2x."""
    t = 0.5 + 0.01 * (math.log2(c.block_size) - 21) ** 2 + 0.015 * (math.log2(c.queue_depth) - 3) ** 2
    t += 0.03 * bool(c.direct) + 0.01 * (c.buffers // c.queue_depth - 2) ** 2
    return t + {"liburing_b3sum_singlethread": 0.05, "uring_b3sum": 0.005}.get(c.variant, 0.0)


def simulated(space: tune.Space, noise: float = 0.0, seed: int = 1) -> tune.Measure:
    rng = random.Random(seed)

    def measure(stage: tune.Stage, base: str) -> tune.StageResult:
        walls = {c.label: [landscape(c) * (1 + rng.gauss(0, noise)) for _ in range(stage.rounds)]
                 for c in stage.points}
        walls["b3sum"] = [0.3] * stage.rounds  # warm mode adds b3sum to every stage: it must not rank
        if stage.defaults:  # a hasher execution too, as read_stage() counts it
            walls[f"{stage.defaults} defaults"] = [0.6] * stage.rounds
        hasher_runs = (len(stage.points) + bool(stage.defaults)) * stage.rounds
        return tune.StageResult(walls=walls, hasher_runs=hasher_runs,
                                baseline_runs=(len(stage.fio) + stage.b3sum) * stage.rounds,
                                elapsed_s=tune.estimate_s(space, stage),
                                times={lbl: dict(enumerate(ws, 1)) for lbl, ws in walls.items()})
    return measure


@pytest.fixture(scope="module")
def default_space() -> tune.Space:
    return tune_space.load_space(tune_space.DEFAULT_SPACE, file="/nonexistent/ringsum-tune.bin", size=1 << 30)


def test_default_space_coarse_grid_and_neighbours(default_space):
    coarse = default_space.coarse()
    assert {c.block_size for c in coarse} == {128 << 10, 512 << 10, 2 << 20}
    assert {c.queue_depth for c in coarse} == {2, 8, 32}
    assert all(c.buffers == c.queue_depth for c in coarse)
    point = default_space.by_label["liburing_b3sum_multithread bs=512K qd=8 buf=8 direct"]
    assert {c.label for c in default_space.neighbours(point)} == {
        f"liburing_b3sum_multithread {knobs}" for knobs in
        ("bs=256K qd=8 buf=8 direct", "bs=1M qd=8 buf=8 direct", "bs=512K qd=4 buf=4 direct",
         "bs=512K qd=16 buf=16 direct", "bs=512K qd=8 buf=16 direct", "bs=512K qd=8 buf=8")} | {
        "liburing_b3sum_singlethread bs=512K qd=8 buf=8 direct", "uring_b3sum bs=512K qd=8 buf=8 direct"}


@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_default_space_within_a_quarter_of_the_grid(default_space, noise):
    o = tune.search(default_space, simulated(default_space, noise), log=lambda _: None)
    assert o.grid_runs == len(default_space.points) * 5
    assert o.hasher_runs == sum(s["hasher_runs"] for s in o.stages) <= o.grid_runs // 4
    best = min(landscape(c) for c in default_space.points)
    winner = landscape(default_space.by_label[o.winner])
    if not o.tied:
        assert winner <= best * 1.03
    else:  # finalists the final stage cannot tell apart: the tie-break rule picks, and says so
        assert noise and o.winner in o.tied and o.tied[0] == o.finalists[0][0]
        memory = {lbl: default_space.by_label[lbl].block_size * default_space.by_label[lbl].buffers for lbl in o.tied}
        assert memory[o.winner] == min(memory.values())


def test_final_rounds_are_as_asked_within_the_cap(default_space):
    """--final-rounds: the final stage (the finalists against the defaults) runs as many rounds as
    asked where the cap and the budget leave room, and fewer, said as a cut, where they do not."""
    def final(o):
        return [s for s in o.stages if s["name"] == "final"][0]["rounds"]
    assert final(tune.search(default_space, simulated(default_space), log=lambda _: None)) == tune.FINAL_ROUNDS
    asked = tune.search(default_space, simulated(default_space), log=lambda _: None, final_rounds=15)
    assert final(asked) == 15 and asked.hasher_runs <= asked.grid_runs // 4
    capped = tune.search(default_space, simulated(default_space), budget_s=4 * 60, log=lambda _: None,
                         final_rounds=101)
    assert final(capped) < 101 and any(c.startswith("final: ") and "of 101 rounds" in c for c in capped.cuts)


def test_budget_cuts_stages_and_says_so(default_space):
    o = tune.search(default_space, simulated(default_space), budget_s=4 * 60, log=lambda _: None)
    assert sum(s["elapsed_s"] for s in o.stages) <= 4 * 60
    assert o.cuts and all("budget" in c for c in o.cuts)


def test_budget_too_small_says_the_minimum(default_space):
    with pytest.raises(tune.TuneError, match=r"budget 1\.0 min is too small: .* need about \d+ min"):
        tune.search(default_space, simulated(default_space), budget_s=60, log=lambda _: None)


def test_comparison_with_the_grid(default_space):
    measure = simulated(default_space)
    o = tune.search(default_space, measure, log=lambda _: None)
    c = tune.compare_full_grid(default_space, o, measure)
    assert c.grid_runs == o.grid_runs and c.ratio <= 1.03


# --- errors: one line, exit 2 ---

@pytest.mark.parametrize("args, needle", [
    (["--file", "/nonexistent/file.bin", "--warm"], "test file not found: /nonexistent/file.bin"),
    (["--size", "1M", "--warm", "--variant", "nosuch"], "unknown variant 'nosuch'"),
    (["--size", "1G", "--warm", "--budget", "0.1"], "budget 0.1 min is too small"),
    (["--size", "1M", "--warm", "--final-rounds", "2"], "--final-rounds: expected 3 to 101 rounds, got '2'"),
])
def test_errors_are_one_line(args, needle, tmp_path):
    r = ringsum("tune", "--dir", str(tmp_path), "--out", str(tmp_path / "out"), *args)
    assert r.returncode == 2 and needle in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "out").exists()


def test_cold_mode_needs_root(monkeypatch, tmp_path, capsys):
    from harness.machine import page_cache
    from harness.cli.main import main

    monkeypatch.setattr(page_cache, "is_root", lambda: False)
    assert main(["tune", "--size", "1M", "--dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "pass --warm" in capsys.readouterr().err


def test_a_partly_cached_file_is_no_kind_of_work_to_tune(tmp_path):
    (tmp_path / "s.toml").write_text(SMALL_SPACE.replace('cache = "cold"', 'cache = "cold"\ncached_share = 0.5'))
    r = ringsum("tune", "--space", str(tmp_path / "s.toml"), "--size", "1M", "--dir", str(tmp_path))
    assert r.returncode == 2 and "a file partly cached is neither" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_space_too_small_to_tune(tmp_path):
    (tmp_path / "s.toml").write_text(SMALL_SPACE.replace("rounds = 10", "rounds = 2"))
    r = ringsum("tune", "--space", str(tmp_path / "s.toml"), "--size", "1M", "--dir", str(tmp_path), "--warm")
    assert r.returncode == 2 and "too small to tune" in r.stderr


# --- a tune under conditions ---

def test_tune_picks_the_robust_configuration_over_conditions(tmp_path: Path) -> None:
    from harness.judge.verdict import robust_pick

    (tmp_path / "space.toml").write_text(SMALL_SPACE.replace('cache = "cold"', 'cache = "warm"'))
    data = tmp_path / "f.bin"
    data.write_bytes(os.urandom(8 << 20))
    r = ringsum("tune", "--space", str(tmp_path / "space.toml"), "--file", str(data), "--cores", "all,1",
                "--variant", "uring_b3sum", "--out", str(tmp_path / "out"),
                env={"RINGSUM_STATE_DIR": str(tmp_path / "state")})
    assert r.returncode == 0, r.stderr
    (tune_dir,) = (tmp_path / "out").iterdir()
    stages = sorted(p for p in tune_dir.iterdir() if p.is_dir())
    for stage in stages:
        (run_dir,) = [p for p in stage.iterdir() if p.is_dir()]
        assert set(read_runs(run_dir)["condition"]) == {"as-is", "1core"}
    (final,) = [p for p in next(p for p in stages if p.name.endswith("-final")).iterdir() if p.is_dir()]
    pick = robust_pick(read_runs(final))
    assert pick is not None
    summary = json.loads((tune_dir / "tune.json").read_text())
    assert summary["winner"] == pick.configuration == summary["robust"]["configuration"]
    assert f"robust pick over 2 conditions (as-is, 1core): {pick.configuration}" in r.stdout


@pytest.mark.parametrize("seed", range(1, 9))
def test_the_cap_counts_the_defaults_of_the_final_stage(tmp_path, seed):
    """SMALL_SPACE's cap is 40 hasher executions: tight enough that the final stage's run of
    uring_b3sum's defaults (a hasher execution per round, as read_stage() counts it) must be
    reserved from the start, or the search spends past the cap (it spent 45: the three finalists,
    the best uring_b3sum, and its defaults). Here uring_b3sum is behind, so the final stage adds its
    best setting to the finalists, and its defaults."""
    path = tmp_path / "space.toml"
    path.write_text(SMALL_SPACE)
    space = tune_space.load_space(path, file="/nonexistent/ringsum-tune.bin", size=16 << 20, warm=True)
    simulate = simulated(space, noise=0.05, seed=seed)

    def measure(stage: tune.Stage, base: str) -> tune.StageResult:
        r = simulate(stage, base)
        for c in stage.points:
            if c.variant == tune.DEFAULT_VARIANT:
                r.walls[c.label] = [w * 1.2 for w in r.walls[c.label]]
        return r
    o = tune.search(space, measure, log=lambda _: None)
    final = [s for s in o.stages if s["name"] == "final"][0]
    assert final["hasher_runs"] == (len(final["points"]) + 1) * final["rounds"]
    assert o.hasher_runs == sum(s["hasher_runs"] for s in o.stages) <= o.grid_runs // 4


def test_a_space_of_uring_b3sum_alone_keeps_the_rounds_a_record_needs(tmp_path):
    """configs/tune-trees-cached.toml (24 settings of uring_b3sum, cap 25): its finalists are all
    uring_b3sum, so none joins them. Counting one more anyway left the final 4 rounds, whose
    interval covers 87.5%, under the 90% wisdom needs: a cached tree of 1M files whose pick took
    0.87 of the defaults' time got no record (8f50662391e2). Now 5 rounds (93.75%)."""
    space = tune_space.load_space(REPO / "configs" / "tune-trees-cached.toml", file=str(tmp_path / "tree"),
                                  size=1 << 30, warm=True)
    assert set(space.variants) == {tune.DEFAULT_VARIANT}
    o = tune.search(space, simulated(space), log=lambda _: None)
    final = [s for s in o.stages if s["name"] == "final"][0]
    assert final["rounds"] == tune.FINAL_ROUNDS and 1 - 2 * 0.5 ** final["rounds"] >= wisdom.MIN_COVERAGE
    assert o.hasher_runs <= o.grid_runs // 4
    # the final its comment asks for is not cut by the cap (a 5-round grid left it 5 rounds whatever was asked)
    o = tune.search(space, simulated(space), log=lambda _: None, final_rounds=21)
    final = [s for s in o.stages if s["name"] == "final"][0]
    assert final["rounds"] == 21 and o.hasher_runs <= o.grid_runs // 4
