"""Headless Chromium for the report tests: the DOM after the page's scripts ran, as a small tree.

``render(page)`` loads a file:// page with a virtual time budget (the page's scripts and uPlot's
drawing run to completion) in a browser this pytest process keeps running, takes its DOM and
parses it; script errors Chromium logged are kept so a test can require there were none.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import fcntl
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

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


class _Browser:
    """One headless Chromium for this pytest process, driven over its DevTools pipe
    (``--remote-debugging-pipe``: commands in on fd 3, replies and events out on fd 4, each a JSON
    text ending in NUL). A launch costs 2–3 s of CPU (20 processes), a page in a running browser
    a fraction of that; each page gets a browser context of its own (no cookies, storage or cache
    shared with another page's), which ends with it."""

    def __init__(self) -> None:
        assert CHROMIUM is not None
        self.profile: Path | None = Path(tempfile.mkdtemp(prefix="fbbench-chromium-"))
        commands_read, self._commands = os.pipe()
        self._replies, replies_write = os.pipe()
        # Above 9: "3<&4 4>&3" would lose one of them (a pytest process may have 3 and 4 free); bash, as
        # dash takes no descriptor above 9.
        for low in (commands_read, replies_write):
            high = fcntl.fcntl(low, fcntl.F_DUPFD_CLOEXEC, 10)
            os.close(low)
            if low == commands_read:
                commands_read = high
            else:
                replies_write = high
        try:
            self.process = subprocess.Popen(
                ["bash", "-c", f'exec "$0" "$@" 3<&{commands_read} 4>&{replies_write}', CHROMIUM, "--headless",
                 "--no-sandbox", "--disable-gpu", "--no-first-run", *QUIET, f"--user-data-dir={self.profile}",
                 "--remote-debugging-pipe", "about:blank"],
                pass_fds=(commands_read, replies_write), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True)
        finally:
            os.close(commands_read)
            os.close(replies_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, session: str | None = None, timeout: float = 60, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline, method)
            if reply.get("id") == self._next_id:
                assert "error" not in reply, (method, reply["error"])
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_for(self, event: str, session: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            found = next((e for e in self.events if e.get("method") == event and e.get("sessionId") == session), None)
            if found is not None:
                return found
            self.events.append(self._read(deadline, event))

    def _read(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies], [], [], left)[0]:
                raise AssertionError(f"Chromium did not answer {waiting_for} in time")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise AssertionError(f"Chromium ended (exit {self.process.poll()}) before answering {waiting_for}")
            self._buffer += chunk
        text, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(text)
        return message

    def close(self) -> None:
        if self.profile is None:
            return
        with contextlib.suppress(OSError):
            os.close(self._commands)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        os.close(self._replies)
        shutil.rmtree(self.profile, ignore_errors=True)
        self.profile = None


_browser: _Browser | None = None


def _running_browser() -> _Browser:
    global _browser
    if _browser is None or _browser.process.poll() is not None:
        _browser = _Browser()
        atexit.register(_browser.close)
    return _browser


@dataclass
class _Loaded:
    html: str
    errors: list[str]
    screenshot: bytes | None


def _load(page: Path, width: int, height: int, screenshot: bool = False, scrollbars: bool = True) -> _Loaded:
    """``page`` in a window of ``width``×``height``, once 3 s of virtual time ran
    (what Chromium's ``--virtual-time-budget=3000`` gives): its DOM (``--dump-dom``), the script
    errors it logged, and a PNG of what shows where asked (``--screenshot``)."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (as root: apt-get install -y chromium); the report is not rendered")
    browser = _running_browser()
    context = browser.call("Target.createBrowserContext")["browserContextId"]
    session = ""
    try:
        target = browser.call("Target.createTarget", url="about:blank", browserContextId=context)["targetId"]
        session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        browser.call("Runtime.enable", session)
        browser.call("Log.enable", session)
        browser.call("Emulation.setDeviceMetricsOverride", session, width=width, height=height, deviceScaleFactor=1,
                     mobile=False)
        if not scrollbars:  # --hide-scrollbars
            browser.call("Emulation.setScrollbarsHidden", session, hidden=True)
        browser.call("Emulation.setVirtualTimePolicy", session, policy="pause")
        browser.call("Page.navigate", session, url=page.resolve().as_uri())
        browser.call("Emulation.setVirtualTimePolicy", session, policy="pauseIfNetworkFetchesPending", budget=3000)
        browser.wait_for("Emulation.virtualTimeBudgetExpired", session, timeout=120)
        html = browser.call("Runtime.evaluate", session, expression="document.documentElement.outerHTML",
                            returnByValue=True)["result"]["value"]
        png = base64.b64decode(browser.call("Page.captureScreenshot", session, format="png")["data"]) \
            if screenshot else None
        errors = [_error(event) for event in browser.events if event.get("sessionId") == session]
    except BaseException:
        browser.close()  # whatever it was doing: the next page starts a new one
        raise
    finally:
        if browser.process.poll() is None:
            browser.call("Target.disposeBrowserContext", browserContextId=context)
        browser.events = [event for event in browser.events if event.get("sessionId") not in (None, session)]
    assert html.startswith("<html") and html.endswith("</html>"), html[-2000:]
    return _Loaded(html, [error for error in errors if error], png)


def _parsed(html: str) -> Node:
    tree = _Tree()
    tree.feed(html)
    tree.close()
    return tree.root


def render(page: Path, profile: Path) -> Rendered:
    """``page`` in a 1280×2000 window: its DOM after its scripts ran, and the script errors it
    logged. (``profile`` is kept for the callers: each page has a browser context of its own.)"""
    loaded = _load(page, 1280, 2000)
    return Rendered(_parsed(loaded.html), loaded.errors)


def _error(event: dict[str, Any]) -> str:
    """A script error the page logged, as Chromium's console lines say it; "" for anything else."""
    params = event.get("params", {})
    if event.get("method") == "Runtime.exceptionThrown":
        details = params["exceptionDetails"]
        return "Uncaught " + str(details.get("exception", {}).get("description") or details.get("text"))
    if event.get("method") == "Runtime.consoleAPICalled":
        text = " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", []))
        return text if params.get("type") == "error" or re.search(r"Uncaught|Error", text) else ""
    if event.get("method") == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
        return str(params["entry"].get("text"))
    return ""


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
    width, height = FIRST_SCREEN
    screenshot = profile.parent / f"{page.stem}-first-screen.png"
    shot = _load(page, width, height, screenshot=True, scrollbars=False).screenshot
    assert shot, "no screenshot"
    screenshot.write_bytes(shot)
    probed = profile.parent / f"{page.stem}-probed.html"
    text = page.read_text(encoding="utf-8")
    at = text.rindex("</body>")
    probed.write_text(text[:at] + _PROBE + text[at:], encoding="utf-8")
    body = _parsed(_load(probed, width, height, scrollbars=False).html).all("body")[0]
    assert "data-layout" in body.attrs, "the probe did not run"
    layout = json.loads(body.attrs["data-layout"])
    assert layout["window"]["scrolled"] == 0 and layout["window"]["width"] == width, layout["window"]
    return FirstScreen(screenshot, layout["elements"], float(layout["window"]["height"]))


def probe(page: Path, profile: Path, expression: str) -> str:
    """The value of a JavaScript ``expression`` in ``page`` once its scripts ran (as a string), in
    headless Chromium's own window (800×600)."""
    probed = profile.parent / f"{page.stem}-expression.html"
    text = page.read_text(encoding="utf-8")
    at = text.rindex("</body>")
    script = ("<script>window.addEventListener('load', () => setTimeout(() => "
              f"document.body.setAttribute('data-probe', String({expression})), 200));</script>")
    probed.write_text(text[:at] + script + text[at:], encoding="utf-8")
    body = _parsed(_load(probed, 800, 600).html).all("body")[0]
    assert "data-probe" in body.attrs, "the probe did not run"
    return body.attrs["data-probe"]
