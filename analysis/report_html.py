"""report.html: one self-contained page a person can act on.

The decision (summary.md's sections before "## Run": the headline) and the ranking chart come
first, then the other charts, then the long tables. Charts are the SVG files matplotlib wrote,
inlined and scaled to the page; tables sit in a scrolling box so a phone-width page never scrolls
sideways, and sort when a header is clicked (a few lines of our own script, no library).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

DECISION_END = "## Run"  # summary.md's first section after the headline
FIRST_CHART = "ranking"


@dataclass
class Chart:
    name: str  # file stem
    title: str
    question: str  # the chart function's docstring
    skipped: str | None = None  # reason when the data does not support it


# --- the Markdown subset summary.md uses ---

def _inline(text: str) -> str:
    text = html.escape(text, quote=False)
    text = _sub(r"\*\*(.+?)\*\*", "<strong>{}</strong>", text)
    return _sub(r"`([^`]+)`", "<code>{}</code>", text)


def _sub(pattern: str, template: str, text: str) -> str:
    return re.sub(pattern, lambda m: template.format(m.group(1)), text)


def _table(rows: list[list[str]]) -> str:
    aligns = ["right" if c.endswith(":") else "left" for c in rows[1]]
    head = "".join(f'<th scope="col" tabindex="0">{_inline(c)}</th>' for c in rows[0])
    body = "".join("<tr>" + "".join(f'<td class="{a}">{_inline(c)}</td>' for c, a in zip(r, aligns)) + "</tr>"
                   for r in rows[2:])
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def markdown_to_html(markdown: str) -> str:
    """Headings, bullets, pipe tables, code blocks and paragraphs."""
    out: list[str] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            end = lines.index("```", i + 1)
            out.append("<pre><code>" + html.escape("\n".join(lines[i + 1:end])) + "</code></pre>")
            i = end + 1
            continue
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif line.startswith("| "):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            out.append(_table(rows))
            continue
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    return "\n".join(out)


def split_summary(summary: str) -> tuple[str, str, str]:
    """(the lines before the first section: title and conventions, the decision, the rest)."""
    top, _, sections = summary.partition("\n## ")
    sections = "## " + sections
    decision, marker, rest = sections.partition(f"\n{DECISION_END}\n")
    if not marker:
        return top, "", sections
    return top, decision, f"{DECISION_END}\n{rest}"


# --- charts ---

def _shorter_tag(tag: re.Match[str]) -> str:
    """A tag's numbers to 0.01 and its line breaks (one a path step) as spaces; text is untouched."""
    text = re.sub(r' transform="rotate\(-0 [^"]*\)"', "", tag.group(0))  # a rotation by nothing
    return re.sub(r"\s*\n\s*", " ", re.sub(r"(\d\.\d\d)\d+", r"\1", text))


def inline_svg(path: Path, prefix: str) -> str:
    """The SVG file as an element of the page, a third of its size: no XML prolog or metadata,
    coordinates to 0.01 pt (matplotlib writes 0.000001), no ids nothing refers to, and the other
    ids (and every reference to them) prefixed, so that two charts' ids never meet in one page."""
    text = path.read_text(encoding="utf-8")
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    text = re.sub(r"<[^>]+>", _shorter_tag, text)
    text = re.sub(r">\s+<", "><", text)  # matplotlib's indentation
    referenced = set(re.findall(r'(?:url\(#|href="#)([^)"]+)', text))
    text = re.sub(r' id="([^"]+)"', lambda m: f' id="{prefix}-{m.group(1)}"' if m.group(1) in referenced else "",
                  text)
    text = re.sub(r'(url\(#|href="#)', rf"\g<1>{prefix}-", text)
    return text.replace("<svg ", f'<svg role="img" aria-label="{html.escape(prefix)} chart" ', 1).strip()


def _figure(chart: Chart, out: Path) -> str:
    return (f'<figure id="{chart.name}"><h2>{html.escape(chart.title)}</h2>'
            f"<figcaption>{html.escape(chart.question)}</figcaption>"
            f"{inline_svg(out / f'{chart.name}.svg', chart.name)}</figure>")


STYLE = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:0 auto;padding:0.5em 1em;color:#222;
line-height:1.35}h1{font-size:1.35em;margin:0.3em 0}h2{font-size:1.15em;margin:0.8em 0 0.3em}
#decision ul{margin:0.2em 0;padding-left:1.2em}#decision li{margin:0.1em 0}p{margin:0.3em 0}
.convention{font-size:0.9em;color:#444}.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:0.85em}td,th{border:1px solid #ccc;padding:2px 6px}
td{white-space:nowrap}td.right{text-align:right}th{background:#eee;cursor:pointer;user-select:none;white-space:nowrap}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
code,pre{background:#f5f5f5;overflow-wrap:anywhere}pre{padding:0.5em;overflow-x:auto}
pre code{overflow-wrap:normal}figure{margin:1em 0}figure svg{display:block;width:100%;height:auto}
figcaption{font-style:italic;margin-bottom:0.5em}"""

# Click (or Enter on) a header: sort the rows by that column, numbers by value, "-" and text after.
SORT_SCRIPT = """for (const table of document.querySelectorAll("table")) {
  const headers = [...table.tHead.rows[0].cells];
  headers.forEach((th, column) => {
    const sort = () => {
      const ascending = th.getAttribute("aria-sort") !== "ascending";
      headers.forEach(h => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      const key = row => {
        const text = row.cells[column].textContent.trim();
        const number = Number(text.split(/\\s/)[0]);
        return Number.isNaN(number) ? text : number;
      };
      const order = (a, b) => typeof a === "number" && typeof b === "number" ? a - b
        : typeof a === "number" ? -1 : typeof b === "number" ? 1 : a.localeCompare(b, undefined, {numeric: true});
      const rows = [...table.tBodies[0].rows].sort((a, b) => (ascending ? 1 : -1) * order(key(a), key(b)));
      table.tBodies[0].append(...rows);
    };
    th.addEventListener("click", sort);
    th.addEventListener("keydown", event => { if (event.key === "Enter") sort(); });
  });
}"""


def report_html(summary: str, charts: list[Chart], out: Path) -> str:
    """The page: title and the ratio convention, the decision, the ranking chart, the other charts,
    then the rest of summary.md (run, commands, best configurations, how to reproduce)."""
    top, decision, rest = split_summary(summary)
    title_line, *notes = top.splitlines()
    shown = [c for c in charts if not c.skipped]
    shown.sort(key=lambda c: c.name != FIRST_CHART)  # stable: the others keep their order
    figures = "\n".join(_figure(c, out) for c in shown)
    notes_html = "".join(f'<p class="convention">{_inline(n)}</p>' for n in notes if n.strip())
    title = title_line.lstrip("# ")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>\n"
            f"<header><h1>{_inline(title)}</h1>{notes_html}</header>\n"
            f'<section id="decision">{markdown_to_html(decision)}</section>\n'
            f'<section id="charts">{figures}</section>\n'
            f'<section id="details">{markdown_to_html(rest)}</section>\n'
            f"<script>{SORT_SCRIPT}</script>\n</body></html>\n")
