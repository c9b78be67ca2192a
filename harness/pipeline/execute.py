"""One execution: a timed run through hyperfine (one RunRecord), or an untimed traced run with
behaviour counters; the page cache prepared before each."""

from __future__ import annotations

import errno
import json
import shlex
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.catalog.fio_output import FioError, parse_fio_file
from harness.catalog.tools import HASHER, LIMIT_READER, SELF_TIMED, TOOL_LIST, tools_with
from harness.conditions.confine import Confinement
from harness.conditions.spec import Condition
from harness.machine import page_cache as cachemod
from harness.machine.processes import run_group
from harness.judge import counters as judged_counters
from harness.pipeline import counters
from harness.pipeline import effective
from harness.judge import results as res
from harness.pipeline.config_schema import Config, RunSettings
from harness.pipeline.plan import TRACE, Command, Plan
from harness.pipeline.preflight import Reference
from harness.judge.results import iso, utcnow
from harness.progress import Progress
from harness.units import format_rate


PIPED_TOOLS = {t.name for t in TOOL_LIST if t.pipe_output}
PREPARE_SLACK_S = 10.0  # on top of a cold execution's timeout: its prepare (sync + drop + residency check)
START_SLACK_S = 2.0  # on top of a warm one's: hyperfine's own start (the file was warmed before it)


class RunStopped(Exception):
    """The sweep cannot go on (disk full, page cache drop refused). What is recorded stays;
    `--resume` finishes the rest once the cause is fixed. Exit 1."""


# Under a read cap, the --prepare step then idles this long: blk-throttle's slices are 100 ms on a
# rotational queue, and its start's reads (Python's files, dropped a moment before) would otherwise
# leave the command a credit: a capped cat then finished sooner than the cap allows.
CAPPED_SETTLE_S = 0.3


def prepare_argv(python: str, file: str, log: Path, cache: str, settle: float = 0.0,
                 keep: float | None = None, seed: int = 0) -> str:
    """hyperfine's --prepare command, quoted for its shell-words splitting (-N: no shell)."""
    mode = "--drop" if cache == "cold" else "--warm"
    return shlex.join([python, "-m", "harness.machine.page_cache", "prepare", mode, "--file", file, "--log", str(log),
                       *(["--keep", repr(keep), "--seed", str(seed)] if keep is not None else []),
                       *(["--settle", str(settle)] if settle else [])])


@dataclass
class RunState:
    run_dir: Path
    config: Config
    plan: Plan
    orders: list[list[str]]
    seed: int
    tools: dict[str, str]
    refs: dict[str, Reference]  # by dataset path
    fio_files: dict[str, str] = field(default_factory=dict)  # test file -> the path fio is given
    python: str = sys.executable
    mismatches: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    count_syscalls: bool = False  # perf can count io_uring_enter here
    confine: Callable[[Condition], Confinement] = lambda _cond: Confinement()  # harness/conditions/emulation.py
    sequential: Any = None  # harness.judge.sequential.Sequential of a run --until-decided
    added_since: float | None = None  # time.monotonic() when this process last added rounds
    show_output: bool = False  # each execution's output printed after it (hyperfine's --show-output)
    leave_settings: bool = False  # $RINGSUM_SYSTEM_SETTINGS=leave (harness/machine/settings.py)


def describe(rec: res.RunRecord) -> str:
    if rec.exit_code is None:
        status = f"FAILED ({rec.error})"
    elif rec.exit_code != 0:
        status = f"exit {rec.exit_code}"
    else:
        status = f"{rec.wall_s:.3f} s  {format_rate(rec.throughput_Bps)}"
        if rec.fio_bw_Bps:
            status += f"  fio {format_rate(rec.fio_bw_Bps)}"
    if rec.hash_ok is True:
        status += "  hash ok"
    elif rec.hash_ok is False:
        status += "  HASH MISMATCH"
    if rec.error and rec.exit_code is not None:
        status += f"  [{rec.error}]"
    return f"r{rec.round:02d} {rec.label}  {status}"


def _raw_base(state: RunState, rnd: int, position: int, cmd: Command) -> str:
    order = state.orders[rnd - 1]
    k = order[:position].count(cmd.label)
    return f"r{rnd:03d}-{cmd.slug}" + (f".{k + 1}" if k else "")


def _output(state: RunState, cmd: Command, out_path: Path) -> str:
    """Where hyperfine sends the command's output: a file to check a hash in or to show the user, a pipe
    for the readers that would notice /dev/null (tar), else nowhere."""
    if cmd.hashes or (state.show_output and _shows(cmd)):
        return str(out_path)
    return "pipe" if cmd.tool in PIPED_TOOLS else "null"


def _shows(cmd: Command) -> bool:
    """--show-output shows every command's output but the built-in readers' (cat's is the file itself)."""
    return cmd.tool not in tools_with(LIMIT_READER)


def shown_output(state: RunState, rec: res.RunRecord, cmd: Command) -> str | None:
    """--show-output: what the execution printed, if anything."""
    if not state.show_output or not _shows(cmd):
        return None
    out = state.run_dir / "raw" / f"{_raw_base(state, rec.round, rec.position, cmd)}.out"
    text = out.read_text(errors="replace").rstrip("\n") if out.exists() else ""
    return text or None


def _timeout(run: RunSettings, cache: str) -> float:
    """How long hyperfine may take for one execution: the command's timeout_s for each time it runs
    (a warm one's warmups too), and its prepare's slack (a cold one's, timed inside hyperfine)."""
    if cache == "warm":
        return run.timeout_s * (1 + run.warmup) + START_SLACK_S
    return run.timeout_s + PREPARE_SLACK_S


def execute(state: RunState, cmd: Command, rnd: int, position: int) -> res.RunRecord:
    raw = state.run_dir / "raw"
    base = _raw_base(state, rnd, position, cmd)
    json_path, out_path = raw / f"{base}.json", raw / f"{base}.out"
    prep_log, fio_path = raw / f"{base}.prepare.jsonl", raw / f"{base}.fio.json"
    report = raw / f"{base}.effective.jsonl"
    for p in (json_path, out_path, prep_log, fio_path, report):
        p.unlink(missing_ok=True)  # leftovers of an execution killed earlier
    cache, keep = state.plan.cache, state.config.run.cached_share
    argv = [state.tools["hyperfine"], "-N", "--runs", "1", "--ignore-failure", "--style", "none",
            "--command-name", cmd.label, "--export-json", str(json_path), "--output", _output(state, cmd, out_path)]
    if cache == "warm" and state.config.run.warmup:
        argv += ["--warmup", str(state.config.run.warmup)]
    if cache == "warm":
        # Warming is done here, just before hyperfine: a cached file stays cached for the few
        # milliseconds in between, and a Python start per execution (--prepare) would cost more
        # than a hot 64 MiB hash takes, i.e. fewer rounds and wider intervals in the same time.
        _warm(cmd, prep_log)
    else:
        settle = CAPPED_SETTLE_S if cmd.condition.read_cap else 0.0
        # a share kept: the same pieces for every command of the round, other pieces each round
        argv += ["--prepare", prepare_argv(state.python, cmd.file, prep_log, cache, settle, keep, state.seed + rnd)]
    words = cmd.argv_with(str(fio_path), state.fio_files.get(cmd.file, cmd.file), state.refs[cmd.file].file_list)
    option = effective.report_option(words[0]) if cmd.tool == HASHER and cmd.extra != "positional" else None
    if option:
        words = effective.with_report(words, option, report)
    argv.append(shlex.join(words))
    started = utcnow()
    timeout = _timeout(state.config.run, cache)
    rc, _out, err = run_group(state.confine(cmd.condition).wrap(argv, state.python), timeout)
    rec = res.RunRecord(
        label=cmd.label, tool=cmd.tool, variant=cmd.variant, group=cmd.group,
        block_size=cmd.block_size, queue_depth=cmd.queue_depth, buffers=cmd.buffers, direct=cmd.direct,
        knobs=dict(cmd.knobs),
        num_threads=cmd.num_threads, mmap=cmd.mmap, extra=cmd.extra,
        file=cmd.file, file_size=cmd.file_size, files=cmd.files, cache=cache, round=rnd, position=position,
        wall_s=None, user_s=None, sys_s=None, bytes=cmd.file_size, throughput_Bps=None,
        exit_code=None, resident_before=None, hash_ok=None, fio_bw_Bps=None, fio_runtime_s=None,
        started_at=iso(started), **cmd.condition.columns())
    errors: list[str] = []
    prep = cachemod.read_last_record(prep_log)
    if prep is not None and "error" in prep:  # the same would happen to every execution after it
        raise RunStopped(f"the page cache could not be prepared before {cmd.label}: {prep['error']}")
    if prep is not None:
        rec.resident_before = float(prep["resident"])  # type: ignore[arg-type]
        tol = state.config.run.resident_tolerance
        if cache == "cold" and keep is None and rec.resident_before > tol:
            errors.append(f"resident {rec.resident_before:.3f} > {tol} after cache drop")
        # a whole number of pieces is kept: a small file's share is off by up to a piece
        if keep is not None and abs(rec.resident_before - keep) > max(tol, cachemod.PIECE / max(cmd.file_size, 1)):
            errors.append(f"resident {rec.resident_before:.3f}, not the share {keep} kept")
        if cache == "warm" and rec.resident_before < 0.99:
            errors.append(f"only {rec.resident_before:.3f} resident in warm mode")
    if rc is None:
        errors.insert(0, f"timeout after {timeout:.0f} s (killed)")
    elif rc != 0 or not json_path.exists():
        msg = (err.strip().splitlines() or [f"hyperfine exit {rc}"])[-1]
        errors.insert(0, f"hyperfine: {msg}")
    else:
        r = json.loads(json_path.read_text())["results"][0]
        rec.wall_s = float(r["times"][0])
        rec.user_s, rec.sys_s = float(r["user"]), float(r["system"])
        rec.exit_code = int(r["exit_codes"][0]) if r.get("exit_codes") else None
        if rec.wall_s > state.config.run.timeout_s:
            errors.append(f"took {rec.wall_s:.1f} s > timeout_s {state.config.run.timeout_s:g}")
        if rec.exit_code == 0:
            rec.throughput_Bps = cmd.file_size / rec.wall_s if rec.wall_s > 0 else None
        else:
            errors.append(f"exit code {rec.exit_code}")
        if cmd.hashes and rec.exit_code == 0:  # a failed command printed no hash to compare
            why = state.refs[cmd.file].judge(out_path.read_text(errors="replace") if out_path.exists() else "")
            rec.hash_ok = why is None
            if why:
                errors.append(f"hash mismatch: {why}")
        if cmd.tool in tools_with(SELF_TIMED) and rec.exit_code == 0:
            try:
                fr = parse_fio_file(fio_path)
                rec.fio_bw_Bps, rec.fio_runtime_s, rec.fio_iops, rec.fio_depth = fr.bw_Bps, fr.runtime_s, fr.iops, fr.depth
                if fr.io_bytes and fr.io_bytes != cmd.file_size:
                    rec.bytes = fr.io_bytes  # it then cannot count for the speed limit
                    errors.append(f"fio read {fr.io_bytes} bytes, not {cmd.file_size}")
            except FioError as e:
                errors.append(str(e))
    if rec.exit_code == 0:
        for name, value in effective.read(report).items():
            setattr(rec, name, value)
    rec.error = "; ".join(errors)
    return rec


def disk_full(e: OSError) -> bool:
    return e.errno in (errno.ENOSPC, errno.EDQUOT)


def _warm(cmd: Command, log: Path) -> None:
    """The warm --prepare step, in the driver: the file made resident, the record logged alike."""
    try:
        cachemod.prepare(cmd.file, str(log), drop=False, warm=True)
    except (cachemod.CacheError, OSError) as e:
        if isinstance(e, OSError) and disk_full(e):
            raise  # the log is in the run directory: the run stops as "no space left" and resumes
        raise RunStopped(f"the page cache could not be prepared before {cmd.label}: {e}") from None


def _prepare_cache(state: RunState, cmd: Command) -> None:
    try:
        if (state.config.run.probe_cache or state.plan.cache) == "cold":
            cachemod.drop_caches(cmd.file)
            if state.config.run.cached_share is not None:
                cachemod.keep_share(cmd.file, state.config.run.cached_share, state.seed)
        else:
            cachemod.make_warm(cmd.file)
    except (cachemod.CacheError, OSError) as e:
        raise RunStopped(f"the page cache could not be prepared before the traced run of {cmd.label}: {e}") from None


def traced_run(state: RunState, cmd: Command, progress: Progress) -> dict[str, Any]:
    """run.probes untimed runs with --trace, each recording behaviour counters; checks the hash too."""
    assert cmd.trace_argv is not None
    trace = state.run_dir / "traces" / f"{cmd.slug}.csv"
    out_path = state.run_dir / "raw" / f"{cmd.slug}.trace.out"
    argv = state.confine(cmd.condition).wrap([str(trace) if a == TRACE else a for a in cmd.trace_argv], state.python)
    for _ in range(state.config.run.probes):
        trace.unlink(missing_ok=True)
        row = counters.probe(cmd.label, argv, cmd.file, trace, out_path, state.config.run.timeout_s,
                             lambda: _prepare_cache(state, cmd), state.count_syscalls)
        judged_counters.append(state.run_dir / judged_counters.COUNTERS_CSV, row)
        rc = row.exit_code
        out = out_path.read_text(errors="replace")
        why = state.refs[cmd.file].judge(out) if rc == 0 else None
        ok = rc == 0 and why is None
        if rc != 0 or not ok:
            break
    row = {"label": cmd.label, "file": cmd.file,
           "trace": f"traces/{trace.name}" if trace.exists() else "",
           "exit_code": "" if rc is None else rc, "hash_ok": ok if rc == 0 else ""}
    if rc != 0:
        err = Path(f"{out_path}.err").read_text(errors="replace").strip()
        why = ("timeout" if rc is None else f"killed by {signal.Signals(-rc).name}" if rc < 0 else
               f"exit {rc}" + (f": {err.splitlines()[-1]}" if err else ""))
        state.failures.append(f"traced run of {cmd.label}: {why}")
        text = f"trace {cmd.label}  FAILED ({why})"
    elif not ok:
        state.mismatches.append(f"{cmd.label} (traced run): {why}")
        text = f"trace {cmd.label}  HASH MISMATCH"
    else:
        text = f"trace {cmd.label}  hash ok" + ("" if trace.exists() else "  (no trace file written)")
    progress.finished(text)
    return row
