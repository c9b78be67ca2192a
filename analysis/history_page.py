"""`ringsum history show`: the history store as a page, history.html, one chart per command and
machine across commits (its time / the reference build's in the same rounds), each change PELT
finds marked with its size and interval (harness/history/changes.py). Points of two machines are
never drawn on one line."""

from __future__ import annotations

import argparse
import html
import io
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from harness.history import store  # noqa: E402
from harness.history.changes import Change, changes  # noqa: E402

HTML = "history.html"
STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1100px;padding:0 1em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em}h3{font-size:1em}
figure{margin:0;overflow-x:auto}svg{max-width:100%;height:auto}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}td,th{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:left}
.slower{color:#b00020;font-weight:600}.faster{color:#1b6e20;font-weight:600}code{font-size:.95em}"""


def _chart(label: str, records: list[store.Record], found: list[Change]) -> str:
    """One command's time ratio to the reference per commit, with its interval, and the changes: inline SVG."""
    xs = [i for i, r in enumerate(records) if label in r.points]
    pts = [records[i].points[label] for i in xs]
    fig, ax = plt.subplots(figsize=(10, 3.2), layout="constrained")
    med = [p.ratio for p in pts]
    err = [[p.ratio - p.low for p in pts], [p.high - p.ratio for p in pts]]
    ax.axhline(1, color="#999999", lw=0.8)
    ax.errorbar(xs, med, yerr=err, fmt="o-", color="#1f5fbf", ecolor="#6aa5e0", capsize=3, lw=1.2, ms=4)
    for c in found:
        colour = "#b00020" if c.low > 1 else "#1b6e20" if c.high < 1 else "#777777"
        ax.axvline(c.index - 0.5, color=colour, ls="--", lw=1)
        ax.annotate(c.text(), (c.index - 0.5, max(med)), textcoords="offset points", xytext=(4, 0),
                    color=colour, fontsize=8, va="top")
    ax.set_xticks(range(len(records)), [r.sha[:8] for r in records], rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("time / the reference's")
    ax.set_title(f"{label}: its time / the reference build's, same rounds [95% interval]; dashed: a change",
                 fontsize=9)
    ax.grid(axis="y", color="#e5e5e5")
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    return buf.getvalue()[buf.getvalue().index("<svg"):]


def _section(fingerprint: str, records: list[store.Record]) -> str:
    labels = sorted({label for r in records for label in r.points}, key=lambda s: (s.startswith(("cat", "fio")), s))
    out = [f"<h2>Machine {html.escape(fingerprint)}: {html.escape(records[-1].machine)}</h2>",
           f"<p>{len(records)} commits, from {html.escape(records[0].committed_at)} to "
           f"{html.escape(records[-1].committed_at)}; each run beside the reference build "
           f"<code>{html.escape(records[-1].reference[:12])}</code> in the same rounds; config "
           f"<code>{html.escape(records[-1].config)}</code>.</p>"]
    rows = []
    for label in labels:
        series = [r for r in records if label in r.points]
        found = changes([r.points[label].ratio for r in series], [r.points[label].ratios for r in series])
        index = {id(r): i for i, r in enumerate(records)}
        found = [Change(index[id(series[c.index])], c.ratio, c.low, c.high) for c in found]
        out += [f"<h3>{html.escape(label)}</h3>", f"<figure>{_chart(label, records, found)}</figure>"]
        for c in found:
            kind = "slower" if c.low > 1 else "faster" if c.high < 1 else ""
            r = records[c.index]
            rows.append(f"<tr><td>{html.escape(label)}</td><td><code>{r.sha[:12]}</code> {html.escape(r.subject)}</td>"
                        f"<td class='{kind}'>{html.escape(c.text())} {kind}</td></tr>")
    table = ("<table><tr><th>command</th><th>first commit of the change</th><th>time ratio [95%]</th></tr>"
             + "".join(rows) + "</table>") if rows else "<p>No change found in any command.</p>"
    commits = "".join(f"<tr><td><code>{r.sha[:12]}</code></td><td>{html.escape(r.committed_at)}</td>"
                      f"<td>{html.escape(r.subject)}</td></tr>" for r in records)
    return "\n".join([*out[:2], "<h3>Changes</h3>", table, *out[2:],
                      "<h3>Commits</h3><table><tr><th>commit</th><th>committed</th><th>subject</th></tr>",
                      commits, "</table>"])


def write_page(history: Path, out: Path) -> Path:
    machines = store.load(history)
    if not machines:
        raise store.StoreError(f"{history}: no records (fill it with `ringsum history add`)")
    sections = [_section(fp, records) for fp, records in sorted(machines.items())]
    page = (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
            f"content='width=device-width, initial-scale=1'><title>ringsum history</title><style>{STYLE}</style>"
            "</head><body><h1>ringsum history</h1><p>Each point: a command of that commit's build, its time / "
            "the reference build's in the same shuffled rounds (the median of the per-round ratios, with its 95% "
            "interval), which the machine's drift between commits leaves alone. Changes: PELT on the log of those "
            "ratios; each marked with the ratio after it / before it, a bootstrap interval over the rounds of the "
            "commits on either side, up to the next change.</p>"
            + "\n".join(sections) + "</body></html>\n")
    out.mkdir(parents=True, exist_ok=True)
    path = out / HTML
    if path.is_symlink():
        raise store.StoreError(f"{path}: a symlink; not written through")
    path.write_text(page, encoding="utf-8")
    return path


def run_show(a: argparse.Namespace) -> int:
    try:
        path = write_page(Path(a.store), Path(a.out) if a.out else Path(a.store))
    except store.StoreError as e:
        print(f"ringsum: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0
