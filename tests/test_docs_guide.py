"""docs/ is a guide, not a diary: each page (docs/*.md) answers a user's question in at most 15 KB,
the pages together stay within 80 KB, no page is organised by issue numbers, and every relative link
of the pages, the kept runs' READMEs (docs/**/*.md) and README.md leads to a file that exists (and,
into a page, to a heading that exists). Measured stories live in the kept run directories' READMEs,
which are not pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.independent

REPO = Path(__file__).resolve().parent.parent
PAGE_MAX = 15_000   # bytes, as `wc -c docs/*.md` counts them
PAGES_MAX = 80_000
ISSUE = re.compile(r"\bissues?\s+#?\d+|(?<![\w&])#\d+\b", re.I)
LINK = re.compile(r"\]\(([^()\s]+)\)")


def pages() -> list[Path]:
    return sorted((REPO / "docs").glob("*.md"))


def headings(text: str) -> list[str]:
    """The page's headings, code blocks skipped (a shell comment is not a heading)."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            found.append(line)
    return found


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_no_page_is_over_15_kb_and_all_fit_in_80_kb():
    sizes = {p.name: p.stat().st_size for p in pages()}
    over = {name: size for name, size in sizes.items() if size > PAGE_MAX}
    total = sum(sizes.values())
    assert not over and total <= PAGES_MAX, (
        f"pages over {PAGE_MAX:,} bytes: {over}; all pages {total:,} bytes (at most {PAGES_MAX:,}); largest: "
        f"{sorted(sizes.items(), key=lambda kv: -kv[1])[:4]}: move measured stories to a kept run's README")


def test_no_title_or_heading_names_an_issue():
    named = [f"{p.name}: {h}" for p in pages() for h in headings(p.read_text(encoding="utf-8")) if ISSUE.search(h)]
    assert not named, "headings organised by issue numbers (say what the section answers):\n" + "\n".join(named)


def test_every_relative_link_leads_somewhere():
    documents = [REPO / "README.md", *sorted((REPO / "docs").glob("**/*.md"))]
    broken = []
    for doc in documents:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, fragment = target.partition("#")
            dest = (doc.parent / path).resolve() if path else doc
            if not dest.exists():
                broken.append(f"{doc.relative_to(REPO)}: {target}")
            elif fragment and dest.suffix == ".md" and fragment not in {
                    anchor(h) for h in headings(dest.read_text(encoding="utf-8"))}:
                broken.append(f"{doc.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "links to nothing:\n" + "\n".join(broken)
