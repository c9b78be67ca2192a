"""What a hasher really did: `--effective-summary FILE` makes it write a JSON line per distinct way
it read its files (the path it took, block size, depth, buffers, O_DIRECT, huge pages, how its blocks
were hashed, how a cached file's tasks met the cache), with the files counted and bytes summed, and
runs.csv records them beside the knobs asked for, so that a row never describes a configuration that
did not run. A summary is a few lines at the end: the line per file that `--effective FILE` writes
cost a cached tree of 16,384 files up to 1.09x its time (docs/cold-path/effective-cost-zen3), which
no baseline pays. A build with `--effective` alone gets that; one built before either (an older
build under `--against`, a wrapper script) is run without, and its effective columns stay empty.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from harness.machine.processes import run_group

FIELDS = ("path", "block_size", "queue_depth", "buffers", "direct", "huge_pages", "hashing", "hash_threads", "staging")
JOINED = ("path", "hashing", "staging")  # the values the files took, each once, joined by +
# `--help` answers in milliseconds; a hasher that hangs on it costs this, once a run (as the
# option probe's wait, harness/pipeline/option_probe.py).
HELP_TIMEOUT_S = 5.0


@functools.lru_cache(maxsize=None)
def report_option(exe: str) -> str | None:
    """The option this hasher writes its report with (its --help names it), the summary if it has
    one; None if neither."""
    try:  # its process group: a wrapper script that hangs is killed with what it started
        rc, out, _err = run_group([exe, "--help"], HELP_TIMEOUT_S)
    except OSError:
        return None
    if rc is None:
        return None
    return next((o for o in ("--effective-summary", "--effective") if f"{o} FILE" in out), None)


def with_report(argv: list[str], option: str, report: Path) -> list[str]:
    """The argv with OPTION REPORT after the program (options come before `--` and the files)."""
    return [argv[0], option, str(report), *argv[1:]]


def read(report: Path) -> dict[str, Any]:
    """runs.csv's effective_* values from a report, a line per file or per way (the same fields):
    each field's one value over the files, None where the files differ (a path, a way of hashing, a
    staging: those taken, joined by +), and the share of the bytes hashed from the ring's cells that
    were hashed on every core (None where none went through the ring, and for a hasher that does not
    count them); {} without a report."""
    try:
        lines = [json.loads(line) for line in report.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return {}
    if not lines:
        return {}
    out: dict[str, Any] = {}
    for field in FIELDS:
        values = {line.get(field) for line in lines}
        if field in JOINED:
            out[f"effective_{field}"] = "+".join(sorted(str(v) for v in values if v is not None))
        else:
            out[f"effective_{field}"] = values.pop() if len(values) == 1 else None
    ring_bytes = sum(line.get("ring_bytes") or 0 for line in lines)
    counted = all("parallel_bytes" in line for line in lines)
    out["effective_parallel_share"] = (sum(line["parallel_bytes"] for line in lines) / ring_bytes
                                       if counted and ring_bytes else None)
    return out
