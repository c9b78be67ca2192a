"""The machine ledger (analysis/ledger.py): rows recomputed from the kept runs' runs.csv, what is left
out, and keeping a run under its machine without following a planted symlink."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis import ledger

REPO = Path(__file__).resolve().parent.parent
EMERALD_RAPIDS = REPO / "docs" / "ledger" / "c4e6be79eb5a"
ZEN3 = REPO / "docs" / "ledger" / "68c61e3153fa"


def _ok(run_dir: Path) -> pd.DataFrame:
    runs = pd.read_csv(run_dir / "runs.csv")
    return runs[(runs["exit_code"] == 0) & runs["hash_ok"].fillna(True).astype(bool)]


def _wall(runs: pd.DataFrame, label: str) -> pd.Series:
    return runs[runs["label"] == label].set_index("round")["wall_s"].sort_index()


def test_a_hot_row_is_its_runs_medians_and_paired_ratios() -> None:
    """The Emerald Rapids' hot file on both cores, from runs.csv by hand: the defaults' median, the
    fastest of its own settings by median (in place), the fastest b3sum, and the per-round ratios."""
    run_dir = EMERALD_RAPIDS / "hot-staging"
    (row,) = [r for r in ledger.rows(run_dir, "x") if r.work == "hot file, 2 cores"]
    runs = _ok(run_dir)
    mine = _wall(runs, "uring_b3sum defaults @as-is")
    own = {label: _wall(runs, label) for label in ("uring_b3sum bs=512K qd=4 buf=4 inplace @as-is",
                                                   "uring_b3sum bs=512K qd=4 buf=4 readonce @as-is")}
    best_own = min(own, key=lambda label: own[label].median())
    b3sums = {label: _wall(runs, label) for label in ("b3sum @as-is", "b3sum --num-threads 1 @as-is")}
    best_b3sum = min(b3sums, key=lambda label: b3sums[label].median())
    assert row.defaults_s == pytest.approx(mine.median())
    assert row.rounds == len(mine) == 21
    assert row.own == "bs=512K qd=4 buf=4 inplace" and best_own.startswith("uring_b3sum bs=512K qd=4 buf=4 inplace")
    assert row.vs_own.median == pytest.approx((mine / own[best_own]).median())
    assert row.b3sum == best_b3sum.removesuffix(" @as-is")
    assert row.vs_b3sum.median == pytest.approx((mine / b3sums[best_b3sum]).median())
    assert row.b3sum_wins == f"{int((mine < b3sums[best_b3sum]).sum())} of 21"
    assert row.limit_s == pytest.approx(_wall(runs, "cat @as-is").median())
    assert row.meets.startswith("no: 1.16 x own best") and "behind b3sum" in row.meets


def test_capped_conditions_are_left_out_and_the_defaults_can_be_their_own_best() -> None:
    rows = ledger.rows(ZEN3 / "conditions-table", "x")
    assert sorted(r.work for r in rows) == ["cold file, disk, 1 core", "cold file, disk, 2 cores",
                                            "cold file, ram, 1 core", "cold file, ram, 2 cores"]
    one_core = next(r for r in rows if r.work == "cold file, disk, 1 core")
    assert one_core.own == "defaults" and one_core.vs_own.median == 1 and one_core.meets == "yes"


def test_a_list_of_the_tree_is_not_an_own_setting() -> None:
    """tree-hot times the list too, through xargs and with --files0-from (a [[commands]] entry each):
    the same files named another way, the list made before the timing while -r walks the tree itself.
    On the Zen 5 --files0-from had the lower median; the defaults' own best is still among the hashers."""
    run_dir = REPO / "docs" / "ledger" / "8f50662391e2" / "tree-hot"
    runs = _ok(run_dir)
    assert _wall(runs, "files0-from").median() < _wall(runs, "uring_b3sum defaults").median()
    (row,) = ledger.rows(run_dir, "x")
    assert row.own == "defaults" and row.vs_own.median == 1 and row.meets == "yes"


def test_a_partly_cached_file_is_a_kind_of_work_of_its_own() -> None:
    """ledger-partial (run.cached_share 0.5): its row names the share, its own settings are the hashers
    reading all of it one way, and its cat, faster than a cold read, sets no machine's disk rate."""
    run_dir = REPO / "docs" / "ledger" / "8f50662391e2" / "ledger-partial"
    (row,) = ledger.rows(run_dir, "x")
    assert row.work == "file 0.5 cached, disk, 2 cores" and not row.hot
    runs = _ok(run_dir)
    own = min(("uring_b3sum bs=4M qd=8 buf=16 direct", "uring_b3sum bs=4M qd=8 buf=16 buffered"),
              key=lambda label: _wall(runs, label).median())
    assert row.own == ("defaults" if row.vs_own.median == 1 else own.removeprefix("uring_b3sum "))
    kept = [r for d in sorted(run_dir.parent.iterdir()) if (d / "runs.csv").is_file() for r in ledger.rows(d, "x")]
    disk = max(r.file_size / r.limit_s for r in kept if r.work.startswith("cold file, disk") and r.limit_s)
    assert row.limit_s and row.file_size / row.limit_s > disk      # half of it read from the page cache
    assert f"cold plain read {disk / 1e9:.2f} GB/s;" in next(line for line in ledger.table().splitlines()
                                                            if line.startswith("- `8f50662391e2`: "))


def test_the_table_names_every_machine_and_the_doc_holds_it() -> None:
    text = ledger.table()
    for machine in ("68c61e3153fa", "c4e6be79eb5a"):
        assert f"- `{machine}`: " in text and f"| `{machine}` | hot file, 1 core |" in text
    assert "BLAKE3 SIMD AVX512, L2 2 MiB per core" in text
    assert text.strip() in (REPO / "docs" / "ledger" / "README.md").read_text(encoding="utf-8")


def test_a_machine_whose_idle_page_cache_is_paged_out_says_so() -> None:
    """The Zen 5 guest's runs recorded DAMON's pageout of idle memory (harness/machine/sysinfo.py);
    runs from before the field, or a machine without it, say nothing of it."""
    text = ledger.table()
    zen5 = next(line for line in text.splitlines() if line.startswith("- `8f50662391e2`: "))
    assert zen5.endswith("; idle page cache paged out: DAMON pageout of memory idle 60 s (kdamond 0)"), zen5
    assert "paged out" not in next(line for line in text.splitlines() if line.startswith("- `68c61e3153fa`: "))
    assert "paged out" not in ledger.machine_line({"page_cache_reclaim": "none"}, None)


def test_a_run_of_trees_of_several_sizes_is_a_row_per_size() -> None:
    """ledger-memory-min's trees of 256K, 512K, 1M and 1536K files, each its own row on each core count,
    the defaults paired only with the settings of the same tree (from runs.csv by hand). A kept run
    from before the suite dropped its 256K tree (edcf7e4): four trees."""
    run_dir = REPO / "docs" / "ledger" / "add026ac3c38" / "ledger-memory-min-2"
    rows = ledger.rows(run_dir, "x")
    assert sorted(r.work for r in rows) == sorted(
        f"hot tree of {n} files of {size}, {cores}" for n, size in (("1,536", "256 KiB"), ("768", "512 KiB"),
                                                                    ("384", "1 MiB"), ("256", "1536 KiB"))
        for cores in ("1 core", "2 cores"))
    (row,) = [r for r in rows if r.work == "hot tree of 768 files of 512 KiB, 2 cores"]
    runs = _ok(run_dir)
    mine = _wall(runs, "uring_b3sum defaults [512K] @as-is")
    own = {label: _wall(runs, f"uring_b3sum bs=4M qd=8 buf=16 mmin={m} [512K] @as-is") for label, m in
           (("ring", "1G"), ("memory", "16K"))}
    own["defaults"] = mine  # the own best is the fastest of its settings, the defaults among them
    best = min(own, key=lambda label: own[label].median())
    assert row.defaults_s == pytest.approx(mine.median()) and row.rounds == len(mine) >= 11
    assert row.vs_own.median == pytest.approx((mine / own[best]).median())
    assert row.file_size == 768 * (512 << 10)


def _zen3_memory_min_copy(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    """A copy of the Zen 3's kept 21-round memory-min run, and its runs.csv with every field as written."""
    run_dir = tmp_path / "ledger-memory-min"
    shutil.copytree(REPO / "docs" / "ledger" / "add026ac3c38" / "ledger-memory-min-3", run_dir)
    return run_dir, pd.read_csv(run_dir / "runs.csv", dtype=str, keep_default_na=False)


def _time_as(runs: pd.DataFrame, rows: pd.Series, like: pd.Series, factor: float) -> None:
    """The rows' wall times set to those of the rows `like` in the same round, times factor."""
    times = runs[like].set_index("round")["wall_s"].astype(float)
    runs.loc[rows, "wall_s"] = [repr(t) for t in runs.loc[rows, "round"].map(times * factor)]


def test_an_own_best_that_chose_as_the_defaults_did_is_no_miss(tmp_path: Path) -> None:
    """With two or more hashing threads the defaults read 512K files through the ring, as `mmin=1G`
    does (the runs' effective_* columns): the ratio of the two is two runs of one way (noise), shown
    but not a miss. Where the own best chose otherwise, or a run recorded no choices, a ratio over
    1.02 stays a miss. The Zen 3's kept 21-round run, its times set so that `mmin=1G` is the own best,
    1.07 x faster than the defaults, on the 512K tree (the choices as recorded)."""
    run_dir, runs = _zen3_memory_min_copy(tmp_path)
    ring, memory, mine = (runs["label"] == f"uring_b3sum {x} [512K] @as-is" for x in
                          ("bs=4M qd=8 buf=16 mmin=1G", "bs=4M qd=8 buf=16 mmin=16K", "defaults"))
    for rows, factor in ((mine, 1.07), (memory, 1.10)):
        _time_as(runs, rows, ring, factor)
    runs.to_csv(run_dir / "runs.csv", index=False)
    by_work = {r.work: r for r in ledger.rows(run_dir, "x")}
    same = by_work["hot tree of 768 files of 512 KiB, 2 cores"]
    assert same.own.startswith("bs=4M qd=8 buf=16 mmin=1G"), same.own
    assert same.same_choices and same.own.endswith("(the defaults' choices)") and same.meets == "yes"
    other = by_work["hot tree of 256 files of 1536 KiB, 2 cores"]  # memory for the defaults, the ring for mmin=1G
    assert other.own.startswith("bs=4M qd=8 buf=16 mmin=1G") and not other.same_choices
    assert dataclasses.replace(same, same_choices=False).meets.startswith("no: 1.07 x own best")
    old = {r.work: r for r in ledger.rows(REPO / "docs" / "ledger" / "68c61e3153fa" / "conditions-table", "x")}
    assert old["cold file, disk, 2 cores"].meets == "no: 1.05 x own best"  # no choices recorded then


def test_a_measured_decision_that_went_both_ways_is_still_the_defaults_choice(tmp_path: Path) -> None:
    """The staging trial and the side-by-side measurement decide in each execution: in the Zen 3's kept
    run the defaults and `mmin=1G` both read the 512K tree through the ring on one core, and the trial
    went its other way in one of the 42 executions (effective_staging), so the two are one
    configuration and their ratio noise. A staging forced in every execution of one ("in-place", no
    "measured") shares no value with the other's trial, and a path (set by the options, not measured)
    taken once apart parts them too: not the defaults' choices."""
    run_dir, runs = _zen3_memory_min_copy(tmp_path)
    ring, mine = (runs["label"] == f"uring_b3sum {x} [512K] @1core" for x in ("bs=4M qd=8 buf=16 mmin=1G", "defaults"))
    assert len(set(runs.loc[ring | mine, "effective_staging"])) > 1  # the trial did not go one way throughout
    _time_as(runs, mine, ring, 1.05)
    runs.to_csv(run_dir / "runs.csv", index=False)

    def row() -> ledger.Row:
        (r,) = [r for r in ledger.rows(run_dir, "x") if r.work == "hot tree of 768 files of 512 KiB, 1 core"]
        return r

    assert row().own.startswith("bs=4M qd=8 buf=16 mmin=1G") and row().same_choices and row().meets == "yes"
    staging = runs.loc[ring, "effective_staging"].copy()
    runs.loc[ring, "effective_staging"] = "in-place"
    runs.to_csv(run_dir / "runs.csv", index=False)
    assert not row().same_choices and row().meets.startswith("no: 1.05 x own best")
    runs.loc[ring, "effective_staging"] = staging
    runs.loc[runs[mine].index[0], "effective_path"] = "memory"   # a path its options set, once apart
    runs.to_csv(run_dir / "runs.csv", index=False)
    assert not row().same_choices and row().meets.startswith("no: 1.05 x own best")


def _finished_run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "runs" / "20261127T000000Z-vm"
    shutil.copytree(EMERALD_RAPIDS / "hot-staging", run_dir)
    (run_dir / "raw").mkdir()
    (run_dir / "raw" / "stdout.txt").write_text("not a record\n")
    return run_dir


def test_keep_copies_the_records_under_the_machine_and_the_suite(tmp_path: Path) -> None:
    run_dir, book = _finished_run(tmp_path), tmp_path / "ledger"
    dest = ledger.keep(run_dir, book)
    assert dest == book / "c4e6be79eb5a" / "hot-staging"
    assert sorted(p.name for p in dest.iterdir()) == sorted(n for n in ledger.RECORDS if (run_dir / n).exists())
    (dest / "stale.txt").write_text("from the machine's run before\n")
    assert ledger.keep(run_dir, book) == dest and not (dest / "stale.txt").exists()
    assert [r.work for r in ledger.rows(dest, "x")] == ["hot file, 1 core", "hot file, 2 cores"]


def test_replacing_a_suite_with_a_readme_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A README beside a machine's suite tells the story of that run: replacing the run takes it along,
    and keep says so (git keeps the old one)."""
    run_dir, book = _finished_run(tmp_path), tmp_path / "ledger"
    dest = ledger.keep(run_dir, book)
    assert capsys.readouterr().err == ""
    (dest / "README.md").write_text("what the run before showed\n")
    ledger.keep(run_dir, book)
    assert not (dest / "README.md").exists()
    assert capsys.readouterr().err == (f"note: {dest}/README.md told the story of the run this one replaces: it is "
                                       "gone with it (git has it); write the new run's\n")


def test_keep_refuses_an_unfinished_run_and_a_planted_symlink(tmp_path: Path) -> None:
    run_dir, book = _finished_run(tmp_path), tmp_path / "ledger"
    meta = json.loads((run_dir / "meta.json").read_text())
    unfinished = tmp_path / "unfinished"
    shutil.copytree(run_dir, unfinished)
    (unfinished / "meta.json").write_text(json.dumps({**meta, "finished_at": None}))
    with pytest.raises(ledger.LedgerError, match="did not finish"):
        ledger.keep(unfinished, book)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    book.mkdir()
    (book / "c4e6be79eb5a").symlink_to(elsewhere)
    with pytest.raises(ledger.LedgerError, match="symlink"):
        ledger.keep(run_dir, book)
    assert not any(elsewhere.iterdir())
    linked = tmp_path / "linked-run"
    linked.symlink_to(run_dir)
    with pytest.raises(ledger.LedgerError, match="not a finished run"):
        ledger.keep(linked, tmp_path / "other-ledger")


def test_a_missing_ledger_is_a_one_line_error(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "analysis.ledger", "table", str(tmp_path / "none")],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == f"fatal: {tmp_path / 'none'}: not a directory\n"
