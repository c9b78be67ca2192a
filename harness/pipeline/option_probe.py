"""Ask the hashers whether they accept a plan's options, before anything runs.

The hashers own their limits (block size, queue depth against the kernel's, O_DIRECT alignment,
buffer memory): each distinct hasher command runs once on a small private file, and a refusal
becomes a config error naming the command and quoting the hasher, instead of a sweep of failed
executions. Nothing here knows a limit itself. A refusal is exit status 2, the hashers' usage error
(as for b3sum and most command lines); a crash, an I/O error or a hang is not about the options and
is left for the run to record as a failed execution.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from harness.catalog.tools import HASHER
from harness.machine.processes import run_group
from harness.pipeline.plan import Plan

PROBE_SIZE = 64 << 10  # a multiple of 4096, so that --direct can read it
PROBE_TIMEOUT_S = 5.0
USAGE_ERROR = 2


class HasherRejects(Exception):
    """A hasher refused a planned command's options (a config error, exit 2)."""


def check_hashers(plan: Plan, timeout_s: float = PROBE_TIMEOUT_S) -> int:
    """Run every distinct hasher command of the plan on a small file; returns how many ran.
    Raises HasherRejects with the first refusal."""
    commands = {}
    for c in plan.commands:
        if c.tool == HASHER:
            commands.setdefault(tuple(a for a in c.argv if a != c.file), c)
    if not commands:
        return 0
    with tempfile.TemporaryDirectory(prefix="ringsum-probe-") as d:  # created 0700
        probe = Path(d) / "probe.bin"
        probe.write_bytes(os.urandom(PROBE_SIZE))
        for c in commands.values():
            argv = [str(probe) if a == c.file else a for a in c.argv]
            try:
                rc, _out, err = run_group(argv, min(timeout_s, PROBE_TIMEOUT_S))
            except OSError as e:
                raise HasherRejects(f"{c.group}: {c.label}: cannot run {argv[0]}: {e.strerror}") from None
            if rc == USAGE_ERROR:
                lines = [ln for ln in err.splitlines() if ln.strip()]
                why = lines[-1].strip() if lines else f"exit {USAGE_ERROR}"
                raise HasherRejects(f"{c.group}: {c.label}: the hasher rejects these options: {why}")
    return len(commands)
