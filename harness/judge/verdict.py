"""What a run says: the summary table and the headline answer (what to use on this machine, how
sure that is, whether the runner-up is really slower or a tie, and how it compares with b3sum and
with the speed limit of harness/judge/speed_limit.py). A hasher, b3sum or xxhsum faster than the
limit (median of its per-round ratio below 1) means the run's readers missed a faster way to read,
and is reported as a finding. Pure functions of the runs table (`harness.judge.results.read_runs()`);
every median, interval and ratio comes from `harness.stats`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from typing import Any

from harness import stats
from harness.catalog.tools import HASHER, PLAIN_READ, READ_TOOLS, REFERENCE_HASH, the_tool, tools_with
from harness.judge import robust
from harness.judge.robust import condition_names, one_condition
from harness.judge.decision import Decision, decide
from harness.judge.results import command_stats
from harness.judge.speed_limit import (blake3_in_memory, by_round, files_by_size, limit_ratios, one_file, speed_limit,
                                      SpeedLimit, workloads)
from harness.units import about_size, format_rate, format_size

RoundTimes = stats.RoundTimes

INTERVAL_METHOD = "distribution-free order-statistic interval for the median (no resampling)"


# --- the headline ---

@dataclass(frozen=True)
class Versus:
    """The recommended command against another: its time / the other's, per round."""

    label: str
    ratio: stats.Estimate
    within_noise: bool = False  # the decision's word: too few rounds for its confidence is a tie

    @property
    def outcome(self) -> str:
        return "tie" if self.within_noise else stats.outcome(self.ratio)

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "ratio": self.ratio.to_json(), "outcome": self.outcome}


@dataclass
class Headline:
    """What to use on this machine, for the run's largest file."""

    file_size: int
    cache: str
    rounds: int
    files: int = 1  # in the dataset: more than one is a tree
    cached_share: float | None = None  # cold, then this share of the file read back (run.cached_share)
    dataset: str = ""  # its path
    use: str | None = None  # the hasher with the lowest median time
    argv: list[str] | None = None
    median: stats.Estimate | None = None  # its wall time, seconds
    limit: SpeedLimit | None = None
    vs_limit: stats.Estimate | None = None
    b3sum: Versus | None = None  # the b3sum command with the lowest median
    runner_up: Versus | None = None
    tied: list[str] = field(default_factory=list)  # hashers the data cannot tell from `use`
    decision: Decision | None = None
    faster_than_limit: list[Versus] = field(default_factory=list)  # findings: label, its time / limit

    @property
    def reference(self) -> tuple[str, stats.Estimate] | None:  # what the decision weighs the pick against
        return (self.b3sum.label, self.b3sum.ratio) if self.b3sum else None

    def items(self) -> list[tuple[str, str]]:
        """(what, text) pairs: the headline in words, for summary.txt and summary.md alike."""
        out = [("decision", self.decision.text(self.reference))] if self.decision else []
        if self.use is None:
            out.append(("use", self.decision.no_hasher if self.decision else "no hasher ran successfully"))
        else:
            assert self.median is not None
            out.append(("use" if not self.tied else "fastest", self.use))
            if self.argv:
                out.append(("command", shlex.join(self.argv)))
            out.append(("median", f"{self.median.text()} s ({format_rate(self.file_size / self.median.median)})"))
            if self.limit and self.vs_limit:
                out.append(("vs limit", f"{self.vs_limit.text(2)} x the fastest plain read "
                            f"({self.limit.seconds:.3f} s, {self.limit.set_by} in {self.limit.set_by_rounds} "
                            f"of {len(self.limit.set_in_round)} rounds)"))
            else:
                out.append(("vs limit", f"- (no read-only command ({', '.join(READ_TOOLS)}) in the run)"))
            if self.b3sum:  # too few rounds for 95% even from min to max: undecided, whatever the median says
                word = stats.outcome(self.b3sum.ratio, stats.CONFIDENCE)
                out.append(("vs b3sum", f"{self.b3sum.ratio.text(2)} x the time of `{self.b3sum.label}`: "
                            + {"faster": "faster, real", "slower": "SLOWER than b3sum, real", "tie": "a TIE with b3sum",
                               "unknown": "no common rounds", "undecided": "UNDECIDED, too few rounds"}[word]))
            if self.runner_up:
                out.append(("runner-up", f"{self.runner_up.label}: winner/runner-up "
                            f"{self.runner_up.ratio.text(3)}: "
                            + {"faster": "the difference is real", "tie": "TIE",
                               "slower": "the runner-up is faster round by round (the medians disagree)",
                               "unknown": "no common rounds"}[self.runner_up.outcome]))
        for v in self.faster_than_limit:
            out.append(("FINDING", f"{v.label} is faster than the speed limit ({v.ratio.text(3)} x its time): "
                        f"the run's read-only commands missed a faster way to read the {'tree' if self.tree else 'file'}"))
        if self.median is not None:
            short = self.median.confidence < stats.CONFIDENCE
            strict = self.decision and self.decision.confidence > stats.CONFIDENCE
            out.append(("intervals", f"95% for medians and per-round ratios, {INTERVAL_METHOD}"
                        + (f"; the decision, the runner-up and vs b3sum at {self.decision.confidence:.2%} (several looks)"
                           if strict else "")
                        + (f"; {self.median.n} rounds give at most {self.median.confidence:.1%} (min to max)"
                           if short else "")))
        return out

    def title(self) -> str:
        what = (f"tree of {self.files} files, {about_size(self.file_size)}, {self.dataset}" if self.tree
                else f"{format_size(self.file_size)} file")
        share = f", {self.cached_share:g} of it read back" if self.cached_share is not None else ""
        return f"What to use on this machine ({what}, {self.cache} cache{share}, {self.rounds} rounds)"

    @property
    def tree(self) -> bool:
        return self.files > 1

    def to_json(self) -> dict[str, Any]:
        figures = (("median_s", self.median), ("speed_limit", self.limit), ("vs_limit", self.vs_limit),
                   ("vs_b3sum", self.b3sum), ("runner_up", self.runner_up))
        return {"file_size": self.file_size, "files": self.files, "dataset": self.dataset, "cache": self.cache,
                "rounds": self.rounds, "use": self.use, "argv": self.argv,
                **{k: v.to_json() if v else None for k, v in figures}, "tied": self.tied,
                "decision": self.decision.to_json(self.reference) if self.decision else None,
                "faster_than_limit": [v.to_json() for v in self.faster_than_limit]}


def fastest(times: dict[str, RoundTimes], labels: list[str]) -> list[tuple[str, float]]:
    """(label, median time) of the labels with data, fastest first."""
    medians = [(lbl, stats.median_interval(times[lbl].values()).median) for lbl in labels if times.get(lbl)]
    return sorted(medians, key=lambda t: (t[1], t[0]))


def headline(runs: Any, cache: str, argv: dict[str, list[str]] | None = None, file: str | None = None,
             condition: str | None = None, confidence: float = stats.CONFIDENCE) -> Headline:
    """The headline for one dataset (default: the run's largest) in one condition (default: the
    first); argv maps labels to their command lines; `confidence`: the decision's, per comparison
    (stricter than 95% for a run that looked several times, harness/judge/sequential.py)."""
    rows = one_file(one_condition(runs, condition), file)
    return _headline(rows, cache, argv, confidence, speed_limit(rows), by_round(rows))


def _headline(rows: Any, cache: str, argv: dict[str, list[str]] | None, confidence: float,
              limit: SpeedLimit | None, times: dict[str, RoundTimes]) -> Headline:
    """headline() of one dataset's rows in one condition, with their speed limit and per-round times."""
    files = rows["files"].dropna() if "files" in rows else []
    h = Headline(file_size=int(rows["file_size"].max()) if len(rows) else 0, cache=cache,
                 rounds=int(rows["round"].nunique()) if len(rows) else 0,
                 files=int(files.max()) if len(files) else 1, dataset=str(rows["file"].iloc[0]) if len(rows) else "")
    tools = dict(zip(rows["label"].astype(str), rows["tool"].astype(str)))
    h.limit = limit
    if h.limit:
        for label, tool in tools.items():
            if tool not in READ_TOOLS and label in times:
                ratio = stats.paired_rounds(times[label], h.limit.per_round)
                if stats.outcome(ratio) == "faster":  # a median under 1 with 1 in its interval is at the limit
                    h.faster_than_limit.append(Versus(label, ratio))
    in_run = [lbl for lbl, tool in tools.items() if tool == HASHER]  # with times or not: decide() says which
    hashers = fastest(times, in_run)
    h.decision = decide(times, in_run, confidence)
    if not hashers:
        return h
    h.use = hashers[0][0]
    h.argv = (argv or {}).get(h.use)
    mine = times[h.use]
    h.median = stats.median_interval(mine.values())
    if h.limit:
        h.vs_limit = stats.paired_rounds(mine, h.limit.per_round)
    b3sums = fastest(times, [lbl for lbl, tool in tools.items() if tool in tools_with(REFERENCE_HASH)])
    if b3sums:
        h.b3sum = Versus(b3sums[0][0], stats.paired_rounds(mine, times[b3sums[0][0]], confidence))
    if len(hashers) > 1:
        d = h.decision  # the runner-up the decision names, at its confidence
        h.runner_up = Versus(d.runner_up, d.runner_up_ratio, not d.decided) if d.runner_up and d.runner_up_ratio else None
    h.tied = h.decision.contenders[1:]
    return h


class Judgement:
    """One runs table judged once: each dataset's rows, speed limit, per-round times and headline,
    the ratios to the limits, the commands' table and the robust pick, worked out the first time
    they are asked for. summary.txt, summary.json and the findings read the same figures (made for
    each, a kept run's summaries took about half their time on them twice)."""

    def __init__(self, runs: Any) -> None:
        self.runs = runs
        self._made: dict[tuple[Any, ...], Any] = {}

    def _once(self, key: tuple[Any, ...], make: Any) -> Any:
        if key not in self._made:
            self._made[key] = make()
        return self._made[key]

    def _condition(self, condition: str) -> Any:
        return self._once(("condition", condition), lambda: one_condition(self.runs, condition))

    def _dataset(self, condition: str | None, file: str | None) -> tuple[str | None, str | None]:
        """(condition, file) as headline() would take them: the first condition, its largest file."""
        condition = condition_names(self.runs)[0] if condition is None else condition
        if file is None:
            rows = self._condition(condition)
            file = files_by_size(rows)[-1] if len(rows) else None
        return condition, file

    def rows(self, condition: str | None = None, file: str | None = None) -> Any:
        c, f = self._dataset(condition, file)
        return self._once(("rows", c, f), lambda: one_file(self._condition(c), f))

    def speed_limit(self, condition: str | None = None, file: str | None = None) -> SpeedLimit | None:
        c, f = self._dataset(condition, file)
        return self._once(("limit", c, f), lambda: speed_limit(self.rows(c, f)))

    def times(self, condition: str | None = None, file: str | None = None) -> dict[str, RoundTimes]:
        c, f = self._dataset(condition, file)
        return self._once(("times", c, f), lambda: by_round(self.rows(c, f)))

    def headline(self, cache: str, argv: dict[str, list[str]] | None = None, file: str | None = None,
                 condition: str | None = None, confidence: float = stats.CONFIDENCE) -> Headline:
        """headline(), shared: a caller that changes it changes a copy (dataclasses.replace)."""
        c, f = self._dataset(condition, file)
        return self._once(("headline", cache, id(argv) if argv else None, c, f, confidence),
                          lambda: _headline(self.rows(c, f), cache, argv, confidence, self.speed_limit(c, f),
                                            self.times(c, f)))

    def workloads(self) -> list[tuple[str, str]]:
        return self._once(("workloads",), lambda: workloads(self.runs))

    def limit_ratios(self) -> dict[str, stats.Estimate]:
        return self._once(("limit_ratios",), lambda: limit_ratios(self.runs, self.speed_limit, self.times))

    def command_stats(self) -> Any:
        return self._once(("command_stats",), lambda: command_stats(self.runs))

    def robust_pick(self) -> robust.RobustPick | None:
        return self._once(("robust_pick",), lambda: robust_pick(self.runs, self))


# --- summary.txt and summary.json ---

def _hash_word(hash_ok_all: Any) -> str:
    """summary.txt's and summary.json's hash status: "-" for a tool that prints no hash."""
    # Deferred for start-up time: pandas loads only where a table is read.
    import pandas as pd
    return "-" if pd.isna(hash_ok_all) else ("ok" if hash_ok_all else "MISMATCH")


def summarize(runs: Any, cache: str, argv: dict[str, list[str]] | None = None,
              confidence: float = stats.CONFIDENCE, cached_share: float | None = None,
              judged: Judgement | None = None) -> str:
    """The summary printed at the end of a run (and saved as summary.txt): the table of every
    command, the speed limit, and the headline last."""
    if not len(runs):
        return "no runs recorded\n"
    j = judged or Judgement(runs)
    ratios = j.limit_ratios()
    table = j.command_stats().sort_values("median_Bps", ascending=False, na_position="last")
    width = max(20, min(60, int(table["label"].str.len().max())))
    lines = [f"{'command':<{width}}  {'n':>3}  {'median':>8}  {'min':>8}  {'max':>8}  "
             f"{'throughput':>11}  {'x limit':>7}  hash"]

    def sec(v: Any) -> str:
        return "-" if v is None or v != v else f"{v:.3f} s"

    for r in table.itertuples():
        ratio = ratios.get(r.label)
        shown = f"{ratio.median:.2f}" if ratio is not None and ratio.n else "-"
        n = f"{r.n}" + (f"+{r.failed}!" if r.failed else "")
        label = r.label if len(r.label) <= width else r.label[: width - 1] + "…"
        lines.append(f"{label:<{width}}  {n:>3}  {sec(r.median_s):>8}  {sec(r.min_s):>8}  "
                     f"{sec(r.max_s):>8}  {format_rate(r.median_Bps):>11}  {shown:>7}  {_hash_word(r.hash_ok_all)}")
    lines += ["", "x limit: the command's time / the speed limit in the same round, median over rounds "
                  "(fio: its own read runtime; its wall time above includes its start-up)"]

    def best(mask: Any) -> str:
        t = table[mask & table["median_Bps"].notna()]
        if not len(t):
            return "-"
        r = t.iloc[0]
        return f"{r['label']}  {format_rate(r['median_Bps'])}  (median {sec(r['median_s'])})"

    conds = condition_names(runs)
    files = files_by_size(one_condition(runs))
    for cond, file in j.workloads():
        limit = j.speed_limit(cond, file)
        where = (f" [{file}]" if len(files) > 1 else "") + (f" @{cond}" if len(conds) > 1 else "")
        lines.append(f"speed limit{where}: " + (limit.text() if limit else
                     f"- (no successful read-only command: {', '.join(READ_TOOLS)})"))
    if cache == "warm":
        b3 = blake3_in_memory(runs)
        lines.append(f"BLAKE3 in memory:  single core {format_rate(b3['blake3_single_core_Bps'])}, "
                     f"all cores {format_rate(b3['blake3_all_core_Bps'])} (b3sum, mmap; not a limit)")
    lines.append(f"best hasher:       {best(table['tool'] == HASHER)}")
    reference, plain = the_tool(REFERENCE_HASH), the_tool(PLAIN_READ)
    lines.append(f"{'best ' + reference + ':':<19}{best(table['tool'] == reference)}")
    lines.append(f"{plain + ':':<19}{best(table['tool'] == plain)}")
    for r in table[table["hash_ok_all"].eq(False).fillna(False)].itertuples():
        lines.append(f"HASH MISMATCH:     {r.label}")
    for r in table[table["failed"] > 0].itertuples():
        lines.append(f"FAILED RUNS:       {r.label}: {r.failed}")
    if len(conds) > 1:
        return "\n".join(lines + across_conditions(runs, j)) + "\n"
    trees = "files" in runs and bool(runs["files"].fillna(1).gt(1).any())
    for file in files if trees else files[-1:]:  # a headline per dataset once trees are among them
        h = replace(j.headline(cache, argv, file, confidence=confidence), cached_share=cached_share)
        lines += ["", h.title() + ":"]
        lines += [f"  {what + ':':<11} {text}" for what, text in h.items()]
    return "\n".join(lines) + "\n"


def robust_pick(runs: Any, judged: Judgement | None = None) -> robust.RobustPick | None:
    """The configuration to choose when the machine may be any of the run's conditions (the
    largest file's)."""
    j = judged or Judgement(runs)
    times: dict[str, dict[str, RoundTimes]] = {}
    limits: dict[str, RoundTimes] = {}
    for cond in condition_names(runs):
        rows = j.rows(cond)
        hashers = set(rows[rows["tool"] == HASHER]["label"].astype(str))
        times[cond] = {robust.configuration(k, cond): t for k, t in j.times(cond).items() if k in hashers}
        limit = j.speed_limit(cond)
        if limit:
            limits[cond] = limit.per_round
    return robust.robust_pick(times, limits)


def across_conditions(runs: Any, judged: Judgement | None = None) -> list[str]:
    """summary.txt's lines for a run of several conditions: each one's winner, then the robust pick."""
    j = judged or Judgement(runs)
    return robust.lines(int(one_file(runs)["file_size"].max()),
                        [(c, j.headline("", None, None, c)) for c in condition_names(runs)], j.robust_pick())


def summary_json(runs: Any, cache: str, argv: dict[str, list[str]] | None = None,
                 confidence: float = stats.CONFIDENCE, judged: Judgement | None = None) -> dict[str, Any]:
    """summary.json: the headline, the speed limit and every command's ratio to it, machine-readable."""
    j = judged or Judgement(runs)
    ratios = j.limit_ratios()
    commands = []
    for r in j.command_stats().itertuples():
        ratio = ratios.get(r.label)
        commands.append({"label": r.label, "tool": r.tool, "n": r.n, "failed": r.failed,
                         **{k: None if v != v else v for k, v in (("median_s", r.median_s), ("min_s", r.min_s),
                                                                   ("max_s", r.max_s))}, "hash": _hash_word(r.hash_ok_all),
                         "vs_limit": ratio.to_json() if ratio is not None else None})
    headlines = [j.headline(cache, argv, f, c, confidence).to_json() | {"condition": c} for c, f in j.workloads()]
    first = [h for h in headlines if h["condition"] == condition_names(runs)[0]]
    pick = j.robust_pick() if len(condition_names(runs)) > 1 else None
    return {"conditions": {"names": condition_names(runs), "robust_pick": pick.to_json() if pick else None},
            "interval": {"confidence": stats.CONFIDENCE, "method": INTERVAL_METHOD},
            "ratios": stats.RATIO_CONVENTION,
            "headline": first[-1] if first else j.headline(cache, argv, confidence=confidence).to_json(),
            "headlines": headlines,
            "blake3_in_memory": blake3_in_memory(runs) if cache == "warm" else None,
            "commands": commands}
