"""The run directory: made for a new run, reopened for --resume, closed with the summary (the layout
is in run.py)."""

from __future__ import annotations

import csv
import dataclasses
import os
import re
import secrets
import socket
import sys
from pathlib import Path
from typing import Any

from harness.catalog.tools import REFERENCE_HASH, the_tool
from harness.conditions.emulation import Environment, ram_root
from harness.conditions.spec import Condition
from harness.datasets.dataset import Dataset
from harness.datasets.generate import ensure_dataset
from harness.machine import sysinfo
from harness.judge import results as res
from harness.judge import summary as judge_summary
from harness.judge.load import load_run
from harness.pipeline.config import load_config
from harness.pipeline.execute import RunState
from harness.pipeline.plan import Command, Plan, round_orders
from harness.pipeline.preflight import (Reference, SetupError, check_binaries, check_cache_mode, dataset_reference,
                               required_tools)
from harness.judge.results import iso, utcnow
from harness.pipeline.run_request import Options, Validated
from harness.progress import log


def host_name() -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "-", socket.gethostname()) or "host"


def stamped_dir(out: Path, prefix: str = "") -> Path:
    """out/<prefix><UTC time>-<host>, created; -2, -3 ... after it when that exists already."""
    base = f"{prefix}{utcnow().strftime('%Y%m%dT%H%M%SZ')}-{host_name()}"
    d, n = out / base, 2
    while d.exists():
        d, n = out / f"{base}-{n}", n + 1
    try:
        d.mkdir(parents=True)
    except OSError as e:  # a read-only filesystem, no permission, a file in the way: one line, not a traceback
        raise SetupError(f"--out {out}: cannot create {d.name} there: {e.strerror}") from None
    return d


def new_run_dir(out: Path) -> Path:
    d = stamped_dir(out)
    (d / "raw").mkdir()
    (d / "traces").mkdir()
    return d


def append_csv_row(path: Path, header: list[str], row: dict[str, Any]) -> None:
    new = not path.exists() or path.stat().st_size == 0
    res.repair_csv(path)
    with open(path, "a", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        if new:
            w.writeheader()
        w.writerow(row)
        f.flush()
        os.fsync(f.fileno())


def read_trace_index(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    text = text[: text.rfind("\n") + 1]
    return list(csv.DictReader(text.splitlines()))


def _references(b3sum: str, datasets: list[Dataset], run_dir: Path, timeout: float) -> dict[str, Reference]:
    """b3sum's answer per dataset; a RAM device's copy of a file must hash as the original does."""
    ref = {f.path: dataset_reference(b3sum, f, run_dir, i, timeout) for i, f in enumerate(datasets)}
    for f in datasets:
        if f.copy_of and not f.is_tree and ref[f.path].digest != ref[f.copy_of].digest:
            raise SetupError(f"the RAM device's copy {f.path} of {f.copy_of} hashes differently")
    return ref


def prepare_new_run(opts: Options, v: Validated, env: Environment) -> RunState:
    assert opts.config_path is not None
    config, files, plan, tools = v.config, v.files, v.plan, v.tools
    for f in files:
        ensure_dataset(f, log)
    env.start(plan.conditions, plan.datasets, plan.programs)

    run_dir = new_run_dir(Path(opts.out))
    (run_dir / "config.toml").write_text(opts.config_text if opts.config_text is not None
                                         else Path(opts.config_path).read_text(encoding="utf-8"))
    seed = config.run.seed if config.run.seed is not None else secrets.randbits(32)
    orders = round_orders([c.label for c in plan.commands], plan.rounds, plan.runs_per_round, seed)
    res.write_json_atomic(run_dir / res.PLAN_JSON, {
        "seed": seed, "rounds": plan.rounds, "runs_per_round": plan.runs_per_round,
        "cache": plan.cache, **({"cached_share": share} if (share := config.run.cached_share) is not None else {}),
        "datasets": [f.to_json() for f in plan.datasets],
        "conditions": [c.to_json() for c in plan.conditions],
        "commands": [c.to_json() for c in plan.commands], "orders": orders, "notes": plan.notes,
    })
    log(f"run directory: {run_dir}")
    ref = _references(tools[the_tool(REFERENCE_HASH)], plan.datasets, run_dir, config.run.timeout_s)
    info = sysinfo.sysinfo(files[0].path, config.bin_dir())
    meta = {
        "config": config.to_json(), "options": dataclasses.asdict(opts),
        "fingerprint": info["fingerprint"], "versions": info["versions"],
        "git_commit": info["git_commit"], "git_dirty": info["git_dirty"],
        "git_errors": info["git_errors"],
        "started_at": iso(utcnow()), "finished_at": None, "resumed_at": [],
        "files": [{"path": f.path, "size": f.size, "kind": f.kind, "files": f.files, "b3sum": ref[f.path].digest,
                   **({"copy_of": f.copy_of} if f.copy_of else {})} for f in plan.datasets],
        "speed_limit": None, "seed": seed, "tools": tools, "python": sys.executable,
    }
    res.write_meta(run_dir, meta)
    if env.settings:
        record_settings(run_dir, env.settings)
    return RunState(run_dir=run_dir, config=config, plan=plan, orders=orders, seed=seed,
                    tools=tools, refs=ref, confine=env.confinement)


def finished_at(run_dir: Path) -> str | None:
    """When a run directory's run finished (None: it did not, so --resume goes on with it)."""
    meta_p, plan_p = run_dir / res.META_JSON, run_dir / res.PLAN_JSON
    if not meta_p.is_file() or not plan_p.is_file():
        raise SetupError(f"{run_dir}: not a run directory (meta.json and plan.json needed)")
    return res.read_json(meta_p).get("finished_at")


def prepare_resume(opts: Options, env: Environment) -> RunState | None:
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
        warmup=run_over.get("warmup", 0), seed=pj["seed"]))
    if opts.config_path and Path(opts.config_path).resolve() != (run_dir / "config.toml").resolve():
        log(f"note: --resume uses the config saved in {run_dir}/config.toml, not {opts.config_path}")
    files = [Dataset.from_json(f) for f in pj.get("datasets", pj.get("files"))]
    plan = Plan(commands=[Command.from_json(c) for c in pj["commands"]], datasets=files,
                rounds=pj["rounds"], runs_per_round=pj["runs_per_round"], cache=pj["cache"],
                notes=pj.get("notes", []),
                conditions=[Condition.from_json(c) for c in pj.get("conditions", [{}])])
    check_cache_mode(plan.cache)
    tools = required_tools(plan)
    check_binaries(plan)
    for f in files:
        if f.copy_of and not str(f.path).startswith(str(ram_root()) + "/"):
            raise SetupError(f"{run_dir} keeps its RAM device's copies under {Path(f.path).parent.parent}, not "
                             f"{ram_root()}: resume it with the RINGSUM_STATE_DIR it was started with")
        if not f.copy_of and not f.is_tree and (not Path(f.path).is_file() or Path(f.path).stat().st_size != f.size):
            raise SetupError(f"test file {f.path} is missing or changed size since the run started")
    env.start(plan.conditions, plan.datasets, plan.programs)
    ref = _references(tools[the_tool(REFERENCE_HASH)], files, run_dir, config.run.timeout_s)
    for f, saved_file in zip(files, meta["files"]):
        if ref[f.path].digest != saved_file["b3sum"]:
            raise SetupError(f"{f.kind} {f.path} changed since the run started (b3sum differs)")
    fp = sysinfo.fingerprint(files[0].path)
    if fp["fingerprint_id"] != meta["fingerprint"].get("fingerprint_id"):
        log("WARNING: resuming on a different machine fingerprint "
             f"({fp['fingerprint_id']} != {meta['fingerprint'].get('fingerprint_id')})")
    meta.setdefault("resumed_at", []).append(iso(utcnow()))
    meta["finished_at"] = None
    res.write_meta(run_dir, meta)
    if env.settings:
        record_settings(run_dir, env.settings)
    log(f"resuming run directory: {run_dir}")
    return RunState(run_dir=run_dir, config=config, plan=plan, orders=pj["orders"], seed=pj["seed"],
                    tools=tools, refs=ref, confine=env.confinement)


def record_settings(run_dir: Path, settings: list[dict]) -> None:
    """What the run changed on the machine, and back to what, kept with the results (a resume adds its own)."""
    meta = res.read_json(run_dir / res.META_JSON)
    meta.setdefault("system_settings", []).append({"at": iso(utcnow()), "settings": settings})
    res.write_meta(run_dir, meta)


def stopped(state: RunState, reason: str) -> int:
    """The sweep stopped before its end: say why, keep every recorded row, tell how to go on."""
    done = len(res.read_records(state.run_dir / res.RUNS_CSV))
    try:
        meta = res.read_json(state.run_dir / res.META_JSON)
        meta.setdefault("stopped", []).append({"at": iso(utcnow()), "reason": reason, "executions_recorded": done})
        res.write_meta(state.run_dir, meta)
    except OSError:
        pass  # the disk is full: the message below still says it all
    log(f"ringsum: stopped: {reason}; {done} executions are recorded in {state.run_dir / res.RUNS_CSV}; "
         f"fix that, then finish with: ringsum run --resume {state.run_dir}")
    return 1


def save_orders(run_dir: Path, orders: list[list[str]]) -> None:
    """plan.json's round orders and count, as --until-decided added rounds."""
    plan = res.read_json(run_dir / res.PLAN_JSON)
    plan["orders"], plan["rounds"] = orders, len(orders)
    res.write_json_atomic(run_dir / res.PLAN_JSON, plan)


def finish(state: RunState) -> int:
    run_dir = state.run_dir
    run = load_run(run_dir)
    meta = run.meta
    meta["speed_limit"] = judge_summary.meta_limit(run)
    meta["finished_at"] = iso(utcnow())
    meta["outcome"] = {"hash_mismatches": state.mismatches, "failures": state.failures,
                       "warnings": state.warnings[:200]}
    res.write_meta(run_dir, meta)
    summary, findings = judge_summary.write(run)
    print(summary, end="")
    print(f"run directory: {run_dir}")
    for text in findings:
        log(f"ringsum: FINDING: {text}")
    resident_warn = [w for w in state.warnings if "resident" in w]
    if resident_warn:
        log(f"WARNING: {len(resident_warn)} runs started with the file (partly) in the page cache; "
             f"first: {resident_warn[0]}")
    code = 0
    if state.failures:
        log(f"ringsum: {len(state.failures)} executions failed: " + "; ".join(state.failures[:5]))
        code = 1
    if state.mismatches:
        log("!" * 72)
        log("ringsum: HASH MISMATCH against the official b3sum: " + "; ".join(state.mismatches[:10]))
        log("!" * 72)
        code = 1
    return code
