"""`ringsum bisect`: a real git repository of a few commits, whose own Makefile "builds" each
revision as the hashers of this checkout behind a wrapper, one of which sleeps before it hashes.
Each step is a real A/B run of the real hashers (hyperfine, b3sum's digest), judged as `ringsum
check` judges; git bisect drives it in a clone inside the run directory.

The runs are warm, take a lock of their own and leave the system settings alone
(RINGSUM_SYSTEM_SETTINGS=leave): the module runs beside the machine line (tests/conftest.py). Its
time is mostly the wrappers' sleeps, whose margins are set for a machine under load (below), so its
three long commands start together, at the module's start, and its tests read their outcomes: one
minute on a worker instead of two."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.check import decide
from harness.check.load import RunData
from harness.history.bisect import BAD, GOOD, SKIP, judge
from harness.history.revisions import Repository, RevisionError
from hashers_support import REPO, beside_the_line_env, data_file, ringsum

pytestmark = [pytest.mark.independent, pytest.mark.together, pytest.mark.usefixtures("beside_the_line")]

RELEASE = REPO / "build" / "bin"
CONFIG = """
[run]
rounds = 6
cache = "warm"
file = "@FILE@"
timeout_s = 30

[[hashers]]
variant = "uring_b3sum"

[baselines]
limit = false
"""
# A revision's "build": the hashers of this checkout behind a wrapper that sleeps SLEEP seconds
# first, and the list of programs the harness reads. Every revision sleeps: a fast one FAST
# seconds, a slow one SLOW. Hashing 8 MiB takes milliseconds, but under load (2 cores shared with
# other suites) it was seen to take up to 0.2 s; over FAST's sleep that keeps every round's ratio
# of two fast revisions within 0.7/0.5, and a slow one's over a fast one's above 1.2/0.7. At 6
# rounds a median's 95% interval spans the rounds' extremes, so the verdicts at the 50% threshold
# cannot flip with the machine's load.
FAST, SLOW = "0.5", "1.2"
# A fast revision but for one execution: its wrapper's sleep, worked out as it starts, is SLOW the
# third time it hashes the data file (the first is the run's trace, untimed), else FAST.
ONCE_SLOW = ('$(n="$(dirname "$0")/hashed"; case "$*" in *.bin) echo >> "$n";; esac; '
             f'[ "$(wc -l < "$n" 2>/dev/null)" = 3 ] && echo {SLOW} || echo {FAST})')
MAKEFILE = """all:
\tmkdir -p build/bin build/share/ringsum
\tprintf '#!/bin/sh\\nsleep %s\\nexec @REAL@/uring_b3sum "$$@"\\n' "$$(cat SLEEP)" > build/bin/uring_b3sum
\tchmod +x build/bin/uring_b3sum
\techo uring_b3sum > build/share/ringsum/variants
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _repo(tmp_path: Path, sleeps: list[str]) -> tuple[Path, list[str]]:
    """A repository with one commit per entry of `sleeps` (the wrapper's sleep at that commit)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.invalid")
    _git(repo, "config", "user.name", "t")
    (repo / "Makefile").write_text(MAKEFILE.replace("@REAL@", str(RELEASE)))
    shas = []
    for i, sleep in enumerate(sleeps):
        (repo / "SLEEP").write_text(sleep)
        (repo / "NOTES").write_text(f"commit {i}\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"commit {i}: sleep {sleep}")
        shas.append(_git(repo, "rev-parse", "HEAD").strip())
    return repo, shas


def _config(where: Path) -> Path:
    config = where / "ringsum.toml"
    config.write_text(CONFIG.replace("@FILE@", str(data_file(8 << 20))))
    return config


@dataclass
class Started:
    """A long ringsum command, started with the module: its repository's commits, where it writes."""
    shas: list[str]
    out: Path
    process: subprocess.Popen[str]

    def finish(self) -> subprocess.CompletedProcess[str]:
        stdout, stderr = self.process.communicate(timeout=600)
        return subprocess.CompletedProcess(self.process.args, self.process.returncode, stdout, stderr)

    def bisect_doc(self) -> dict:
        dirs = list(self.out.glob("bisect-*")) if self.out.exists() else []
        return json.loads((dirs[0] / "bisect.json").read_text()) if len(dirs) == 1 else {}


def _start(where: Path, sleeps: list[str], command: list[str]) -> Started:
    """`ringsum COMMAND` on a new repository of `sleeps`; @GOOD@, @BAD@, @SHAS@, @REPO@, @CONFIG@ and
    @OUT@ in COMMAND are its first and last commits, all of them, the repository, a config and the
    output directory. Its own lock: the four run at once."""
    where.mkdir(mode=0o700)  # the run lock's directory: ringsum refuses one open to others
    repo, shas = _repo(where, sleeps)
    config, out = _config(where), where / "out"
    argv = []
    for arg in command:
        argv += shas if arg == "@SHAS@" else [arg.replace("@GOOD@", shas[0]).replace("@BAD@", shas[-1])
                                              .replace("@REPO@", str(repo)).replace("@CONFIG@", str(config))
                                              .replace("@OUT@", str(out))]
    env = {**os.environ, **beside_the_line_env(where / "run.lock")}
    process = subprocess.Popen([sys.executable, "-m", "harness", *argv], cwd=REPO, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return Started(shas, out, process)


BISECT = ["bisect", "--repo", "@REPO@", "--good", "@GOOD@", "--bad", "@BAD@", "--config", "@CONFIG@",
          "--threshold", "50%", "--out", "@OUT@"]


@pytest.fixture(scope="module", autouse=True)
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Started]]:
    """The module's four long commands, running side by side (each mostly sleeps) from the module's
    first test on, while its short tests run."""
    tmp = tmp_path_factory.mktemp("bisect")
    runs: dict[str, Started] = {}
    try:
        runs["slow at 3"] = _start(tmp / "slow-at-3", [FAST, FAST, FAST, SLOW, SLOW], BISECT)
        runs["all fast"] = _start(tmp / "all-fast", [FAST, FAST, FAST], BISECT)
        runs["one slow execution"] = _start(tmp / "one-slow-execution", [FAST, ONCE_SLOW], BISECT)
        runs["history"] = _start(tmp / "history", [FAST, SLOW],
                                 ["history", "add", "@SHAS@", "--repo", "@REPO@", "--config", "@CONFIG@",
                                  "--store", "@OUT@"])
        yield runs
    finally:
        for run in runs.values():
            if run.process.poll() is None:
                run.process.kill()
            run.process.communicate()


def test_a_revision_that_does_not_build_is_skipped_with_its_reason(tmp_path):
    repo, shas = _repo(tmp_path, [FAST, SLOW])
    (repo / "Makefile").write_text("all:\n\tfalse\n")
    _git(repo, "commit", "-q", "-am", "a Makefile that fails")
    out = tmp_path / "out"
    p = ringsum("bisect", "--repo", str(repo), "--good", shas[0], "--bad", "HEAD", "--config",
                str(_config(tmp_path)), "--threshold", "50%", "--out", str(out))
    [run_dir] = out.glob("bisect-*")
    doc = json.loads((run_dir / "bisect.json").read_text())
    assert p.returncode == 2, p.stdout + p.stderr
    (step,) = doc["steps"]
    assert step["verdict"] == SKIP and "it does not build" in step["reason"] and "make all` failed" in step["reason"]
    assert "cannot tell whether the bad end is slower" in p.stdout


def test_bad_revisions_are_one_line_errors(tmp_path):
    repo, shas = _repo(tmp_path, [FAST, FAST])
    for good, bad, message in ((shas[1], shas[0], "is not an ancestor of --bad"),
                               ("no-such-rev", shas[1], "'no-such-rev': no such commit"),
                               ("--all", shas[1], "'--all': not a revision")):
        p = ringsum("bisect", "--repo", str(repo), f"--good={good}", f"--bad={bad}", "--out", str(tmp_path / "out"),
                    "--config", str(REPO / "configs" / "check.toml"))
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and message in p.stderr, p.stderr
    assert not (tmp_path / "out").exists()  # nothing made for a bisect that cannot start
    for rounds, confidence, need in (("5", "95%", 6), ("7", "99%", 8)):
        p = ringsum("bisect", "--repo", str(repo), f"--good={shas[0]}", f"--bad={shas[1]}", "--out",
                    str(tmp_path / "out"), "--config", str(REPO / "configs" / "check.toml"), "--rounds", rounds,
                    "--confidence", confidence)
        assert p.returncode == 2 and p.stderr == (
            f"ringsum: {rounds} rounds can never decide a step at {confidence}: the fewest that can are {need} "
            f"(--rounds {need}, or a lower --confidence); nothing was built\n"), p.stderr
    assert not (tmp_path / "out").exists()
    with pytest.raises(RevisionError, match="not a git repository"):
        Repository(tmp_path)


def _report(pooled: tuple[float, float, float], extra: list[decide.Comparison] = ()) -> decide.Report:
    run = RunData(Path("run"), None, "warm", None, {}, {})
    cmp = decide.Comparison(label="all hashers, pooled (1 hashers)", tool=decide.POOLED, verdict=decide.NO_CHANGE,
                            primary="paired")
    cmp.estimates["paired"] = decide.Estimate("paired", 1.0, 1.0, *pooled)
    return decide.Report(run, run, decide.Settings(), [*extra, cmp])


def test_judge_each_verdict_with_its_reason():
    assert judge(_report((1.0, 0.98, 1.02)), 0.05)[0] == GOOD
    verdict, reason = judge(_report((1.04, 0.99, 1.09)), 0.05)
    assert verdict == SKIP and "cannot decide" in reason and "1.040 [0.990, 1.090]" in reason
    slow = decide.Comparison(label="uring_b3sum", tool="hasher", verdict=decide.REGRESSION, primary="paired")
    slow.estimates["paired"] = decide.Estimate("paired", 1.0, 1.2, 1.2, 1.15, 1.25)
    verdict, reason = judge(_report((1.2, 1.15, 1.25), [slow]), 0.05)
    assert verdict == BAD and "uring_b3sum: time ratio 1.200 [1.150, 1.250]" in reason
    failed = decide.Comparison(label="uring_b3sum", tool="hasher", verdict=decide.FAILED, reason="hash mismatch")
    assert judge(_report((1.0, 0.98, 1.02), [failed]), 0.05) == (
        SKIP, "a command failed, so its time says nothing: uring_b3sum: hash mismatch")


def test_history_add_runs_each_commit_beside_the_reference(started, tmp_path):
    run = started["history"]
    p, shas, history = run.finish(), run.shas, run.out
    repo, config = history.parent / "repo", history.parent / "ringsum.toml"
    assert p.returncode == 0, p.stdout + p.stderr
    assert (history / "REFERENCE").read_text().strip() == shas[0]
    records = [json.loads(path.read_text()) for path in sorted(history.glob("*/*/record.json"))]
    by_sha = {r["sha"]: r for r in records}
    assert set(by_sha) == set(shas) and all(r["reference"] == shas[0] for r in records)
    (point,) = by_sha[shas[1]]["points"].values()
    assert point["low"] > 1.5 and point["n"] == 6  # SLOW's sleep over FAST's, each over a hash of milliseconds
    (itself,) = by_sha[shas[0]]["points"].values()  # the reference, measured beside itself
    assert abs(itself["ratio"] - 1) < 0.5
    assert not list((history / ".work" / "builds").glob(shas[1][:12]))  # a measured build is not kept
    p = ringsum("history", "add", shas[1], "--repo", str(repo), "--config", str(config), "--store", str(history),
                "--reference", shas[1])
    assert p.returncode == 2 and "measures beside" in p.stderr and p.stderr.count("\n") == 1
    p = ringsum("history", "show", "--store", str(history), "--out", str(tmp_path / "page"))
    assert p.returncode == 0 and (tmp_path / "page" / "history.html").is_file(), p.stderr


def test_bisect_names_the_commit_that_sleeps(started):
    run = started["slow at 3"]
    p, doc, shas = run.finish(), run.bisect_doc(), run.shas
    repo = run.out.parent / "repo"
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"found: first slower commit: {shas[3][:12]} commit 3: sleep {SLOW}" in p.stdout
    assert doc["outcome"]["first_bad"] == shas[3]
    verdicts = {s["sha"]: s["verdict"] for s in doc["steps"]}
    assert verdicts[shas[-1]] == BAD  # the bad end, measured first
    assert all(verdicts[sha] == (BAD if i >= 3 else GOOD) for i, sha in enumerate(shas) if sha in verdicts)
    assert all(s["ratio"] and (s["ratio"][1] > 1.5 if s["verdict"] == BAD else s["ratio"][2] <= 1.5)
               for s in doc["steps"])
    assert _git(repo, "status", "--porcelain") == "" and not (repo / ".git" / "BISECT_LOG").exists()


def test_bisect_between_two_fast_commits_finds_no_slower_one(started):
    run = started["all fast"]
    p, doc = run.finish(), run.bisect_doc()
    assert p.returncode == 0, p.stdout + p.stderr
    assert "\nno slower commit: the bad end's time / the good end's" in p.stdout
    assert doc["outcome"]["kind"] == "no slower commit" and len(doc["steps"]) == 1


def test_a_step_the_check_cannot_decide_is_measured_again_with_twice_the_rounds(started):
    """One slow execution in 6 rounds stretches the median's interval to it: the bad end, as fast as
    the good one but for that, is measured again in 12 rounds, where one execution cannot, and found
    no slower (not "too small to see", exit 3, from the first 6 rounds alone)."""
    run = started["one slow execution"]
    p, doc = run.finish(), run.bisect_doc()
    assert p.returncode == 0, p.stdout + p.stderr
    assert doc["outcome"]["kind"] == "no slower commit", doc
    (step,) = doc["steps"]
    assert step["verdict"] == GOOD and "(in 12 rounds; in the first 6: all hashers pooled" in step["reason"], step
    assert len(list(Path(step["run_dir"]).parent.iterdir())) == 2  # the two A/B runs


@pytest.mark.parametrize("ratio, kind, code", [
    ([1.006, 1.001, 1.023], "no slower commit", 0),   # above 1, as identical builds are by chance
    ([0.998, 0.990, 1.010], "no slower commit", 0),
])
def test_a_bad_end_within_the_threshold_is_no_slower_commit(tmp_path: Path, ratio, kind, code):
    """docs/history.md: "no slower commit" when the bad end's interval rules out a slowdown beyond the
    threshold, wherever it lies under it (the all-fast bisect above once exited 3 on 1.006 [1.001,
    1.023] between two identical builds); "too small to see" only when it cannot rule it out."""
    from harness.history.bisect import Bisection, Settings, Step
    bisection = Bisection(None, tmp_path, Settings(config=tmp_path / "c.toml", threshold=0.5), print)
    outcome = bisection._the_ends(Step("b" * 40, "bad end", GOOD, "within", ratio))
    assert outcome.kind == kind and outcome.exit_code == code
    assert ("slower, but by less than the threshold" in outcome.text) == (ratio[1] > 1)
    unclear = bisection._the_ends(Step("b" * 40, "bad end", SKIP, "the check cannot decide: interval 0.9-1.7"))
    assert unclear.kind == "too small to see" and unclear.exit_code == 3
