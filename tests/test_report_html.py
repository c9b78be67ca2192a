"""report.html as a person sees it: reports of kept real runs (docs/cold-path/) opened in headless
Chromium (Debian's `chromium`, which `make deps` installs) at a phone's width and a desktop's.

The layout is measured by a small script added to a copy of the page and read back with
--dump-dom; screenshots go to pytest's tmp dir and to build/test-output/ for a person to look at.
"""

from __future__ import annotations

import base64
import fcntl
import html
import json
import os
import re
import select
import shutil
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

from analysis import charts
from analysis.chart_data import ROLES, command_name, hasher_stats, short_label
from harness.catalog.tools import OTHER_HASH, REFERENCE_HASH
from analysis.cli import main as report_main
from harness.judge.load import load_run
from harness.stats import RATIO_CONVENTION

# Kept runs, copied, rendered and shown in Chromium: nothing of the machine's is touched, so the
# module runs beside the machine line (tests/conftest.py).
pytestmark = [pytest.mark.independent, pytest.mark.together]  # the report and Chromium measured once

REPO = Path(__file__).resolve().parent.parent
KEPT = REPO / "docs" / "cold-path"
LAYOUT_RUN = KEPT / "adapt-run"  # six machine conditions: the longest decision, 42 commands
ROLES_RUN = KEPT / "list-run"  # ours, readers, b3sum and [[commands]] entries in one run
SCREENS = {390: 844, 1400: 900}  # width: height, a phone and a desktop
OUTPUT = REPO / "build" / "test-output"
CHROMIUM_TIMEOUT_S = 180  # a cold start on a loaded 2-core machine takes ~10 s
PAGE_BUDGET = 400_000  # bytes; the same page with base64 PNGs was 821,580
SVG = "{http://www.w3.org/2000/svg}"

LAYOUT_JS = """(() => {
  const root = document.documentElement;
  const pageTop = element => element.getBoundingClientRect().top + scrollY;
  const heading = text => [...document.querySelectorAll("h2")].find(h => h.textContent.startsWith(text));
  return {
    innerWidth, innerHeight, clientWidth: root.clientWidth, scrollWidth: root.scrollWidth,
    wide: [...document.body.querySelectorAll("*")]
      .filter(e => !e.parentElement.closest("svg, .scroll, pre")  // in a box that scrolls sideways
                   && e.getBoundingClientRect().right > root.clientWidth + 0.5)
      .map(e => e.tagName + (e.id ? "#" + e.id : "")).slice(0, 8),
    convention: pageTop(document.querySelector("header .convention")),
    decision: pageTop(heading("What to use on this machine")),
    details: pageTop(heading("Commands")),
    charts: [...document.querySelectorAll("figure svg")].map(svg => {
      const box = svg.getBoundingClientRect();
      const view = svg.viewBox.baseVal;
      return {figure: svg.closest("figure").id, top: pageTop(svg), left: box.left, right: box.right,
              width: box.width, height: box.height, ratio: view.width / view.height};
    }),
  };
})()"""

# The Commands table: its header cells with their sort state, and its rows as the page shows them now.
TABLE_JS = """(() => {
  const table = [...document.querySelectorAll("table")].find(t => t.tHead.rows[0].cells[0].textContent === "command");
  window.commandsTable = table;
  return {headers: [...table.tHead.rows[0].cells].map(h => [h.textContent, h.getAttribute("aria-sort")]),
          rows: [...table.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent))};
})()"""

FIND_HEADER_JS = "[...commandsTable.tHead.rows[0].cells].find(h => h.textContent === %s)"

# Where a header cell of the Commands table is on the screen, once scrolled into view.
HEADER_AT_JS = """(name => {
  const th = [...commandsTable.tHead.rows[0].cells].find(h => h.textContent === name);
  th.scrollIntoView({block: "center", inline: "center"});
  const box = th.getBoundingClientRect();
  return [box.left + box.width / 2, box.top + box.height / 2];
})(%s)"""


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium is not installed: `make deps` (or `make test`) installs the Debian package "
                    "chromium; by hand: apt-get install chromium")
    return path


class DevTools:
    """Headless Chromium driven over --remote-debugging-pipe (it reads fd 3 and writes fd 4,
    NUL-ended JSON): one page, its viewport emulated exactly, every wait bounded by a deadline."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_read, self._to_chromium = os.pipe()
        self._from_chromium, from_write = os.pipe()
        # The child's ends above 9, so that putting them on 3 and 4 overwrites neither.
        to_read, from_write = (self._above_9(fd) for fd in (to_read, from_write))
        profile.mkdir(parents=True, exist_ok=True)
        self.log = profile / "chromium.log"
        argv = ["bash", "-c", f'exec "$@" 3<&{to_read} 4>&{from_write} {to_read}<&- {from_write}>&-', "bash", binary,
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                "--hide-scrollbars", "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"]
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(argv, pass_fds=(to_read, from_write), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, start_new_session=True)
        os.close(to_read)
        os.close(from_write)
        self._buffer = b""
        self._events: list[dict] = []
        self._last_id = 0
        self.deadline = time.monotonic() + CHROMIUM_TIMEOUT_S
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    @staticmethod
    def _above_9(fd: int) -> int:
        moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(fd)
        return moved

    def _message(self) -> dict:
        while b"\0" not in self._buffer:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_chromium], [], [], left)[0]:
                pytest.fail(f"chromium did not answer within {CHROMIUM_TIMEOUT_S} s; its log: {self.log}")
            chunk = os.read(self._from_chromium, 1 << 20)
            if not chunk:
                pytest.fail(f"chromium closed the pipe (exit {self.proc.poll()}): {self.log.read_text()[-2000:]}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict | None = None, page: bool = False) -> dict:
        self._last_id += 1
        request = {"id": self._last_id, "method": method, "params": params or {}}
        if page:
            request["sessionId"] = self.session
        os.write(self._to_chromium, json.dumps(request).encode() + b"\0")
        while True:
            message = self._message()
            if message.get("id") == self._last_id:
                assert "error" not in message, f"{method}: {message['error']}"
                return message["result"]
            self._events.append(message)

    def wait_for(self, event: str) -> None:
        while not any(e.get("method") == event for e in self._events):
            self._events.append(self._message())

    def open(self, url: str, width: int, height: int) -> None:
        """Load url in a viewport of width × height CSS pixels: a phone's (mobile, where a page
        without a viewport meta is laid out 980 px wide and shrunk) below 500 px."""
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500}, page=True)
        self.send("Page.enable", page=True)
        self.send("Page.navigate", {"url": url}, page=True)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> object:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, page=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def click(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
                      page=True)

    def press_enter(self) -> None:
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", {"type": kind, "key": "Enter", "code": "Enter",
                                                 "windowsVirtualKeyCode": 13}, page=True)

    def screenshot(self, path: Path) -> None:
        self.evaluate("scrollTo(0, 0)")
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"}, page=True)["data"]))

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.send("Browser.close")
            self.proc.wait(timeout=30)
        except (subprocess.TimeoutExpired, OSError, AssertionError, pytest.fail.Exception):
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        finally:
            os.close(self._to_chromium)
            os.close(self._from_chromium)


def _report(run_dir: Path, out: Path) -> Path:
    assert report_main([str(run_dir), "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def layout_report(tmp_path_factory) -> Path:
    return _report(LAYOUT_RUN, tmp_path_factory.mktemp("adapt-report"))


def _sorting(browser: DevTools) -> list[dict]:
    """The Commands table as shown, then after a click on "median (s)", another click, and Enter
    on "n" once focused (as Tab would: the headers have a tabindex)."""
    states = [browser.evaluate(TABLE_JS)]
    for name, how in (("median (s)", "click"), ("median (s)", "click"), ("n", "Enter")):
        x, y = browser.evaluate(HEADER_AT_JS % json.dumps(name))
        if how == "click":
            browser.click(x, y)
        else:
            browser.evaluate(f"document.activeElement.blur(); {FIND_HEADER_JS % json.dumps(name)}.focus()")
            browser.press_enter()
        states.append({**browser.evaluate(TABLE_JS), "by": name})
    return states


@pytest.fixture(scope="module")
def measured(layout_report, chromium, tmp_path_factory) -> dict[int, dict]:
    """width -> the page's layout at that viewport, its first screen as a screenshot, and the
    Commands table through a few sorts."""
    shots = tmp_path_factory.mktemp("screenshots")
    OUTPUT.mkdir(parents=True, exist_ok=True)
    results = {}
    for width, height in SCREENS.items():
        browser = DevTools(chromium, tmp_path_factory.mktemp(f"profile-{width}"))
        try:
            browser.open((layout_report / "report.html").as_uri(), width, height)
            layout = browser.evaluate(LAYOUT_JS)
            shot = shots / f"report-{width}.png"
            browser.screenshot(shot)
            shutil.copyfile(shot, OUTPUT / shot.name)
            results[width] = {**layout, "screenshot": shot, "sorts": _sorting(browser)}
        finally:
            browser.close()
    return results


@pytest.mark.parametrize("width", SCREENS)
def test_nothing_overflows_the_page(measured, width):
    m = measured[width]
    assert m["innerWidth"] == width, "the window has the asked width"
    assert m["scrollWidth"] <= m["clientWidth"], f"wider than the page at {width} px: {m['wide']}"
    assert m["wide"] == []
    for chart in m["charts"]:
        assert chart["left"] >= 0 and chart["right"] <= m["clientWidth"] + 0.5, chart
        assert chart["width"] / chart["height"] == pytest.approx(chart["ratio"], rel=0.02), \
            f"{chart['figure']} is drawn with its own proportions"


@pytest.mark.parametrize("width", SCREENS)
def test_decision_then_ranking_then_charts_then_tables(measured, width):
    m = measured[width]
    figures = [c["figure"] for c in m["charts"]]
    assert figures[0] == "ranking"
    assert sorted(figures) == ["conditions", "limit-ratio", "ranking", "read-caps"]
    assert m["convention"] < m["decision"] < m["charts"][0]["top"]
    assert max(c["top"] for c in m["charts"]) < m["details"], "the long tables come after the charts"


def test_first_chart_is_on_the_first_screen(measured):
    m = measured[1400]
    assert m["charts"][0]["top"] < m["innerHeight"], "the ranking begins without scrolling at 1400 px"


def _number(cell: str) -> float:
    return float(cell.split()[0]) if cell != "-" else float("inf")


@pytest.mark.parametrize("width", SCREENS)
def test_tables_sort_when_a_header_is_clicked(measured, width):
    original, *sorted_by = measured[width]["sorts"]
    headers = [h for h, _ in original["headers"]]
    median, count = headers.index("median (s)"), headers.index("n")
    for state in sorted_by:
        assert sorted(map(tuple, state["rows"])) == sorted(map(tuple, original["rows"])), "rows move whole"
    order = [dict(state["headers"])[state["by"]] for state in sorted_by]
    assert order == ["ascending", "descending", "ascending"]
    values = [_number(r[median]) for r in sorted_by[0]["rows"]]
    assert values == sorted(values)
    assert [_number(r[median]) for r in sorted_by[1]["rows"]] == sorted(values, reverse=True)
    assert [int(r[count]) for r in sorted_by[2]["rows"]] == sorted(int(r[count]) for r in original["rows"])


@pytest.mark.parametrize("width", SCREENS)
def test_screenshots_for_a_person(measured, width):
    shot = measured[width]["screenshot"]
    image = matplotlib.image.imread(shot)
    assert image.shape[:2] == (SCREENS[width], width)
    assert len(np.unique(image.reshape(-1, image.shape[-1]), axis=0)) > 50, "a page, not a blank"
    assert (OUTPUT / shot.name).read_bytes() == shot.read_bytes()


def test_page_is_small_and_self_contained(layout_report):
    page = (layout_report / "report.html").read_text(encoding="utf-8")
    assert len(page.encode()) < PAGE_BUDGET
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert "<img" not in page
    assert page.count("<svg ") == 4 and page.count("<script>") == 1
    assert not re.search(r"(src|href)=\"(?!#|data:image/png;base64,)|<link|url\((?!#)", page), \
        "nothing loaded from elsewhere (matplotlib embeds a heatmap's pixels as a PNG in its SVG)"
    ids = re.findall(r' id="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "the charts' ids are unique in the page"
    for ref in set(re.findall(r'(?:url\(#|href="#)([^)"]+)', page)):
        assert ref in ids, f"#{ref} is defined"


def test_one_ratio_convention(layout_report):
    summary = (layout_report / "summary.md").read_text(encoding="utf-8")
    assert summary.splitlines()[2] == f"Ratios: {RATIO_CONVENTION}."
    page = (layout_report / "report.html").read_text(encoding="utf-8")
    stated = html.escape(RATIO_CONVENTION, quote=False)
    assert page.count(stated) == 1
    for text in (summary.replace(RATIO_CONVENTION, ""), page.replace(stated, "")):
        assert not re.search(r"speed-?ups?\b", text, re.I)
        assert not re.search(r"×\d", text), "no '×1.05 vs' speed-up labels"
    limit_svg = (layout_report / "limit-ratio.svg").read_text(encoding="utf-8")
    assert "× b3sum&#39;s time" in limit_svg or "× b3sum's time" in limit_svg
    assert "| × b3sum |" in summary


def test_limit_ratio_axis_ends_just_past_the_data():
    run = load_run(LAYOUT_RUN)
    stats, _ = hasher_stats(run)
    hashers = stats[stats["tool"] == "hasher"]
    low, high = min(hashers["limit_low"].min(), 1.0), hashers["limit_high"].max()
    left, right = charts.chart_limit_ratio(run).axes[0].get_xlim()
    assert high < right <= high + 0.1 * (high - low) + 0.02
    assert left < low


def _role(tool: str) -> str:
    return {"hasher": "ours", "cat": "reader", "dd": "reader", "fio": "reader", "tar": "reader",
            "reader": "reader", "b3sum": REFERENCE_HASH, "xxhsum": OTHER_HASH}.get(tool, "command")


def test_colours_by_role_with_a_legend(tmp_path):
    out = _report(ROLES_RUN, tmp_path)
    run = load_run(ROLES_RUN)
    tools = {short_label(command_name(str(lbl))): str(t)
             for lbl, t in zip(run.runs["label"], run.runs["tool"])}
    assert {_role(t) for t in tools.values()} >= {"ours", "reader", REFERENCE_HASH, "command"}
    texts = {t.text: t.get("style", "") for t in ET.parse(out / "ranking.svg").iter(f"{SVG}text") if t.text}
    seen = {}
    for label, tool in tools.items():
        fill = re.search(r"fill: (#[0-9a-f]{6})", texts[label])
        assert fill, f"{label}: a coloured tick label"
        assert fill.group(1) in ROLES[_role(tool)].colours, f"{label} ({tool}) in the {_role(tool)} colours"
        seen.setdefault(_role(tool), set()).add(fill.group(1))
    families = [set(ROLES[r].colours) for r in ROLES]
    assert all(a.isdisjoint(b) for i, a in enumerate(families) for b in families[i + 1:]), "no colour in two roles"
    for role in seen:
        assert ROLES[role].legend in texts, f"the legend names the {role} role"
    page = (out / "report.html").read_text(encoding="utf-8")
    assert html.escape(ROLES["reader"].legend, quote=False) in page
