"""`ringsum bisect --good REV --bad REV`: the first commit that made the hashers slower.

Every candidate is built in a directory of its own (harness/history/revisions.py) and measured
against the good build in the same interleaved rounds, as `ringsum check --against` does. Its
verdict is git bisect's, with the evidence: bad (slower: the interval of a command's time ratio,
or all hashers' pooled, lies above 1 + threshold), good (the pooled interval rules out a slowdown
beyond the threshold), or skip (a build or a command that fails, or an interval the check cannot
decide, even measured again with twice the rounds): never a guess. The question is time: a change
in the I/O counters (`ringsum check` judges those too) is no slower commit by itself, and three
probes a step are too few to bisect by.
git bisect runs in a bare clone inside the run directory, so the repository and its working tree
are never touched.

The bad end is measured first. When its interval rules out a slowdown beyond the threshold there
is nothing to find ("no slower commit", docs/history.md), even if it lies above 1: slower by less
than the threshold, as two identical builds are by chance one time in forty at 95%; when its
interval reaches past the threshold without lying above it, the slowdown is too small to see with
these rounds; a bad end that does not build or run leaves it undecided: each said so.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from harness.catalog.tools import HASHER
from harness.check import decide
from harness.check import load as check_load
from harness.history.revisions import Repository, Revision, RevisionError
from harness.pipeline.run_request import Options

GOOD, BAD, SKIP = "good", "bad", "skip"
UNCLEAR = "the check cannot decide: "  # a skip for the interval's sake, not for a broken build
BISECT_JSON = "bisect.json"
# What the run ends with: a first slower commit, none between the ends, or no answer.
FOUND, NONE_SLOWER, TOO_SMALL, UNDECIDED = "found", "no slower commit", "too small to see", "undecided"
EXIT_CODES = {FOUND: 0, NONE_SLOWER: 0, TOO_SMALL: 3, UNDECIDED: 2}


@dataclass
class Settings:
    config: Path
    rounds: int | None = None
    file: str | None = None
    size: int | None = None
    dir: str | None = None
    threshold: float = decide.DEFAULT_THRESHOLD
    confidence: float = decide.DEFAULT_CONFIDENCE


@dataclass
class Step:
    """One candidate measured: its verdict and why."""

    sha: str
    subject: str
    verdict: str  # good, bad or skip
    reason: str
    ratio: list[float] | None = None  # all hashers pooled, this build / the good one: [median, low, high]
    run_dir: str | None = None
    build_s: float = 0.0
    measure_s: float = 0.0


@dataclass
class Outcome:
    kind: str  # FOUND, NONE_SLOWER, TOO_SMALL or UNDECIDED
    text: str
    first_bad: str | None = None
    steps: list[Step] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.kind]


def _overall(report: decide.Report) -> decide.Comparison | None:
    """What decides a build as a whole: all hashers pooled, or the one hasher when there is one."""
    pooled = next((c for c in report.comparisons if c.tool == decide.POOLED), None)
    hashers = [c for c in report.comparisons if c.tool == HASHER and "paired" in c.estimates]
    return pooled or (hashers[0] if len(hashers) == 1 else None)


def _pooled(report: decide.Report) -> decide.Estimate | None:
    overall = _overall(report)
    return overall.estimates.get("paired") if overall else None


def _ratio_text(e: decide.Estimate) -> str:
    return f"{e.ratio:.3f} [{e.low:.3f}, {e.high:.3f}]"


def judge(report: decide.Report, threshold: float) -> tuple[str, str]:
    """(verdict, reason) of a candidate's comparison with the good build."""
    failed = [c for c in report.comparisons if c.verdict == decide.FAILED]
    if failed:
        return SKIP, f"a command failed, so its time says nothing: {failed[0].label}: {failed[0].reason}"
    slower = [c for c in report.comparisons if c.verdict == decide.REGRESSION]
    if slower:
        e = slower[0].estimates.get(slower[0].primary or "")
        return BAD, f"slower: {slower[0].label}: time ratio {_ratio_text(e) if e else '-'}, above 1 + {threshold:.0%}"
    overall, pooled = _overall(report), _pooled(report)
    if overall is None or pooled is None:
        return SKIP, "no hasher ran in both builds"
    if overall.verdict == decide.TOO_FEW:
        return SKIP, f"{UNCLEAR}too few rounds to decide: {overall.reason}"
    if pooled.high <= 1 + threshold:
        return GOOD, f"no slowdown beyond {threshold:.0%}: all hashers pooled {_ratio_text(pooled)}"
    return SKIP, (f"{UNCLEAR}all hashers pooled {_ratio_text(pooled)} reaches past "
                  f"1 + {threshold:.0%} without lying above it")


class Bisection:
    """One `ringsum bisect` in its run directory: the clone, the builds, the A/B runs, bisect.json."""

    def __init__(self, repo: Repository, run_dir: Path, settings: Settings, log: Callable[[str], None]) -> None:
        self.repo, self.run_dir, self.settings, self.log = repo, run_dir, settings, log
        self.steps: list[Step] = []
        self.good_bin: Path | None = None

    def _save(self, outcome: Outcome | None = None) -> None:
        doc = {"settings": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self.settings).items()},
               "steps": [asdict(s) for s in self.steps],
               "outcome": None if outcome is None else {"kind": outcome.kind, "text": outcome.text,
                                                         "first_bad": outcome.first_bad}}
        tmp = self.run_dir / (BISECT_JSON + ".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        tmp.replace(self.run_dir / BISECT_JSON)

    def measure(self, rev: Revision) -> Step:
        """Build `rev` and compare it with the good build; the step, recorded."""
        started = time.monotonic()
        try:
            bin_dir = self.repo.build(rev, self.run_dir / "builds")
        except RevisionError as e:
            step = Step(rev.sha, rev.subject, SKIP, f"it does not build: {e}", build_s=time.monotonic() - started)
            return self._record(step)
        built = time.monotonic()
        try:
            run_dir, report, rounds = self._compare(bin_dir, self.settings.rounds)
            verdict, reason = judge(report, self.settings.threshold)
            if verdict == SKIP and reason.startswith(UNCLEAR):
                # One look more, with twice the rounds: one slow execution in a few rounds (a machine
                # busy for a moment) widens a median's interval to it; among twice as many it does not.
                first = reason.removeprefix(UNCLEAR)
                run_dir, report, _ = self._compare(bin_dir, 2 * rounds)
                verdict, reason = judge(report, self.settings.threshold)
                reason += f" (in {2 * rounds} rounds; in the first {rounds}: {first})"
        except decide.CheckError as e:
            step = Step(rev.sha, rev.subject, SKIP, f"it could not be measured: {e}",
                        build_s=built - started, measure_s=time.monotonic() - built)
            return self._record(step)
        pooled = _pooled(report)
        step = Step(rev.sha, rev.subject, verdict, reason, [pooled.ratio, pooled.low, pooled.high] if pooled else None,
                    str(run_dir), built - started, time.monotonic() - built)
        return self._record(step)

    def _compare(self, bin_dir: Path, rounds: int | None) -> tuple[Path, decide.Report, int]:
        """An A/B run of `bin_dir` against the good build: its directory, the comparison and its rounds."""
        assert self.good_bin is not None
        s = self.settings
        opts = Options(config_path=str(s.config), file=s.file, size=s.size, dir=s.dir, rounds=rounds,
                       out=str(self.run_dir / "runs"), bin_dir=str(bin_dir), against=str(self.good_bin), yes=True)
        run_dir, _code = decide.measure(opts)
        data = check_load.check_data(run_dir)
        base, current = check_load.split_ab(data)
        report = decide.compare(base, current, decide.Settings(threshold=s.threshold, confidence=s.confidence))
        return run_dir, report, int(data.runs["round"].max())

    def _record(self, step: Step) -> Step:
        self.steps.append(step)
        self._save()
        self.log(f"{step.sha[:12]} {step.verdict.upper()}: {step.reason} "
                 f"(build {step.build_s:.0f} s, measure {step.measure_s:.0f} s)")
        return step

    def run(self, good: Revision, bad: Revision) -> Outcome:
        if good.sha == bad.sha or not self.repo.is_ancestor(good, bad):
            raise RevisionError(f"--good {good.short} is not an ancestor of --bad {bad.short}")
        self.log(f"good: {good.text()}")
        self.good_bin = self.repo.build(good, self.run_dir / "builds")
        self.log(f"bad:  {bad.text()}")
        end = self.measure(bad)
        outcome = self._the_ends(end)
        if outcome is None:
            outcome = self._bisect(good, bad)
        self._save(outcome)
        return outcome

    def _the_ends(self, end: Step) -> Outcome | None:
        """The bad end against the good one: whether there is a slowdown to find at all."""
        thr = self.settings.threshold
        ratio = f"{end.ratio[0]:.3f} [{end.ratio[1]:.3f}, {end.ratio[2]:.3f}]" if end.ratio else "-"
        if end.verdict == BAD:
            return None
        if end.verdict == GOOD:
            under = (f"; slower, but by less than the threshold (a lower --threshold, with more --rounds, "
                     "may bisect it)" if end.ratio and end.ratio[1] > 1 else "")
            return Outcome(NONE_SLOWER, f"the bad end's time / the good end's {ratio}, "
                           f"no slowdown beyond {thr:.0%}{under}", steps=self.steps)
        if end.reason.startswith(UNCLEAR):
            return Outcome(TOO_SMALL, f"a slowdown, if there is one, too small to see in these rounds: "
                           f"{end.reason.removeprefix(UNCLEAR)} (more --rounds narrow the interval)", steps=self.steps)
        return Outcome(UNDECIDED, f"cannot tell whether the bad end is slower: {end.reason}", steps=self.steps)

    def _bisect(self, good: Revision, bad: Revision) -> Outcome:
        self.repo.git("bisect", "start", "--no-checkout", bad.sha, good.sha)
        try:
            while True:
                sha = self.repo.git("rev-parse", "BISECT_HEAD").strip()
                step = self.measure(self.repo.revision(sha))
                said = self.repo.git_said("bisect", step.verdict, sha)
                if "is the first bad commit" in said:
                    first = self.repo.revision(said.split()[0])
                    return Outcome(FOUND, f"first slower commit: {first.text()}", first.sha, self.steps)
                if "only 'skip'ped commits left" in said:
                    could = re.findall(r"^([0-9a-f]{40})", said, re.M)
                    return Outcome(UNDECIDED, "the first slower commit is one of these, each skipped: "
                                   + ", ".join(c[:12] for c in could), None, self.steps)
        finally:
            (self.run_dir / "bisect.log").write_text(self.repo.git("bisect", "log"))
            self.repo.git_said("bisect", "reset")
