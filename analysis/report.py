"""Write a run's report: every chart as PNG and SVG, summary.md, summary.json and a
self-contained report.html (analysis/report_html.py).

The first run directory given is the one reported on; the others only join the across-runs
chart. summary.md is the source of the HTML page's text (a small Markdown subset); it opens with
the ratio convention and the headline (harness/judge/verdict.py), as summary.json does.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt

from analysis import chart_data, charts, condition_charts, engines
from harness.judge.load import Run, run_speed_limit
from analysis.report_html import Chart, report_html
from harness.catalog.tools import HASHER
from harness.judge import robust
from harness.judge import results as harness_results
from harness.judge import verdict
from harness.judge.results import command_stats, succeeded
from harness.stats import RATIO_CONVENTION

matplotlib.rcParams["svg.hashsalt"] = "ringsum"  # stable element ids: same data, same SVG
SAVE_OPTIONS = {"dpi": 110, "bbox_inches": "tight"}


@dataclass
class Report:
    out: Path
    charts: list[Chart] = field(default_factory=list)

    @property
    def html_path(self) -> Path:
        return self.out / "report.html"

    @property
    def skipped(self) -> list[Chart]:
        return [c for c in self.charts if c.skipped]


def _question(function: object) -> str:
    return " ".join((function.__doc__ or "").split())


def _chart_jobs(runs: list[Run], trace_labels: list[str] | None) -> list[tuple[str, str, object, tuple]]:
    run = runs[0]
    return [
        ("ranking", "Ranking", charts.chart_ranking, (run,)),
        ("conditions", "Machine conditions", condition_charts.chart_conditions, (run,)),
        ("read-caps", "Following the disk", condition_charts.chart_read_caps, (run,)),
        ("heatmaps", "Tuning heatmaps", charts.chart_heatmaps, (run,)),
        ("in-flight", "In flight", charts.chart_in_flight, (run, trace_labels)),
        ("fio-in-flight", "fio in flight", engines.chart_fio_in_flight, (run,)),
        ("engines", "fio's engines", engines.chart_engines, (run,)),
        ("limit-ratio", "Limit ratio", charts.chart_limit_ratio, (run,)),
        ("scaling", "Scaling", charts.chart_scaling, (run,)),
        ("small-files", "Small files", charts.chart_small_files, (run,)),
        ("across-runs", "Across runs/machines", charts.chart_across_runs, (runs,)),
    ]


def _save(fig: plt.Figure, out: Path, name: str) -> None:
    fig.savefig(out / f"{name}.png", metadata={"Software": None}, **SAVE_OPTIONS)
    # Text as text, not as glyph outlines: a third of the size, and searchable in the page.
    # The one font the layout was measured with: matplotlib would name its whole fallback list in every text.
    with matplotlib.rc_context({"svg.fonttype": "none", "font.sans-serif": ["DejaVu Sans"]}):
        fig.savefig(out / f"{name}.svg", metadata={"Date": None, "Creator": None}, **SAVE_OPTIONS)
    plt.close(fig)


# --- summary.md ---

def _sec(v: float) -> str:
    return "-" if v != v else f"{v:.3f}"


def _num(v: float, digits: int = 2) -> str:
    return "-" if v is None or v != v else f"{v:.{digits}f}"


def _interval(low: float, high: float) -> str:
    return "-" if low != low else f"{low:.3f}–{high:.3f}"


def _ratio(median: float, low: float, high: float) -> str:
    return "-" if median != median else f"{median:.3f} [{low:.3f}, {high:.3f}]"


def headline_markdown(run: Run) -> list[str]:
    """The headline (harness/judge/verdict.py) as a section of bullets; with several machine conditions,
    each one's winner and the robust pick first."""
    names = verdict.condition_names(run.runs)
    lines = []
    if len(names) > 1:
        pick = verdict.robust_pick(run.runs)
        lines += ["## Across machine conditions", "",
                  f"- **robust pick**: {pick.text() if pick else '- (no hasher configuration ran in every condition)'}",
                  "", "| condition | speed limit | best hasher | × limit | × b3sum |", "| --- | ---: | --- | ---: | --- |"]
        for cond in names:
            h = verdict.headline(run.runs, run.cache, run.argvs, None, cond)
            lines.append(f"| {cond} | {h.limit.text().split(',')[0] if h.limit else '-'} |"
                         f" {robust.configuration(h.use, cond) if h.use else '-'} |"
                         f" {h.vs_limit.text(2) if h.vs_limit else '-'} |"
                         f" {f'{h.b3sum.ratio.text(2)} ({h.b3sum.outcome})' if h.b3sum else '-'} |")
        lines += ["", "Time ratios, paired per round: median [95% interval]. The headline below is the "
                      f"first condition's ({names[0]}).", ""]
    h = verdict.headline(run.runs, run.cache, run.argvs, confidence=run.decision_confidence)
    lines += [f"## {h.title()}", ""]
    for what, text in h.items():
        shown = f"`{text}`" if what == "command" else text
        lines.append(f"- **{what}**: {shown}")
    return lines


def _machine_lines(run: Run) -> list[str]:
    fp = run.fingerprint
    device = " ".join(str(x) for x in (fp.get("device_model"), fp.get("device_vendor")) if x)
    rotational = {True: "rotational", False: "non-rotational"}.get(fp.get("rotational"), "")
    mem = fp.get("mem_total_bytes")
    return [
        f"- machine: {fp.get('cpu_model', '?')}, {fp.get('cores', '?')} cores"
        + (f", BLAKE3 SIMD {fp['blake3_simd']}" if fp.get("blake3_simd") else "")
        + (f", L2 {fp['l2_cache_bytes'] >> 10} KiB per core" if fp.get("l2_cache_bytes") else "")
        + (f", {mem / 2**30:.0f} GiB RAM" if mem else "") + f", {fp.get('arch', '')}",
        f"- kernel: {fp.get('kernel', '?')} ({fp.get('distribution', '?')}),"
        f" io_uring_disabled={fp.get('io_uring_disabled', '?')}",
        f"- storage: {fp.get('fs_type', '?')} on {fp.get('source', '?')}"
        + (f" ({device}, {rotational})" if device or rotational else "")
        + f", scheduler {fp.get('scheduler', '?')}, nr_requests {fp.get('nr_requests', '?')},"
        f" read-ahead {fp.get('read_ahead_kb', '?')} KiB",
        f"- fingerprint id: `{fp.get('fingerprint_id', '?')}`",
    ]


def summary_markdown(runs: list[Run], report: Report) -> str:
    run = runs[0]
    df = run.runs
    limit = run_speed_limit(run)
    stats = chart_data.with_limit_ratios(command_stats(df), df)
    stats = stats.sort_values(["file_size", "median_s"], na_position="last")
    sizes = sorted(int(s) for s in df["file_size"].dropna().unique())
    files = ", ".join(f"`{f}`" for f in df["file"].dropna().unique())
    config = (run.meta.get("options") or {}).get("config_path") or \
        (run.meta.get("config") or {}).get("path", "?")
    lines = [f"# ringsum report: {run.path.name}", "", f"Ratios: {RATIO_CONVENTION}.", "",
             *headline_markdown(run), "", "## Run", "",
             f"- run directory: `{run.path}`",
             f"- date: {run.meta.get('started_at', '?')} to {run.meta.get('finished_at') or 'unfinished'}",
             f"- config: `{config}`, git commit `{str(run.meta.get('git_commit') or '?')[:12]}`"
             + (" (dirty)" if run.meta.get("git_dirty") else ""),
             f"- file: {files}, size {', '.join(f'{chart_data.size_text(s)} ({s} bytes)' for s in sizes)}",
             f"- cache: {'/'.join(sorted(df['cache'].dropna().unique()))},"
             f" rounds: {chart_data.rounds(run)}, executions: {len(df)}"
             f" ({int(succeeded(df).sum())} successful)",
             *_machine_lines(run)]
    if said := engines.answer(run):
        lines.append(f"- fio's engines: {said}")
    if limit:
        lines.append(f"- speed limit ({chart_data.size_text(limit.file_size)} file): {limit.text()}")
    else:
        lines.append(f"- speed limit: unknown (no successful read-only command: {', '.join(verdict.READ_TOOLS)})")

    lines += ["", "## Commands", "",
              "Wall time over the successful executions (exit code 0, hash not wrong), sorted by"
              " median. × limit: the command's time / the speed limit (the fastest plain read) in the"
              " same round, median over rounds and its 95% interval; fio counts by its own read"
              " runtime there, its wall time includes its start-up. No read-only command can be"
              " below 1.", "",
              "| command | min (s) | median (s) | max (s) | GB/s | × limit | 95% interval | n | status |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in stats.itertuples():
        if r.n == 0:
            status = f"FAILED ({r.failed} of {r.failed})"
        elif r.failed:
            status = f"{r.failed} failed"
        elif r.hash_ok_all is False:
            status = "HASH MISMATCH"
        else:
            status = "ok"
        lines.append(f"| {r.label} | {_sec(r.min_s)} | {_sec(r.median_s)} | {_sec(r.max_s)} |"
                     f" {_num(r.median_Bps / 1e9, 3)} | {_num(r.limit_ratio, 3)} |"
                     f" {_interval(r.limit_low, r.limit_high)} | {r.n} | {status} |")
    suspect = df[succeeded(df) & df["error"].fillna("").ne("")]
    if len(suspect):
        lines += ["", f"{len(suspect)} successful executions carry a warning (counted above):"]
        for error, g in suspect.groupby(suspect["error"].str.replace(r"[\d.]+ >", "… >", regex=True)):
            lines.append(f"- {error}: {', '.join(sorted(set(g['label'])))}")

    hstats, size = chart_data.hasher_stats(run)
    best = hstats[(hstats["tool"] == HASHER) & hstats["median_s"].notna()].sort_values("median_s")
    best = best.groupby("variant", sort=False).head(1)
    refs = {t: chart_data.reference(hstats, t) for t in chart_data.REFERENCE_TOOLS}
    lines += ["", f"## Best configuration per hasher variant ({chart_data.size_text(size)} file)", ""]
    refs_text = ", ".join(f"{t} = `{r['label']}` ({r['median_s']:.3f} s)"
                          for t, r in refs.items() if r is not None)
    lines.append("× b3sum, × cat: the configuration's time / the reference's in the same round, median"
                 " [95% interval]; below 1 it takes less time"
                 + (f"; references: {refs_text}." if refs_text else " (no b3sum or cat in the run)."))
    lines += ["", "| variant | best configuration | median (s) | GB/s | × limit | 95% interval | × b3sum |"
                  " × cat |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in best.itertuples():
        lines.append(f"| {r.variant} | {r.label} | {_sec(r.median_s)} | {_num(r.median_Bps / 1e9, 3)} |"
                     f" {_num(r.limit_ratio, 3)} | {_interval(r.limit_low, r.limit_high)} |"
                     f" {_ratio(r.b3sum_ratio, r.b3sum_low, r.b3sum_high)} |"
                     f" {_ratio(r.cat_ratio, r.cat_low, r.cat_high)} |")
    if not len(best):
        lines.append("| - | no successful hasher execution | - | - | - | - | - | - |")

    lines += ["", "## Reproduce the best configurations", "",
              "Each was timed with the page cache dropped first:"
              if "cold" in set(df["cache"].dropna()) else "Each was timed with the file cached:", ""]
    lines.append("```sh")
    if "cold" in set(df["cache"].dropna()):
        lines.append("sync; echo 1 > /proc/sys/vm/drop_caches")
    argvs = run.argvs
    for r in best.itertuples():
        argv = argvs.get(r.label)
        lines.append(shlex.join(argv) if argv else f"# {r.label}: not in plan.json")
    lines.append("```")

    lines += ["", "## Charts", ""]
    for c in report.charts:
        if not c.skipped:
            lines.append(f"- **{c.title}** (`{c.name}.png`, `{c.name}.svg`): {c.question}")
    lines += ["", "## Skipped charts", ""]
    lines += [f"- **{c.title}**: {c.skipped}" for c in report.skipped] or ["none"]
    if len(runs) > 1:
        lines += ["", "## Runs compared", ""] + [f"- `{r.path}`: {chart_data.run_legend(r)}" for r in runs]
    return "\n".join(lines) + "\n"


def write_report(runs: list[Run], out: Path | None = None,
                 trace_labels: list[str] | None = None) -> Report:
    """Write charts, summary.md and report.html for runs[0] (+ across-runs) into out."""
    out = Path(out) if out is not None else runs[0].path
    out.mkdir(parents=True, exist_ok=True)
    report = Report(out=out)
    for name, title, function, args in _chart_jobs(runs, trace_labels):
        result = function(*args)
        chart = Chart(name=name, title=title, question=_question(function))
        if isinstance(result, chart_data.Skip):
            chart.skipped = result.reason
            for stale in (out / f"{name}.png", out / f"{name}.svg"):
                stale.unlink(missing_ok=True)
        else:
            _save(result, out, name)
        report.charts.append(chart)
    summary = summary_markdown(runs, report)
    (out / "summary.md").write_text(summary, encoding="utf-8")
    harness_results.write_json_atomic(out / harness_results.SUMMARY_JSON,
                                      verdict.summary_json(runs[0].runs, runs[0].cache, runs[0].argvs,
                                                           runs[0].decision_confidence)
                                      | ({"sequential": runs[0].meta["sequential"]} if runs[0].meta.get("sequential") else {}))
    report.html_path.write_text(report_html(summary, report.charts, out), encoding="utf-8")
    return report
