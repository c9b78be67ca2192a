"""The knob table declared once in hashers/knobs.h, and the variant registry, as everything reads them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from harness.judge.speed_limit import speed_limit
from harness.catalog.knobs import GENERATED_BY, load_knobs, markdown_table
from harness.units import format_size
from harness.catalog.variants import REPO_ROOT, VARIANTS, article_variants, variant_list
from hashers_support import program


def test_docs_knob_table_is_the_hashers_own():
    """docs/knobs.md is generated: a knob added to hashers/knobs.h without regenerating it fails here."""
    assert (REPO_ROOT / "docs" / "knobs.md").read_text() == markdown_table(load_knobs()), \
        f"regenerate it: {GENERATED_BY}"


def ringsum_knobs(*args: str, columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns)}  # shutil.get_terminal_size reads it first
    done = subprocess.run([sys.executable, "-m", "harness", "knobs", *args], capture_output=True, text=True,
                          cwd=REPO_ROOT, env=env, check=True)
    return done.stdout


@pytest.mark.parametrize("columns", [80, 60, 132])
def test_knobs_for_a_terminal_fit_its_width(columns):
    """`ringsum knobs` is a block per knob wrapped to the terminal, no Markdown table: every knob
    with its option, its default and every word of its help, no line wider than the terminal."""
    shown = ringsum_knobs(columns=columns)
    assert "|---" not in shown and "`" not in shown
    lines = shown.splitlines()
    assert max(len(line) for line in lines) <= columns, [line for line in lines if len(line) > columns]
    preface, *blocks = shown.split("\n\n")
    # the programs built, each by its name and its own summary (`ringsum knobs` is where they are listed)
    for v in variant_list():
        assert f"  {v.name}: " in preface and set(v.summary.split()) <= set(preface.split()), v.name
    table = load_knobs()
    assert len(blocks) == len(table.knobs)
    for knob, block in zip(table, blocks):
        assert block.startswith(f"{knob.name}   ") and knob.option in block.splitlines()[0]
        default = ("on" if knob.default else "off") if knob.is_flag else \
            format_size(knob.default) if knob.type == "size" else str(knob.default)
        assert f"    default {default}" in block, block
        assert set(re.findall(r"\w+", knob.help)) <= set(re.findall(r"\w+", block)), knob.name
    if columns == 60:  # narrower than the longest help line: wrapped, not cut
        assert any(line.startswith("      ") for line in lines)


def test_knobs_markdown_is_the_docs_table_and_json_is_unchanged():
    assert ringsum_knobs("--markdown", columns=80) == (REPO_ROOT / "docs" / "knobs.md").read_text()
    described = json.loads(ringsum_knobs("--json", columns=80))
    assert [k["name"] for k in described] == list(load_knobs().names)
    assert {"name", "option", "default", "help", "variants", "variant_defaults"} <= set(described[0])


def test_knobs_json_matches_help_and_parsing():
    """Every knob of --knobs-json is an option --help lists with its default, and each variant's
    own defaults are what it says."""
    for name in VARIANTS:
        described = json.loads(subprocess.run([program(name), "--knobs-json"], capture_output=True, check=True).stdout)
        assert described["variant"] == name
        help_text = subprocess.run([program(name), "--help"], capture_output=True, check=True).stdout.decode()
        for knob in described["knobs"]:
            line = next(line for line in help_text.splitlines() if re.match(rf"\s+(-\w, )?{knob['option']}\b", line))
            assert "default" in line, line
            assert knob["option"] == "--" + knob["name"].replace("_", "-")
    table = load_knobs()
    assert dict(table["queue_depth"].variant_defaults)["uring_b3sum"] == 8
    assert set(table["submit_and_wait"].variants) == {"liburing_b3sum_singlethread"}
    assert set(table["block_size"].variants) == set(VARIANTS)


def test_missing_binary_is_one_line_error(tmp_path):
    result = subprocess.run([sys.executable, "-m", "harness", "knobs", "--bin-dir", str(tmp_path)],
                            capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "not found; build the hashers first" in result.stderr, result.stderr


def test_each_variant_file_is_a_built_program_that_describes_itself():
    files = sorted(p.stem for p in (REPO_ROOT / "hashers" / "variants").glob("*.c"))
    assert list(VARIANTS) == files  # the Makefile's list, share/ringsum/variants
    for v in variant_list():
        assert v.summary and v.article in (None, "singlethread", "multithread"), v
    assert sorted(article_variants()) == ["multithread", "singlethread"]


COMMANDS = """
[run]
rounds = 1
file_size = "4M"
trace = false
[[commands]]
name = "sha"
argv = ["sha{bits}sum", "{file}"]
params = { bits = [1, 256] }
[[commands]]
name = "b3sum-1"
argv = ["b3sum", "--num-threads", "1", "{file}"]
blake3 = true
[[commands]]
name = "wrong"
argv = ["sha256sum", "{file}"]
blake3 = true
[[commands]]
name = "reader"
argv = ["dd", "if={file}", "of=/dev/null", "bs=1M", "status=none"]
reads_only = true
[baselines]
limit = false
"""


def test_commands_any_program_as_a_baseline(tmp_path):
    """[[commands]]: params expand like hyperfine's -L, blake3 = true checks the hash, a reads_only
    command sets the speed limit alone (the config has no other reader)."""
    import pandas as pd

    from harness.judge.results import read_runs
    
    config = tmp_path / "commands.toml"
    config.write_text(COMMANDS)
    result = subprocess.run([sys.executable, "-m", "harness", "run", str(config), "--dir", str(tmp_path), "--out",
                             str(tmp_path / "out"), "--warm"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.returncode == 1, result.stderr  # the "wrong" command's hash is not BLAKE3's
    (run_dir,) = (tmp_path / "out").iterdir()
    runs = read_runs(run_dir)
    by_label = {label: None if ok is pd.NA else bool(ok) for label, ok in zip(runs["label"], runs["hash_ok"])}
    assert by_label == {"sha bits=1": None, "sha bits=256": None, "b3sum-1": True, "wrong": False, "reader": None}
    assert set(speed_limit(runs).set_in_round.values()) == {"reader"}


@pytest.mark.parametrize("entry, message", [
    ('name = "x"\nargv = ["cat", "{fil}"]', "commands[0].argv: {fil} is neither {file} nor one of params"),
    ('name = "x"\nargv = ["cat", "{file}"]\nparams = { n = [1, 2] }', "commands[0].params.n: not used in argv"),
    ('name = "x"\nargv = ["cat", "-"]', "commands[0].argv: no {file}"),
    ('name = "x"\nargv = []', "commands[0].argv: expected a non-empty list"),
    ('argv = ["cat", "{file}"]', "commands[0].name: missing"),
])
def test_commands_config_errors(entry, message):
    from harness.pipeline.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(f"[[commands]]\n{entry}\n", "c.toml")
