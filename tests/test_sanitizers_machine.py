"""The machine line's own hasher modules (tests/test_uring_b3sum.py, tests/test_recursive.py) on the
ASan+UBSan build. Each module is one test here, in the machine line (tests/conftest.py: this module
does not say it is independent), so that they run while the other worker runs the modules beside the
line, instead of after the suite with one core idle (`make test-sanitize-machine`, which runs them
alone, took 18.6 s after `make test` in CI). A failure quotes the inner run's failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from hashers_support import REPO, inner_pytest

ASAN_BIN = REPO / "build" / "asan" / "bin"
MODULES = ["tests/test_uring_b3sum.py", "tests/test_recursive.py"]


@pytest.mark.parametrize("module", MODULES, ids=[Path(m).stem for m in MODULES])
def test_machine_module_under_asan(module: str, tmp_path: Path):
    if not (ASAN_BIN / "uring_b3sum").is_file():
        pytest.fail(f"{ASAN_BIN}: no ASan build: make test (or make test-sanitize-machine)", pytrace=False)
    done = inner_pytest(module, {"RINGSUM_BIN_DIR": str(ASAN_BIN)}, tmp_path / "inner")
    assert " passed" in done.stdout.splitlines()[-1], done.stdout[-2000:]
