"""Headless Chromium for the report tests: the DOM after the page's scripts ran, as a small tree.

``render(page)`` loads a file:// page with a virtual time budget (the page's scripts and uPlot's
drawing run to completion), dumps the DOM and parses it; console errors Chromium logged are kept
so a test can require there were none.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Chromium's background services (extensions, component updates, sync, crash reporting, network
# fetches) do nothing for a local page and cost each of the suite's ~60 launches about a fifth of
# its CPU (1.15 s against 1.4 s per launch, measured with /usr/bin/time on a run's report).
QUIET = ["--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--no-default-browser-check", "--mute-audio", "--disable-breakpad",
         "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication"]
VOID = frozenset({"meta", "link", "br", "hr", "img", "input", "source", "wbr", "col", "area", "base", "embed"})


@dataclass(eq=False)
class Node:
    tag: str
    attrs: dict[str, str]
    parent: Node | None = None
    children: list[Node | str] = field(default_factory=list)

    @property
    def id(self) -> str | None:
        return self.attrs.get("id")

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    @property
    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text for child in self.children)

    def walk(self) -> list[Node]:
        found = []
        for child in self.children:
            if isinstance(child, Node):
                found.append(child)
                found.extend(child.walk())
        return found

    def all(self, tag: str | None = None, cls: str | None = None) -> list[Node]:
        return [n for n in self.walk() if (tag is None or n.tag == tag) and (cls is None or cls in n.classes)]

    def by_id(self, element_id: str) -> Node:
        found = [n for n in self.walk() if n.id == element_id]
        assert found, f"no element with id {element_id!r}"
        return found[0]

    def has_id(self, element_id: str) -> bool:
        return any(n.id == element_id for n in self.walk())


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self._open = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {key: value or "" for key, value in attrs}, self._open)
        self._open.children.append(node)
        if tag not in VOID:
            self._open = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open.children.append(Node(tag, {key: value or "" for key, value in attrs}, self._open))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self._open
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self._open = node.parent

    def handle_data(self, data: str) -> None:
        self._open.children.append(data)


@dataclass
class Rendered:
    dom: Node
    console_errors: list[str]

    @property
    def body(self) -> Node:
        return self.dom.all("body")[0]


def render(page: Path, profile: Path) -> Rendered:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (as root: apt-get install -y chromium); the report is not rendered")
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", *QUIET,
                           f"--user-data-dir={profile}", "--virtual-time-budget=3000", "--window-size=1280,2000",
                           "--enable-logging=stderr", "--v=0", "--dump-dom", page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "</html>" in done.stdout, done.stderr[-2000:]
    tree = _Tree()
    tree.feed(done.stdout)
    tree.close()
    errors = [line for line in done.stderr.splitlines()
              if "CONSOLE" in line and re.search(r"Uncaught|Error", line)]
    return Rendered(tree.root, errors)


def render_ok(page: Path, profile: Path) -> Rendered:
    """Render an fbbench page and require that it drew completely.

    Its script ran to its last line (fbb.done() marks <body data-rendered="true">), no part of it
    failed (fbb records errors in data-errors and shows them), Chromium logged no script error,
    and every chart container the page made was drawn by uPlot (data-charts counts them) on a
    canvas with a size.
    """
    rendered = render(page, profile)
    body = rendered.body
    assert body.attrs.get("data-rendered") == "true", "the page's script did not finish"
    assert "data-errors" not in body.attrs, [p.text for p in body.all(cls="error-box")]
    assert not rendered.console_errors, rendered.console_errors
    drawn = [c for c in body.all("div", "chart") if c.attrs.get("data-rendered") == "true"]
    assert int(body.attrs["data-charts"]) == len(drawn), (body.attrs["data-charts"], [c.id for c in drawn])
    for chart in drawn:
        sizes = canvases(chart)
        assert sizes and all(w > 0 and h > 0 for w, h in sizes), (chart.id, sizes)
    return rendered


def legend(chart: Node) -> list[str]:
    """The series names in a uPlot chart's legend (the x series first), hidden rows left out."""
    return [row.all(cls="u-label")[0].text for row in chart.all("tr", "u-series")
            if "display: none" not in row.attrs.get("style", "") and row.all(cls="u-label")]


def canvases(chart: Node) -> list[tuple[int, int]]:
    """(width, height) of each canvas uPlot drew in ``chart``."""
    return [(int(c.attrs.get("width", 0)), int(c.attrs.get("height", 0))) for c in chart.all("canvas")]


# The first screen a reader sees: a laptop's window, before any scrolling.
FIRST_SCREEN = (1280, 800)

_PROBE = """<script>
window.addEventListener("load", () => setTimeout(() => {
  const found = {window: {height: window.innerHeight, width: window.innerWidth, scrolled: window.scrollY},
                 elements: {}};
  for (const node of document.querySelectorAll("[id]")) {
    const box = node.getBoundingClientRect();
    found.elements[node.id] = {top: box.top, bottom: box.bottom, height: box.height};
  }
  document.body.setAttribute("data-layout", JSON.stringify(found));
}, 200));
</script>
"""


@dataclass
class FirstScreen:
    """Where a page's elements lie when it opens in a window of ``FIRST_SCREEN``, and a screenshot of it."""

    screenshot: Path
    layout: dict[str, dict[str, float]]
    height: float

    def shows(self, element_id: str) -> bool:
        """The element lies entirely within the first screen (it has a size, and no scrolling reaches it)."""
        box = self.layout[element_id]
        return box["height"] > 0 and box["top"] >= 0 and box["bottom"] <= self.height


def first_screen(page: Path, profile: Path) -> FirstScreen:
    """Open ``page`` as a reader would, in a window of ``FIRST_SCREEN``: a PNG of what shows, and the
    position of every element with an id, measured in a copy of the page with a probe added."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (as root: apt-get install -y chromium); the report is not rendered")
    width, height = FIRST_SCREEN
    common = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", *QUIET, "--hide-scrollbars",
              f"--user-data-dir={profile}", "--virtual-time-budget=3000", f"--window-size={width},{height}"]
    screenshot = profile.parent / f"{page.stem}-first-screen.png"
    shot = subprocess.run([*common, f"--screenshot={screenshot}", page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.returncode == 0 and screenshot.stat().st_size > 0, shot.stderr[-2000:]
    probed = profile.parent / f"{page.stem}-probed.html"
    text = page.read_text(encoding="utf-8")
    at = text.rindex("</body>")
    probed.write_text(text[:at] + _PROBE + text[at:], encoding="utf-8")
    done = subprocess.run([*common, "--dump-dom", probed.resolve().as_uri()], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "</html>" in done.stdout, done.stderr[-2000:]
    tree = _Tree()
    tree.feed(done.stdout)
    tree.close()
    body = tree.root.all("body")[0]
    assert "data-layout" in body.attrs, "the probe did not run"
    layout = json.loads(body.attrs["data-layout"])
    assert layout["window"]["scrolled"] == 0 and layout["window"]["width"] == width, layout["window"]
    return FirstScreen(screenshot, layout["elements"], float(layout["window"]["height"]))


def probe(page: Path, profile: Path, expression: str) -> str:
    """The value of a JavaScript ``expression`` in ``page`` once its scripts ran (as a string)."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (as root: apt-get install -y chromium); the report is not rendered")
    probed = profile.parent / f"{page.stem}-expression.html"
    text = page.read_text(encoding="utf-8")
    at = text.rindex("</body>")
    script = ("<script>window.addEventListener('load', () => setTimeout(() => "
              f"document.body.setAttribute('data-probe', String({expression})), 200));</script>")
    probed.write_text(text[:at] + script + text[at:], encoding="utf-8")
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={profile}", "--virtual-time-budget=3000", "--dump-dom",
                           probed.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "</html>" in done.stdout, done.stderr[-2000:]
    tree = _Tree()
    tree.feed(done.stdout)
    tree.close()
    body = tree.root.all("body")[0]
    assert "data-probe" in body.attrs, "the probe did not run"
    return body.attrs["data-probe"]
