"""A finished run's times in the files hyperfine writes (`--export-json`, `--export-csv`,
`--export-markdown`), for the scripts and pages a hyperfine user already has.

The fields are hyperfine 1.15's, in seconds: per command its name (ringsum's label, as
`hyperfine -n` gives one), mean, stddev (n - 1), median, user, system, min, max, every time and
exit code, and the parameters of a swept command (`-L`). A command is one label: its executions
over the rounds, interleaved with the others' and shuffled, where hyperfine runs each command's in
one block. A `ringsum compare` or `check` takes the JSON back as a run of the same labels.
"""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.judge import results as res


class ExportError(Exception):
    """An export that cannot be written where asked: one line."""


@dataclass
class Result:
    command: str
    times: list[float]
    user: list[float]
    system: list[float]
    exit_codes: list[int | None]
    parameters: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        t = self.times
        doc: dict[str, Any] = {
            "command": self.command, "mean": statistics.fmean(t),
            "stddev": statistics.stdev(t) if len(t) > 1 else None, "median": statistics.median(t),
            "user": statistics.fmean(self.user), "system": statistics.fmean(self.system),
            "min": min(t), "max": max(t), "times": t, "exit_codes": self.exit_codes}
        if self.parameters:
            doc["parameters"] = self.parameters
        return doc


def results(run_dir: Path) -> list[Result]:
    """Each command of the plan that ran, in the plan's order, with its timed executions."""
    plan = res.read_json(run_dir / res.PLAN_JSON)
    timed: dict[str, list[res.RunRecord]] = {}
    for r in res.read_records(run_dir / res.RUNS_CSV):
        if r.wall_s is not None:
            timed.setdefault(r.label, []).append(r)
    out = []
    for c in plan["commands"]:
        done = timed.get(c["label"])
        if not done:
            continue
        out.append(Result(command=c["label"], times=[r.wall_s for r in done], user=[r.user_s or 0.0 for r in done],
                          system=[r.sys_s or 0.0 for r in done], exit_codes=[r.exit_code for r in done],
                          parameters=_parameters(c)))
    return out


def _parameters(command: dict[str, Any]) -> dict[str, str]:
    """A [[commands]] group's swept values, which its label's words give as NAME=VALUE."""
    if command.get("tool") != "command":
        return {}
    return dict(w.split("=", 1) for w in (command.get("extra") or "").split() if "=" in w)


def as_json(rs: list[Result]) -> str:
    return json.dumps({"results": [r.to_json() for r in rs]}, indent=2) + "\n"


def as_csv(rs: list[Result]) -> str:
    names = sorted({n for r in rs for n in r.parameters})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["command", "mean", "stddev", "median", "user", "system", "min", "max",
                *(f"parameter_{n}" for n in names)])
    for r in rs:
        j = r.to_json()
        w.writerow([r.command, *("" if j[k] is None else j[k] for k in
                                 ("mean", "stddev", "median", "user", "system", "min", "max")),
                    *(r.parameters.get(n, "") for n in names)])
    return buf.getvalue()


def as_markdown(rs: list[Result]) -> str:
    """hyperfine's table: mean ± stddev, min, max in ms (in s when every mean is a second or more),
    and each mean relative to the fastest, with its error propagated."""
    js = [r.to_json() for r in rs]
    in_s = all(j["mean"] >= 1 for j in js)
    unit, scale, digits = ("s", 1.0, 3) if in_s else ("ms", 1e3, 1)
    fastest = min(js, key=lambda j: j["mean"])

    def num(v: float) -> str:
        return f"{v * scale:.{digits}f}"

    lines = [f"| Command | Mean [{unit}] | Min [{unit}] | Max [{unit}] | Relative |", "|:---|---:|---:|---:|---:|"]
    for j in js:
        sd = j["stddev"] or 0.0
        mean = num(j["mean"]) + (f" ± {num(sd)}" if j["stddev"] is not None else "")
        ratio = j["mean"] / fastest["mean"]
        if j is fastest:
            rel = "1.00"
        else:
            err = ratio * ((sd / j["mean"]) ** 2 + ((fastest["stddev"] or 0.0) / fastest["mean"]) ** 2) ** 0.5
            rel = f"{ratio:.2f} ± {err:.2f}"
        lines.append(f"| `{j['command']}` | {mean} | {num(j['min'])} | {num(j['max'])} | {rel} |")
    return "\n".join(lines) + "\n"


WRITERS = {"json": as_json, "csv": as_csv, "markdown": as_markdown}


def check_writable(paths: dict[str, str | None]) -> None:
    """Before the run: each export's directory exists and can be written, so no run ends unexported."""
    for kind, path in paths.items():
        if path is None:
            continue
        parent = Path(path).absolute().parent
        if not parent.is_dir():
            raise ExportError(f"--export-{kind} {path}: no directory {parent}")
        if not os.access(parent, os.W_OK):
            raise ExportError(f"--export-{kind} {path}: {parent} is not writable")
        if Path(path).is_symlink() or Path(path).is_dir():
            raise ExportError(f"--export-{kind} {path}: is a symlink or a directory; give a file's path")


def write(run_dir: Path, paths: dict[str, str | None]) -> None:
    """Each export asked for; a path that is a symlink is never followed (O_NOFOLLOW)."""
    asked = {k: p for k, p in paths.items() if p is not None}
    if not asked:
        return
    rs = results(run_dir)
    if not rs:
        raise ExportError(f"{run_dir}: no timed execution to export")
    for kind, path in asked.items():
        text = WRITERS[kind](rs).encode()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            with os.fdopen(fd, "wb") as f:
                f.write(text)
        except OSError as e:
            raise ExportError(f"--export-{kind} {path}: cannot write ({e.strerror or e})") from None
