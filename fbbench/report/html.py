"""The single-file HTML report: opens offline, no external scripts, fonts or styles.

The run document is embedded as JSON; a small inline script draws the charts as SVG.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_TEMPLATE = Path(__file__).with_name("templates") / "report.html"


def render(document: dict[str, Any], firebird_log: str = "") -> str:
    data = json.dumps({**document, "firebird_log": firebird_log}, default=str)
    # Inside <script>, "</" would end the element early; JSON allows escaping the slash.
    data = data.replace("</", "<\\/")
    return _TEMPLATE.read_text().replace("__RUN_ID__", str(document["run_id"])).replace("__DATA__", data)


def write(document: dict[str, Any], path: Path, firebird_log: str = "") -> Path:
    path = path.expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(document, firebird_log))
    return path
