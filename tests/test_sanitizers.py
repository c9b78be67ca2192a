"""The hasher suite (tests/test_hashers.py) on the sanitizer builds: ASan+UBSan for every program,
ThreadSanitizer for those whose main loop has a producer thread (RINGSUM_VARIANT(hash_stream_threaded,
...) in hashers/variants/), with one large file size of the suite's four (RINGSUM_HASHER_LARGE_SIZES).
Each program's run is one test here, so that they spread over the workers beside the machine line
(tests/conftest.py) instead of adding their time after `make test` (the machine line's own modules
under ASan are tests/test_sanitizers_machine.py's, in the line). A failure quotes the inner run's
failures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hashers_support import REPO, inner_pytest

pytestmark = pytest.mark.independent

THREADED = re.compile(r"^RINGSUM_VARIANT\(hash_stream_threaded,", re.MULTILINE)


def programs(flavour: str) -> list[str]:
    listed = REPO / "build" / flavour / "share" / "ringsum" / "variants"
    names = listed.read_text().split() if listed.is_file() else []
    if flavour == "tsan":
        names = [n for n in names if THREADED.search((REPO / "hashers" / "variants" / f"{n}.c").read_text())]
    return names


RUNS = [(f, p) for f in ("asan", "tsan") for p in programs(f)]


def test_every_program_runs_under_a_sanitizer():
    """The runs below exist: a build that listed no programs would make this module pass empty."""
    assert {f for f, _ in RUNS} == {"asan", "tsan"}, "build the sanitizer flavours: make test (or make test-sanitize)"


@pytest.mark.parametrize(("flavour", "program"), RUNS, ids=[f"{f}-{p}" for f, p in RUNS])
def test_hasher_suite_under(flavour: str, program: str, tmp_path: Path):
    inner_pytest("tests/test_hashers.py", {"RINGSUM_BIN_DIR": str(REPO / "build" / flavour / "bin"),
                                           "RINGSUM_VARIANTS": program, "RINGSUM_HASHER_LARGE_SIZES": "1"},
                 tmp_path / "inner")
