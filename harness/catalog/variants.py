"""The hasher variants, as the built programs describe themselves.

Each variant is declared once, in its C file hashers/variants/<program>.c. The Makefile lists the
programs it built in <bin dir>/../share/ringsum/variants (`make install` too); each program says
what it is in its --knobs-json ("variant_info"), read here once per bin dir and shared with the
knob table (harness/knobs.py), so no program runs twice.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


class VariantsError(Exception):
    """A bin dir without its list of programs, or a program that does not describe itself; one line."""


@dataclass(frozen=True)
class Variant:
    """What a program's RINGSUM_VARIANT() says of it (hashers/ringsum.h, struct variant)."""

    name: str  # the program, <bin dir>/<name>
    summary: str  # one line, its man page's NAME
    article: str | None  # the article's loop it reproduces: "singlethread", "multithread" or None
    parallel: bool  # hashes on every core (the duration estimate)
    positional_flag: bool  # takes the article's form only after --positional (its arguments are b3sum's)
    counted: bool  # `ringsum check` counts its instructions (a steady single-threaded hash)
    io_uring: bool  # reads through an io_uring ring (the pread loop does not)
    defaults_file: str | None  # its options file in ~/.config/ringsum/, which `ringsum tune --install` writes
    # (a build from before a program said these is taken to have neither)
    chooses_path: bool = False  # hashes a file in the page cache from memory unless --path ring
    falls_back: bool = False  # without io_uring, reads with pread() instead of failing
    # neither depth, buffers nor window given: twice the buffers, the queue deepened when the reads fall
    # behind (hashers/options.c); the same numbers given run a fixed ring
    grows_depth: bool = False


def manifest(bin_dir: Path) -> Path:
    return bin_dir.parent / "share" / "ringsum" / "variants"


def names(bin_dir: Path | None = None) -> tuple[str, ...]:
    """The programs built into `bin_dir` (default: default_bin_dir()), in the Makefile's order."""
    bin_dir = Path(bin_dir) if bin_dir else default_bin_dir()
    listed = manifest(bin_dir)
    try:
        return tuple(line for line in listed.read_text().split() if line)
    except OSError:
        pass
    if bin_dir.parent.name == "build" and bin_dir.is_dir():
        # An older revision's build (`ringsum bisect`, `ringsum history`), from before the Makefile
        # listed its programs: a checkout's build/bin holds its programs and nothing else.
        return tuple(sorted(p.name for p in bin_dir.iterdir() if p.is_file() and os.access(p, os.X_OK)))
    raise VariantsError(f"{listed}: not found; build the hashers first (make all)")


def _describe(binary: Path) -> dict[str, Any]:
    if not binary.is_file():
        raise VariantsError(f"{binary}: not found; build the hashers first (make all): "
                            "the knob table comes from their --knobs-json")
    try:
        done = subprocess.run([str(binary), "--knobs-json"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise VariantsError(f"{binary} --knobs-json: {e}") from None
    if done.returncode != 0:
        first = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[0]
        raise VariantsError(f"{binary} --knobs-json: exit status {done.returncode}: {first} (an older build? make all)")
    try:
        data = json.loads(done.stdout)
        data["knobs"][0]["name"]
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise VariantsError(f"{binary} --knobs-json: not a knob table and variant description ({e})") from None
    return data


@functools.cache
def described(bin_dir: Path) -> dict[str, dict[str, Any]]:
    """Each program of `bin_dir` -> its --knobs-json, run once per process. A program of an older
    revision that does not describe itself yet is taken to be what the same program of this
    checkout's build says it is (bisect and history run older builds)."""
    out = {name: _describe(bin_dir / name) for name in names(bin_dir)}
    for name, data in out.items():
        if not isinstance(data.get("variant_info"), dict):
            here = default_bin_dir().absolute()
            current = described(here).get(name) if here != bin_dir else None
            if not current or not isinstance(current.get("variant_info"), dict):
                raise VariantsError(f"{bin_dir / name} --knobs-json: no variant description, and no program "
                                    f"of that name in {here} to take one from")
            data["variant_info"] = current["variant_info"]
    return out


def variant_list(bin_dir: Path | None = None) -> tuple[Variant, ...]:
    data = described(Path(bin_dir).absolute() if bin_dir else default_bin_dir().absolute())
    return tuple(Variant(name=name, **d["variant_info"]) for name, d in data.items())


def _built_names() -> tuple[str, ...]:
    try:
        return names()
    except VariantsError:
        return ()


# The programs of the default bin dir, empty before they are built (then loading the knobs says so).
VARIANTS = _built_names()


def article_variants(bin_dir: Path | None = None) -> dict[str, str]:
    """The article's loop ("singlethread", "multithread") -> the program that reproduces it; {} unbuilt."""
    try:
        return {v.article: v.name for v in variant_list(bin_dir) if v.article}
    except VariantsError:
        return {}


def variant(name: str, bin_dir: Path | None = None) -> Variant | None:
    """The variant of that program name, None if the bin dir has no such program (or none at all)."""
    try:
        return next((v for v in variant_list(bin_dir) if v.name == name), None)
    except VariantsError:
        return None
