"""What ran is what is recorded: the hashers' `--effective FILE` and `--effective-summary FILE` reports
and runs.csv's effective_* columns (harness/pipeline/effective.py), with the real hashers; a hasher
without the options (an older build, a wrapper) still runs, its effective columns empty."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from harness.pipeline import effective
from hashers_support import ringsum

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("RINGSUM_BIN_DIR", REPO / "build" / "bin"))
MODE = [] if os.geteuid() == 0 else ["--warm"]

CONFIG = """
[run]
rounds = 1
trace = false

[[hashers]]
variant = "uring_b3sum"
style = "defaults"

[[hashers]]
name = "uring_b3sum-sized"      # huge_pages left out: uring_b3sum's own default (on), passed and recorded
variant = "uring_b3sum"
block_size = "2M"
queue_depth = 8
buffers = "2*queue_depth"

[[hashers]]
variant = "b3sum_pread"

[[hashers]]
name = "wrapper"
variant = "uring_b3sum"
path = "@WRAPPER@"
style = "defaults"

[baselines]
limit = false
cat = true
"""

# An older build's stand-in: it knows no --effective (its --help is b3sum's).
WRAPPER = '#!/bin/sh\nfor last; do :; done\n[ "$1" = --help ] && exec "@B3SUM@" --help\nexec "@B3SUM@" "$last"\n'


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("effective")
    data = d / "f.bin"
    data.write_bytes(os.urandom(8 << 20))
    wrapper = d / "wrapper.sh"
    b3sum = REPO / ".tools" / "bin" / "b3sum"
    wrapper.write_text(WRAPPER.replace("@B3SUM@", str(b3sum)))
    wrapper.chmod(0o755)
    (d / "c.toml").write_text(CONFIG.replace("@WRAPPER@", str(wrapper)))
    env = {**os.environ, "RINGSUM_LOCK": str(d / "lock")}
    r = ringsum("run", str(d / "c.toml"), "--file", str(data), "--out", str(d / "out"), *MODE, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    (run_dir,) = (d / "out").iterdir()
    return run_dir


@pytest.fixture(scope="module")
def rows(run_dir: Path) -> dict[str, dict[str, str]]:
    with open(run_dir / "runs.csv", newline="") as f:
        return {row["label"]: row for row in csv.DictReader(f)}


def test_uring_b3sum_rows_record_what_it_did(rows: dict[str, dict[str, str]]) -> None:
    row = rows["uring_b3sum defaults"]
    if MODE:  # warm: a cached file is hashed from memory
        assert (row["effective_path"], row["effective_direct"]) == ("memory", "False")
        return
    # the knobs asked for are its defaults (no option given: empty); what ran is O_DIRECT on huge pages
    assert (row["direct"], row["huge_pages"]) == ("", "")
    assert (row["effective_path"], row["effective_direct"], row["effective_huge_pages"]) == ("ring", "True", "True")
    assert (row["effective_block_size"], row["effective_queue_depth"], row["effective_buffers"]) == (
        str(4 << 20), "8", "16")


@pytest.mark.skipif(bool(MODE), reason="cold reads need root")
def test_a_flag_left_out_is_the_variants_own(rows: dict[str, dict[str, str]]) -> None:
    """huge_pages left out of a uring_b3sum group is its own default (on): asked for, recorded, run;
    and how it hashed (a block on every core once the next is read: some share of it, or none)."""
    row = rows["uring_b3sum bs=2M qd=8 buf=16"]
    assert (row["huge_pages"], row["effective_huge_pages"], row["effective_direct"]) == ("True", "True", "True")
    assert row["effective_hashing"] == ("when-behind" if len(os.sched_getaffinity(0)) > 1 else "serial")
    assert 0.0 <= float(row["effective_parallel_share"]) <= 1.0


def test_off_for_a_flag_a_variant_has_on_is_a_config_error(tmp_path: Path) -> None:
    """huge_pages = [true, false] used to plan one command under two labels (issue 28)."""
    config = tmp_path / "huge.toml"
    config.write_text('[[hashers]]\nvariant = "uring_b3sum"\nhuge_pages = [true, false]\n')
    r = ringsum("plan", str(config), "--file", str(config))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "hashers[0].huge_pages: uring_b3sum has --huge-pages on by default and no option turns it off" in r.stderr


def test_the_pread_loop_has_no_depth(rows: dict[str, dict[str, str]]) -> None:
    row = rows["b3sum_pread bs=512K qd=4 buf=4"]
    assert (row["queue_depth"], row["effective_queue_depth"], row["effective_path"]) == ("4", "", "pread")


def test_a_hasher_without_the_option_runs_and_records_nothing(rows: dict[str, dict[str, str]]) -> None:
    row = rows["wrapper defaults"]
    assert row["exit_code"] == "0" and row["hash_ok"] == "True"
    assert all(row[f"effective_{f}"] == "" for f in effective.FIELDS)
    assert all(rows["cat"][f"effective_{f}"] == "" for f in effective.FIELDS)


def test_the_report_of_a_tree_and_a_bad_path(tmp_path: Path) -> None:
    small, large = tmp_path / "small.bin", tmp_path / "large.bin"
    small.write_bytes(os.urandom(4096))
    large.write_bytes(os.urandom(8 << 20))
    report = tmp_path / "effective.jsonl"
    r = subprocess.run([str(BIN / "uring_b3sum"), "--buffered", "--effective", str(report), str(small), str(large)],
                       capture_output=True, text=True, check=True)
    assert len(r.stdout.splitlines()) == 2
    lines = [json.loads(line) for line in report.read_text().splitlines()]
    assert [line["index"] for line in lines] == [0, 1] and not any(line["direct"] for line in lines)
    assert effective.read(report)["effective_direct"] is False
    bad = subprocess.run([str(BIN / "uring_b3sum"), "--effective", str(tmp_path / "no" / "x"), str(small)],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and str(tmp_path / "no" / "x") in bad.stderr


def test_the_report_reads_direct_as_it_ran(run_dir: Path) -> None:
    """The tuning heatmaps split by O_DIRECT as the hasher read, not as the config asked."""
    from analysis.chart_data import as_ran
    from harness.judge.load import load_run
    from harness.judge.results import command_stats

    runs = load_run(run_dir).runs
    stats = as_ran(command_stats(runs), runs).set_index("label")
    assert bool(stats.loc["uring_b3sum defaults", "direct"]) is (not MODE)
    assert bool(stats.loc["b3sum_pread bs=512K qd=4 buf=4", "direct"]) is False


def test_a_wrapper_that_hangs_on_help_is_killed_with_what_it_started(tmp_path: Path, monkeypatch) -> None:
    """The --help probe runs the hasher in a process group of its own: on its timeout the wrapper and
    its child go (subprocess.run's timeout killed the shell alone, and its sleep lived on)."""
    marker = f"ringsum-help-probe-{os.getpid()}"
    wrapper = tmp_path / "hangs"
    wrapper.write_text(f"#!/bin/sh\nsh -c 'sleep 60; : {marker}'\n")  # a child that outlives a killed shell
    wrapper.chmod(0o755)
    monkeypatch.setattr(effective, "HELP_TIMEOUT_S", 0.5)
    assert effective.report_option(str(wrapper)) is None
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert left == [], f"the probe left {left} running"


def test_the_harness_asks_for_the_summary(run_dir: Path) -> None:
    """A line per way, not per file: the per-file lines cost a 16,384-file tree up to 1.09x its time."""
    (report,) = (run_dir / "raw").glob("*uring_b3sum*defaults*.effective.jsonl")
    (line,) = [json.loads(text) for text in report.read_text().splitlines()]
    assert line["files"] == 1 and "index" not in line, line


def test_a_build_with_the_per_file_report_alone_gets_it(tmp_path: Path) -> None:
    """An older uring_b3sum, before --effective-summary: still recorded, a line per file."""
    older = tmp_path / "older"
    older.write_text('#!/bin/sh\necho "      --effective FILE         write how each file was really read"\n')
    older.chmod(0o755)
    assert effective.report_option(str(older)) == "--effective"
    assert effective.report_option(str(BIN / "uring_b3sum")) == "--effective-summary"


WAY = ("path", "block_size", "queue_depth", "buffers", "direct", "huge_pages", "hashing", "hash_threads", "staging")


def test_the_summary_is_the_per_file_report_summed(tmp_path: Path) -> None:
    """Ring files and a stream from stdin, every choice given so that the two executions choose alike:
    a summary line per way, its files counted and bytes summed as the per-file lines have them."""
    files = []
    for i in range(40):
        f = tmp_path / f"{i:02}.bin"
        f.write_bytes(os.urandom(1 + 3001 * i))
        files.append(str(f))
    stdin = os.urandom(70_000)
    fixed = ["--no-wisdom", "--path", "ring", "--buffered", "-q", "4", "-n", "8", "--serial-hash", "--in-place"]
    outputs, reports = [], {}
    for option in ("--effective", "--effective-summary"):
        report = tmp_path / f"{option[2:]}.jsonl"
        r = subprocess.run([str(BIN / "uring_b3sum"), *fixed, option, str(report), *files[:20], "-", *files[20:]],
                           input=stdin, capture_output=True, check=True)
        outputs.append(r.stdout)
        reports[option] = [json.loads(line) for line in report.read_text().splitlines()]
    assert outputs[0] == outputs[1]
    per_file = reports["--effective"]
    assert [line["index"] for line in per_file] == list(range(41))
    files_by_way: Counter = Counter()
    bytes_by_way: Counter = Counter()
    for line in per_file:
        way = tuple(line[k] for k in WAY)
        files_by_way[way] += 1
        bytes_by_way[way] += line["ring_bytes"]
    summary = reports["--effective-summary"]
    assert {line["path"] for line in summary} == {"ring", "stream"}, summary
    assert {tuple(line[k] for k in WAY): line["files"] for line in summary} == dict(files_by_way)
    assert {tuple(line[k] for k in WAY): line["ring_bytes"] for line in summary} == dict(bytes_by_way)
    assert sum(line["ring_bytes"] for line in summary) == sum(map(os.path.getsize, files)) + len(stdin)
    assert effective.read(tmp_path / "effective.jsonl") == effective.read(tmp_path / "effective-summary.jsonl")


def test_one_report_at_a_time(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x")
    r = subprocess.run([str(BIN / "uring_b3sum"), "--effective", str(tmp_path / "a"), "--effective-summary",
                        str(tmp_path / "b"), str(f)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "--effective and --effective-summary: give one of them" in r.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
