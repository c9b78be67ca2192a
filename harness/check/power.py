"""Measure the regression check: how often it catches injected regressions, how often it cries wolf.

    python -m harness.check.power [--repeats 20] [--rounds N] [--conditions a,b] [--out DIR]   (make check-power)
    python -m harness.check.power --analyse build/power/runs [--threshold 3% --confidence 99%] [--resampled N]

Builds, from the faults build (build/faults/bin), one directory per condition: a copy of the
binaries with a `ringsum-faults` file beside them (hashers/faults.c reads it):

  baseline   no fault: what every other condition is compared with
  unchanged  no fault either: an identical build, so its verdicts are the false alarms
  slow5/10/20  slow:P, the hasher takes P% longer (busy, as slower code would)
  depth1     depth:1, --queue-depth ignored: one read at a time
  buffered   buffered:1, O_DIRECT dropped

Each repetition is one run of the check's config (configs/check.toml) with every condition's
hashers interleaved in the same shuffled rounds; then each condition is judged against the
baseline with the check's own code (harness.check.decide.compare: the paired per-round figure, the
behaviour counters) and the check's settings. A repetition is therefore one independent check
per condition. The run directories are kept: `--analyse` judges them again with other settings.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

import tomli_w

from harness.catalog.variants import REPO_ROOT
from harness.check import decide, instructions
from harness.check import load
from harness.check.settings import DEFAULT_INSTRUCTION_TOLERANCE
from harness.pipeline.config import load_config
from harness.pipeline.run_request import Options

CONDITIONS = {
    "baseline": "", "unchanged": "", "slow5": "slow:5", "slow10": "slow:10", "slow20": "slow:20",
    "depth1": "depth:1", "buffered": "buffered:1",
}
DEFAULT_CONFIG = REPO_ROOT / "configs" / "check.toml"
FAULTS_BIN = REPO_ROOT / "build" / "faults" / "bin"
CI_THRESHOLD, CI_CONFIDENCE = 0.03, 0.99  # what .ci/run passes to `ringsum check`
INSTRUCTION_TOLERANCE = DEFAULT_INSTRUCTION_TOLERANCE  # and its --instructions tolerance


def die(msg: str) -> None:
    print(f"fatal: {msg}", file=sys.stderr)
    sys.exit(1)


def make_builds(out: Path, names: list[str]) -> dict[str, Path]:
    builds = {}
    for name in ["baseline", *names]:
        spec = CONDITIONS[name]
        root = out / "builds" / name
        shutil.rmtree(root, ignore_errors=True)
        d = root / "bin"
        d.mkdir(parents=True)
        for exe in FAULTS_BIN.iterdir():
            shutil.copy2(exe, d / exe.name)
        (root / "share" / "ringsum").mkdir(parents=True)  # the variants' list, beside bin/ as make writes it
        shutil.copy2(FAULTS_BIN.parent / "share" / "ringsum" / "variants", root / "share" / "ringsum" / "variants")
        # hashing on every core, which the programs load from beside bin/ (hashers/parallel_load.c)
        shutil.copytree(FAULTS_BIN.parent / "lib", root / "lib")
        if spec:
            (d / "ringsum-faults").write_text(spec + "\n")
        builds[name] = d
    return builds


def conditions_config(config_path: Path, builds: dict[str, Path], out: Path) -> Path:
    """The check's config with every hasher group once per condition, from that condition's build."""
    raw = load_config(config_path).raw
    hashers = [{**group, "name": f"{name}/{group.get('name', group['variant'])}", "path": str(d / group["variant"])}
               for name, d in builds.items() for group in raw.get("hashers", [])]
    path = out / "conditions.toml"
    path.write_text(tomli_w.dumps({"run": raw.get("run", {}), "baselines": raw.get("baselines", {}),
                                   "hashers": hashers}))
    return path


def count_instructions(run_dir: Path, builds: dict[str, Path]) -> None:
    """Each condition's instruction counts, beside its run (instructions-<condition>.json): the CPU
    work signal, counted from that condition's build, faults and all, as `check --instructions` does."""
    for name, d in builds.items():
        counts = instructions.instructions_now(d)
        (run_dir / f"instructions-{name}.json").write_text(json.dumps(counts, indent=1) + "\n")


def read_counts(run_dir: Path, name: str) -> dict[str, Any] | None:
    p = run_dir / f"instructions-{name}.json"
    return json.loads(p.read_text()) if p.is_file() else None


@dataclass
class Verdict:
    """One condition judged in one repetition."""

    condition: str
    run_dir: str
    exit_code: int
    wall: dict[str, str] = field(default_factory=dict)  # command -> verdict of the paired figure
    ratio: dict[str, float] = field(default_factory=dict)  # command -> median per-round ratio
    pooled: str = ""  # verdict of all hashers pooled
    pooled_ratio: float = float("nan")
    counters: list[str] = field(default_factory=list)  # "command: counter verdict" out of tolerance
    instructions: list[str] = field(default_factory=list)  # "variant: verdict ratio" out of tolerance
    decided_by: str = ""


def halves(run_dir: Path) -> dict[str, decide.RunData]:
    """condition -> its commands in the run (labels without the condition's prefix)."""
    run = load.check_data(run_dir)

    def half(name: str) -> decide.RunData:
        prefix = f"{name}/"
        return load.select(run, lambda lbl: lbl[len(prefix):] if lbl.startswith(prefix) else None)

    return {name: half(name) for name in CONDITIONS if any(str(lbl).startswith(f"{name}/") for lbl in run.samples)}


def judged(base: decide.RunData, current: decide.RunData, settings: decide.Settings,
           counts: tuple[dict[str, Any] | None, dict[str, Any] | None]) -> decide.Report:
    """One check, as `ringsum check --instructions` makes it: wall time, counters, instruction counts."""
    report = decide.compare(base, current, settings)
    if counts[0] and counts[1]:
        report.instructions = instructions.compare_instructions(counts[0], counts[1], INSTRUCTION_TOLERANCE)
    return report


def judge(run_dir: Path, settings: decide.Settings) -> list[Verdict]:
    by_condition = halves(run_dir)
    base = by_condition["baseline"]
    out = []
    for name, current in by_condition.items():
        if name == "baseline":
            continue
        report = judged(base, current, settings, (read_counts(run_dir, "baseline"), read_counts(run_dir, name)))
        v = Verdict(name, str(run_dir), report.exit_code, decided_by=report.decided_by())
        for c in report.comparisons:
            e = c.estimates.get("paired")
            if c.tool == decide.POOLED and e is not None:
                v.pooled, v.pooled_ratio = c.verdict, e.ratio
            elif e is not None:
                v.wall[c.label] = c.verdict
                v.ratio[c.label] = e.ratio
        v.counters = [f"{c.label}: {c.counter} {c.verdict}" for c in report.counters if c.verdict != "no change"]
        v.instructions = [f"{i.variant}: {i.verdict} {i.ratio:.4f}" for i in report.instructions
                          if i.verdict != "no change" and i.ratio]
        out.append(v)
    return out


def _resampled(half: decide.RunData, picks: list[tuple[int, int]], runs: list[dict[str, decide.RunData]],
               name: str, counters_from: int) -> decide.RunData:
    """A condition's half of a made-up run: its rounds `picks` ((run, round) pairs, renumbered
    1..n) taken from the real runs, its behaviour counters (and instruction counts) those of one real run."""
    samples = {}
    for label in half.samples:
        times = []
        for rnd, (i, r) in enumerate(picks, 1):
            s = runs[i][name].samples[label]["raw"]
            times += [(rnd, t) for (_f, k), t in zip(s.keys, s.time) if k == r]
        t = np.array([x for _, x in times])
        none = decide.Sample(np.array([]), np.array([]))  # no reference: the paired figure decides
        samples[label] = {"raw": decide.Sample(t, np.ones_like(t), [("resampled", k) for k, _ in times]),
                          **{tool: none for tool in decide.REFERENCE_TOOLS}}
    real = runs[counters_from][name]
    return dataclasses.replace(half, path=Path("resampled"), samples=samples, counters=real.counters,
                               failures=real.failures)


def resampled_checks(run_dirs: list[Path], count: int, rounds: int | None, settings: decide.Settings,
                     seed: int = 20261123) -> dict[str, list[int]]:
    """condition -> exit codes of `count` made-up checks, each `rounds` rounds drawn at random
    (with replacement) from all the runs' rounds, judged by decide.compare like a real check.
    Far more checks than there is time to run, for rates near 0 or 1; they reuse the same
    rounds, so they estimate the rate, they do not replace measuring it."""
    runs = [halves(d) for d in run_dirs]
    keys = [(i, r) for i, h in enumerate(runs)
            for r in sorted({k for s in h["baseline"].samples.values() for _f, k in s["raw"].keys})]
    n = rounds or len(keys) // len(runs)
    rng = np.random.default_rng(seed)
    # the paired figure decides; the bootstrapped raw figure beside it is only shown: keep it cheap
    settings = dataclasses.replace(settings, resamples=10)
    out: dict[str, list[int]] = {}
    for _ in range(count):
        picks = [keys[j] for j in rng.integers(0, len(keys), n)]
        source = int(rng.integers(0, len(runs)))
        base = _resampled(runs[0]["baseline"], picks, runs, "baseline", source)
        for name in runs[0]:
            if name != "baseline":
                cur = _resampled(runs[0][name], picks, runs, name, source)
                counts = (read_counts(run_dirs[source], "baseline"), read_counts(run_dirs[source], name))
                out.setdefault(name, []).append(judged(base, cur, settings, counts).exit_code)
    return out


def resampled_table(codes: dict[str, list[int]], rounds: int) -> str:
    lines = [f"Resampled checks ({rounds} rounds each, drawn with replacement from all runs' rounds):", "",
             "| condition | resampled checks | caught (exit 1) | rate |", "|---|---:|---:|---:|"]
    for name, c in codes.items():
        caught = sum(x == 1 for x in c)
        lines.append(f"| {name} | {len(c)} | {caught} | {caught / len(c) * 100:.2f}% |")
    return "\n".join(lines) + "\n"


def caught_by(v: dict[str, Any]) -> set[str]:
    """The signals that found a regression in one check (a Verdict, or its JSON in verdicts.json):
    "instructions", "counters", "pooled" (wall time, all hashers) and "any" (wall time, a command)."""
    found = set()
    if any(i.split(": ", 1)[1].startswith(decide.REGRESSION) for i in v.get("instructions", [])):
        found.add("instructions")
    if any(c.endswith(" " + decide.REGRESSION) for c in v.get("counters", [])):
        found.add("counters")
    if v.get("pooled") == decide.REGRESSION:
        found.add("pooled")
    if decide.REGRESSION in v.get("wall", {}).values():
        found.add("any")
    return found


def table(verdicts: list[Verdict], settings: decide.Settings) -> str:
    """Markdown: per condition, the checks that failed (exit 1), by each signal."""
    lines = [f"Settings: threshold ±{settings.threshold * 100:g}%, {settings.confidence * 100:g}% interval.", "",
             "| condition | checks | caught (exit 1) | by instructions | by counters | by wall time, pooled | "
             "by wall time, any command | commands flagged by wall time | measured slowdown "
             "(pooled per-round ratio, median over checks) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in CONDITIONS:
        vs = [v for v in verdicts if v.condition == name]
        if not vs:
            continue
        caught = [caught_by(asdict(v)) for v in vs]
        by_instructions, by_counters, by_pooled, by_wall = (sum(signal in c for c in caught)
                                                            for signal in ("instructions", "counters", "pooled", "any"))
        flagged = sum(x == decide.REGRESSION for v in vs for x in v.wall.values())
        commands = sum(len(v.wall) for v in vs)
        ratios = [v.pooled_ratio for v in vs if v.pooled_ratio == v.pooled_ratio]
        slowdown = f"{(median(ratios) - 1) * 100:+.1f}%" if ratios else "-"
        lines.append(f"| {name} | {len(vs)} | {sum(v.exit_code == 1 for v in vs)} | {by_instructions} | {by_counters} | "
                     f"{by_pooled} | {by_wall} | {flagged}/{commands} | {slowdown} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=20, help="runs, i.e. checks per condition (default 20)")
    ap.add_argument("--rounds", type=int, help="rounds per run (default: the config's)")
    ap.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="the check's config")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "build" / "power")
    ap.add_argument("--conditions", default=",".join(c for c in CONDITIONS if c != "baseline"),
                    help="comma-separated, each judged against `baseline` (default: all)")
    ap.add_argument("--analyse", type=Path, metavar="RUNS_DIR", help="judge the runs under RUNS_DIR again")
    ap.add_argument("--threshold", type=decide.parse_fraction, default=CI_THRESHOLD)
    ap.add_argument("--confidence", type=decide.parse_fraction, default=CI_CONFIDENCE)
    ap.add_argument("--keep", type=Path, metavar="LEDGER", help="then keep the study under LEDGER/<fingerprint id>/"
                    "check-power/<--out's name>/ (docs/ledger: the machine ledger's gate rows)")
    ap.add_argument("--resampled", type=int, default=0, metavar="N",
                    help="also N made-up checks per condition from the runs' rounds (estimates rare rates)")
    a = ap.parse_args(argv)
    settings = decide.Settings(threshold=a.threshold, confidence=a.confidence)
    a.out.mkdir(parents=True, exist_ok=True)

    if a.analyse:
        run_dirs = sorted(d for d in a.analyse.iterdir() if load.is_run_dir(d))
        if not run_dirs:
            die(f"{a.analyse}: no run directories")
    else:
        if not FAULTS_BIN.is_dir():
            die(f"{FAULTS_BIN} missing: run `make build/faults/bin/uring_b3sum` (make check-power does)")
        if "RINGSUM_FAULTS" in os.environ:
            die("RINGSUM_FAULTS is set: it would inject into every condition alike")

        names = [c for c in a.conditions.split(",") if c]
        unknown = [c for c in names if c not in CONDITIONS or c == "baseline"]
        if unknown:
            die(f"unknown condition {unknown[0]!r} (known: {', '.join(CONDITIONS)})")
        builds = make_builds(a.out, names)
        config = conditions_config(a.config, builds, a.out)
        run_dirs = []
        for i in range(a.repeats):
            print(f"== repetition {i + 1}/{a.repeats}", file=sys.stderr, flush=True)
            run_dir, _code = decide.measure(Options(config_path=str(config), out=str(a.out / "runs"),
                                                   rounds=a.rounds))
            count_instructions(run_dir, builds)
            run_dirs.append(run_dir)
    verdicts = [v for d in run_dirs for v in judge(d, settings)]
    (a.out / VERDICTS).write_text(json.dumps([asdict(v) | {"run_dir": Path(v.run_dir).name} for v in verdicts],
                                             indent=1) + "\n")
    text = table(verdicts, settings)
    if a.resampled:
        n = a.rounds or load_config(a.config).run.rounds
        codes = resampled_checks(run_dirs, a.resampled, n, settings)
        (a.out / RESAMPLED).write_text(json.dumps({"rounds": n, "exit_codes": codes}) + "\n")
        text += "\n" + resampled_table(codes, n)
    (a.out / "power.md").write_text(text)
    print(text, end="")
    if a.keep:
        print(f"kept as {keep(a.out, run_dirs, a.keep)}", file=sys.stderr)
    return 0


# What a kept study brings (`--keep`): each run's records, not its raw/ files or traces.
RECORDS = ("config.toml", "meta.json", "plan.json", "runs.csv", "counters.csv", "summary.json")
VERDICTS, RESAMPLED = "verdicts.json", "resampled.json"


def keep(out: Path, run_dirs: list[Path], ledger: Path) -> Path:
    """The study's verdicts, resampled exit codes and table, and its runs' records, as
    <ledger>/<fingerprint id>/check-power/<out's name>/ (replacing what that machine kept of it)."""
    fp = json.loads((run_dirs[0] / "meta.json").read_text())["fingerprint"]["fingerprint_id"]
    dest = ledger / fp / "check-power" / out.name
    for step in (ledger, ledger / fp, dest.parent, dest):
        if step.is_symlink():
            die(f"{step}: a symlink; the ledger is not written through one")
    shutil.rmtree(dest, ignore_errors=True)
    (dest / "runs").mkdir(parents=True)
    for name in (VERDICTS, RESAMPLED, "power.md"):
        if (out / name).is_file():
            shutil.copyfile(out / name, dest / name)
    for run_dir in run_dirs:
        kept = dest / "runs" / run_dir.name
        kept.mkdir()
        for f in run_dir.iterdir():
            if f.is_file() and not f.is_symlink() and (f.name in RECORDS or f.name.startswith("instructions-")):
                shutil.copyfile(f, kept / f.name)
    return dest


if __name__ == "__main__":
    sys.exit(main())
