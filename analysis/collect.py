"""`ringsum collect DIR...`: the runs of a fleet in one tidy table, and one row per machine.

A machine is a host: the `host` of the nearest fleet.json above its run directory (the fleet
playbook writes one per host), else the hostname its fingerprint recorded. Its row is the headline
of its latest run (harness/judge/verdict.py): the best configuration, its time / the machine's own speed
limit and / the fastest b3sum, each paired per round within that run with a 95% interval
(harness/stats.py). Machines are ranked by those ratios and only against machines that ran the
same workload (cache mode and file size): raw seconds of unlike workloads are never set side by
side, and a fleet of several workloads gets one table each and a warning.

Only finished runs count: a run directory whose meta.json has no finished_at (its run was killed,
or is still going) is refused, by name. A host the playbook could not finish says so in a
status.json (failed, with the task and why, or unreachable); the report lists those hosts, and
both make the exit status 1 while the rest is still reported.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.judge.load import META_JSON, RUNS_CSV, Run, RunDirError, load_run
from harness import stats
from harness.judge.verdict import Headline, headline
from harness.units import format_rate, format_size

FLEET_JSON = "fleet.json"
STATUS_JSON = "status.json"  # harness/fleet/playbook.yml: a host's outcome
RUNS_OUT, MACHINES_OUT, MARKDOWN_OUT = "fleet-runs.csv", "fleet-machines.csv", "fleet.md"
# Fingerprint fields copied into every row of the tidy table, after host and fingerprint_id.
FINGERPRINT_COLUMNS = ("cpu_model", "cores", "blake3_simd", "mem_gib", "kernel", "virtualization",
                       "dmi_sys_vendor", "dmi_product_name", "fs_type", "mount_options", "device_driver",
                       "device_model", "device_vendor", "device_size_bytes", "rotational", "scheduler",
                       "read_ahead_kb")


class FleetError(ValueError):
    """Nothing to collect; the message names the directory."""


@dataclass(frozen=True)
class Trouble:
    """What keeps part of the fleet out of the report: a host that did not finish (from its
    status.json), or a run directory refused because its run did not finish."""

    where: str  # a host, or a run directory
    why: str


@dataclass(frozen=True)
class HostRun:
    host: str
    run: Run

    @property
    def fingerprint_id(self) -> str:
        return str(self.run.fingerprint.get("fingerprint_id") or "-")


@dataclass(frozen=True)
class Machine:
    """One row of the per-machine view: a host's latest run of one workload and its headline."""

    host: str
    fingerprint_id: str
    run_dir: Path
    headline: Headline

    @property
    def workload(self) -> tuple[str, int]:
        return self.headline.cache, self.headline.file_size

    def rank_key(self) -> tuple[float, float, str]:
        """Lowest time / own limit first; without a limit, by the ratio to b3sum, after those with one."""
        limit = self.headline.vs_limit.median if self.headline.vs_limit else float("inf")
        b3sum = self.headline.b3sum.ratio.median if self.headline.b3sum else float("inf")
        return limit, b3sum, self.host

    def to_row(self) -> dict[str, object]:
        h = self.headline
        row: dict[str, object] = {"host": self.host, "fingerprint_id": self.fingerprint_id,
                                  "run_dir": str(self.run_dir), "cache": h.cache, "file_size": h.file_size,
                                  "rounds": h.rounds, "best": h.use, "argv": " ".join(h.argv or [])}
        for name, est in (("median_s", h.median), ("vs_limit", h.vs_limit),
                          ("vs_b3sum", h.b3sum.ratio if h.b3sum else None)):
            for part in ("median", "low", "high"):
                row[f"{name}_{part}"] = getattr(est, part) if est else None
        row["b3sum_label"] = h.b3sum.label if h.b3sum else None
        row["vs_b3sum_outcome"] = h.b3sum.outcome if h.b3sum else None
        row["limit_set_by"] = h.limit.set_by if h.limit else None
        row["limit_Bps"] = h.limit.Bps if h.limit else None
        return row


def find_run_dirs(root: Path) -> list[Path]:
    """Every run directory (runs.csv and meta.json) at or under root, in path order."""
    if not root.is_dir():
        raise FleetError(f"{root}: not a directory")
    dirs = sorted(p.parent for p in root.rglob(RUNS_CSV) if (p.parent / META_JSON).is_file())
    if not dirs:
        raise FleetError(f"{root}: no run directory (runs.csv with meta.json) under it")
    return dirs


def host_of(run: Run, root: Path) -> str:
    """The host named by the nearest fleet.json from the run directory up to root, else the hostname."""
    for d in (run.path, *run.path.parents):
        marker = d / FLEET_JSON
        if marker.is_file():
            try:
                host = json.loads(marker.read_text(encoding="utf-8")).get("host")
            except (OSError, ValueError, AttributeError) as e:
                raise FleetError(f"{marker}: unreadable ({e})") from e
            if host:
                return str(host)
        if d == root:
            break
    return str(run.fingerprint.get("hostname") or "?")


def unfinished(run: Run) -> bool:
    return not run.meta.get("finished_at")


def host_troubles(roots: list[Path]) -> list[Trouble]:
    """The hosts whose status.json says they did not finish, with the task and why."""
    out = []
    for root in roots:
        for marker in sorted(root.rglob(STATUS_JSON)) if root.is_dir() else []:
            try:
                status = json.loads(marker.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise FleetError(f"{marker}: unreadable ({e})") from e
            if not isinstance(status, dict) or status.get("status") == "ok":
                continue
            task = f" at '{status['task']}'" if status.get("task") else ""
            out.append(Trouble(str(status.get("host") or marker.parent.parent.name),
                               f"{status.get('status', '?')}{task}: {status.get('why') or '?'}"))
    return out


def collect(roots: list[Path]) -> tuple[list[HostRun], list[Trouble]]:
    """The finished runs under roots, and the run directories refused as unfinished. A root that is
    itself an unfinished run directory is an error: it was asked for by name."""
    out: list[HostRun] = []
    refused: list[Trouble] = []
    for root in roots:
        try:
            dirs = find_run_dirs(root)
        except FleetError:
            if root.is_dir() and any(root.rglob(STATUS_JSON)):
                continue  # only hosts that never got to run: their status says why
            raise
        for d in dirs:
            if d in (hr.run.path for hr in out):
                continue  # a directory given twice, or inside another one given
            run = load_run(d)
            if unfinished(run):
                if d == root:
                    raise FleetError(f"{d}: the run did not finish (meta.json has no finished_at); "
                                     "resume it (ringsum run --resume) or leave it out")
                refused.append(Trouble(str(d), "refused: the run did not finish (killed, or still running)"))
            elif len(run.runs):
                out.append(HostRun(host_of(run, root), run))
    return out, refused


def tidy(host_runs: list[HostRun]) -> pd.DataFrame:
    """Every execution of every run: host, fingerprint id and fields, run directory, then runs.csv's columns.
    A fingerprint field that a run also has as a column (`cores`: the machine's, and the condition's)
    is `machine_<field>`, in every row, so that no column name is there twice."""
    taken = {c for hr in host_runs for c in hr.run.runs.columns}
    frames = []
    for hr in host_runs:
        fp = hr.run.fingerprint
        front = {"host": hr.host, "fingerprint_id": hr.fingerprint_id,
                 **{f"machine_{c}" if c in taken else c: fp.get(c) for c in FINGERPRINT_COLUMNS},
                 "run_dir": str(hr.run.path)}
        frames.append(hr.run.runs.assign(**front)[[*front, *hr.run.runs.columns]])
    return pd.concat(frames, ignore_index=True)


def machines(host_runs: list[HostRun]) -> list[Machine]:
    """Per host, fingerprint and workload, the latest run's headline: a host whose disk changed
    is another machine."""
    latest: dict[tuple[str, str, tuple[str, int]], Machine] = {}
    for hr in sorted(host_runs, key=lambda hr: (str(hr.run.started_at), hr.run.path.name)):
        m = Machine(hr.host, hr.fingerprint_id, hr.run.path, headline(hr.run.runs, hr.run.cache, hr.run.argvs))
        latest[(m.host, m.fingerprint_id, m.workload)] = m
    return sorted(latest.values(), key=lambda m: (m.workload, m.rank_key()))


def workloads(ms: list[Machine]) -> list[tuple[str, int]]:
    return sorted({m.workload for m in ms})


def unlike_warning(ms: list[Machine]) -> str | None:
    found = workloads(ms)
    if len(found) < 2:
        return None
    names = "; ".join(f"{format_size(size)} {cache}" for cache, size in found)
    return (f"the fleet ran {len(found)} unlike workloads ({names}): machines are ranked only against "
            "those of the same workload, never across")


def _ratio(est: stats.Estimate | None) -> str:
    """'1.05 [1.01, 1.09]', with the interval's real coverage when few rounds give less than 95%."""
    if not est or not est.n:
        return "-"
    return est.text(2) + (f" ({est.confidence:.0%})" if est.confidence < stats.CONFIDENCE else "")


def _shown(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def markdown(host_runs: list[HostRun], ms: list[Machine], troubles: list[Trouble] = ()) -> str:
    hosts = sorted({hr.host for hr in host_runs})
    lines = ["# Fleet report", ""]
    if troubles:
        lines += ["## Not in this report", "", "| host or run directory | why |", "| --- | --- |",
                  *(f"| {t.where} | {t.why.replace('|', '/')} |" for t in troubles), ""]
    lines += [f"{len(host_runs)} run(s) from {len(hosts)} host(s). Each machine's best hasher against its own "
             "speed limit (the fastest plain read in the same rounds) and against its fastest b3sum: "
             "medians of per-round ratios with 95% intervals; lower is better. Machines are ranked by "
             "× limit within one workload; raw seconds are not compared across machines.", ""]
    warning = unlike_warning(ms)
    if warning:
        lines += [f"**Warning**: {warning}.", ""]
    for cache, size in workloads(ms):
        rows = [m for m in ms if m.workload == (cache, size)]
        lines += [f"## {format_size(size)} file, {cache} cache", "",
                  "| rank | host | fingerprint | best configuration | × limit | × b3sum | vs b3sum | limit | rounds |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for rank, m in enumerate(rows, 1):
            h = m.headline
            limit = f"{format_rate(h.limit.Bps)} ({h.limit.set_by})" if h.limit else "-"
            lines.append(f"| {rank} | {m.host} | `{m.fingerprint_id}` | {h.use or 'no hasher succeeded'} | "
                         f"{_ratio(h.vs_limit)} | {_ratio(h.b3sum.ratio if h.b3sum else None)} | "
                         f"{h.b3sum.outcome if h.b3sum else '-'} | {limit} | {h.rounds} |")
        lines.append("")
    lines += ["## Machines", "", "| host | fingerprint | CPU | BLAKE3 | cores | memory GiB | kernel | virtualisation | "
              "instance | filesystem | disk | scheduler | read-ahead KiB |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    seen = set()
    for hr in sorted(host_runs, key=lambda hr: hr.host):
        if (hr.host, hr.fingerprint_id) in seen:
            continue
        seen.add((hr.host, hr.fingerprint_id))
        fp = hr.run.fingerprint
        size = fp.get("device_size_bytes")
        disk = " ".join(str(x) for x in (fp.get("device_driver"), fp.get("device_model") or fp.get("device_vendor"),
                                         format_size(size) if size else None,
                                         {True: "rotational", False: "SSD"}.get(fp.get("rotational"))) if x)
        cells = [hr.host, f"`{hr.fingerprint_id}`", *(_shown(fp.get(k)) for k in (
            "cpu_model", "blake3_simd", "cores", "mem_gib", "kernel", "virtualization", "dmi_product_name",
            "fs_type")), disk or "-", _shown(fp.get("scheduler")), _shown(fp.get("read_ahead_kb"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write(roots: list[Path], out: Path) -> tuple[Path, str | None, list[Trouble]]:
    """Write fleet-runs.csv, fleet-machines.csv and fleet.md into out; return fleet.md, the
    unlike-workload warning, if any, and what is not in the report."""
    host_runs, refused = collect(roots)
    troubles = host_troubles(roots) + refused
    if not host_runs and not troubles:
        raise FleetError(f"{', '.join(map(str, roots))}: no run with recorded executions")
    ms = machines(host_runs)
    out.mkdir(parents=True, exist_ok=True)
    (tidy(host_runs) if host_runs else pd.DataFrame()).to_csv(out / RUNS_OUT, index=False)
    pd.DataFrame([m.to_row() for m in ms]).to_csv(out / MACHINES_OUT, index=False)
    (out / MARKDOWN_OUT).write_text(markdown(host_runs, ms, troubles), encoding="utf-8")
    return out / MARKDOWN_OUT, unlike_warning(ms), troubles


def run_collect(a: argparse.Namespace) -> int:
    """`ringsum collect DIR... --out OUT`."""
    roots, out = a.dirs, a.out
    try:
        md, warning, troubles = write([Path(r) for r in roots], Path(out))
    except (FleetError, RunDirError) as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"ringsum: {out}: cannot write the fleet report ({e.strerror or e})", file=sys.stderr)
        return 1
    if warning:
        print(f"ringsum: warning: {warning}", file=sys.stderr)
    for t in troubles:
        print(f"ringsum: {t.where}: {t.why}", file=sys.stderr)
    print(md.read_text(encoding="utf-8"), end="")
    print(f"fleet report: {md} ({RUNS_OUT}, {MACHINES_OUT} beside it)")
    return 1 if troubles else 0
