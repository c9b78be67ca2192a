"""What `ringsum --help` costs to start, against the target of 0.15 s (issue "first hour"): hyperfine
times it, `ringsum run --help`, a usage error, and the bare Python start-up beneath them all.

    .venv/bin/python tests/bench_cli_startup.py [--runs 31] [--out build/bench/cli-startup.json]

Prints each command's median and exits 1 when `ringsum --help`'s median is over the target. A
benchmark, not a test: run it alone on the machine (`make bench-cli`; `make bench` runs it first).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

TARGET_S = 0.15
REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=31)
    p.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "cli-startup.json")
    a = p.parse_args(argv)
    ringsum = Path(sys.executable).parent / "ringsum"
    commands = {"ringsum --help": f"{ringsum} --help", "ringsum run --help": f"{ringsum} run --help",
                "ringsum (a usage error)": f"{ringsum} --no-such-option", "python -c pass": f"{sys.executable} -c pass"}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    argv_ = [shutil.which("hyperfine") or "hyperfine", "-N", "--warmup", "3", "--runs", str(a.runs), "--ignore-failure",
             "--style", "none", "--export-json", str(a.out)]
    for name, command in commands.items():
        argv_ += ["--command-name", name, command]
    # as an installed ringsum starts: from its modules' bytecode (pip compiles it; the warm-up runs write
    # it here), which PYTHONDONTWRITEBYTECODE, set in some CI images, would forbid
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(argv_, check=True, stdout=subprocess.DEVNULL, env=env)
    medians = {r["command"]: statistics.median(r["times"]) for r in json.loads(a.out.read_text())["results"]}
    for name, m in medians.items():
        print(f"{name:<26} median {m * 1e3:6.1f} ms")
    help_s = medians["ringsum --help"]
    verdict = "within" if help_s <= TARGET_S else "OVER"
    print(f"ringsum --help: {help_s * 1e3:.1f} ms, {verdict} the target of {TARGET_S * 1e3:.0f} ms ({a.runs} runs, {a.out})")
    return 0 if help_s <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
