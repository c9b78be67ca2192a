"""Start a command under a machine condition: `python -m harness.conditions.confine [--cgroup PROCS]...
[--cpus 0,1] -- ARGV` joins the cgroups, keeps to the CPUs and execs ARGV, so that the command and
every process and thread it starts (hyperfine, its --prepare step, the hasher, io_uring's workers)
inherit them. The run wraps each timed and traced execution in it (harness/conditions/emulation.py); it stays
light (standard library only): it starts once per execution, outside the timed part.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Confinement:
    cgroups: tuple[str, ...] = ()  # cgroup.procs files to join
    cpus: tuple[int, ...] = ()  # empty: every CPU

    def wrap(self, argv: list[str], python: str = sys.executable) -> list[str]:
        if not self.cgroups and not self.cpus:
            return argv
        words = [python, "-m", "harness.conditions.confine"]
        for procs in self.cgroups:
            words += ["--cgroup", procs]
        if self.cpus:
            words += ["--cpus", ",".join(map(str, self.cpus))]
        return [*words, "--", *argv]


def main(argv: list[str]) -> int:
    cgroups, cpus = [], []
    while argv and argv[0] != "--":
        if len(argv) < 2 or argv[0] not in ("--cgroup", "--cpus"):
            print(f"ringsum confine: usage: --cgroup PROCS... --cpus LIST -- ARGV (got {argv[0]!r})", file=sys.stderr)
            return 2
        (cgroups if argv[0] == "--cgroup" else cpus).append(argv[1])
        argv = argv[2:]
    command = argv[1:]
    if not command:
        print("ringsum confine: no command after --", file=sys.stderr)
        return 2
    try:
        for procs in cgroups:
            fd = os.open(procs, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)
        if cpus:
            os.sched_setaffinity(0, {int(c) for text in cpus for c in text.split(",")})
        os.execvp(command[0], command)
    except (OSError, ValueError) as e:
        print(f"ringsum confine: {command[0]}: {e}", file=sys.stderr)
        return 126
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
