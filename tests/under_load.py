"""Run the test suite several times under CPU and disk load (`make test-stress`).

A test whose verdict depends on timing or scheduling passes on a quiet machine and fails on a busy
one; CI and a developer's machine are both shared. The load here: one busy process per core, and a
reader of the disk (a private file read with O_DIRECT in a loop, so that every read reaches the
device, whatever the page cache holds). The suite runs RUNS times, one after another; each run's
log is kept, and the failures of every run are listed at the end, by test.

Every load process is in a session of its own and is killed on the way out, on SIGINT, SIGTERM and
SIGHUP too; the file it reads is removed with its private directory.

    python tests/under_load.py --runs 3 -- .venv/bin/python -m pytest -q
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

READ_FILE_BYTES = 256 << 20
# The reader: O_DIRECT reads of 1 MiB into an aligned buffer (an anonymous mapping), forever.
READER = """
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 1 << 20)
while True:
    offset = 0
    while os.preadv(fd, [buf], offset) > 0:
        offset += 1 << 20
"""
FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)
SUMMARY = re.compile(r"^=*\s*(.*\b(?:passed|failed|error)\b.*?)\s*=*$", re.MULTILINE)


class Stop(Exception):
    """A signal asked the run to stop."""


def _stop(signum: int, _frame: object) -> None:
    raise Stop(signal.Signals(signum).name)


def start_load(workdir: Path, busy: int) -> list[subprocess.Popen]:
    data = workdir / "disk-load.bin"
    with data.open("wb") as f:
        for _ in range(READ_FILE_BYTES >> 20):
            f.write(os.urandom(1 << 20))
        os.fsync(f.fileno())
    spin = [sys.executable, "-c", "while True: pass"]
    argvs = [spin] * busy + [[sys.executable, "-c", READER, str(data)]]
    return [subprocess.Popen(a, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for a in argvs]


def stop_load(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for p in procs:
        p.wait()


def run_once(command: list[str], log: Path) -> tuple[int, str, list[str]]:
    """(exit status, the runner's closing line, the failed tests) of one run, its output in log."""
    with log.open("w") as out:
        status = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode
    text = log.read_text(errors="replace")
    closing = SUMMARY.findall(text)
    return status, closing[-1] if closing else f"exit {status}", FAILED.findall(text)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="how many runs of the suite (default 3)")
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 1,
                        help="busy processes beside the disk reader (default: one per core)")
    parser.add_argument("--logs", type=Path, default=Path("build/stress"), help="where each run's log goes")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the suite's command line")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.runs < 1 or args.busy < 0:
        parser.error("give --runs >= 1, --busy >= 0 and the command after --")
    args.logs.mkdir(parents=True, exist_ok=True)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _stop)
    workdir = Path(tempfile.mkdtemp(prefix="load-", dir=args.logs))  # on the disk, not a tmpfs
    procs: list[subprocess.Popen] = []
    failures: Counter[str] = Counter()
    failed_runs = 0
    try:
        procs = start_load(workdir, args.busy)
        print(f"load: {args.busy} busy processes and an O_DIRECT reader of a {READ_FILE_BYTES >> 20} MiB file",
              flush=True)
        for i in range(1, args.runs + 1):
            started = time.monotonic()
            status, closing, failed = run_once(command, args.logs / f"run-{i}.log")
            failed_runs += status != 0
            failures.update(failed)
            print(f"run {i}/{args.runs}: exit {status} in {time.monotonic() - started:.0f} s: {closing}"
                  f" (log: {args.logs / f'run-{i}.log'})", flush=True)
    except (Stop, KeyboardInterrupt) as e:
        print(f"stopped ({e or 'SIGINT'}); the load is removed", file=sys.stderr)
        return 130
    finally:
        stop_load(procs)
        shutil.rmtree(workdir, ignore_errors=True)
    for test, n in failures.most_common():
        print(f"  failed in {n} of {args.runs} runs: {test}")
    print(f"{args.runs - failed_runs} passed, {failed_runs} failed: runs of the suite under load")
    return 1 if failed_runs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
