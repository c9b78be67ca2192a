"""The verdicts (harness/stats.py, harness/judge/verdict.py) on runs tables built row by row: the speed
limit is per round the fastest reader, named; a command faster than it is a finding; a tie is a
tie; summary.txt and summary.json say so. Real runs of the same code: test_harness_run.py
(test_limit_group_and_headline) and test_analysis_report.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from harness import stats
from harness.judge import decision
from harness.judge import verdict
from harness.judge.speed_limit import limit_ratios, speed_limit
from harness.judge.results import FIXED, RunRecord, RunsWriter, read_runs

pytestmark = pytest.mark.independent

SIZE = 1 << 30


def record(label: str, tool: str, rnd: int, wall: float | None, fio_runtime: float | None = None,
           exit_code: int = 0, read: int = SIZE) -> RunRecord:
    fields = dict.fromkeys(FIXED)
    fields.update(label=label, tool=tool, variant=tool, group=tool, extra="", file="/data/f.bin",
                  file_size=SIZE, cache="cold", round=rnd, position=0, wall_s=wall, bytes=read,
                  throughput_Bps=SIZE / wall if wall else None, exit_code=exit_code,
                  hash_ok=True if tool in ("hasher", "b3sum") and exit_code == 0 else None,
                  fio_runtime_s=fio_runtime, started_at="2026-11-23T00:00:00Z", error="")
    return RunRecord(**fields, knobs={})


def runs_table(tmp_path: Path, rows: list[RunRecord]):
    """The rows written to runs.csv and read back as ringsum does."""
    with RunsWriter(tmp_path / "runs.csv") as writer:
        for row in rows:
            writer.append(row)
    return read_runs(tmp_path)


# --- harness/stats.py ---

def test_order_statistic_interval_for_the_median():
    five = stats.median_interval([5.0, 1.0, 4.0, 2.0, 3.0])
    assert (five.median, five.low, five.high, five.n) == (3.0, 1.0, 5.0, 5)
    assert five.confidence == pytest.approx(1 - 2 / 32)  # five values cannot give 95%: min-max, 93.75%
    fifteen = stats.median_interval(range(1, 16))
    assert (fifteen.low, fifteen.high) == (4, 12)  # P(Binomial(15, 1/2) <= 3) = 576 / 32768
    assert fifteen.confidence == pytest.approx(1 - 2 * 576 / 32768)
    assert stats.median_interval([3.0, math.nan, 1.0]).n == 2
    assert stats.median_interval([]).n == 0 and stats.outcome(stats.median_interval([])) == "unknown"


def test_paired_ratio_drops_missing_rounds_and_is_deterministic():
    a, b = [1.0, 2.0, math.nan, 4.0, 5.0, 6.0], [1.0, 1.0, 1.0, 2.0, 2.5, 0.0]
    ratio = stats.paired_ratio(a, b)
    assert ratio == stats.paired_ratio(a, b)
    assert (ratio.n, ratio.median, ratio.low, ratio.high) == (4, 2.0, 1.0, 2.0)
    assert stats.outcome(ratio) == "tie" and stats.is_tie(ratio)
    with pytest.raises(ValueError, match="equal lengths"):
        stats.paired_ratio([1.0], [1.0, 2.0])


def test_signed_rank_distribution_is_the_exact_one():
    from itertools import product

    for n in (1, 4, 7):
        sums = [sum(r for r, s in zip(range(1, n + 1), signs) if s) for signs in product((0, 1), repeat=n)]
        exact = [sum(x <= w for x in sums) / 2 ** n for w in range(n * (n + 1) // 2 + 1)]
        assert stats._signed_rank_cdf(n) == pytest.approx(exact)


def test_shift_interval_is_hodges_lehmann_with_the_signed_rank_interval():
    three = stats.shift_interval([1.0, 2.0, 3.0])
    assert three.median == 2.0 and (three.low, three.high) == (1.0, 3.0)  # 3 values: min-max, 75%
    assert three.confidence == pytest.approx(0.75)
    eight = stats.shift_interval([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 100.0], 0.99)
    assert (eight.low, eight.high) == (0.0, 100.0) and eight.confidence == pytest.approx(1 - 2 / 256)
    assert eight.median == 3.5  # one wild value moves it as little as a median
    ten = stats.shift_interval(range(10), 0.95)  # P(W <= 8) = 25/1024 for n = 10
    assert ten.confidence == pytest.approx(1 - 2 * 25 / 1024)
    i, j = [a for a in range(10) for b in range(a, 10)], [b for a in range(10) for b in range(a, 10)]
    walsh = sorted((a + b) / 2 for a, b in zip(i, j))
    assert (ten.low, ten.high) == (walsh[8], walsh[-9])
    assert stats.shift_interval([]).n == 0


def test_shift_interval_is_narrower_than_the_median_interval_and_still_covers():
    rng = np.random.default_rng(7)
    narrower, covered = 0, 0
    for _ in range(400):
        x = 0.1 * rng.standard_normal(60)
        shift, med = stats.shift_interval(x, 0.95), stats.median_interval(x, 0.95)
        narrower += shift.high - shift.low < med.high - med.low
        covered += shift.low <= 0.0 <= shift.high
    assert narrower > 300
    assert 0.92 <= covered / 400 <= 0.99


def test_paired_shift_is_a_ratio_of_the_pairs():
    ratio = stats.paired_shift([2.2, 1.1, 3.3, math.nan, 4.4], [2.0, 1.0, 3.0, 1.0, 0.0])
    assert ratio.n == 3 and ratio.median == pytest.approx(1.1) and ratio.low == pytest.approx(1.1)
    with pytest.raises(ValueError, match="equal lengths"):
        stats.paired_shift([1.0], [1.0, 2.0])


# --- the speed limit ---

READERS = ["cat", "dd bs=2M", "fio bs=512K iodepth=2 direct=1"]


def test_limit_is_per_round_the_fastest_reader_and_names_it(tmp_path):
    cat = [0.50, 0.40, 0.50, 0.40, 0.50, 0.40, 0.50]
    dd = [0.45, 0.45, 0.45, 0.45, 0.45, 0.45, 0.45]
    fio_runtime = [0.60, 0.60, 0.60, 0.60, 0.60, 0.60, 0.30]  # its wall time (0.9 s) does not count
    rows = []
    for r in range(1, 8):
        rows += [record("cat", "cat", r, cat[r - 1]), record("dd bs=2M", "dd", r, dd[r - 1]),
                 record(READERS[2], "fio", r, 0.9, fio_runtime[r - 1])]
    rows += [record("dd bs=64K", "dd", 1, 0.01, exit_code=1),  # failed: does not count
             record("fio bs=2M iodepth=8 direct=1", "fio", 1, 0.9, 0.01, read=SIZE // 2)]  # half the file
    limit = speed_limit(runs_table(tmp_path, rows))
    assert limit.per_round == {1: 0.45, 2: 0.40, 3: 0.45, 4: 0.40, 5: 0.45, 6: 0.40, 7: 0.30}
    assert limit.set_in_round == {1: "dd bs=2M", 2: "cat", 3: "dd bs=2M", 4: "cat", 5: "dd bs=2M",
                                  6: "cat", 7: READERS[2]}
    assert (limit.set_by, limit.set_by_rounds) == ("dd bs=2M", 3)  # 3 rounds each: the faster median
    assert limit.best_reader == "dd bs=2M" and limit.readers["cat"] == 0.5
    assert limit.seconds == 0.40 and limit.Bps == SIZE / 0.40
    assert (limit.estimate.low, limit.estimate.high) == (0.30, 0.45)


def test_a_hasher_faster_than_the_limit_is_a_finding_a_reader_never_is(tmp_path):
    rows = []
    for r in range(1, 6):
        rows += [record("cat", "cat", r, 0.50), record("dd bs=2M", "dd", r, 0.40 + 0.2 * (r % 2)),
                 record("fast", "hasher", r, 0.35), record("slow", "hasher", r, 0.70),
                 record("xxhsum", "xxhsum", r, 0.60)]
    runs = runs_table(tmp_path, rows)
    ratios = limit_ratios(runs)
    assert all(ratios[lbl].low >= 1.0 for lbl in ("cat", "dd bs=2M"))
    assert ratios["fast"].median == pytest.approx(0.35 / 0.5)
    h = verdict.headline(runs, "cold")
    assert [v.label for v in h.faster_than_limit] == ["fast"]
    text = verdict.summarize(runs, "cold")
    assert "FINDING:    fast is faster than the speed limit (0.700 [0.700, 0.875] x its time)" in text


def test_a_hasher_that_ties_with_the_limit_is_no_finding(tmp_path):
    """A median under the limit whose interval holds 1 is at the limit, not past it."""
    rows = []
    for r, t in enumerate([0.45, 0.55, 0.47, 0.52, 0.48], 1):
        rows += [record("cat", "cat", r, 0.50), record("close", "hasher", r, t)]
    h = verdict.headline(runs_table(tmp_path, rows), "cold")
    assert h.vs_limit.median < 1.0 and h.vs_limit.low < 1.0 < h.vs_limit.high
    assert h.faster_than_limit == []
    assert "FINDING" not in verdict.summarize(runs_table(tmp_path, rows), "cold")


# --- the headline: a tie is a tie ---

def _race(tmp_path: Path, a: list[float], b: list[float]):
    rows = []
    for r, (ta, tb) in enumerate(zip(a, b), 1):
        rows += [record("cat", "cat", r, 0.40), record("A", "hasher", r, ta), record("B", "hasher", r, tb),
                 record("C", "hasher", r, 0.60), record("b3sum", "b3sum", r, 0.50)]
    return runs_table(tmp_path, rows)


def test_interleaved_equal_times_are_a_tie(tmp_path):
    runs = _race(tmp_path, [0.44, 0.45, 0.44, 0.45, 0.44, 0.45, 0.44], [0.45, 0.44, 0.45, 0.44, 0.45, 0.44, 0.45])
    h = verdict.headline(runs, "cold", {"A": ["/bin/a", "--x", "/data/f.bin"]})
    assert h.use == "A" and h.runner_up.label == "B" and h.runner_up.outcome == "tie"
    assert h.tied == ["B"]
    lines = verdict.summarize(runs, "cold", {"A": ["/bin/a", "--x", "/data/f.bin"]}).splitlines()
    assert "  runner-up:  B: winner/runner-up 0.978 [0.978, 1.023]: TIE" in lines
    assert lines[lines.index("  fastest:    A") - 1] == (
        "  decision:   no winner after 7 rounds: 2 hashers are within noise (A; B); more than "
        "70 more rounds would be needed to separate them; take A, the one that sets the fewest options; "
        "it beats `b3sum` (0.88 [0.88, 0.90] x its time)")
    assert "  command:    /bin/a --x /data/f.bin" in lines


def test_a_clearly_faster_hasher_is_real(tmp_path):
    runs = _race(tmp_path, [0.40, 0.41, 0.40, 0.42, 0.40], [0.45, 0.46, 0.45, 0.47, 0.44])
    h = verdict.headline(runs, "cold")
    assert h.use == "A" and h.runner_up.outcome == "faster" and h.tied == []
    text = verdict.summarize(runs, "cold")
    assert "winner/runner-up 0.891 [0.889, 0.909]: the difference is real" in text
    assert ("  decision:   use A: faster than every other hasher after 5 rounds (its time / the runner-up B's: "
            "0.891 [0.889, 0.909], min to max of 5 rounds: 93.75%); against `b3sum` 0.80 [0.80, 0.84] x its time, "
            "undecided: 5 rounds give at most 93.8% (min to max), 95% takes 6 or more\n  use:        A\n") in text
    assert "x the time of `b3sum`: UNDECIDED, too few rounds" in text


def test_the_decision_answers_whether_the_hasher_beats_b3sum(tmp_path):
    """One hasher and b3sum is a question, not "the only hasher in the run": the decision says whether
    it beats b3sum at the run's confidence, that b3sum beats it (and to use b3sum), a tie, or that the
    rounds run cannot reach that confidence (issue 40)."""
    def decision(a: list[float], b3: list[float]) -> str:
        rows = []
        for r, (ta, tb) in enumerate(zip(a, b3), 1):
            rows += [record("cat", "cat", r, 0.30), record("A", "hasher", r, ta), record("b3sum", "b3sum", r, tb)]
        own = tmp_path / f"run-{len(list(tmp_path.iterdir()))}"  # a runs table of its own each
        own.mkdir()
        return dict(verdict.headline(runs_table(own, rows), "cold").items())["decision"]

    assert decision([0.40] * 7, [0.50, 0.51, 0.50, 0.52, 0.50, 0.51, 0.50]) == \
        "use A; it beats `b3sum` (0.80 [0.77, 0.80] x its time)"
    assert decision([0.50, 0.51, 0.50, 0.52, 0.50, 0.51, 0.50], [0.40] * 7) == \
        "use `b3sum`: it beats A, the fastest hasher here, after 7 rounds (A's time / its: 1.25 [1.25, 1.30])"
    assert decision([0.40, 0.42, 0.40, 0.42, 0.40, 0.42, 0.40], [0.41] * 7) == \
        "use A; not told apart from `b3sum` after 7 rounds (0.98 [0.98, 1.02] x its time)"
    assert decision([0.40, 0.41, 0.40], [0.45, 0.44, 0.46]) == (
        "use A; against `b3sum` 0.89 [0.87, 0.93] x its time, undecided: 3 rounds give at most 75.0% "
        "(min to max), 95% takes 6 or more")


def test_no_winner_says_how_many_more_rounds_and_takes_the_simplest(tmp_path):
    a = [0.440, 0.452, 0.437, 0.455, 0.441, 0.450, 0.439, 0.447]
    b = [0.446, 0.449, 0.446, 0.452, 0.449, 0.446, 0.447, 0.451]
    d = verdict.headline(_race(tmp_path, a, b), "cold").decision
    assert d.kind == "no_winner" and d.winner == "A" and d.contenders == ["A", "B"] and d.take == "A"
    ratio = d.runner_up_ratio
    assert ratio.low < 1 < ratio.high
    lost = sum(x >= y for x, y in zip(a, b)) / 8  # A not faster in 3 of 8 rounds
    assert lost == 3 / 8 and d.more_rounds is not None
    n = 8 + d.more_rounds  # the fewest rounds at which a like share of losses fits the interval
    assert lost * n <= stats.order_index(n) - 1 and lost * (n - 1) > stats.order_index(n - 1) - 1
    assert f"about {d.more_rounds} more rounds would likely separate A from B; take A" in d.text()
    assert d.to_json()["winner"] is None and d.to_json()["fastest"] == "A"
    times = {"u bs=4M qd=8": dict(enumerate(a)), "u defaults": dict(enumerate(b)), "v bs=1M": dict(enumerate(b))}
    tied = decision.decide(times, list(times))
    assert tied.contenders == ["u bs=4M qd=8", "u defaults", "v bs=1M"] and tied.take == "u defaults"
    assert "(u bs=4M qd=8; u defaults; v bs=1M)" in tied.text()


def test_a_stricter_confidence_decides_later(tmp_path):
    """The same rounds that decide at 95% do not at the confidence of one of ten looks (99.5%)."""
    runs = _race(tmp_path, [0.40, 0.41, 0.40, 0.42, 0.40, 0.41], [0.45, 0.46, 0.45, 0.47, 0.44, 0.46])
    assert verdict.headline(runs, "cold").decision.kind == "winner"
    strict = verdict.headline(runs, "cold", confidence=0.995).decision
    assert strict.kind == "no_winner" and strict.confidence == 0.995 and strict.contenders == ["A", "B", "C"]
    assert strict.more_rounds == 3  # 9 rounds are the fewest whose [min, max] covers 99.5%


def test_more_rounds_estimate_and_its_limits():
    won_all = [-0.05] * 5  # 5 rounds, all won: only the confidence is not reached yet (6 needed for 95%)
    assert decision.more_rounds(won_all) == (1, "") and stats.order_index(5) == 0 < stats.order_index(6)
    assert decision.more_rounds(won_all, 0.995)[0] == 4  # 9 rounds: [min, max] covers 99.6%
    lost_a_fifth = [0.02, -0.03, -0.03, -0.03, -0.03] * 4  # 20 rounds, 4 lost: k(20) = 6 already fits
    more, _ = decision.more_rounds(lost_a_fifth[:10])  # 10 rounds, 2 lost: k(10) = 2 does not
    assert more is not None and 0.2 * (10 + more) <= stats.order_index(10 + more) - 1
    assert decision.more_rounds([0.001, -0.002, 0.003, 0.0, -0.001])[0] is None  # under RESOLUTION
    assert "too few" in decision.more_rounds([0.1, 0.2])[1]
    even = decision.more_rounds([-0.1, -0.1, -0.1, 0.1, 0.1, 0.1, 0.1])
    assert even[0] is None and "wins no more rounds than it loses" in even[1]
    far = decision.more_rounds([-0.05, -0.05, 0.05, -0.05, 0.05, -0.05, -0.05])  # lost 2 of 7
    assert 10 < far[0] < 40 and 2 / 7 * (7 + far[0]) <= stats.order_index(7 + far[0]) - 1
    assert 2 / 7 * (6 + far[0]) > stats.order_index(6 + far[0]) - 1


def test_a_stricter_decision_and_its_runner_up_line_agree(tmp_path):
    """A run that looked several times decides at its stricter confidence; the runner-up line is the
    decision's (the same hasher, the same interval) and says 'TIE' where the decision finds no winner."""
    runs = _race(tmp_path, [0.40, 0.41, 0.40, 0.42, 0.40, 0.41], [0.45, 0.46, 0.45, 0.47, 0.44, 0.46])
    h = verdict.headline(runs, "cold", confidence=0.995)
    assert h.decision.kind == "no_winner" and h.runner_up.label == h.decision.runner_up
    assert h.runner_up.ratio == h.decision.runner_up_ratio and h.runner_up.outcome == "tie"
    items = dict(h.items())
    assert items["runner-up"].endswith(": TIE") and "the decision, the runner-up and vs b3sum at 99.50%" in items["intervals"]


def test_nothing_to_decide_says_whether_hashers_failed_or_none_ran() -> None:
    """A run of commands only (`ringsum bench 'CMD'`) has no hasher, which is not a failure; a run
    whose hashers all failed says so."""
    times = {"cat": {1: 1.0, 2: 1.1}}
    none = decision.decide(times, [])
    assert none.kind == "none" and none.text() == "no hasher in the run: nothing to decide"
    failed = decision.decide(times, ["uring_b3sum defaults"])
    assert failed.kind == "none" and failed.text() == "no hasher ran successfully: nothing to decide"
