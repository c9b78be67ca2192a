"""`ringsum check` on synthetic run directories (no hashers run): the bootstrap, normalisation by
the same round's cat, verdicts and exit codes, JUnit XML and Markdown."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np
import pytest

from harness.check import decide
from harness.check import instructions
from harness.check import load
from harness.check import report as check_report
from harness.check import saved_runs
from harness.judge.results import RunRecord, RunsWriter

pytestmark = pytest.mark.independent

MIB8 = 8 << 20
HASHER = "liburing_b3sum_singlethread bs=512K qd=4 buf=4"


def record(label: str, tool: str, rnd: int, wall: float, **kw: object) -> RunRecord:
    fields = dict(label=label, tool=tool, variant=tool, group=tool, block_size=None, queue_depth=None,
                  buffers=None, direct=None, knobs={}, num_threads=None, mmap=None, extra="",
                  file="/data/f.bin",
                  file_size=MIB8, cache="cold", round=rnd, position=0, wall_s=wall, user_s=0.0,
                  sys_s=0.0, bytes=MIB8, throughput_Bps=MIB8 / wall, exit_code=0, resident_before=0.0,
                  hash_ok=True if tool in ("hasher", "b3sum") else None, fio_bw_Bps=None,
                  fio_runtime_s=None, started_at="2026-01-01T00:00:00.000Z")
    fields.update(kw)
    return RunRecord(**fields)  # type: ignore[arg-type]


def write_run(path: Path, records: list[RunRecord], fingerprint: str = "fp1") -> Path:
    path.mkdir(parents=True)
    with RunsWriter(path / "runs.csv") as w:
        for r in records:
            w.append(r)
    (path / "meta.json").write_text(json.dumps({"fingerprint": {"fingerprint_id": fingerprint},
                                                "finished_at": "2026-01-01T00:01:00Z",
                                                "started_at": "2026-01-01T00:00:00Z"}))
    return path


def rounds(hasher: list[float], cat: list[float] | None, label: str = HASHER) -> list[RunRecord]:
    recs = [record(label, "hasher", i + 1, w) for i, w in enumerate(hasher)]
    if cat is not None:
        recs += [record("cat", "cat", i + 1, w) for i, w in enumerate(cat)]
    return recs


STEADY = [0.010, 0.0102, 0.0098, 0.0101, 0.0099]
CAT = [0.005, 0.0051, 0.0049, 0.00505, 0.00495]


def verdicts(report: decide.Report) -> dict[str, str]:
    return {c.label: c.verdict for c in report.comparisons}


def test_bootstrap_is_seeded_and_brackets_the_ratio() -> None:
    rng = np.random.default_rng(0)
    b = decide.Sample(rng.normal(1.0, 0.05, 9), np.ones(9))
    c = decide.Sample(rng.normal(3.0, 0.1, 9), np.full(9, 2.0))
    one = decide.bootstrap_ratio(b, c, 0.95, 5000, np.random.default_rng(1))
    two = decide.bootstrap_ratio(b, c, 0.95, 5000, np.random.default_rng(1))
    assert one == two
    ratio, low, high = one
    assert low <= ratio <= high and 1.3 < low and high < 1.7


def test_decide_needs_the_whole_interval_beyond_the_threshold() -> None:
    """One vocabulary in check and compare: past the threshold, wholly inside it, or inconclusive."""
    assert decide.decide(1.06, 1.2, 0.05) == decide.REGRESSION
    assert decide.decide(1.04, 1.2, 0.05) == decide.INCONCLUSIVE
    assert decide.decide(0.8, 0.94, 0.05) == decide.IMPROVEMENT
    assert decide.decide(0.8, 0.96, 0.05) == decide.INCONCLUSIVE
    # a new user's 5-round check: "+13.9% [+1.7%, +24.9%]" was "no change" (issue "gate")
    assert decide.decide(1.017, 1.249, 0.03) == decide.INCONCLUSIVE
    # reaching past both thresholds it can tell nothing: a 3-round run against itself (issue 28)
    assert decide.decide(0.1, 10.09, 0.03) == decide.INCONCLUSIVE
    assert decide.decide(0.96, 1.04, 0.03) == decide.INCONCLUSIVE
    assert decide.decide(0.98, 1.02, 0.03) == decide.NO_CHANGE


def test_a_noisy_run_is_inconclusive_not_no_change(tmp_path: Path) -> None:
    """Rounds spread from half to twice the baseline: the interval holds both a 5% slowdown and a 5%
    speed-up, so the verdict says it cannot tell (and the exit stays 0: nothing was shown slower)."""
    base = write_run(tmp_path / "b", rounds(STEADY, CAT))
    noisy = write_run(tmp_path / "n", rounds([0.005, 0.02, 0.0075, 0.015, 0.01], CAT))
    report = decide.compare(load.check_data(base), load.check_data(noisy), decide.Settings())
    assert verdicts(report)[HASHER] == decide.INCONCLUSIVE and report.exit_code == 0
    assert "1 inconclusive" in check_report.format_table(report)


def test_parse_fraction() -> None:
    assert decide.parse_fraction("5%") == pytest.approx(0.05)
    assert decide.parse_fraction("0.1") == pytest.approx(0.1)
    with pytest.raises(ValueError):
        decide.parse_fraction("150%")


def test_slow_stretch_hitting_both_is_no_change_by_cat(tmp_path: Path) -> None:
    """The disk is twice as slow in the current run, for the hasher and cat alike: raw says
    regression, the verdict (÷cat, same round) says no change."""
    base = write_run(tmp_path / "b", rounds(STEADY, CAT))
    cur = write_run(tmp_path / "c", rounds([w * 2 for w in STEADY], [w * 2 for w in CAT]))
    report = decide.compare(load.check_data(base), load.check_data(cur), decide.Settings())
    c = next(c for c in report.comparisons if c.label == HASHER)
    assert c.primary == "cat" and c.verdict == decide.NO_CHANGE
    assert decide.decide(c.estimates["raw"].low, c.estimates["raw"].high, 0.05) == decide.REGRESSION
    assert verdicts(report)["cat"] == decide.REFERENCE
    assert report.exit_code == 0


def test_slower_hasher_is_a_regression_and_faster_an_improvement(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b", rounds(STEADY, CAT))
    slow = write_run(tmp_path / "s", rounds([w * 1.5 for w in STEADY], CAT))
    report = decide.compare(load.check_data(base), load.check_data(slow), decide.Settings())
    assert verdicts(report)[HASHER] == decide.REGRESSION and report.exit_code == 1
    report = decide.compare(load.check_data(slow), load.check_data(base), decide.Settings())
    assert verdicts(report)[HASHER] == decide.IMPROVEMENT and report.exit_code == 0


def test_fingerprint_mismatch_needs_a_reference(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b", rounds(STEADY, None), fingerprint="fp1")
    other = write_run(tmp_path / "o", rounds(STEADY, None), fingerprint="fp2")
    report = decide.compare(load.check_data(base), load.check_data(other), decide.Settings())
    assert verdicts(report)[HASHER] == decide.NOT_COMPARABLE and report.exit_code == 2
    assert "fingerprints differ" in report.notes[0]
    # with cat in both runs the verdict rests on ÷cat and raw is n/a
    base = write_run(tmp_path / "b2", rounds(STEADY, CAT), fingerprint="fp1")
    other = write_run(tmp_path / "o2", rounds(STEADY, CAT), fingerprint="fp2")
    report = decide.compare(load.check_data(base), load.check_data(other), decide.Settings())
    c = next(c for c in report.comparisons if c.label == HASHER)
    assert c.verdict == decide.NO_CHANGE and "raw" not in c.estimates and report.exit_code == 0
    assert "n/a" in check_report.format_table(report)


def test_counters_of_different_workloads_are_not_compared(tmp_path: Path) -> None:
    """A 1 GiB run and an 8 MiB one: timing is "not comparable", and so are the counters: 2048 reads
    against 16 is the file, not an improvement (issue 28)."""
    big = [record(r.label, r.tool, r.round, r.wall_s * 128, file_size=MIB8 * 128) for r in rounds(STEADY, CAT)]
    base, cur = load.check_data(write_run(tmp_path / "b", big)), load.check_data(write_run(tmp_path / "c", rounds(STEADY, CAT)))
    base.counters, cur.counters = {HASHER: {"reads": 2048.0}}, {HASHER: {"reads": 16.0}}
    report = decide.compare(base, cur, decide.Settings())
    assert verdicts(report)[HASHER] == decide.NOT_COMPARABLE and report.counters == []
    like = load.check_data(tmp_path / "c")
    like.counters = base.counters
    assert [c.verdict for c in decide.compare(like, cur, decide.Settings()).counters] == [decide.IMPROVEMENT]


def test_too_few_runs_is_exit_2(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b", rounds(STEADY, CAT))
    short = write_run(tmp_path / "c", rounds(STEADY[:2], CAT[:2]))
    report = decide.compare(load.check_data(base), load.check_data(short), decide.Settings())
    assert verdicts(report)[HASHER] == decide.TOO_FEW and report.exit_code == 2


def test_wrong_hash_or_failure_is_failed_exit_1(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b", rounds(STEADY, CAT))
    recs = rounds(STEADY, CAT)
    recs[2].hash_ok = False
    report = decide.compare(load.check_data(base), load.check_data(write_run(tmp_path / "c", recs)),
                           decide.Settings())
    assert verdicts(report)[HASHER] == decide.FAILED and report.exit_code == 1
    recs = rounds(STEADY, CAT)
    recs[1].exit_code, recs[1].wall_s = None, None
    report = decide.compare(load.check_data(base), load.check_data(write_run(tmp_path / "d", recs)),
                           decide.Settings())
    assert verdicts(report)[HASHER] == decide.FAILED and report.exit_code == 1


def test_commands_in_one_run_only_are_listed_not_failed(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b", rounds(STEADY, CAT) + rounds(STEADY, None, label="old one"))
    cur = write_run(tmp_path / "c", rounds(STEADY, CAT) + rounds(STEADY, None, label="new one"))
    report = decide.compare(load.check_data(base), load.check_data(cur), decide.Settings())
    v = verdicts(report)
    assert v["old one"] == decide.ONLY_BASELINE and v["new one"] == decide.ONLY_CURRENT
    assert report.exit_code == 0


def test_junit_and_markdown(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b", rounds(STEADY, CAT) + rounds(STEADY, None, label="steady one"))
    cur = write_run(tmp_path / "c", rounds([w * 2 for w in STEADY], CAT)
                    + rounds(STEADY, None, label="steady one"))
    report = decide.compare(load.check_data(base), load.check_data(cur), decide.Settings())
    md, xml = tmp_path / "out" / "check.md", tmp_path / "out" / "junit.xml"
    check_report.write_outputs(report, md, xml)
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {HASHER, "cat", "steady one"}
    assert cases[HASHER].find("failure") is not None
    assert cases["steady one"].find("failure") is None and cases["cat"].find("failure") is None
    assert suite.get("tests") == "3" and suite.get("failures") == "1"
    text = md.read_text()
    assert text.startswith("## ❌ ringsum check: 1 regression")
    row = next(ln for ln in text.splitlines() if ln.startswith(f"| {HASHER} |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "÷cat" and cells[4].startswith("+") and cells[6] == "**regression**"
    assert "| command | figure | baseline | current | change | interval | verdict |" in text


def test_instruction_counts_compare_with_tolerance() -> None:
    base = {"counter": "callgrind", "file_size": 1, "counts": {"a": 1000, "b": 1000, "c": 1000}}
    now = {"counter": "callgrind", "file_size": 1, "counts": {"a": 1005, "b": 1100, "c": 900}}
    got = {i.variant: i.verdict for i in instructions.compare_instructions(base, now, 0.01)}
    assert got == {"a": decide.NO_CHANGE, "b": decide.REGRESSION, "c": decide.IMPROVEMENT}
    assert all(i.verdict == decide.NOT_COMPARABLE for i in instructions.compare_instructions(None, now, 0.01))


def test_baseline_save_and_find(tmp_path: Path) -> None:
    run = write_run(tmp_path / "20260101T000000Z-vm", rounds(STEADY, CAT), fingerprint="fpX")
    store = tmp_path / "baselines"
    dest = saved_runs.save(run, root=store)
    assert dest == store / "fpX" / run.name and (dest / "runs.csv").is_file()
    assert saved_runs.find("latest", "fpX", store) == dest
    assert saved_runs.find(run.name, "fpX", store) == dest
    assert saved_runs.find(str(run), "other", store) == run
    with pytest.raises(decide.CheckError):
        saved_runs.find("latest", "other", store)
    with pytest.raises(decide.CheckError):
        saved_runs.save(run, root=store)  # exists


def ringsum(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=60)


def test_cli_exit_codes(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b", rounds(STEADY, CAT))
    slow = write_run(tmp_path / "s", rounds([w * 2 for w in STEADY], CAT))
    missing = ringsum("check", "--baseline", str(tmp_path / "nope"), "--current", str(slow))
    assert missing.returncode == 2 and "not found" in missing.stderr
    same = ringsum("check", "--baseline", str(base), "--current", str(base))
    assert same.returncode == 0, same.stdout + same.stderr
    assert "result: 1 no change -> exit 0" in same.stdout
    worse = ringsum("check", "--baseline", str(base), "--current", str(slow), "--junit", str(tmp_path / "j.xml"))
    assert worse.returncode == 1 and "regression" in worse.stdout
    assert (tmp_path / "j.xml").is_file()


def test_an_inconclusive_hasher_exits_as_asked(tmp_path: Path) -> None:
    """What an inconclusive check exits with can be chosen: pass (0, the default) or fail (1); the
    report says which signal decided."""
    base = write_run(tmp_path / "b", rounds(STEADY, CAT))
    noisy = write_run(tmp_path / "n", rounds([0.005, 0.02, 0.0075, 0.015, 0.01], CAT))
    for choice, code in (("pass", 0), ("fail", 1)):
        report = decide.compare(load.check_data(base), load.check_data(noisy), decide.Settings(inconclusive=choice))
        assert report.exit_code == code
        assert "decided by: wall time: 1 inconclusive" in check_report.format_table(report)


def test_a_regression_names_the_signal_that_found_it(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b", rounds(STEADY, CAT))
    same = write_run(tmp_path / "s", rounds(STEADY, CAT))
    report = decide.compare(load.check_data(base), load.check_data(same), decide.Settings())
    counts = {"counter": "callgrind", "file_size": 1, "counts": {"b3sum_pread": 1000}}
    report.instructions = instructions.compare_instructions(counts, {**counts, "counts": {"b3sum_pread": 1050}}, 0.01)
    assert report.exit_code == 1
    assert report.decided_by() == "instructions: 1 regression (b3sum_pread)"
