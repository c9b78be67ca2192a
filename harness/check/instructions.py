"""Deterministic companion of `ringsum check`: user-space instructions of each hasher hashing a hot
file, counted with perf (hardware counter) or valgrind's callgrind, compared with a tolerance."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from harness.judge import results as res
from harness.check.decide import (IMPROVEMENT, NO_CHANGE, NOT_COMPARABLE, ONLY_CURRENT, REGRESSION, CheckError,
                           InstructionComparison)
from harness.catalog.tools import REFERENCE_HASH, find_tool, the_tool
from harness.catalog.variants import REPO_ROOT, VariantsError, default_bin_dir, variant_list
from harness.datasets.dataset import Dataset
from harness.datasets.generate import ensure_dataset
from harness.pipeline.preflight import b3sum_reference
from harness.check.settings import INSTRUCTION_FILE_SIZE
from harness.units import format_size


INSTRUCTIONS_JSON = "instructions.json"




def counted_variants(bin_dir: Path) -> tuple[str, ...]:
    """The variants whose instructions are counted: those that say so of themselves (`counted`)."""
    try:
        return tuple(v.name for v in variant_list(bin_dir) if v.counted)
    except VariantsError as e:
        raise CheckError(str(e)) from None


def _one_thread(bin_dir: Path) -> set[str]:
    """The programs that hash a cached file on every core (they choose their path): counted with
    --num-threads 1, where the count is steady (uring_b3sum, 64 MiB under callgrind: 171,769,270
    three times); on every core it would follow the thread pool's stealing."""
    try:
        return {v.name for v in variant_list(bin_dir) if v.chooses_path}
    except VariantsError as e:
        raise CheckError(str(e)) from None


def perf_works() -> bool:
    """perf's hardware instruction counter (absent in most VMs)."""
    if shutil.which("perf") is None:
        return False
    r = subprocess.run(["perf", "stat", "-x,", "-e", "instructions:u", "true"],
                       capture_output=True, text=True)
    return r.returncode == 0 and "<not supported>" not in r.stderr and "<not counted>" not in r.stderr


def count_instructions(argv: list[str], timeout: float = 300) -> tuple[int, str, str]:
    """(user-space instructions, counter, stdout) of one execution of argv."""
    if perf_works():
        r = subprocess.run(["perf", "stat", "-x,", "-e", "instructions:u", "--", *argv],
                           capture_output=True, text=True, timeout=timeout)
        counter = "perf"
        m = re.search(r"^(\d+),[^,]*,instructions", r.stderr, re.MULTILINE)
    else:
        if shutil.which("valgrind") is None:
            raise CheckError("neither perf's instruction counter nor valgrind is available "
                             "(apt-get install valgrind)")
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                           capture_output=True, text=True, timeout=timeout)
        counter = "callgrind"
        m = re.search(r"Collected : (\d+)", r.stderr)
    if r.returncode != 0 or not m:
        tail = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise CheckError(f"counting instructions of {argv[0]} failed: {tail}")
    return int(m.group(1)), counter, r.stdout


def measure_instructions(bin_dir: Path, file: Path, b3sum_hash: str,
                         variants: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Instructions of each hasher at its default knobs hashing `file` (hot: read it first)."""
    file.read_bytes()  # into the page cache; the count does not depend on it, the duration does
    counts: dict[str, int] = {}
    counter = ""
    one_thread = _one_thread(bin_dir)
    for variant in variants if variants is not None else counted_variants(bin_dir):
        exe = bin_dir / variant
        if not exe.is_file():
            raise CheckError(f"hasher binary {exe} not found; run `make`")
        options = ["--num-threads", "1", "--no-wisdom"] if variant in one_thread else []
        counts[variant], counter, out = count_instructions([str(exe), *options, str(file)])
        if not out.startswith(b3sum_hash):
            raise CheckError(f"{variant} printed a wrong hash under {counter}: {out.strip()[:80]}")
    return {"counter": counter, "file_size": file.stat().st_size, "bin_dir": str(bin_dir), "counts": counts}


def instructions_now(bin_dir: Path | None = None, file: Path | None = None,
                     size: int = INSTRUCTION_FILE_SIZE) -> dict[str, Any]:
    """measure_instructions() on `file`, or on a random file of `size` in build/data."""

    bin_dir = bin_dir or default_bin_dir()
    if file is None:
        file = REPO_ROOT / "build" / "data" / f"ringsum-{format_size(size)}.bin"
        ensure_dataset(Dataset(str(file), size, generate=True, owned=True), lambda msg: None)
    b3sum = find_tool(the_tool(REFERENCE_HASH))
    if b3sum is None:
        raise CheckError(f"{the_tool(REFERENCE_HASH)} not found; run `make deps`")
    return measure_instructions(Path(bin_dir).absolute(), file, b3sum_reference(str(b3sum), str(file), 60))


def compare_instructions(baseline: dict[str, Any] | None, current: dict[str, Any],
                         tolerance: float) -> list[InstructionComparison]:
    if baseline is None:
        return [InstructionComparison(v, None, n, NOT_COMPARABLE, f"baseline has no {INSTRUCTIONS_JSON}")
                for v, n in current["counts"].items()]
    out = []
    for variant, n in current["counts"].items():
        b = baseline["counts"].get(variant)
        if b is None:
            out.append(InstructionComparison(variant, None, n, ONLY_CURRENT))
        elif baseline.get("file_size") != current["file_size"] or baseline.get("counter") != current["counter"]:
            out.append(InstructionComparison(variant, b, n, NOT_COMPARABLE,
                                             "different file size or counter"))
        else:
            ratio = n / b
            verdict = (REGRESSION if ratio > 1 + tolerance else
                       IMPROVEMENT if ratio < 1 - tolerance else NO_CHANGE)
            out.append(InstructionComparison(variant, b, n, verdict))
    return out


def read_instructions(run_dir: Path) -> dict[str, Any] | None:
    p = run_dir / INSTRUCTIONS_JSON
    return res.read_json(p) if p.is_file() else None
