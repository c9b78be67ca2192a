"""Behaviour counters of a hasher execution, measured: `probe()` runs one untimed execution under
GNU time (rusage; /proc/PID/io read before the zombie is reaped) and, when perf's tracepoint works,
under `perf stat` for the system calls, and returns its row of counters.csv (harness/judge/counters.py,
which also judges them). Wall time on a shared VM is noisy; what a program does to get there mostly
is not: an I/O regression (pipelining lost, queue depth ignored, O_DIRECT dropped) shows in these
counters exactly, where wall time would need many rounds to see it.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.judge.counters import Counters
from harness.machine import page_cache as cachemod

ENTER_EVENT = "syscalls:sys_enter_io_uring_enter"


def trace_figures(trace: Path) -> tuple[int | None, float | None, int | None]:
    """(completions reaped, time-weighted mean in flight at the consumer runs, the most in flight at
    once) from a hasher's --trace CSV; a trace without the peak column (an older build) peaks at its
    consumer runs' largest count."""
    try:
        with trace.open(newline="") as f:
            rows = [(int(r["time_ns"]), int(r["in_flight"]), int(r["reaped"]),
                     int(r.get("peak_in_flight") or r["in_flight"])) for r in csv.DictReader(f)]
    except (OSError, KeyError, ValueError):
        return None, None, None
    if not rows:
        return None, None, None
    reads = sum(r[2] for r in rows)
    peak = max(r[3] for r in rows)
    span = rows[-1][0] - rows[0][0]
    if span <= 0:
        return reads, float(rows[0][1]), peak
    weighted = sum(a[1] * (b[0] - a[0]) for a, b in zip(rows, rows[1:]))
    return reads, weighted / span, peak


def _proc_io(pid: int) -> dict[str, int]:
    try:
        text = Path(f"/proc/{pid}/io").read_text()
    except OSError:
        return {}
    return {k: int(v) for k, v in (line.split(": ") for line in text.splitlines() if ": " in line)}


TIME_FORMAT = "ringsum-probe %x %M %c %w %R"


@dataclass
class _Child:
    exit_code: int | None  # None: killed at the timeout
    read_bytes: int | None
    max_rss_kib: int | None
    ctx_switches: int | None
    minor_faults: int | None
    uring_enters: int | None


def _perf_count(report: Path) -> int | None:
    if not report.exists():
        return None
    for line in report.read_text(errors="replace").splitlines():
        cells = line.split(",")
        if len(cells) > 2 and cells[2] == ENTER_EVENT and cells[0].isdigit():
            return int(cells[0])
    return None


def _run_child(argv: list[str], timeout: float, out: Path, count_syscalls: bool) -> _Child:
    """Run argv once, under GNU time and, with count_syscalls, perf stat (stdout to `out`, stderr
    to `out`.err). The rusage comes from time, whose small process forks the command: a child
    forked from this Python would carry Python's peak RSS across its exec. read_bytes comes from
    the outermost process's /proc/PID/io, read while it is a zombie: the kernel adds each reaped
    child's to its parent's."""
    rusage, perf = Path(f"{out}.rusage"), Path(f"{out}.perf")
    timed = ["time", "-f", TIME_FORMAT, "-o", str(rusage), *argv]
    if count_syscalls:
        timed = ["perf", "stat", "-x,", "-o", str(perf), "-e", ENTER_EVENT, "--", *timed]
    with open(out, "wb") as stdout, open(f"{out}.err", "wb") as stderr:
        pid = os.posix_spawnp(timed[0], timed, dict(os.environ), setsid=True, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, stdout.fileno(), 1), (os.POSIX_SPAWN_DUP2, stderr.fileno(), 2)])
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        os.killpg(pid, signal.SIGKILL)

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        io = _proc_io(pid)
        os.waitpid(pid, 0)
    except BaseException:
        os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        timer.cancel()
    report = rusage.read_text(errors="replace").splitlines() if rusage.exists() else []
    fields = next((line.split()[1:] for line in report if line.startswith("ringsum-probe ")), None)
    # GNU time says so on a line of its own; its %x is then no exit status
    signalled = next((int(m.group(1)) for line in report
                      if (m := re.match(r"Command terminated by signal (\d+)", line))), None)
    enters = _perf_count(perf)
    rusage.unlink(missing_ok=True)
    perf.unlink(missing_ok=True)
    if killed.is_set() or not fields or len(fields) != 5:
        return _Child(None, None, None, None, None, None)
    code, rss, involuntary, voluntary, minor = (int(x) for x in fields)
    if signalled is not None:
        code = -signalled
    return _Child(code, io.get("read_bytes"), rss, involuntary + voluntary, minor, enters)


def perf_counts_enters() -> bool:
    """perf can count the io_uring_enter tracepoint here (root, tracefs, perf installed)."""
    if shutil.which("perf") is None:
        return False
    r = subprocess.run(["perf", "stat", "-x,", "-e", ENTER_EVENT, "true"], capture_output=True, text=True)
    return r.returncode == 0 and "<not supported>" not in r.stderr


def probe(label: str, argv: list[str], file: str, trace: Path | None, out: Path, timeout: float,
          prepare: Callable[[], None], count_syscalls: bool) -> Counters:
    """One probe of argv (stdout to `out`, stderr to `out`.err), the page cache prepare()d first."""
    prepare()
    child = _run_child(argv, timeout, out, count_syscalls)
    reads, in_flight, peak = trace_figures(trace) if trace is not None and trace.exists() else (None, None, None)
    try:
        resident: float | None = cachemod.resident_fraction(file)[0]
    except OSError:
        resident = None
    return Counters(label=label, file=file, exit_code=child.exit_code, reads=reads, mean_in_flight=in_flight,
                    peak_in_flight=peak, uring_enters=child.uring_enters, read_bytes=child.read_bytes,
                    ctx_switches=child.ctx_switches, minor_faults=child.minor_faults,
                    max_rss_kib=child.max_rss_kib, resident_after=resident)
