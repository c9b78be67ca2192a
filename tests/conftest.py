"""Shared fixtures (generic: the hasher tests may use them too)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def bin_dir() -> Path:
    """Directory of the built hashers: $RINGSUM_BIN_DIR, default build/bin (relative to the repo)."""
    d = Path(os.environ.get("RINGSUM_BIN_DIR", "build/bin"))
    return d if d.is_absolute() else REPO_ROOT / d


@pytest.fixture(scope="session")
def b3sum_path() -> Path:
    """The official b3sum: <repo>/.tools/bin first, then PATH."""
    import shutil

    local = REPO_ROOT / ".tools" / "bin" / "b3sum"
    if local.is_file():
        return local
    found = shutil.which("b3sum")
    if not found:
        pytest.skip("b3sum not installed (run `make deps`)")
    return Path(found)


@pytest.fixture
def random_file(tmp_path: Path):
    """Factory: random_file(size, name="data.bin") -> Path of a file of random bytes."""

    def make(size: int, name: str = "data.bin") -> Path:
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(os.urandom(size))
        return p

    return make
