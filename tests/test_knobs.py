"""The knob table declared once in hashers/knobs.h, and the variant registry, as everything reads them."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from harness.knobs import load_knobs, markdown_table
from harness.variants import REPO_ROOT, VARIANT_LIST, VARIANTS
from hashers_support import program


def test_docs_knob_table_is_the_hashers_own():
    """docs/knobs.md is generated: a knob added to hashers/knobs.h without regenerating it fails here."""
    assert (REPO_ROOT / "docs" / "knobs.md").read_text() == markdown_table(load_knobs()), \
        "regenerate it: ringsum knobs > docs/knobs.md"


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
    assert table["queue_depth"].variant_defaults == (("uring_b3sum", 8),)
    assert set(table["submit_and_wait"].variants) == {"liburing_b3sum_singlethread"}
    assert set(table["block_size"].variants) == set(VARIANTS)


def test_missing_binary_is_one_line_error(tmp_path):
    result = subprocess.run([sys.executable, "-m", "harness", "knobs", "--bin-dir", str(tmp_path)],
                            capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "not found; build the hashers first" in result.stderr, result.stderr


def test_makefile_builds_the_registered_variants():
    makefile = (REPO_ROOT / "Makefile").read_text()
    sources = re.search(r"^VARIANTS\s*:=\s*(.*)$", makefile, re.M).group(1).split()
    assert sources == [v.source for v in VARIANT_LIST]
    for v in VARIANT_LIST:
        assert re.search(rf"^BIN_{v.source}\s*:=\s*{v.name}$", makefile, re.M), v
