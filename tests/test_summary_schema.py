"""docs/summary.schema.json is what summary.json is: the documents the harness writes from real kept
runs (docs/cold-path/*-run) validate against it, and documents a consumer must not be handed do not."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from harness.judge.load import load_run
from harness.catalog.variants import REPO_ROOT
from harness.judge import summary as judge_summary
from harness.judge import verdict
from harness.judge.results import SUMMARY_JSON, meta_problems, write_json_atomic, write_meta

pytestmark = pytest.mark.independent

SCHEMA = json.loads((REPO_ROOT / "docs" / "summary.schema.json").read_text(encoding="utf-8"))
KEPT_RUNS = sorted((REPO_ROOT / "docs" / "cold-path").glob("*-run")) + sorted((REPO_ROOT / "docs" / "decisions").glob("*-run"))


def strict_json(text: str) -> Any:
    """JSON as any consumer reads it: NaN and Infinity are not JSON."""
    def refuse(word: str) -> Any:
        raise ValueError(f"not JSON: {word}")
    return json.loads(text, parse_constant=refuse)


def written_summary(run_dir: Path, tmp_path: Path) -> dict[str, Any]:
    """summary.json regenerated from the run's runs.csv as `ringsum report` does, written the way the
    harness writes it, and read back."""
    run = load_run(run_dir)
    out = tmp_path / f"{run_dir.name}-{SUMMARY_JSON}"
    write_json_atomic(out, verdict.summary_json(run.runs, run.cache, run.argvs))
    return strict_json(out.read_text(encoding="utf-8"))


def errors(document: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in Draft202012Validator(SCHEMA).iter_errors(document)]


def test_the_schema_is_a_valid_draft_2020_12_schema():
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_the_kept_runs_cover_every_shape():
    """The runs below exercise conditions with a robust pick, a warm run's in-memory figures and a
    tree, or the schema's branches for them go untested."""
    names = {d.name for d in KEPT_RUNS}
    assert {"adapt-run", "hot-run", "list-run", "tuned-run"} <= names
    for d in KEPT_RUNS:
        assert (d / "runs.csv").is_file() and (d / "meta.json").is_file(), d


@pytest.mark.parametrize("run_dir", KEPT_RUNS, ids=lambda d: d.name)
def test_summary_regenerated_from_a_kept_run_validates(run_dir, tmp_path):
    document = written_summary(run_dir, tmp_path)
    assert errors(document) == []
    if run_dir.name == "adapt-run":
        assert document["conditions"]["robust_pick"] is not None and len(document["headlines"]) > 1
    if run_dir.name == "hot-run":
        assert document["blake3_in_memory"]["blake3_all_core_Bps"] > 0
    if run_dir.name == "list-run":
        assert document["headline"]["files"] > 1


@pytest.mark.parametrize("run_dir", KEPT_RUNS, ids=lambda d: d.name)
def test_stored_summary_of_a_kept_run_validates(run_dir):
    assert errors(strict_json((run_dir / SUMMARY_JSON).read_text(encoding="utf-8"))) == []


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> dict[str, Any]:
    return written_summary(REPO_ROOT / "docs" / "cold-path" / "tuned-run", tmp_path_factory.mktemp("summary"))


def broken(document: dict[str, Any], change: Any) -> dict[str, Any]:
    document = copy.deepcopy(document)
    change(document)
    return document


@pytest.mark.parametrize("what, change", [
    ("no commands", lambda d: d.pop("commands")),
    ("an outcome outside the four", lambda d: d["headline"]["vs_b3sum"].update(outcome="better")),
    ("a hash word outside the three", lambda d: d["commands"][0].update(hash="bad")),
    ("a count as a string", lambda d: d["commands"][0].update(n="11")),
    ("an estimate without its interval", lambda d: d["headline"]["median_s"].pop("low")),
    ("a key the top level does not have", lambda d: d.update(verdict="fast")),
    ("a headline without its rounds", lambda d: d["headline"].pop("rounds")),
    ("a condition's headline without its condition", lambda d: d["headlines"][0].pop("condition")),
    ("a decision of an unknown kind", lambda d: d["headline"].update(decision={
        "kind": "maybe", "text": "", "winner": None, "contenders": [], "rounds": 11, "more_rounds": None,
        "runner_up_ratio": None})),
    ("a decision without its winner", lambda d: d["headline"].update(decision={
        "kind": "winner", "text": "use x", "contenders": ["x"], "rounds": 11, "more_rounds": None,
        "runner_up_ratio": None})),
])
def test_a_broken_document_is_rejected(good, what, change):
    assert errors(good) == []
    assert errors(broken(good, change)), what


def test_a_headline_may_carry_a_decision_and_keys_added_later(good):
    """The headline is open: its decision validates when well formed, and a key added later does not
    break a consumer that checks the schema."""
    ratio = good["headline"]["runner_up"]["ratio"]
    for decision in ({"kind": "winner", "text": "use it", "winner": good["headline"]["use"],
                      "contenders": [good["headline"]["use"]], "rounds": 11, "more_rounds": None,
                      "runner_up_ratio": ratio},
                     {"kind": "no_winner", "text": "a tie so far", "winner": None, "contenders": ["a", "b"],
                      "rounds": 11, "more_rounds": 20, "runner_up_ratio": ratio},
                     {"kind": "none", "text": "no hasher ran", "winner": None, "contenders": [], "rounds": 0,
                      "more_rounds": None, "runner_up_ratio": None}):
        assert errors(broken(good, lambda d: d["headline"].update(decision=decision, later="x"))) == []


def test_a_command_that_never_succeeded_is_written_as_null_times(tmp_path):
    run = load_run(REPO_ROOT / "docs" / "cold-path" / "tuned-run")
    runs = run.runs.copy()
    runs.loc[runs["label"] == "cat @as-is", "exit_code"] = 1
    out = tmp_path / SUMMARY_JSON
    write_json_atomic(out, verdict.summary_json(runs, run.cache, run.argvs))
    document = strict_json(out.read_text(encoding="utf-8"))
    (cat,) = [c for c in document["commands"] if c["label"] == "cat @as-is"]
    assert cat["n"] == 0 and cat["median_s"] is None
    assert errors(document) == []


def kept_run_directories() -> list[Path]:
    """Every kept run under docs/ whole enough to judge again (trimmed ones lack plan.json)."""
    return sorted(p.parent for p in (REPO_ROOT / "docs").rglob(SUMMARY_JSON) if (p.parent / "plan.json").is_file())


# The kept runs grow with every machine met: judged in shards, so that the test workers share them.
SUMMARY_SHARDS = 8


def test_the_kept_runs_are_found():
    assert len(kept_run_directories()) >= 40


@pytest.mark.parametrize("shard", range(SUMMARY_SHARDS))
def test_kept_summaries_regenerate_byte_for_byte(shard):
    """The judge's output does not drift: summary.txt and summary.json of every kept run are what
    harness/judge/summary.py, the code a run ends with, makes of that run's files today."""
    kept = kept_run_directories()[shard::SUMMARY_SHARDS]
    assert kept
    assert {str(d / name) for d in kept for name in judge_summary.unchanged(d)} == set()


def test_a_changed_summary_is_named(tmp_path):
    """The check above can fail: one round's time changed in a copy of a kept run changes its summary."""
    run_dir = tmp_path / "run"
    shutil.copytree(REPO_ROOT / "docs" / "decisions" / "vs-b3sum-run", run_dir)
    assert judge_summary.unchanged(run_dir) == []
    lines = (run_dir / "runs.csv").read_text().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    cells = lines[1].rstrip("\n").split(",")
    cells[header.index("wall_s")] = str(float(cells[header.index("wall_s")]) * 3)
    lines[1] = ",".join(cells) + "\n"
    (run_dir / "runs.csv").write_text("".join(lines))
    assert judge_summary.unchanged(run_dir) == ["summary.json", "summary.txt"]


def test_every_kept_meta_json_is_as_declared_and_the_writer_refuses_what_is_not(tmp_path):
    """meta.json's keys and types are declared once (results.RunMeta): every kept run's conforms, and
    the run's writer refuses an undeclared key or a wrong type before writing anything."""
    kept = sorted((REPO_ROOT / "docs").rglob("meta.json"))
    assert len(kept) >= 50
    assert {str(p): meta_problems(json.loads(p.read_text(encoding="utf-8"))) for p in kept
            if meta_problems(json.loads(p.read_text(encoding="utf-8")))} == {}
    meta = json.loads((REPO_ROOT / "docs" / "decisions" / "vs-b3sum-run" / "meta.json").read_text(encoding="utf-8"))
    for bad, said in (({"finshed_at": None}, "finshed_at: not a meta.json key"), ({"seed": "7"}, "seed: a str, not int")):
        with pytest.raises(ValueError, match=said):
            write_meta(tmp_path, meta | bad)
    assert not (tmp_path / "meta.json").exists()
    write_meta(tmp_path, meta)
    assert json.loads((tmp_path / "meta.json").read_text(encoding="utf-8")) == meta
