"""`ringsum check --against BIN_DIR`: a build and its baseline build in the same rounds, judged
round by round (the paired figure) and by behaviour counters. Real runs of the real hashers;
the faults build (build/faults/bin) stands for a build with an injected regression, the
release build (build/bin, which ignores RINGSUM_FAULTS) for the baseline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.check import decide as check

REPO = Path(__file__).resolve().parent.parent
RELEASE = REPO / "build" / "bin"
FAULTS = REPO / "build" / "faults" / "bin"
MODE = "cold" if os.geteuid() == 0 else "warm"

CONFIG = """
[run]
rounds = 6
cache = "warm"
probe_cache = "@MODE@"
probes = 3
file = "@FILE@"
timeout_s = 30

[[hashers]]
variant = "liburing_b3sum_singlethread"
block_size = "128K"
queue_depth = 8

[baselines]
limit = false
"""


def _sample(times: list[float]) -> check.Sample:
    t = np.array(times)
    return check.Sample(t, np.ones_like(t), [("f", r + 1) for r in range(len(times))])


def test_paired_ratio_is_the_median_of_per_round_ratios() -> None:
    rng = np.random.default_rng(1)
    base = 0.020 * (1 + 0.5 * rng.random(25))  # rounds that differ by up to 50%
    slow = base * 1.10
    b, c, ratio = check.paired_ratio(_sample(list(base)), _sample(list(slow)), 0.99)
    assert ratio.n == 25 and ratio.median == pytest.approx(1.10)
    assert ratio.low == pytest.approx(1.10) and ratio.high == pytest.approx(1.10)  # pairing cancels the drift
    assert ratio.confidence >= 0.99
    assert check.decide(ratio.low, ratio.high, 0.03) == check.REGRESSION


def test_paired_ratio_of_a_tie_is_no_change_or_inconclusive_by_its_noise() -> None:
    """A tie's interval holds 1: no change where it lies inside ±3% (2% noise a round, 30 rounds),
    inconclusive where it reaches past (12% noise): never a regression."""
    rng = np.random.default_rng(2)
    base = 0.020 * (1 + 0.05 * rng.standard_normal(30))
    for noise, verdict in ((0.02, check.NO_CHANGE), (0.12, check.INCONCLUSIVE)):
        same = base * (1 + noise * np.random.default_rng(3).standard_normal(30))
        _, _, ratio = check.paired_ratio(_sample(list(base)), _sample(list(same)), 0.99)
        assert ratio.low < 1 < ratio.high
        assert check.decide(ratio.low, ratio.high, 0.03) == verdict


def test_paired_ratio_uses_only_rounds_in_which_both_ran() -> None:
    b = check.Sample(np.array([1.0, 1.0, 1.0]), np.ones(3), [("f", 1), ("f", 2), ("f", 3)])
    c = check.Sample(np.array([2.0, 2.0]), np.ones(2), [("f", 2), ("f", 4)])
    *_, ratio = check.paired_ratio(b, c, 0.95)
    assert ratio.n == 1


def _pooled(base: dict[str, list[float]], cur: dict[str, list[float]]) -> check.Comparison:
    def run(times: dict[str, list[float]]) -> check.RunData:
        return check.RunData(path=Path("ab"), fingerprint_id="x", cache="warm", runs=None, failures={},
                             samples={label: {"raw": _sample(t)} for label, t in times.items()}, ab_half=True)

    judged = [check.Comparison(label, "hasher", check.NO_CHANGE, estimates={"paired": check.Estimate("paired", 1, 1, 1, 1, 1)}) for label in base]
    return check.compare_pooled(judged, run(base), run(cur), check.Settings(threshold=0.03, confidence=0.99))


def test_pooled_figure_weighs_each_command_by_its_noise() -> None:
    rng = np.random.default_rng(3)
    n = 60
    quiet = {f"q{i}": list(0.02 * np.exp(0.05 * rng.standard_normal(n))) for i in range(2)}
    noisy = list(0.08 * np.exp(0.4 * rng.standard_normal(n)))
    base = {**quiet, "noisy": noisy}
    # every command 8% slower, each round with its own noise; the noisy one (40% a round) would
    # swamp an equal-weight mean, its weight keeps the quiet ones' evidence
    slow = {label: list(np.array(t) * 1.08 * np.exp((0.4 if label == "noisy" else 0.05) * rng.standard_normal(n)))
            for label, t in base.items()}
    pooled = _pooled(base, slow)
    e = pooled.estimates["paired"]
    assert pooled.verdict == check.REGRESSION, (e.ratio, e.low, e.high)
    assert 1.03 < e.low < 1.08 < e.high < 1.13
    same = {label: list(np.array(t) * np.exp((0.4 if label == "noisy" else 0.05) * rng.standard_normal(n)))
            for label, t in base.items()}
    unchanged = _pooled(base, same)
    assert unchanged.verdict == check.NO_CHANGE
    assert unchanged.estimates["paired"].low < 1 < unchanged.estimates["paired"].high


def test_pooled_figure_without_common_rounds_is_too_few() -> None:
    assert _pooled({"a": [1.0] * 3}, {"a": []}).verdict == check.TOO_FEW


def _ringsum(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ab")
    data = d / "data.bin"
    data.write_bytes(os.urandom(8 << 20))
    path = d / "ab.toml"
    path.write_text(CONFIG.replace("@MODE@", MODE).replace("@FILE@", str(data)))
    return path


def test_an_injected_io_regression_fails_the_check_and_an_unchanged_build_passes(config: Path, tmp_path: Path) -> None:
    # Timing thresholds wide open: on 6 rounds the counters must decide, and they must not flake.
    common = ["check", "--against", str(RELEASE), "--bin-dir", str(FAULTS), "--config", str(config),
              "--out", str(tmp_path), "--threshold", "90%", "--junit", str(tmp_path / "junit.xml")]
    injected = _ringsum(*common, env={"RINGSUM_FAULTS": "depth:1"})
    probes = "".join(p.read_text() for p in tmp_path.glob("*/counters.csv"))
    assert injected.returncode == 1, injected.stdout + injected.stderr + probes
    assert "peak_in_flight" in injected.stdout and "regression" in injected.stdout, injected.stdout + probes
    assert 'classname="ringsum.counters"' in (tmp_path / "junit.xml").read_text()
    unchanged = _ringsum(*common)
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    assert "A/B run" in unchanged.stdout and "paired" in unchanged.stdout
    runs = sorted(tmp_path.glob("*/runs.csv"))
    labels = runs[-1].read_text()
    assert "baseline:liburing_b3sum_singlethread bs=128K" in labels


def test_against_needs_a_config_and_a_directory(tmp_path: Path, config: Path) -> None:
    r = _ringsum("check", "--against", str(RELEASE), "--current", str(tmp_path))
    assert r.returncode == 2 and "needs --config" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = _ringsum("check", "--against", str(tmp_path / "nowhere"), "--config", str(config))
    assert r.returncode == 2 and "not a directory" in r.stderr
    r = _ringsum("check", "--against", str(RELEASE), "--baseline", "latest", "--config", str(config))
    assert r.returncode == 2 and "not allowed with" in r.stderr
    r = _ringsum("check", "--config", str(config))
    assert r.returncode == 2 and "give a baseline" in r.stderr


def test_a_finished_ab_run_is_judged_with_current_alone(config: Path, tmp_path: Path) -> None:
    run = _ringsum("run", str(config), "--against", str(RELEASE), "--out", str(tmp_path))
    assert run.returncode == 0, run.stderr
    (run_dir,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    r = _ringsum("check", "--current", str(run_dir), "--threshold", "90%")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "A/B run" in r.stdout
    plain = _ringsum("run", str(config), "--out", str(tmp_path / "plain"), "--rounds", "2")
    assert plain.returncode == 0, plain.stderr
    (plain_dir,) = list((tmp_path / "plain").iterdir())
    r = _ringsum("check", "--current", str(plain_dir))
    assert r.returncode == 2 and "not an A/B run" in r.stderr
