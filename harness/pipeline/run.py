"""Running a plan: rounds in shuffled order, one hyperfine invocation per timed execution,
incremental results, resume.

Run directory layout (results/<YYYYmmddTHHMMSSZ>-<host>/)::

    config.toml       the config file as given (resume re-reads it)
    meta.json         config as run, fingerprint, versions, git, files, speed limit, seed
    plan.json         every command (label, tool, knobs, argv) and the order of each round
    runs.csv          one row per timed execution, appended + fsync'd as each finishes
    raw/              hyperfine JSON (r001-<slug>.json), fio JSON, captured stdout, prepare logs
    traces/           <slug>.csv from one untimed --trace run per hasher configuration; index.csv
    summary.txt       the summary table and the headline (what to use), as printed at the end
    summary.json      the headline, the speed limit and every command's ratio to it, machine-readable
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from harness.catalog.knobs import KnobsError, load_knobs
from harness.conditions import emulation
from harness.datasets.dataset import Dataset
from harness.machine import page_cache as cachemod
from harness.machine import settings as system
from harness.machine import signals
from harness.machine import state as statemod
from harness.pipeline import counters
from harness.judge import results as res
from harness.judge import sequential
from harness.pipeline.config import ConfigError, load_config
from harness.pipeline.config_schema import Config, with_baseline_build
from harness.pipeline.estimate import estimate, format_duration
from harness.pipeline.execute import RunState, RunStopped, describe, disk_full, execute, shown_output, traced_run
from harness.pipeline.option_probe import HasherRejects, check_hashers
from harness.pipeline.plan import Plan, added_round_orders, build_plan
from harness.pipeline.preflight import SetupError, check_binaries, check_cache_mode, check_paths, required_tools
from harness.pipeline.run_request import Options, Validated, validate_new_run
from harness.progress import Progress, log
from harness.pipeline.run_directory import (append_csv_row, finish, finished_at, prepare_new_run,
                            prepare_resume, read_trace_index, record_settings, save_orders, stopped)
from harness.machine.signals import EndingSignals, ending_signals_raise
from harness.catalog.tools import HASHER, SELF_TIMED, tools_with

MIN_FREE_BYTES = 1 << 20  # below this, results (raw files, rows) may be cut short: stop the sweep


def check_space(run_dir: Path) -> None:
    st = os.statvfs(run_dir)
    if st.f_bavail * st.f_frsize < MIN_FREE_BYTES:
        raise RunStopped(f"no space left for results on the filesystem of {run_dir} "
                         f"(less than {MIN_FREE_BYTES >> 20} MiB free)")





def _knob_columns(plan: Plan) -> list[str]:
    """runs.csv's hasher knob columns: the plan's hashers', else the built table's, else none."""
    hasher = next((c for c in plan.commands if c.tool == HASHER), None)
    if hasher:
        return list(hasher.knobs)
    try:
        return list(load_knobs().own)
    except KnobsError:
        return []  # baselines only, and no hasher built to describe its knobs


@dataclass(frozen=True)
class Outcome:
    """What run() did: the exit code (0 fine, 1 run failure, 130 ended by a signal) and the run
    directory it wrote or resumed (None when it got no further than checking its settings)."""

    code: int
    run_dir: Path | None


def run(opts: Options, stream: TextIO = sys.stderr) -> Outcome:
    """Run (or resume) a sweep."""
    # uring_b3sum reads a user's options file and its wisdom (ringsum tune --install); a sweep's knobs
    # must mean what they say.
    os.environ["URING_B3SUM_OPTIONS"] = os.devnull
    os.environ["URING_B3SUM_WISDOM"] = os.devnull
    if opts.resume and _say_finished(Path(opts.resume)):
        return Outcome(0, Path(opts.resume))
    validated = None if opts.resume else validate_new_run(opts)  # errors before waiting
    try:
        leave_settings = system.left_alone(os.environ)
    except system.SettingsError as e:
        raise SetupError(str(e)) from None
    statemod.preflight()
    # One sweep at a time per machine: two runs would drop each other's page cache and read the same disk.
    with ending_signals_raise() as ending, statemod.locked(statemod.run_lock_path(), log, "another ringsum run"):
        try:
            return _run_locked(opts, validated, stream, ending, leave_settings)
        except OSError as e:
            if not disk_full(e):
                raise
            log(f"ringsum: no space left on device writing results ({e.filename or opts.resume or opts.out}); "
                 "nothing was measured yet")
            return Outcome(1, None)


def _say_finished(run_dir: Path) -> bool:
    at = finished_at(run_dir)
    if at:
        log(f"ringsum: {run_dir} finished at {at}; nothing to resume (it is left as it is)")
    return bool(at)


def _run_locked(opts: Options, validated: Validated | None, stream: TextIO, ending: EndingSignals,
                leave_settings: bool) -> Outcome:
    with emulation.environment(log) as env:
        try:
            state = prepare_new_run(opts, validated, env) if validated else prepare_resume(opts, env)
        except emulation.EmulationError as e:
            raise SetupError(str(e)) from None
        if state is None:  # finished by another resume while this one waited for the lock
            _say_finished(Path(opts.resume or ""))
            return Outcome(0, Path(opts.resume or ""))
        state.show_output = opts.show_output
        state.leave_settings = leave_settings
        if validated and validated.sequential:
            sequential.record(state.run_dir, validated.sequential)
        meta = res.read_json(state.run_dir / res.META_JSON)
        state.sequential = sequential.recorded(meta)
        looked = (meta.get("sequential") or {}).get("outcome", {}).get("rounds")
        if looked is not None and len(state.orders) > looked:  # resumed within added rounds: they count from now
            state.added_since = time.monotonic()
        with _fio_inputs(state):
            return Outcome(_measure(state, stream, ending), state.run_dir)


@contextmanager
def _fio_inputs(state: RunState) -> Iterator[None]:
    """fio reads each test file through /proc/<this pid>/fd/<n>: a path of digits and slashes that
    its option parser cannot misread (and fio is told never to create a file)."""
    fds: list[int] = []
    try:
        for path in sorted({c.file for c in state.plan.commands if c.tool in tools_with(SELF_TIMED)}):
            fds.append(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
            state.fio_files[path] = f"/proc/{os.getpid()}/fd/{fds[-1]}"
        yield
    finally:
        for fd in fds:
            os.close(fd)


def _measure(state: RunState, stream: TextIO, ending: EndingSignals) -> int:
    run_dir, plan = state.run_dir, state.plan
    runs_csv = run_dir / res.RUNS_CSV
    trace_index = run_dir / res.TRACE_INDEX_CSV

    done_rows = res.read_records(runs_csv)
    done = {(r.round, r.position) for r in done_rows}
    for r in done_rows:  # failures already recorded before a resume still count
        if r.hash_ok is False:
            state.mismatches.append(f"{r.label} (round {r.round})")
        if r.exit_code != 0:
            state.failures.append(f"{r.label} (round {r.round}): {r.error or 'failed'}")
    traced = {(t["label"], t["file"]) for t in read_trace_index(trace_index)}
    for t in read_trace_index(trace_index):
        if t.get("hash_ok") == "False" and t.get("exit_code") == "0":
            state.mismatches.append(f"{t['label']} (traced run)")
        elif t.get("exit_code") != "0":
            state.failures.append(f"traced run of {t['label']}: exit {t.get('exit_code') or 'timeout'}")
    to_trace = [c for c in plan.commands if c.trace_argv and (c.label, c.file) not in traced]
    todo = [(rnd, pos) for rnd in range(1, plan.rounds + 1)
            for pos in range(len(state.orders[rnd - 1])) if (rnd, pos) not in done]

    if plan.cache == "warm":
        for f in plan.datasets:
            frac = cachemod.make_warm(f.path)
            if frac < 0.99:
                state.warnings.append(f"could not make {f.path} resident ({frac:.2f}); low memory?")

    with system.timing_settings(log, leave=state.leave_settings) as settings:
        record_settings(run_dir, settings)
        progress = Progress(len(to_trace) + len(todo), stream)
        state.count_syscalls = bool(to_trace) and counters.perf_counts_enters()
        try:
            for c in to_trace:
                ending.check()
                check_space(run_dir)
                row = traced_run(state, c, progress)
                check_space(run_dir)  # filled meanwhile: the trace may be cut short, trace it again on resume
                append_csv_row(trace_index, res.TRACE_INDEX_COLUMNS, row)
            with res.RunsWriter(runs_csv, _knob_columns(state.plan)) as writer:
                _run_rounds(state, todo, writer, progress, ending)
                while state.sequential and (more := _more_rounds(state, progress)):
                    _run_rounds(state, more, writer, progress, ending)
        except KeyboardInterrupt as e:
            progress.close()
            log(f"\ninterrupted ({signals.name(e)}); finish with: ringsum run --resume {run_dir}")
            return 130
        except (RunStopped, OSError) as e:
            progress.close()
            if isinstance(e, OSError) and not disk_full(e):
                raise
            return stopped(state, f"no space left on device ({e})" if isinstance(e, OSError) else str(e))
        progress.close()
        return finish(state)


def _run_rounds(state: RunState, todo: list[tuple[int, int]], writer: res.RunsWriter, progress: Progress,
                ending: EndingSignals) -> None:
    by_label = {c.label: c for c in state.plan.commands}
    run_dir = state.run_dir
    for rnd, pos in todo:
        cmd = by_label[state.orders[rnd - 1][pos]]
        ending.check()
        check_space(run_dir)
        rec = execute(state, cmd, rnd, pos)
        check_space(run_dir)  # filled meanwhile: its raw files may be cut short, run it again on resume
        writer.append(rec)
        if rec.hash_ok is False:
            state.mismatches.append(f"{rec.label} (round {rnd})")
            progress.note(f"!!! HASH MISMATCH: {rec.label} (round {rnd}): {rec.error}")
        if rec.exit_code != 0:
            state.failures.append(f"{rec.label} (round {rnd}): {rec.error}")
        elif rec.error:
            state.warnings.append(f"{rec.label} (round {rnd}): {rec.error}")
            if "resident" in rec.error:
                progress.note(f"WARNING: {rec.label} (round {rnd}): {rec.error}")
        progress.finished(describe(rec))
        if (shown := shown_output(state, rec, cmd)) is not None:
            progress.note(shown)


def _more_rounds(state: RunState, progress: Progress) -> list[tuple[int, int]]:
    """--until-decided: the (round, position)s of the next rounds to run, none once decided or out of budget."""
    seq, run_dir = state.sequential, state.run_dir
    decision, h, runs = sequential.current_decision(run_dir)
    now = time.monotonic()
    spent = (res.read_json(run_dir / res.META_JSON)["sequential"].get("outcome", {}).get("spent_s", 0.0)
             + (now - state.added_since if state.added_since is not None else 0.0))
    labels = sequential.next_round_labels(h)
    count = min(seq.step, seq.max_rounds - len(state.orders))
    step_s = count * sequential.round_seconds(runs, labels, state.config.run.nominal.overhead_s)
    settled, said = sequential.settled(h), decision.text(h.b3sum and (h.b3sum.label, h.b3sum.ratio))
    why = ("decided" if settled else "no hasher" if decision.kind == "none" else
           "max_rounds" if count <= 0 else
           "budget" if seq.budget_s is not None and spent + step_s > seq.budget_s else "")
    outcome = {"rounds": len(state.orders), "decided": settled, "stopped_by": why or None,
               "spent_s": spent, "decision": said}
    sequential.record(run_dir, seq, outcome)
    log(f"until decided: look after {len(state.orders)} rounds (at {seq.confidence:.2%}): {said}"
        + (f"; stop: {why}" if why else f"; {count} more rounds of {len(labels)} commands"))
    if why:
        return []
    added = added_round_orders(state.orders, labels, count, state.plan.runs_per_round, state.seed)
    state.orders.extend(added)
    state.plan = dataclasses.replace(state.plan, rounds=len(state.orders))
    save_orders(run_dir, state.orders)
    state.added_since = now
    todo = [(rnd, pos) for rnd in range(len(state.orders) - count + 1, len(state.orders) + 1)
            for pos in range(len(state.orders[rnd - 1]))]
    progress.total += len(todo)
    return todo
