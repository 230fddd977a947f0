"""Single-file HTML pages: open offline, no external scripts, fonts, styles or requests.

A page is one template pair in ``templates/`` — ``NAME.html`` (the body's markup) and, when it
has one, ``NAME.js`` (the script that fills it) — put into ``layout.html`` together with the
shared style sheet (``report.css``), uPlot (inlined from ``vendor/uplot``, unmodified), our
chart helpers (``charts.js``, the ``fbb`` namespace) and the page's data as JSON in
``<script type="application/json" id="page-data">``. The run report is the page ``run``; a
comparison or a sweep page is another pair of files and one call of :func:`render_page`.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from fbbench.paths import write_whole

_TEMPLATES = Path(__file__).with_name("templates")
_UPLOT = Path(__file__).with_name("vendor") / "uplot"
_SLOT = re.compile(r"__(TITLE|STYLE|BODY|DATA|SCRIPTS)__")


_EXACT = 2**53  # JavaScript numbers hold integers exactly up to here


def _for_javascript(value: Any) -> Any:
    """The data as JavaScript can read it exactly.

    NaN and ±Infinity become null (JSON.parse rejects them and the whole page would fail); an
    integer beyond 2**53 (a 64-bit seed) becomes its decimal text, which a double would round.
    """
    # Concrete types before the Mapping ABC, whose isinstance is slow: a report holds some 100,000 values.
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int):
        return value if -_EXACT <= value <= _EXACT else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list | tuple):
        return [_for_javascript(item) for item in value]
    if isinstance(value, dict | Mapping):
        return {str(key): _for_javascript(item) for key, item in value.items()}
    return value


def embed_json(data: Any) -> str:
    """``data`` as JSON that can sit inside a <script> element whatever strings it holds.

    "<" only occurs inside JSON strings, where \\u003c means the same character: no "</script>"
    and no "<!--" (which switches the HTML parser's script states) can appear in the element.
    """
    text = json.dumps(_for_javascript(data), default=str, ensure_ascii=False)
    return text.replace("<", "\\u003c")


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _script(text: str, origin: str) -> str:
    # Our scripts and the vendored library are code, not data: they are inlined as they are, so
    # one containing "</script" would end its element early; refuse rather than break the page.
    if re.search(r"</script|<!--", text, re.IGNORECASE):
        raise ValueError(f"{origin} contains '</script' or '<!--' and cannot be inlined")
    return f"<script>\n{text}\n</script>"


@cache
def _shared() -> tuple[str, str]:
    """(style, scripts) every page carries: uPlot's and our CSS, uPlot's and our JS."""
    style = _read(_UPLOT / "uPlot.min.css") + "\n" + _read(_TEMPLATES / "report.css")
    scripts = "\n".join((_script(_read(_UPLOT / "uPlot.iife.min.js"), "uPlot.iife.min.js"),
                         _script(_read(_TEMPLATES / "charts.js"), "charts.js")))
    return style, scripts


def _page_files(page: str | Path) -> tuple[str, str]:
    """(markup, script) of a page: a name in templates/ or the path of an .html file (its .js beside it)."""
    markup = Path(page) if isinstance(page, Path) else _TEMPLATES / f"{page}.html"
    script = markup.with_suffix(".js")
    return _read(markup), _read(script) if script.is_file() else ""


def render_page(page: str | Path, title: str, data: Any) -> str:
    """One self-contained HTML page: ``page``'s markup and script, the shared CSS/JS, ``data`` as JSON.

    The page's script reads the data with ``fbb.data()`` and ends with ``fbb.done()``.
    """
    markup, script = _page_files(page)
    style, scripts = _shared()
    if script:
        scripts += "\n" + _script(script, str(page))
    slots = {"TITLE": html.escape(title), "STYLE": style, "BODY": markup, "DATA": embed_json(data),
             "SCRIPTS": scripts}
    # One pass: a slot's name inside the data or a script is never replaced again.
    return _SLOT.sub(lambda match: slots[match[1]], _read(_TEMPLATES / "layout.html"))


def render(document: dict[str, Any], firebird_log: str = "") -> str:
    """The run report: the run result document (docs/run-result.md) and the engine's log text."""
    return render_page("run", f"fbbench run {document.get('run_id', '?')}",
                       {**document, "firebird_log": firebird_log})


def write(document: dict[str, Any], path: Path, firebird_log: str = "") -> Path:
    path = path.expanduser().resolve()
    write_whole(path, render(document, firebird_log))
    return path
