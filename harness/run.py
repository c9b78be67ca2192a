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

import csv
import dataclasses
import datetime as dt
import errno
import json
import os
import random
import re
import secrets
import shlex
import signal
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from harness import cache as cachemod
from harness import results as res
from harness import counters, sysinfo, system, verdict
from harness import state as statemod
from harness.config import REPO_ROOT, Config, ConfigError, load_config, with_baseline_build  # noqa: F401 (re-export)
from harness.files import ensure_file, resolve_files  # noqa: F401 (re-export)
from harness.fio import FioError, parse_fio_file
from harness.knobs import KnobsError, load_knobs
from harness.plan import COMMAND, READER, TRACE, Command, FileSpec, Plan, build_plan, estimate, find_tool, format_duration
from harness.probe import HasherRejects, check_hashers
from harness.proc import run_group
from harness import signals
from harness.signals import EndingSignals, ending_signals_raise
from harness.units import format_rate

HEX64 = re.compile(r"^\\?([0-9a-f]{64})\s")  # b3sum starts the line with a backslash when it escapes the path
PREPARE_SLACK_S = 10.0  # on top of the command timeout: sync + drop + residency check
MIN_FREE_BYTES = 1 << 20  # below this, results (raw files, rows) may be cut short: stop the sweep


class SetupError(Exception):
    """Something missing before the run can start (tool, binary, root, file). Exit 2."""


class RunStopped(Exception):
    """The sweep cannot go on (disk full, page cache drop refused). What is recorded stays;
    `--resume` finishes the rest once the cause is fixed. Exit 1."""


def _disk_full(e: OSError) -> bool:
    return e.errno in (errno.ENOSPC, errno.EDQUOT)


def check_space(run_dir: Path) -> None:
    st = os.statvfs(run_dir)
    if st.f_bavail * st.f_frsize < MIN_FREE_BYTES:
        raise RunStopped(f"no space left for results on the filesystem of {run_dir} "
                         f"(less than {MIN_FREE_BYTES >> 20} MiB free)")


@dataclass
class Options:
    config_path: str | None
    file: str | None = None
    size: int | None = None
    dir: str | None = None
    out: str = "results"
    rounds: int | None = None
    resume: str | None = None
    warm: bool = False
    bin_dir: str | None = None
    seed: int | None = None
    against: str | None = None  # a baseline build's bin dir: its hashers run beside these (A/B)
    yes: bool = False  # start a plan estimated over LONG_PLAN_S


LONG_PLAN_S = 3600.0


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def iso(t: dt.datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- checks before anything runs ---

def required_tools(plan: Plan) -> dict[str, str]:
    """name -> executable for every tool the plan needs (hyperfine and b3sum always)."""
    need = {"hyperfine", "b3sum"} | {c.tool for c in plan.commands if c.tool not in ("hasher", READER, COMMAND)}
    out = {}
    for name in sorted(need):
        p = find_tool(name)
        if p is None:
            hint = "run `make deps`" + (" (b3sum goes to .tools/bin)" if name == "b3sum" else "")
            raise SetupError(f"{name} not found on PATH; {hint}")
        out[name] = str(p)
    return out


def check_binaries(plan: Plan) -> None:
    for c in plan.commands:
        exe = Path(c.argv[0])
        if c.tool == "hasher" and not (exe.is_file() and os.access(exe, os.X_OK)):
            raise SetupError(f"hasher binary {exe} not found or not executable; run `make` "
                             "(or set RINGSUM_BIN_DIR / --bin-dir / path = ...)")
        if c.tool in (READER, COMMAND) and not (exe.is_file() and os.access(exe, os.X_OK)):
            raise SetupError(f"group {c.group}: {exe} not found or not executable (argv[0] is looked up "
                             "in .tools/bin, then on PATH)")
        if c.tool != "hasher" and not (exe.is_file() and os.access(exe, os.X_OK)):
            raise SetupError(f"{c.tool} not found ({exe}); run `make deps`")


def check_cache_mode(cache: str) -> None:
    if cache == "cold" and not cachemod.is_root():
        raise SetupError("cold mode needs root to drop the page cache; run as root or pass --warm")
    if cache == "cold" and not os.access(cachemod.DROP_CACHES, os.W_OK):
        raise SetupError(f"cold mode cannot write {cachemod.DROP_CACHES} (read-only /proc/sys, a container?); "
                         "pass --warm")


def check_paths(files: list[FileSpec], out: str) -> None:
    """hyperfine takes each command as UTF-8 text: a path that is not UTF-8 cannot reach it intact."""
    for what, path in [*(("test file", f.path) for f in files), ("--out directory", str(Path(out).absolute()))]:
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise SetupError(f"{what} {path.encode('utf-8', 'surrogateescape')!r} is not valid UTF-8, "
                             "which hyperfine cannot pass on; rename it") from None


# --- shuffling ---

def round_orders(labels: list[str], rounds: int, runs_per_round: int, seed: int) -> list[list[str]]:
    """Each round: every label `runs_per_round` times, freshly shuffled; consecutive rounds differ
    whenever more than one order is possible."""
    rng = random.Random(seed)
    orders: list[list[str]] = []
    base = [lbl for lbl in labels for _ in range(runs_per_round)]
    for _ in range(rounds):
        order = list(base)
        for _attempt in range(20):
            rng.shuffle(order)
            if not orders or order != orders[-1] or len(set(base)) < 2:
                break
        orders.append(order)
    return orders


def b3sum_reference(b3sum: str, path: str, timeout: float) -> str:
    rc, out, err = run_group([b3sum, "--", path], timeout)
    m = HEX64.match(out)
    if rc != 0 or not m:
        raise SetupError(f"b3sum failed on {path}: {err.strip() or out.strip() or f'exit {rc}'}")
    return m.group(1)


def parse_hash(text: str) -> str | None:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) != 1:
        return None
    m = HEX64.match(lines[0])
    return m.group(1) if m else None


def prepare_argv(python: str, file: str, log: Path, cache: str) -> str:
    """hyperfine's --prepare command, quoted for its shell-words splitting (-N: no shell)."""
    mode = "--drop" if cache == "cold" else "--warm"
    return shlex.join([python, "-m", "harness.cache", "prepare", mode, "--file", file, "--log", str(log)])


# --- the run ---

@dataclass
class RunState:
    run_dir: Path
    config: Config
    plan: Plan
    orders: list[list[str]]
    seed: int
    tools: dict[str, str]
    ref_hash: dict[str, str]
    fio_files: dict[str, str] = field(default_factory=dict)  # test file -> the path fio is given
    python: str = sys.executable
    mismatches: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    count_syscalls: bool = False  # perf can count io_uring_enter here


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "-", socket.gethostname()) or "host"


def new_run_dir(out: Path) -> Path:
    base = f"{utcnow().strftime('%Y%m%dT%H%M%SZ')}-{_host()}"
    d = out / base
    n = 2
    while d.exists():
        d, n = out / f"{base}-{n}", n + 1
    d.mkdir(parents=True)
    (d / "raw").mkdir()
    (d / "traces").mkdir()
    return d


def _terminal_width(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns if stream.isatty() else 0
    except (OSError, ValueError, AttributeError):
        return 0


class Progress:
    """tqdm bar with ETA on a terminal; otherwise one line per finished execution."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.done, self.stream = total, 0, stream
        self.bar = None
        if _terminal_width(stream) > 0:
            from tqdm import tqdm

            self.bar = tqdm(total=total, file=stream, unit="run", dynamic_ncols=True)

    def finished(self, text: str) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix_str(text[:60], refresh=False)
            self.bar.update(1)
        else:
            w = len(str(self.total))
            print(f"[{self.done:>{w}}/{self.total}] {text}", file=self.stream, flush=True)

    def note(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _describe(rec: res.RunRecord) -> str:
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


def _knob_columns(plan: Plan) -> list[str]:
    """runs.csv's hasher knob columns: the plan's hashers', else the built table's, else none."""
    hasher = next((c for c in plan.commands if c.tool == "hasher"), None)
    if hasher:
        return list(hasher.knobs)
    try:
        return list(load_knobs().own)
    except KnobsError:
        return []  # baselines only, and no hasher built to describe its knobs


def execute(state: RunState, cmd: Command, rnd: int, position: int) -> res.RunRecord:
    raw = state.run_dir / "raw"
    base = _raw_base(state, rnd, position, cmd)
    json_path, out_path = raw / f"{base}.json", raw / f"{base}.out"
    prep_log, fio_path = raw / f"{base}.prepare.jsonl", raw / f"{base}.fio.json"
    for p in (json_path, out_path, prep_log, fio_path):
        p.unlink(missing_ok=True)  # leftovers of an execution killed earlier
    cache = state.plan.cache
    argv = [state.tools["hyperfine"], "-N", "--runs", "1", "--ignore-failure", "--style", "none",
            "--command-name", cmd.label, "--export-json", str(json_path),
            "--output", str(out_path) if cmd.hashes else "null"]
    if cache == "warm":
        # Warming is done here, just before hyperfine: a cached file stays cached for the few
        # milliseconds in between, and a Python start per execution (--prepare) would cost more
        # than a hot 64 MiB hash takes, i.e. fewer rounds and wider intervals in the same time.
        _warm(cmd, prep_log)
    else:
        argv += ["--prepare", prepare_argv(state.python, cmd.file, prep_log, cache)]
    argv.append(shlex.join(cmd.argv_with(str(fio_path), state.fio_files.get(cmd.file, cmd.file))))
    started = utcnow()
    timeout = state.config.run.timeout_s + PREPARE_SLACK_S
    rc, _out, err = run_group(argv, timeout)
    rec = res.RunRecord(
        label=cmd.label, tool=cmd.tool, variant=cmd.variant, group=cmd.group,
        block_size=cmd.block_size, queue_depth=cmd.queue_depth, buffers=cmd.buffers, direct=cmd.direct,
        knobs=dict(cmd.knobs),
        num_threads=cmd.num_threads, mmap=cmd.mmap, extra=cmd.extra,
        file=cmd.file, file_size=cmd.file_size, cache=cache, round=rnd, position=position,
        wall_s=None, user_s=None, sys_s=None, bytes=cmd.file_size, throughput_Bps=None,
        exit_code=None, resident_before=None, hash_ok=None, fio_bw_Bps=None, fio_runtime_s=None,
        started_at=iso(started))
    errors: list[str] = []
    prep = cachemod.read_last_record(prep_log)
    if prep is not None and "error" in prep:  # the same would happen to every execution after it
        raise RunStopped(f"the page cache could not be prepared before {cmd.label}: {prep['error']}")
    if prep is not None:
        rec.resident_before = float(prep["resident"])  # type: ignore[arg-type]
        tol = state.config.run.resident_tolerance
        if cache == "cold" and rec.resident_before > tol:
            errors.append(f"resident {rec.resident_before:.3f} > {tol} after cache drop")
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
            got = parse_hash(out_path.read_text(errors="replace")) if out_path.exists() else None
            rec.hash_ok = got == state.ref_hash[cmd.file]
            if not rec.hash_ok:
                errors.append(f"hash mismatch: got {got or 'no hash line'}")
        if cmd.tool == "fio" and rec.exit_code == 0:
            try:
                fr = parse_fio_file(fio_path)
                rec.fio_bw_Bps, rec.fio_runtime_s = fr.bw_Bps, fr.runtime_s
                if fr.io_bytes and fr.io_bytes != cmd.file_size:
                    rec.bytes = fr.io_bytes  # it then cannot count for the speed limit
                    errors.append(f"fio read {fr.io_bytes} bytes, not {cmd.file_size}")
            except FioError as e:
                errors.append(str(e))
    rec.error = "; ".join(errors)
    return rec


def _warm(cmd: Command, log: Path) -> None:
    """The warm --prepare step, in the driver: the file made resident, the record logged alike."""
    try:
        cachemod.prepare(cmd.file, str(log), drop=False, warm=True)
    except (cachemod.CacheError, OSError) as e:
        raise RunStopped(f"the page cache could not be prepared before {cmd.label}: {e}") from None


def _prepare_cache(state: RunState, cmd: Command) -> None:
    try:
        if (state.config.run.probe_cache or state.plan.cache) == "cold":
            cachemod.drop_caches(cmd.file)
        else:
            cachemod.make_warm(cmd.file)
    except (cachemod.CacheError, OSError) as e:
        raise RunStopped(f"the page cache could not be prepared before the traced run of {cmd.label}: {e}") from None


def traced_run(state: RunState, cmd: Command, progress: Progress) -> dict[str, Any]:
    """run.probes untimed runs with --trace, each recording behaviour counters; checks the hash too."""
    assert cmd.trace_argv is not None
    trace = state.run_dir / "traces" / f"{cmd.slug}.csv"
    out_path = state.run_dir / "raw" / f"{cmd.slug}.trace.out"
    argv = [str(trace) if a == TRACE else a for a in cmd.trace_argv]
    for _ in range(state.config.run.probes):
        trace.unlink(missing_ok=True)
        row = counters.probe(cmd.label, argv, cmd.file, trace, out_path, state.config.run.timeout_s,
                             lambda: _prepare_cache(state, cmd), state.count_syscalls)
        counters.append(state.run_dir / counters.COUNTERS_CSV, row)
        rc = row.exit_code
        out = out_path.read_text(errors="replace")
        got = parse_hash(out) if rc == 0 else None
        ok = got == state.ref_hash[cmd.file]
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
        state.mismatches.append(f"{cmd.label} (traced run): got {got or 'no hash line'}")
        text = f"trace {cmd.label}  HASH MISMATCH"
    else:
        text = f"trace {cmd.label}  hash ok" + ("" if trace.exists() else "  (no trace file written)")
    progress.finished(text)
    return row


def _append_csv_row(path: Path, header: list[str], row: dict[str, Any]) -> None:
    new = not path.exists() or path.stat().st_size == 0
    res.repair_csv(path)
    with open(path, "a", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        if new:
            w.writeheader()
        w.writerow(row)
        f.flush()
        os.fsync(f.fileno())


TRACE_INDEX_COLUMNS = ["label", "file", "trace", "exit_code", "hash_ok"]


def _read_trace_index(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    text = text[: text.rfind("\n") + 1]
    return list(csv.DictReader(text.splitlines()))


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _apply_overrides(config: Config, opts: Options) -> Config:
    run = config.run
    changes: dict[str, Any] = {}
    if opts.rounds is not None:
        changes["rounds"] = opts.rounds
    if opts.warm:
        changes["cache"] = "warm"
        changes["probe_cache"] = None
    if opts.bin_dir is not None:
        changes["bin_dir"] = str(Path(opts.bin_dir).absolute())
    if opts.seed is not None:
        changes["seed"] = opts.seed
    if changes:
        config = dataclasses.replace(config, run=dataclasses.replace(run, **changes))
    if opts.against is not None:
        config = with_baseline_build(config, opts.against)
    return config


@dataclass
class Validated:
    config: Config
    files: list[FileSpec]
    plan: Plan
    tools: dict[str, str]


def validate_new_run(opts: Options) -> Validated:
    """Everything that can be checked before anything runs (config, files, tools, root)."""
    if opts.config_path is None:
        raise ConfigError("no config given")
    config = _apply_overrides(load_config(opts.config_path), opts)
    files = resolve_files(config, opts.file, opts.size, opts.dir)
    plan = build_plan(config, files)
    check_cache_mode(plan.cache)
    if config.run.probe_cache and plan.traced_executions:
        check_cache_mode(config.run.probe_cache)
    tools = required_tools(plan)
    check_binaries(plan)
    check_paths(files, opts.out)
    try:
        check_hashers(plan, config.run.timeout_s)
    except HasherRejects as e:
        raise ConfigError(f"{config.path}: {e}") from None
    est = estimate(plan, config).total_s
    if est > LONG_PLAN_S and not opts.yes:
        raise SetupError(f"{config.path}: the plan is estimated at {format_duration(est)} "
                         f"({plan.timed_executions} timed executions); pass --yes to start it "
                         "(see `ringsum plan`)")
    return Validated(config, files, plan, tools)


def prepare_new_run(opts: Options, v: Validated) -> RunState:
    assert opts.config_path is not None
    config, files, plan, tools = v.config, v.files, v.plan, v.tools
    for f in files:
        ensure_file(f, _log)

    run_dir = new_run_dir(Path(opts.out))
    (run_dir / "config.toml").write_text(Path(opts.config_path).read_text(encoding="utf-8"))
    seed = config.run.seed if config.run.seed is not None else secrets.randbits(32)
    orders = round_orders([c.label for c in plan.commands], plan.rounds, plan.runs_per_round, seed)
    res.write_json_atomic(run_dir / res.PLAN_JSON, {
        "seed": seed, "rounds": plan.rounds, "runs_per_round": plan.runs_per_round,
        "cache": plan.cache, "files": [dataclasses.asdict(f) for f in files],
        "commands": [c.to_json() for c in plan.commands], "orders": orders, "notes": plan.notes,
    })
    _log(f"run directory: {run_dir}")
    ref = {f.path: b3sum_reference(tools["b3sum"], f.path, config.run.timeout_s) for f in files}
    info = sysinfo.sysinfo(files[0].path, config.bin_dir())
    meta = {
        "config": config.to_json(), "options": dataclasses.asdict(opts),
        "fingerprint": info["fingerprint"], "versions": info["versions"],
        "git_commit": info["git_commit"], "git_dirty": info["git_dirty"],
        "git_errors": info["git_errors"],
        "started_at": iso(utcnow()), "finished_at": None, "resumed_at": [],
        "files": [{"path": f.path, "size": f.size, "b3sum": ref[f.path]} for f in files],
        "speed_limit": None, "seed": seed, "tools": tools, "python": sys.executable,
    }
    res.write_json_atomic(run_dir / res.META_JSON, meta)
    return RunState(run_dir=run_dir, config=config, plan=plan, orders=orders, seed=seed,
                    tools=tools, ref_hash=ref)


def finished_at(run_dir: Path) -> str | None:
    """When a run directory's run finished (None: it did not, so --resume goes on with it)."""
    meta_p, plan_p = run_dir / res.META_JSON, run_dir / res.PLAN_JSON
    if not meta_p.is_file() or not plan_p.is_file():
        raise SetupError(f"{run_dir}: not a run directory (meta.json and plan.json needed)")
    return res.read_json(meta_p).get("finished_at")


def prepare_resume(opts: Options) -> RunState | None:
    """The state to go on with, or None when the run has finished (it is then left untouched)."""
    run_dir = Path(opts.resume or "")
    meta_p, plan_p = run_dir / res.META_JSON, run_dir / res.PLAN_JSON
    if finished_at(run_dir):
        return None
    meta, pj = res.read_json(meta_p), res.read_json(plan_p)
    saved = meta["config"]
    config = load_config(run_dir / "config.toml")
    config = dataclasses.replace(config, path=saved["path"])
    run_over = saved["run"]
    config = dataclasses.replace(config, run=dataclasses.replace(
        config.run, rounds=run_over["rounds"], cache=run_over["cache"], bin_dir=run_over["bin_dir"],
        seed=pj["seed"]))
    if opts.config_path and Path(opts.config_path).resolve() != (run_dir / "config.toml").resolve():
        _log(f"note: --resume uses the config saved in {run_dir}/config.toml, not {opts.config_path}")
    files = [FileSpec(**f) for f in pj["files"]]
    plan = Plan(commands=[Command.from_json(c) for c in pj["commands"]], files=files,
                rounds=pj["rounds"], runs_per_round=pj["runs_per_round"], cache=pj["cache"],
                notes=pj.get("notes", []))
    check_cache_mode(plan.cache)
    tools = required_tools(plan)
    check_binaries(plan)
    ref = {}
    for f, saved_file in zip(files, meta["files"]):
        if not Path(f.path).is_file() or Path(f.path).stat().st_size != f.size:
            raise SetupError(f"test file {f.path} is missing or changed size since the run started")
        ref[f.path] = b3sum_reference(tools["b3sum"], f.path, config.run.timeout_s)
        if ref[f.path] != saved_file["b3sum"]:
            raise SetupError(f"test file {f.path} changed since the run started (b3sum differs)")
    fp = sysinfo.fingerprint(files[0].path)
    if fp["fingerprint_id"] != meta["fingerprint"].get("fingerprint_id"):
        _log("WARNING: resuming on a different machine fingerprint "
             f"({fp['fingerprint_id']} != {meta['fingerprint'].get('fingerprint_id')})")
    meta.setdefault("resumed_at", []).append(iso(utcnow()))
    meta["finished_at"] = None
    res.write_json_atomic(meta_p, meta)
    _log(f"resuming run directory: {run_dir}")
    return RunState(run_dir=run_dir, config=config, plan=plan, orders=pj["orders"], seed=pj["seed"],
                    tools=tools, ref_hash=ref)


@dataclass(frozen=True)
class Outcome:
    """What run() did: the exit code (0 fine, 1 run failure, 130 ended by a signal) and the run
    directory it wrote or resumed (None when it got no further than checking its settings)."""

    code: int
    run_dir: Path | None


def run(opts: Options, stream: TextIO = sys.stderr) -> Outcome:
    """Run (or resume) a sweep."""
    # uring_b3sum reads installed defaults (ringsum tune --install); a sweep's knobs must mean what they say.
    os.environ["URING_B3SUM_OPTIONS"] = os.devnull
    if opts.resume and _say_finished(Path(opts.resume)):
        return Outcome(0, Path(opts.resume))
    validated = None if opts.resume else validate_new_run(opts)  # errors before waiting
    statemod.preflight()
    # One sweep at a time per machine: two runs would drop each other's page cache and read the same disk.
    with ending_signals_raise() as ending, statemod.locked(statemod.run_lock_path(), _log, "another ringsum run"):
        try:
            return _run_locked(opts, validated, stream, ending)
        except OSError as e:
            if not _disk_full(e):
                raise
            _log(f"ringsum: no space left on device writing results ({e.filename or opts.resume or opts.out}); "
                 "nothing was measured yet")
            return Outcome(1, None)


def _say_finished(run_dir: Path) -> bool:
    at = finished_at(run_dir)
    if at:
        _log(f"ringsum: {run_dir} finished at {at}; nothing to resume (it is left as it is)")
    return bool(at)


def _run_locked(opts: Options, validated: Validated | None, stream: TextIO, ending: EndingSignals) -> Outcome:
    state = prepare_new_run(opts, validated) if validated else prepare_resume(opts)
    if state is None:  # finished by another resume while this one waited for the lock
        _say_finished(Path(opts.resume or ""))
        return Outcome(0, Path(opts.resume or ""))
    with _fio_inputs(state):
        return Outcome(_measure(state, stream, ending), state.run_dir)


@contextmanager
def _fio_inputs(state: RunState) -> Iterator[None]:
    """fio reads each test file through /proc/<this pid>/fd/<n>: a path of digits and slashes that
    its option parser cannot misread (and fio is told never to create a file)."""
    fds: list[int] = []
    try:
        for path in sorted({c.file for c in state.plan.commands if c.tool == "fio"}):
            fds.append(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
            state.fio_files[path] = f"/proc/{os.getpid()}/fd/{fds[-1]}"
        yield
    finally:
        for fd in fds:
            os.close(fd)


def _measure(state: RunState, stream: TextIO, ending: EndingSignals) -> int:
    run_dir, plan = state.run_dir, state.plan
    by_label = {c.label: c for c in plan.commands}
    runs_csv = run_dir / res.RUNS_CSV
    trace_index = run_dir / "traces" / "index.csv"

    done_rows = res.read_records(runs_csv)
    done = {(r.round, r.position) for r in done_rows}
    for r in done_rows:  # failures already recorded before a resume still count
        if r.hash_ok is False:
            state.mismatches.append(f"{r.label} (round {r.round})")
        if r.exit_code != 0:
            state.failures.append(f"{r.label} (round {r.round}): {r.error or 'failed'}")
    traced = {(t["label"], t["file"]) for t in _read_trace_index(trace_index)}
    for t in _read_trace_index(trace_index):
        if t.get("hash_ok") == "False" and t.get("exit_code") == "0":
            state.mismatches.append(f"{t['label']} (traced run)")
        elif t.get("exit_code") != "0":
            state.failures.append(f"traced run of {t['label']}: exit {t.get('exit_code') or 'timeout'}")
    to_trace = [c for c in plan.commands if c.trace_argv and (c.label, c.file) not in traced]
    todo = [(rnd, pos) for rnd in range(1, plan.rounds + 1)
            for pos in range(len(state.orders[rnd - 1])) if (rnd, pos) not in done]

    if plan.cache == "warm":
        for f in plan.files:
            frac = cachemod.make_warm(f.path)
            if frac < 0.99:
                state.warnings.append(f"could not make {f.path} resident ({frac:.2f}); low memory?")

    with system.timing_settings(_log) as settings:
        _record_settings(run_dir, settings)
        progress = Progress(len(to_trace) + len(todo), stream)
        state.count_syscalls = bool(to_trace) and counters.perf_counts_enters()
        try:
            for c in to_trace:
                ending.check()
                check_space(run_dir)
                row = traced_run(state, c, progress)
                check_space(run_dir)  # filled meanwhile: the trace may be cut short, trace it again on resume
                _append_csv_row(trace_index, TRACE_INDEX_COLUMNS, row)
            with res.RunsWriter(runs_csv, _knob_columns(state.plan)) as writer:
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
                    progress.finished(_describe(rec))
        except KeyboardInterrupt as e:
            progress.close()
            _log(f"\ninterrupted ({signals.name(e)}); finish with: ringsum run --resume {run_dir}")
            return 130
        except (RunStopped, OSError) as e:
            progress.close()
            if isinstance(e, OSError) and not _disk_full(e):
                raise
            return stopped(state, f"no space left on device ({e})" if isinstance(e, OSError) else str(e))
        progress.close()
        return finish(state)


def _record_settings(run_dir: Path, settings: list[dict]) -> None:
    """What the run changed on the machine, and back to what, kept with the results (a resume adds its own)."""
    meta = res.read_json(run_dir / res.META_JSON)
    meta.setdefault("system_settings", []).append({"at": iso(utcnow()), "settings": settings})
    res.write_json_atomic(run_dir / res.META_JSON, meta)


def stopped(state: RunState, reason: str) -> int:
    """The sweep stopped before its end: say why, keep every recorded row, tell how to go on."""
    done = len(res.read_records(state.run_dir / res.RUNS_CSV))
    try:
        meta = res.read_json(state.run_dir / res.META_JSON)
        meta.setdefault("stopped", []).append({"at": iso(utcnow()), "reason": reason, "executions_recorded": done})
        res.write_json_atomic(state.run_dir / res.META_JSON, meta)
    except OSError:
        pass  # the disk is full: the message below still says it all
    _log(f"ringsum: stopped: {reason}; {done} executions are recorded in {state.run_dir / res.RUNS_CSV}; "
         f"fix that, then finish with: ringsum run --resume {state.run_dir}")
    return 1


def finish(state: RunState) -> int:
    run_dir = state.run_dir
    df = res.read_runs(run_dir / res.RUNS_CSV)
    cache = state.plan.cache
    meta = res.read_json(run_dir / res.META_JSON)
    meta["speed_limit"] = verdict.meta_speed_limit(df, cache)
    meta["finished_at"] = iso(utcnow())
    meta["outcome"] = {"hash_mismatches": state.mismatches, "failures": state.failures,
                       "warnings": state.warnings[:200]}
    res.write_json_atomic(run_dir / res.META_JSON, meta)
    argv = {c.label: list(c.argv) for c in state.plan.commands}
    res.write_json_atomic(run_dir / res.SUMMARY_JSON, verdict.summary_json(df, cache, argv))
    summary = verdict.summarize(df, cache, argv)
    (run_dir / res.SUMMARY_TXT).write_text(summary)
    print(summary, end="")
    print(f"run directory: {run_dir}")
    for what, text in verdict.headline(df, cache).items():
        if what == "FINDING":
            _log(f"ringsum: FINDING: {text}")
    resident_warn = [w for w in state.warnings if "resident" in w]
    if resident_warn:
        _log(f"WARNING: {len(resident_warn)} runs started with the file (partly) in the page cache; "
             f"first: {resident_warn[0]}")
    code = 0
    if state.failures:
        _log(f"ringsum: {len(state.failures)} executions failed: " + "; ".join(state.failures[:5]))
        code = 1
    if state.mismatches:
        _log("!" * 72)
        _log("ringsum: HASH MISMATCH against the official b3sum: " + "; ".join(state.mismatches[:10]))
        _log("!" * 72)
        code = 1
    return code


__all__ = ["Options", "Outcome", "run", "round_orders", "prepare_argv", "resolve_files", "SetupError",
           "RunStopped", "REPO_ROOT"]
