"""Behaviour counters (harness/pipeline/counters.py measures, harness/judge/counters.py judges) of real hasher executions, and the injected I/O
regressions of the faults build that they must see: depth:1 (queue depth ignored) and
buffered:1 (O_DIRECT dropped); plus the tolerance rules on fixed numbers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.machine import page_cache as cachemod
from harness.judge import counters as judged
from harness.pipeline import counters

REPO = Path(__file__).resolve().parent.parent
FAULTS = REPO / "build" / "faults" / "bin"
BLOCK = 128 << 10
SIZE = 8 << 20  # 64 blocks


def _prepare(file: Path):
    def prepare() -> None:
        if os.geteuid() == 0:
            cachemod.drop_caches(file)
    return prepare


def _probe(tmp_path: Path, file: Path, argv: list[str], env: dict[str, str] | None = None) -> judged.Counters:
    trace = tmp_path / "trace.csv"
    trace.unlink(missing_ok=True)
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        return counters.probe("x", [*argv, "--trace", str(trace), str(file)], str(file), trace,
                              tmp_path / "out", 30, _prepare(file), counters.perf_counts_enters())
    finally:
        os.environ.clear()
        os.environ.update(old)


def _ring(variant: str, *knobs: str) -> list[str]:
    return [str(FAULTS / variant), "--block-size", "128K", "--queue-depth", "8", "--buffers", "8", *knobs]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("counters") / "data.bin"
    p.write_bytes(os.urandom(SIZE))
    return p


def test_a_probe_counts_what_the_hasher_did(tmp_path: Path, data: Path) -> None:
    c = _probe(tmp_path, data, _ring("liburing_b3sum_singlethread"))
    assert c.exit_code == 0
    assert (tmp_path / "out").read_text().split()[0] != ""
    assert c.reads is not None and c.reads >= SIZE // BLOCK  # one completion per block at least
    assert c.peak_in_flight == 8  # the first fill of the ring, however late the consumer looks
    assert c.max_rss_kib is not None and c.max_rss_kib < 64 << 10  # the hasher's own, not this Python's
    assert c.minor_faults and c.minor_faults > 0
    assert c.ctx_switches is not None
    if os.geteuid() == 0:  # cold: a buffered read leaves the file cached and counts its bytes
        assert c.resident_after is not None and c.resident_after > 0.9
        assert c.read_bytes is not None and c.read_bytes >= SIZE
    if counters.perf_counts_enters():
        assert c.uring_enters is not None and c.uring_enters > 0


def test_a_failing_command_is_a_probe_without_counters_not_a_crash(tmp_path: Path) -> None:
    c = counters.probe("x", [str(FAULTS / "liburing_b3sum_singlethread"), str(tmp_path / "missing")],
                       str(tmp_path / "missing"), None, tmp_path / "out", 30, lambda: None, False)
    assert c.exit_code == 1
    assert "missing" in (tmp_path / "out.err").read_text()


def test_queue_depth_ignored_shows_in_peak_in_flight(tmp_path: Path, data: Path) -> None:
    for variant in ("liburing_b3sum_singlethread", "liburing_b3sum_multithread", "uring_b3sum"):
        argv = _ring(variant, *(["--path", "ring"] if variant == "uring_b3sum" else []))
        normal = _probe(tmp_path, data, argv)
        injected = _probe(tmp_path, data, argv, {"RINGSUM_FAULTS": "depth:1"})
        assert injected.peak_in_flight == 1, variant
        assert normal.peak_in_flight == 8, variant
        assert judged.judge("peak_in_flight", normal.peak_in_flight, injected.peak_in_flight) == "regression"


@pytest.mark.skipif(os.geteuid() != 0, reason="residency after a cold read needs drop_caches (root)")
def test_o_direct_dropped_shows_in_residency(tmp_path: Path, data: Path) -> None:
    argv = _ring("liburing_b3sum_singlethread", "--direct")
    direct = _probe(tmp_path, data, argv)
    dropped = _probe(tmp_path, data, argv, {"RINGSUM_FAULTS": "buffered:1"})
    assert direct.resident_after is not None and direct.resident_after < 0.1
    assert dropped.resident_after is not None and dropped.resident_after > 0.9
    assert judged.judge("resident_after", direct.resident_after, dropped.resident_after) == "regression"


def test_fault_spec_from_a_file_beside_the_binary(tmp_path: Path, data: Path) -> None:
    build = tmp_path / "bin"
    build.mkdir()
    exe = build / "liburing_b3sum_singlethread"
    exe.write_bytes((FAULTS / exe.name).read_bytes())
    exe.chmod(0o755)
    (build / "ringsum-faults").write_text("depth:1\n")
    c = _probe(tmp_path, data, [str(exe), "--block-size", "128K", "--queue-depth", "8", "--buffers", "8"])
    assert c.exit_code == 0 and c.peak_in_flight == 1


def test_tolerances_need_both_bounds_and_know_which_way_is_worse() -> None:
    assert judged.judge("reads", 128, 130) == "no change"      # within the absolute bound
    assert judged.judge("reads", 128, 256) == "regression"
    assert judged.judge("reads", 128, 64) == "improvement"
    assert judged.judge("peak_in_flight", 8, 8) == "no change"
    assert judged.judge("peak_in_flight", 4, 3) == "no change"  # the single thread reaches its depth or misses by one
    assert judged.judge("peak_in_flight", 8, 1) == "regression"
    assert judged.judge("peak_in_flight", 4, 8) == "improvement"
    assert judged.judge("resident_after", 1.0, 0.0) == "regression"  # either way is a change
    assert judged.judge("max_rss_kib", 10_000, 12_000) == "no change"
    assert judged.judge("max_rss_kib", 10_000, 40_000) == "regression"
    assert judged.judge("mean_in_flight", 3.0, 0.0) == "no change"  # shown, never judged
    # two identical builds, the second probed while a CPU-heavy test ran beside it (make test, 2026-11-24)
    assert judged.judge("ctx_switches", 8, 118) == "no change"


def test_trace_figures_weight_in_flight_by_time(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,in_flight,reaped,blocks_hashed,bytes_hashed\n"
                     "0,4,0,0,0\n300,1,3,3,3\n400,0,1,1,4\n")
    reads, mean, peak = counters.trace_figures(trace)
    assert reads == 4 and peak == 4  # an older build's trace: the peak of its consumer runs
    assert mean == pytest.approx((4 * 300 + 1 * 100) / 400)
    trace.write_text("time_ns,in_flight,reaped,blocks_hashed,bytes_hashed,peak_in_flight\n"
                     "0,0,0,0,0,6\n300,1,3,3,3,2\n")
    assert counters.trace_figures(trace)[2] == 6  # reads that completed between two consumer runs count


def test_counters_csv_round_trip_and_medians(tmp_path: Path) -> None:
    path = tmp_path / judged.COUNTERS_CSV
    for rss in (100, 300, 200):
        judged.append(path, judged.Counters("a", "f", 0, 10, 1.5, rss // 100, 7, 1000, 20, 50, rss, 1.0))
    judged.append(path, judged.Counters("a", "f", 1, None, None, None, None, None, None, None, None, None))
    rows = judged.read(path)
    assert len(rows) == 4 and rows[0].reads == 10 and rows[0].mean_in_flight == 1.5
    med = judged.summarize(rows)
    assert med["a"]["max_rss_kib"] == 200  # failed probes do not count
    assert med["a"]["peak_in_flight"] == 3  # a peak is the most any probe reached


def test_io_uring_enter_calls_are_shown_not_judged() -> None:
    """io_uring_enter calls count how often the consumer found no completion waiting, which the
    scheduling decides: one build against itself went 29-42 -> 109-114 in every probe of a check on the
    Zen 5 (docs/ledger/8f50662391e2/check-power). Shown, never a regression, as context switches are."""
    changes = judged.compare({"x": {"uring_enters": 29.0, "peak_in_flight": 8.0}},
                             {"x": {"uring_enters": 114.0, "peak_in_flight": 1.0}})
    assert {c.counter: c.verdict for c in changes} == {"uring_enters": "no change", "peak_in_flight": "regression"}
    assert judged.TOLERANCES["uring_enters"].worse == "none"


