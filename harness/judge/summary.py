"""A finished run's summary, summary.txt and summary.json, made from its run directory alone (runs.csv,
plan.json, meta.json): what a run prints as it ends, and what regenerates byte for byte from a kept
run directory. The run hands over its directory, not its options."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.judge import results as res
from harness.judge import verdict
from harness.judge.load import Run, load_run
from harness.judge.speed_limit import meta_speed_limit


def meta_limit(run: Run) -> dict[str, Any]:
    """meta.json's `speed_limit`: the fastest plain read of the run's file, and each command's ratio to it."""
    return meta_speed_limit(run.runs, run.plan["cache"])


def sequential_line(data: dict[str, Any]) -> str:
    """summary.txt's last line for a run --until-decided: how it ended, and the confidence of its looks."""
    out = data.get("outcome", {})
    ended = {"decided": "a winner is named", "budget": "the time budget ended", None: "the run ended",
             "no hasher": "no hasher succeeded, nothing to decide",
             "max_rounds": f"the {data['max_rounds']} rounds at most are done"}.get(out.get("stopped_by"), "?")
    return (f"until decided: {out.get('rounds', '?')} rounds, {ended}; the decision looked at most {data['looks']} "
            f"times, each at {data['confidence']:.2%} so that all of them together are wrong at most 5% of the time; "
            f"{out.get('spent_s', 0.0):.0f} s on added rounds\n")


def summary(run: Run) -> tuple[str, dict[str, Any], list[str]]:
    """(summary.txt, summary.json, the findings to call out) of a finished run. A run --until-decided
    looked several times: its decision is made at the stricter confidence it recorded."""
    cache, argv, confidence, seq = run.plan["cache"], run.argvs, run.decision_confidence, run.meta.get("sequential")
    judged = verdict.Judgement(run.runs)
    text = (verdict.summarize(run.runs, cache, argv, confidence, run.plan.get("cached_share"), judged)
            + (sequential_line(seq) if seq else ""))
    data = verdict.summary_json(run.runs, cache, argv, confidence, judged) | ({"sequential": seq} if seq else {})
    # a finding (faster than the limit) is the same whatever the command lines and the confidence
    findings = [t for what, t in judged.headline(cache, argv, confidence=confidence).items() if what == "FINDING"]
    return text, data, findings


def write(run: Run) -> tuple[str, list[str]]:
    """Write summary.txt and summary.json into the run directory; (the text, the findings)."""
    text, data, findings = summary(run)
    res.write_json_atomic(run.path / res.SUMMARY_JSON, data)
    (run.path / res.SUMMARY_TXT).write_text(text)
    return text, findings


def unchanged(run_dir: Path) -> list[str]:
    """The summary files of a kept run directory that the code would not write byte for byte as they
    are (a kept run may have summary.json alone)."""
    text, data, _ = summary(load_run(run_dir))
    made = {res.SUMMARY_JSON: res.json_text(data), res.SUMMARY_TXT: text}
    return [name for name, content in made.items()
            if (run_dir / name).exists() and (run_dir / name).read_text(encoding="utf-8") != content]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.judge.summary",
                                description="summary.txt and summary.json of finished runs, made again from their files")
    p.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    p.add_argument("--write", action="store_true", help="write them (default: name the files that would change, exit 1)")
    a = p.parse_args(argv)
    changed = 0
    for run_dir in a.run_dirs:
        if a.write:
            write(load_run(run_dir))
        else:
            for name in unchanged(run_dir):
                print(f"{run_dir / name}: not what the code makes of the run's files")
                changed += 1
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
