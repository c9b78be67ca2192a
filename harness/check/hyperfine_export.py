"""A hyperfine export (`hyperfine --export-json FILE`) as the baseline of `ringsum check` and the
first run of `ringsum compare`: a user's saved hyperfine run of a hasher, compared with a ringsum
run of it.

Each of hyperfine's results is matched to a command of the ringsum run: by name when hyperfine was
given the ringsum label (`hyperfine -n LABEL`), else by its command line (the program by its file
name, the options as written, the file it reads left out). Its times become executions of that
label, one round each, so the check compares them as it compares two runs (the raw figure: they
share no rounds). A hyperfine export names no machine: it is taken as the current run's, and the
report says so.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import numpy as np

from harness.check.load import REFERENCE_TOOLS, CheckError, RunData, Sample
from harness.judge import results as res


def is_hyperfine_export(path: Path) -> bool:
    return path.suffix == ".json" and path.is_file() and not path.is_symlink()


def _words(argv: list[str]) -> tuple[str, ...]:
    """A command line as the match sees it: the program's file name, the options, no file read."""
    if not argv:
        return ()
    rest = argv[1:]
    if rest and not rest[-1].startswith("-"):
        rest = rest[:-1]  # the file hashed: the two runs may name it differently
    return (Path(argv[0]).name, *[w for w in rest if w != "--"])


def _plan_argv(run: RunData) -> dict[tuple[str, ...], str]:
    try:
        plan = json.loads((run.path / res.PLAN_JSON).read_text())
    except (OSError, ValueError):
        return {}
    return {_words(list(c.get("argv") or [])): c["label"] for c in plan.get("commands", []) if "label" in c}


def load_export(path: Path, current: RunData) -> tuple[RunData, list[str]]:
    """The export as a RunData beside `current`, and notes for the report (unmatched results)."""
    try:
        doc = json.loads(path.read_text())
        results = doc["results"]
        assert isinstance(results, list)
    except (OSError, ValueError, KeyError, AssertionError) as e:
        raise CheckError(f"{path}: not a hyperfine export ({e.__class__.__name__}: {e})") from None
    by_argv = _plan_argv(current)
    labels = set(current.samples)
    samples: dict[str, dict[str, Sample]] = {}
    rows: list[dict[str, Any]] = []
    notes = [f"{path.name}: a hyperfine export, which names no machine: taken as this run's machine"]
    for i, r in enumerate(results):
        command = str(r.get("command", ""))
        times = [float(t) for t in r.get("times") or []]
        codes = list(r.get("exit_codes") or [0] * len(times))
        try:
            words = _words(shlex.split(command))
        except ValueError:
            words = ()
        label = command if command in labels else by_argv.get(words)
        if label is None:
            notes.append(f"{path.name}: result {i + 1} ({command!r}) matches no command of the run: left out")
            continue
        if not times or len(codes) != len(times):
            raise CheckError(f"{path}: result {i + 1} ({command!r}) has no times (hyperfine 1.12 or later exports them)")
        ok = np.array([t for t, c in zip(times, codes) if c == 0], dtype=float)
        keys = [(path.name, k + 1) for k in range(len(ok))]
        none = Sample(np.array([]), np.array([]))  # no reader ran beside it: the raw figure decides
        samples[label] = {"raw": Sample(ok, np.ones_like(ok), keys), **{ref: none for ref in REFERENCE_TOOLS}}
        like = current.runs.loc[current.runs["label"] == label].iloc[0]  # what it hashed: the run's dataset
        rows += [{"label": label, "tool": like["tool"], "file": like["file"], "file_size": like["file_size"],
                  "files": like.get("files", 1), "cache": current.cache, "round": k + 1, "wall_s": t,
                  "exit_code": c} for k, (t, c) in enumerate(zip(times, codes))]
    if not samples:
        raise CheckError(f"{path}: none of its {len(results)} results matches a command of {current.path}")
    import pandas as pd  # noqa: E402  (start-up time: pandas loads only where a table is read)

    return RunData(path=path, fingerprint_id=current.fingerprint_id, cache=current.cache,
                   runs=pd.DataFrame(rows), samples=samples, failures={}), notes
