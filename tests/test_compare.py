"""`ringsum compare RUN_A RUN_B` on the real run directories kept in docs/ (copied, never edited in
place): a run against itself, against a copy whose hasher times are 1.3x, against runs of another
workload or machine (side by side, no ratio), and against directories that are not runs (exit 2,
one line). No hasher runs; the intervals are seeded, so each test gives the same table every time."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Callable

import pytest

from harness import compare
from harness.check import decide
from harness.check.load import check_data
from harness.cli import main as cli
from harness.judge import counters

pytestmark = pytest.mark.independent

REPO = Path(__file__).resolve().parent.parent
KEPT = {name: REPO / "docs" / "cold-path" / f"{name}-run" for name in ("adapt", "tuned", "hot", "list")}
KEPT["matrix"] = REPO / "docs" / "conditions" / "matrix-run"
SLOWDOWN = 1.3


def copy_run(name: str, dest: Path) -> Path:
    return Path(shutil.copytree(KEPT[name], dest))


def ringsum(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def edit_runs_csv(run_dir: Path, edit: Callable[[dict[str, str]], None]) -> None:
    """Rewrite runs.csv row by row through `edit`, every other cell as it was."""
    path = run_dir / "runs.csv"
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames or [], list(reader)
    for row in rows:
        edit(row)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, header, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def slow_hashers(row: dict[str, str]) -> None:
    if row["tool"] == "hasher" and row["wall_s"]:
        row["wall_s"] = repr(float(row["wall_s"]) * SLOWDOWN)


def verdicts(result: compare.Comparison) -> dict[str, str]:
    return {row.label: compare.VERDICT_NAMES.get(row.verdict, row.verdict) for row in result.rows}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_a_run_against_itself_never_changed(name: str, tmp_path: Path) -> None:
    """Two copies of one run: every command is in both, its ratio exactly 1, and no verdict says
    faster or slower; a wide interval says inconclusive, never no change."""
    result = compare.compare_runs(check_data(copy_run(name, tmp_path / "a")), check_data(copy_run(name, tmp_path / "b")))
    assert result.compared and result.rows
    assert {row.label for row in result.rows} == set(result.a.samples)
    assert set(verdicts(result).values()) <= {"no change", "inconclusive"}
    for row in result.rows:
        e = row.estimates["raw"]
        assert e.ratio == 1.0 and e.low <= 1.0 <= e.high
        inside = 1 - result.settings.threshold <= e.low and e.high <= 1 + result.settings.threshold
        assert verdicts(result)[row.label] == ("no change" if inside else "inconclusive")


def test_a_wide_interval_is_inconclusive_not_no_change() -> None:
    """compare, as check, asks for the whole interval inside ±threshold before it says no change."""
    assert decide.decide(0.97, 1.08, 0.05) == decide.INCONCLUSIVE
    assert decide.decide(0.97, 1.03, 0.05) == decide.NO_CHANGE
    assert decide.decide(1.06, 1.5, 0.05) == decide.REGRESSION
    assert decide.decide(0.5, 0.94, 0.05) == decide.IMPROVEMENT


def test_hashers_made_slower_are_slower_and_the_rest_is_not(tmp_path: Path) -> None:
    a = copy_run("adapt", tmp_path / "a")
    b = copy_run("adapt", tmp_path / "b")
    edit_runs_csv(b, slow_hashers)
    result = compare.compare_runs(check_data(a), check_data(b))
    hashers = {row.label for row in result.rows if row.tool == "hasher"}
    assert len(hashers) == 18
    for row in result.rows:
        e = row.estimates["raw"]
        if row.label in hashers:
            assert verdicts(result)[row.label] == "slower" and e.ratio == pytest.approx(SLOWDOWN)
        else:
            assert verdicts(result)[row.label] in ("no change", "inconclusive") and e.ratio == 1.0
    backwards = compare.compare_runs(check_data(b), check_data(a))
    assert {verdicts(backwards)[label] for label in hashers} == {"faster"}

    shown = ringsum("compare", a, b, "--markdown", tmp_path / "out.md")
    assert shown.returncode == 0 and not shown.stderr
    row = next(line for line in shown.stdout.splitlines() if line.startswith("uring_b3sum defaults @as-is "))
    assert row.split()[-1] == "slower" and f"{SLOWDOWN:.3f}" in row.split()
    assert "18 slower" in shown.stdout and shown.stdout.count("ratios: every ratio is a time ratio") == 1
    markdown = (tmp_path / "out.md").read_text()
    assert "| command | A median | B median | B/A | interval | verdict |" in markdown
    assert "| uring_b3sum defaults @as-is |" in markdown and "| slower |" in markdown


@pytest.mark.parametrize("a_name, b_name, why", [
    ("adapt", "list", "not compared: A hashed a file of 1 GiB, B a tree of 16,384 files (1 GiB in all)"),
    ("hot", "tuned", "not compared: A ran warm, B cold"),
    ("adapt", "matrix", "not compared: A ran on machine 68c61e3153fa, B on d4b7f2f7749c"),
])
def test_runs_of_different_workloads_or_machines_are_shown_side_by_side(a_name: str, b_name: str, why: str,
                                                                        tmp_path: Path) -> None:
    a, b = copy_run(a_name, tmp_path / "a"), copy_run(b_name, tmp_path / "b")
    shown = ringsum("compare", a, b)
    assert shown.returncode == 3 and not shown.stderr  # a refusal a script can tell from a result
    lines = shown.stdout.splitlines()
    assert sum(line.startswith("not compared: ") for line in lines) == 1
    assert any(line.startswith(why) for line in lines), shown.stdout
    header = next(line for line in lines if line.startswith("command"))
    assert header.split() == ["command", "A", "median", "B", "median"]  # no ratio, no verdict
    labels = set(check_data(a).samples) | set(check_data(b).samples)
    assert len([line for line in lines if line.split("  ")[0] in labels]) == len(labels)
    assert "slower" not in shown.stdout and "faster" not in shown.stdout


def test_another_size_of_the_same_file_is_not_compared(tmp_path: Path) -> None:
    a, b = copy_run("hot", tmp_path / "a"), copy_run("hot", tmp_path / "b")
    edit_runs_csv(b, lambda row: row.update(file_size=str(8 << 20)))
    result = compare.compare_runs(check_data(a), check_data(b))
    assert not result.compared and not result.rows
    assert result.differences == ["A hashed a file of 1 GiB, B a file of 8 MiB"]


def test_a_run_without_a_machine_fingerprint_is_not_compared(tmp_path: Path) -> None:
    a, b = copy_run("hot", tmp_path / "a"), copy_run("hot", tmp_path / "b")
    meta = json.loads((b / "meta.json").read_text())
    del meta["fingerprint"]
    (b / "meta.json").write_text(json.dumps(meta))
    result = compare.compare_runs(check_data(a), check_data(b))
    assert not result.compared and result.differences == [
        "B has no machine fingerprint (meta.json fingerprint_id): not shown to be the same machine"]


def probe(label: str, peak_in_flight: int) -> counters.Counters:
    return counters.Counters(label=label, file="f", exit_code=0, reads=256, mean_in_flight=peak_in_flight / 2,
                             peak_in_flight=peak_in_flight, uring_enters=100, read_bytes=1 << 30, ctx_switches=50,
                             minor_faults=300, max_rss_kib=20_000, resident_after=0.0)


def test_counters_are_compared_only_between_like_workloads(tmp_path: Path) -> None:
    """The queue depth in use fell from 16 to 1 between two like runs: shown as worse. Between a
    warm run and a cold one the same counters are not compared at all."""
    label = "uring_b3sum defaults @as-is"
    runs = {name: copy_run(src, tmp_path / name) for name, src in (("a", "tuned"), ("b", "tuned"), ("warm", "hot"))}
    for name, depth in (("a", 16), ("b", 1), ("warm", 1)):
        for _ in range(3):
            counters.append(runs[name] / counters.COUNTERS_CSV, probe(label, depth))
    like = compare.compare_runs(check_data(runs["a"]), check_data(runs["b"]))
    moved = [c for c in like.counters if c.verdict != decide.NO_CHANGE]
    assert [(c.label, c.counter) for c in moved] == [(label, "peak_in_flight")]
    assert f"  {label}  peak_in_flight: 16 -> 1 (-93.8%) worse" in compare.format_text(like)
    unlike = compare.compare_runs(check_data(runs["a"]), check_data(runs["warm"]))
    assert not unlike.compared and unlike.counters == []
    assert "behaviour counters" not in compare.format_text(unlike)


def plant(run_dir: Path, name: str, content: bytes) -> None:
    (run_dir / name).write_bytes(content)


BAD_RUNS = {
    "no such directory": lambda d: shutil.rmtree(d),
    "no runs.csv": lambda d: (d / "runs.csv").unlink(),
    "no meta.json": lambda d: (d / "meta.json").unlink(),
    "runs.csv a symlink": lambda d: ((d / "runs.csv").unlink(), (d / "runs.csv").symlink_to(KEPT["adapt"] / "runs.csv")),
    "meta.json a symlink": lambda d: ((d / "meta.json").unlink(), (d / "meta.json").symlink_to(KEPT["adapt"] / "meta.json")),
    "counters.csv a symlink": lambda d: (d / "counters.csv").symlink_to("/etc/passwd"),
    "binary runs.csv": lambda d: plant(d, "runs.csv", b"label,tool\n\x00\xff\xfe\x80\n"),
    "not a runs table": lambda d: plant(d, "runs.csv", b"name,seconds\nx,1\n"),
    "header only": lambda d: plant(d, "runs.csv", (KEPT["adapt"] / "runs.csv").read_bytes().split(b"\n")[0] + b"\n"),
    "a round that is no number": lambda d: edit_runs_csv(d, lambda row: row.update({"round": "one"})),
    "a row without a file size": lambda d: edit_runs_csv(d, lambda row: row.update(file_size="")),
    "meta.json not JSON": lambda d: plant(d, "meta.json", b'{"fingerprint": '),
    "meta.json a list": lambda d: plant(d, "meta.json", b"[1, 2]"),
}


@pytest.mark.parametrize("damage", sorted(BAD_RUNS))
@pytest.mark.parametrize("side", ["RUN_A", "RUN_B"])
def test_what_is_not_a_run_directory_is_one_line_and_exit_2(damage: str, side: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """In process (the same main() as `ringsum`, a traceback would fail the test): 26 cases."""
    good, bad = copy_run("tuned", tmp_path / "good"), copy_run("tuned", tmp_path / "bad")
    BAD_RUNS[damage](bad)
    code = cli.main(["compare", *map(str, (bad, good) if side == "RUN_A" else (good, bad))])
    shown = capsys.readouterr()
    assert code == 2 and not shown.out
    assert shown.err.startswith(f"ringsum: {side}: {bad}") and shown.err.count("\n") == 1, shown.err


def test_a_bad_run_directory_from_the_shell(tmp_path: Path) -> None:
    bad = copy_run("list", tmp_path / "bad")
    BAD_RUNS["binary runs.csv"](bad)
    shown = ringsum("compare", KEPT["list"], bad)
    assert shown.returncode == 2 and not shown.stdout
    assert shown.stderr == f"ringsum: RUN_B: {bad}: runs.csv unreadable: 'utf-8' codec can't decode byte 0xff " \
                           "in position 12: invalid start byte\n"


def test_bad_options_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    run = str(KEPT["hot"])
    for args, message in ((["--threshold", "150%"], "ringsum: --threshold: expected a fraction between 0 and 1"),
                          (["--confidence", "x"], "ringsum: --confidence: expected a fraction like 5% or 0.05"),
                          ([], "ringsum: the following arguments are required: RUN_B")):
        with pytest.raises(SystemExit) if not args else nullcontext():
            code = cli.main(["compare", run, *([run] if args else []), *args])
            assert code == 2
        shown = capsys.readouterr()
        assert not shown.out and shown.err.startswith(message) and shown.err.count("\n") == 1, shown.err
