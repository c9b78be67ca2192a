"""`ringsum bench 'CMD' 'CMD' ...`: hyperfine's command line, ringsum's measurement. The commands
become a config's [[commands]] (with b3sum beside them unless --no-b3sum), so they run as any
config does: the page cache dropped (or warmed) before each execution, interleaved shuffled rounds,
hashes checked, a run directory kept with that config in it (--resume finishes it)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

import tomli_w

from harness.cli.run import common, measure
from harness.pipeline.config import PLACEHOLDER
from harness.pipeline.run_request import Options

B3SUM_PRINTERS = ("b3sum", "uring_b3sum")  # programs whose output is checked as b3sum's (blake3 = true)


class BenchError(Exception):
    """A command line that cannot become a config: one line, exit 2."""


def cmd_bench(a: argparse.Namespace) -> int:
    try:
        table = bench_config(a)
    except BenchError as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 2
    name = "ringsum bench " + " ".join(shlex.quote(c) for c in a.commands)
    return measure(a, Options(config_path=name, config_text=tomli_w.dumps(table), **common(a)))


def bench_config(a: argparse.Namespace) -> dict[str, Any]:
    """The config the command line means, as TOML's tables."""
    if a.file is None and a.size is None:
        raise BenchError("give the test file: --file PATH (a file the commands read), or --size SIZE to generate one")
    if len(a.command_name) > len(a.commands):
        raise BenchError(f"{len(a.command_name)} --command-name for {len(a.commands)} commands")
    params: dict[str, list[str]] = {}
    for name, values in a.parameter_list:
        if name in params or not name.isidentifier() or name in ("file", "dataset", "list"):
            raise BenchError(f"-L {name}: a parameter is named once, as an identifier other than file, dataset, list")
        params[name] = [v for v in values.split(",")]
        if not all(params[name]):
            raise BenchError(f"-L {name} {values!r}: an empty value")
    groups, names = [], set()
    for i, text in enumerate(a.commands):
        argv = _argv(text, a.file)
        name = a.command_name[i] if i < len(a.command_name) else " ".join(w for w in argv if w != "{file}")
        if name in names:
            raise BenchError(f"{name!r} is named twice; give each command its own --command-name")
        names.add(name)
        groups.append(_group(name, argv, params, name in a.reads_only))
    unused = set(params) - {p for g in groups for p in g.get("params", {})}
    if unused:
        raise BenchError(f"-L {sorted(unused)[0]}: no command uses {{{sorted(unused)[0]}}}")
    for r in a.reads_only:
        if r not in names:
            raise BenchError(f"--reads-only {r!r}: no command of that name")
    # Only the commands given (and b3sum): no readers for a speed limit, as hyperfine runs what it is given.
    return {"commands": groups, "baselines": {"b3sum": not a.no_b3sum, "limit": False}}


def _argv(text: str, file: str | None) -> list[str]:
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise BenchError(f"{text!r}: cannot split it as the shell would ({e})") from None
    if not argv:
        raise BenchError("an empty command")
    if not any("{file}" in w for w in argv) and file is not None:
        argv = ["{file}" if w == file else w for w in argv]  # the test file named as it is
    if not any("{file}" in w for w in argv):
        raise BenchError(f"{text!r} does not read the test file: write {{file}} where it goes "
                         "(or --file PATH and the same PATH in the command)")
    return argv


def _group(name: str, argv: list[str], params: dict[str, list[str]], reads_only: bool) -> dict[str, Any]:
    used = {m for w in argv for m in PLACEHOLDER.findall(w)} & set(params)
    group: dict[str, Any] = {"name": name, "argv": argv}
    if used:
        group["params"] = {p: params[p] for p in sorted(used)}
    if reads_only:
        group["reads_only"] = True
    if Path(argv[0]).name in B3SUM_PRINTERS:
        group["blake3"] = True
    return group

