"""The registries: the hasher variants and the baseline tools, each declared here once.

The Makefile builds `VARIANTS` (tests check that its list matches), sysinfo, check and the charts
read them from here; a baseline tool's argv, label, estimate and colour are in its `Tool`.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN_DIR_HELP = ("hasher binaries (default $RINGSUM_BIN_DIR, else the checkout's build/bin, "
                "else the directory of uring_b3sum on the PATH, as `make install` put it)")


def default_bin_dir() -> Path:
    """Where the hashers are when no --bin-dir or config names it: see BIN_DIR_HELP.

    A relative $RINGSUM_BIN_DIR is the checkout's. ringsum installed outside the checkout (pipx,
    a venv) has no build/bin beside it: it runs the hashers `make install` put on the PATH.
    """
    given = os.environ.get("RINGSUM_BIN_DIR")
    if given:
        return Path(given) if Path(given).is_absolute() else REPO_ROOT / given
    built = REPO_ROOT / "build" / "bin"
    installed = shutil.which("uring_b3sum")
    return Path(installed).parent if not built.is_dir() and installed else built


@dataclass(frozen=True)
class Variant:
    name: str  # the program, build/bin/<name>
    source: str  # hashers/<source>.c: its word in the Makefile's VARIANTS
    parallel: bool  # hashes on every core (the duration estimate)
    positional_flag: bool  # takes the article's form only after --positional (its arguments are b3sum's)
    colour: str  # in the charts
    counted: bool = True  # `ringsum check` counts its instructions (a steady single-threaded hash)


VARIANT_LIST = (
    Variant("liburing_b3sum_singlethread", "singlethread", parallel=False, positional_flag=False, colour="#1f77b4"),
    Variant("liburing_b3sum_multithread", "multithread", parallel=True, positional_flag=False, colour="#2ca02c"),
    Variant("b3sum_pread", "pread", parallel=False, positional_flag=False, colour="#9467bd"),
    # Its file in the page cache is hashed on every core: its instruction count follows the cache.
    Variant("uring_b3sum", "uring_b3sum", parallel=False, positional_flag=True, colour="#843c39", counted=False),
)
VARIANTS = tuple(v.name for v in VARIANT_LIST)


def variant(name: str) -> Variant | None:
    return next((v for v in VARIANT_LIST if v.name == name), None)
