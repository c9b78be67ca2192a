"""`ringsum check`'s outputs: the text table, Markdown (for a CI summary) and JUnit XML."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from harness.check.decide import (BAD, FAILED, FIGURES, IMPROVEMENT, INCONCLUSIVE, NO_CHANGE, NOT_COMPARABLE, ONLY_BASELINE,
                                  ONLY_CURRENT, REFERENCE_TOOLS, REGRESSION, TOO_FEW, UNDECIDED, Comparison, Estimate, Report)


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def _interval(e: Estimate) -> str:
    return f"[{_pct(e.low)}, {_pct(e.high)}]"


def _value(fig: str, v: float) -> str:
    if v != v:
        return "-"
    return f"{v * 1000:.2f} ms" if fig in ("paired", "raw") else f"{v:.3f}"


def _row(c: Comparison) -> dict[str, str]:
    """The cells of one table row: primary figure first, the other figures as changes."""
    e = c.estimates.get(c.primary or "") if c.primary else None
    if e is None and c.estimates:  # references and failures: raw if there, else what is there
        e = c.estimates.get("raw") or next(iter(c.estimates.values()))
    row = {"command": c.label, "figure": "-", "baseline": "-", "current": "-", "change": "-",
           "interval": "-", "verdict": c.verdict + (f" ({c.reason})" if c.reason else "")}
    if e is not None:
        row.update(figure="÷" + e.figure if e.figure in REFERENCE_TOOLS else e.figure,
                   baseline=_value(e.figure, e.baseline), current=_value(e.figure, e.current),
                   change=_pct(e.ratio), interval=_interval(e))
    for fig in FIGURES:
        other = c.estimates.get(fig)
        row[fig] = "n/a" if other is None else f"{_pct(other.ratio)}"
    return row


COLUMNS = ("command", "figure", "baseline", "current", "change", "interval", "verdict",
           *FIGURES)


HEADERS = {fig: "÷" + fig if fig in REFERENCE_TOOLS else fig for fig in FIGURES}


def _summary_line(report: Report) -> str:
    parts = [f"{report.count(v)} {v}" for v in (REGRESSION, FAILED, IMPROVEMENT, INCONCLUSIVE, NO_CHANGE, TOO_FEW,
                                                NOT_COMPARABLE)
             if report.count(v)]
    return ", ".join(parts) or "nothing compared"


def _header_lines(report: Report) -> list[str]:
    s = report.settings
    return [
        f"baseline: {report.baseline.path} (fingerprint {report.baseline.fingerprint_id})",
        f"current:  {report.current.path} (fingerprint {report.current.fingerprint_id})",
        f"figure for the verdict: first of paired, ÷cat, ÷fio, raw available; threshold ±{s.threshold * 100:g}%, "
        f"{s.confidence * 100:g}% interval: Hodges-Lehmann and signed ranks of the per-round ratios (paired), or a bootstrap "
        f"of the ratio of medians ({s.resamples} resamples, seed {s.seed})",
    ]


def _counter_rows(report: Report) -> list[tuple[str, str, str, str, str, str]]:
    """(command, counter, baseline, current, change, verdict) of every counter out of tolerance."""
    def num(v: float) -> str:
        return f"{v:.3g}" if v != int(v) else f"{int(v)}"

    return [(c.label, c.counter, num(c.baseline), num(c.current), c.change, c.verdict)
            for c in report.counters if c.verdict != NO_CHANGE]


def _counter_summary(report: Report) -> str:
    labels = {c.label for c in report.counters}
    return (f"behaviour counters: {len(report.counters)} compared over {len(labels)} commands, "
            f"{len(_counter_rows(report))} out of tolerance (harness/judge/counters.py TOLERANCES)")


def format_table(report: Report) -> str:
    rows = [_row(c) for c in report.comparisons]
    head = {k: HEADERS.get(k, k) for k in COLUMNS}
    widths = {k: max(len(head[k]), *(len(r[k]) for r in rows)) if rows else len(head[k]) for k in COLUMNS}
    widths["command"] = min(widths["command"], 60)

    def line(r: dict[str, str]) -> str:
        cells = []
        for k in COLUMNS:
            v = r[k] if k != "command" or len(r[k]) <= 60 else r[k][:59] + "…"
            cells.append(v.ljust(widths[k]) if k in ("command", "verdict", "figure") else v.rjust(widths[k]))
        return "  ".join(cells).rstrip()

    out = _header_lines(report) + ["", line(head), *(line(r) for r in rows)]
    if report.counters:
        out += ["", _counter_summary(report)]
        out += [f"  {cmd}  {name}: {b} -> {c} ({change})  {verdict}"
                for cmd, name, b, c, change, verdict in _counter_rows(report)]
    if report.instructions:
        out += ["", f"instructions (tolerance ±{report.instruction_tolerance * 100:g}%):"]
        for i in report.instructions:
            change = _pct(i.ratio) if i.ratio else "-"
            out.append(f"  {i.variant:<30} {i.baseline or '-':>14} {i.current or '-':>14} {change:>8}  "
                       f"{i.verdict}{f' ({i.reason})' if i.reason else ''}")
    out += ["", *(f"note: {n}" for n in report.notes), f"decided by: {report.decided_by()}",
            f"result: {_summary_line(report)} -> exit {report.exit_code}"]
    return "\n".join(out) + "\n"


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


def format_markdown(report: Report) -> str:
    icon = {0: "✅", 1: "❌", 2: "⚠️"}[report.exit_code]
    out = [f"## {icon} ringsum check: {_summary_line(report)}", ""]
    out += [f"- {_md_escape(h)}" for h in _header_lines(report)]
    out += [f"- note: {_md_escape(n)}" for n in report.notes]
    out += [f"- decided by: {_md_escape(report.decided_by())}"]
    out += ["", "| " + " | ".join(HEADERS.get(k, k) for k in COLUMNS) + " |",
            "|" + "|".join("---" if k in ("command", "figure", "verdict") else "---:" for k in COLUMNS) + "|"]
    for c in report.comparisons:
        r = _row(c)
        if c.verdict in BAD:
            r["verdict"] = f"**{r['verdict']}**"
        out.append("| " + " | ".join(_md_escape(r[k]) for k in COLUMNS) + " |")
    if report.counters:
        out += ["", _md_escape(_counter_summary(report))]
        if _counter_rows(report):
            out += ["", "| command | counter | baseline | current | change | verdict |",
                    "|---|---|---:|---:|---:|---|"]
            out += ["| " + " | ".join(_md_escape(x) for x in r) + " |" for r in _counter_rows(report)]
    if report.instructions:
        out += ["", f"Instructions (user space, tolerance ±{report.instruction_tolerance * 100:g}%):", "",
                "| hasher | baseline | current | change | verdict |", "|---|---:|---:|---:|---|"]
        for i in report.instructions:
            out.append(f"| {i.variant} | {i.baseline or '-'} | {i.current or '-'} | "
                       f"{_pct(i.ratio) if i.ratio else '-'} | {i.verdict} |")
    out += ["", f"Exit code {report.exit_code}."]
    return "\n".join(out) + "\n"


def format_junit(report: Report) -> str:
    """One testcase per command (and per hasher's instruction count): regressions and failed
    commands are failures (inconclusive ones too under --inconclusive fail), undecidable ones
    errors, commands in one run only skipped."""
    suite = ET.Element("testsuite", name="ringsum check")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    cases: list[tuple[str, str, str, str]] = [
        ("ringsum.check", c.label, c.verdict, f"{c.verdict}: {_row(c)['change']} {_row(c)['interval']}"
         + (f" ({c.reason})" if c.reason else "")) for c in report.comparisons]
    cases += [("ringsum.counters", f"{c.label}: {c.counter}", c.verdict,
               f"{c.verdict}: {c.baseline:g} -> {c.current:g} ({c.change})") for c in report.counters]
    cases += [("ringsum.instructions", i.variant, i.verdict,
               f"{i.verdict}: {i.baseline} -> {i.current}" + (f" ({i.reason})" if i.reason else ""))
              for i in report.instructions]
    for classname, name, verdict, message in cases:
        case = ET.SubElement(suite, "testcase", classname=classname, name=name)
        counts["tests"] += 1
        if verdict in BAD or (verdict == INCONCLUSIVE and report.settings.inconclusive == "fail"):
            ET.SubElement(case, "failure", message=message, type=verdict)
            counts["failures"] += 1
        elif verdict in UNDECIDED:
            ET.SubElement(case, "error", message=message, type=verdict)
            counts["errors"] += 1
        elif verdict in (ONLY_BASELINE, ONLY_CURRENT):
            ET.SubElement(case, "skipped", message=verdict)
            counts["skipped"] += 1
        else:
            ET.SubElement(case, "system-out").text = message
    for k, v in counts.items():
        suite.set(k, str(v))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_outputs(report: Report, markdown: Path | None, junit: Path | None) -> None:
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(format_markdown(report), encoding="utf-8")
    if junit is not None:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_text(format_junit(report), encoding="utf-8")
