"""`ringsum` command line: run, plan, sysinfo.

Errors print `ringsum: <one line>` on stderr. Exit codes: 0 fine; 1 the run failed (hash
mismatch, failed executions); 2 usage, config or set-up error found before anything ran;
130 interrupted (resume with --resume).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from harness.config import ConfigError, load_config
from harness.plan import PlanError, build_plan, estimate, estimate_execution_s, format_duration
from harness.units import format_size, parse_size


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        print(f"ringsum: {message} (see ringsum {self.prog.split()[-1]} --help)"
              if " " in self.prog else f"ringsum: {message} (see ringsum --help)", file=sys.stderr)
        sys.exit(2)


def _size_arg(s: str) -> int:
    try:
        n = parse_size(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if n <= 0:
        raise argparse.ArgumentTypeError("size must be at least 1 byte")
    return n


def _posint_arg(s: str) -> int:
    try:
        n = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {s!r}") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {s!r}")
    return n


def _add_file_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--file", metavar="PATH",
                   help="test file; with --size: generated there if missing or of the wrong size")
    p.add_argument("--size", type=_size_arg, metavar="SIZE",
                   help="size of the generated random test file (e.g. 1G)")
    p.add_argument("--dir", metavar="DIR", help="where --size generates its file (default build/data)")
    p.add_argument("--rounds", type=_posint_arg, metavar="N", help="override run.rounds")
    p.add_argument("--warm", action="store_true", help="warm page cache instead of the config's mode")
    p.add_argument("--bin-dir", metavar="DIR", help="hasher binaries (default $RINGSUM_BIN_DIR or build/bin)")


def make_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="ringsum", description="Benchmark io_uring BLAKE3 file hashers.")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="expand a config, run it, write a run directory")
    r.add_argument("config", nargs="?", help="config TOML (optional with --resume)")
    _add_file_args(r)
    r.add_argument("--out", default="results", metavar="DIR", help="parent of run directories")
    r.add_argument("--resume", metavar="RUN_DIR", help="finish an interrupted run")
    r.add_argument("--seed", type=int, help="shuffle seed (default: config's or random)")
    p = sub.add_parser("plan", help="print the expanded commands and the estimated duration")
    p.add_argument("config")
    _add_file_args(p)
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    s = sub.add_parser("sysinfo", help="print the machine fingerprint and tool versions")
    s.add_argument("--file", metavar="PATH", help="describe the filesystem and device of this file")
    return ap


def _cmd_plan(a: argparse.Namespace) -> int:
    import dataclasses as dc

    from harness.run import Options, _apply_overrides, resolve_files

    opts = Options(config_path=a.config, rounds=a.rounds, warm=a.warm, bin_dir=a.bin_dir)
    config = _apply_overrides(load_config(a.config), opts)
    files = resolve_files(config, a.file, a.size, a.dir)
    plan = build_plan(config, files)
    est = estimate(plan, config)
    if a.json:
        print(json.dumps({"commands": [c.to_json() for c in plan.commands],
                          "files": [dc.asdict(f) for f in files], "estimate_s": est.total_s,
                          "timed_executions": plan.timed_executions,
                          "traced_executions": plan.traced_executions}, indent=2))
        return 0
    print(f"config: {config.path}")
    print(f"cache: {plan.cache}   rounds: {plan.rounds} x {plan.runs_per_round}   "
          f"timeout: {config.run.timeout_s:g} s per execution")
    for f in files:
        print(f"file: {f.path} ({format_size(f.size)}{', generated if missing' if f.generate else ''})")
    print()
    group = None
    for i, c in enumerate(plan.commands, 1):
        if c.group != group:
            group = c.group
            print(f"[{group}]")
        per = estimate_execution_s(c, plan.cache, config)
        print(f"{i:>4}. {c.label}   (~{per:.2f} s{', +1 traced run' if c.trace_argv else ''})")
        print(f"      {shlex.join(c.argv)}")
    for n in plan.notes:
        print(f"note: {n}")
    print()
    print(f"{len(plan.commands)} commands x {plan.rounds} rounds x {plan.runs_per_round} = "
          f"{plan.timed_executions} timed executions + {plan.traced_executions} traced runs")
    print(f"estimated duration: {format_duration(est.total_s)}  (timed {format_duration(est.timed_s)}, "
          f"traced {format_duration(est.traced_s)}, setup {format_duration(est.setup_s)}; "
          f"nominal read {config.run.nominal.read_Bps / 1e9:.1f} GB/s, "
          f"{config.run.nominal.overhead_s:g} s overhead per execution)")
    return 0


def _cmd_sysinfo(a: argparse.Namespace) -> int:
    from harness.sysinfo import sysinfo

    print(json.dumps(sysinfo(a.file), indent=2))
    return 0


def _cmd_run(a: argparse.Namespace) -> int:
    from harness.run import Options, run

    if a.config is None and a.resume is None:
        print("ringsum: run needs a CONFIG (or --resume RUN_DIR)", file=sys.stderr)
        return 2
    if a.resume and (a.file or a.size or a.rounds or a.warm or a.bin_dir):
        print("ringsum: --resume takes the run's own settings; drop --file/--size/--rounds/--warm/--bin-dir",
              file=sys.stderr)
        return 2
    opts = Options(config_path=a.config, file=a.file, size=a.size, dir=a.dir, out=a.out,
                   rounds=a.rounds, resume=a.resume, warm=a.warm, bin_dir=a.bin_dir, seed=a.seed)
    return run(opts)


def main(argv: list[str] | None = None) -> int:
    from harness.cache import CacheError
    from harness.run import SetupError

    a = make_parser().parse_args(argv)
    try:
        if a.cmd == "plan":
            return _cmd_plan(a)
        if a.cmd == "sysinfo":
            return _cmd_sysinfo(a)
        return _cmd_run(a)
    except (ConfigError, PlanError, SetupError) as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 2
    except CacheError as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ringsum: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())

