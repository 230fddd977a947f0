"""The track document (:mod:`fbbench.track.series`) for people: the console (``fbbench track
show`` and ``check``) and a Markdown summary a CI job publishes (``track check --markdown``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fbbench import paths
from fbbench.analysis.stats import readable

SHORT_COUNTERS = {"page fetches per unit": "fetches/unit", "page reads per unit": "reads/unit",
                  "page writes per unit": "writes/unit", "page marks per unit": "marks/unit",
                  "records read by index per unit": "index reads/unit",
                  "records read naturally per unit": "natural reads/unit"}
SHOWN_COUNTERS = ("page fetches per unit", "records read by index per unit", "records read naturally per unit")


def _value(figure: Mapping[str, Any], relative: bool) -> str:
    if "value" not in figure:
        return "–"
    value = figure["value"]
    text = f"{value:.3f}" if relative else readable(value)
    low, high = figure.get("low", math.nan), figure.get("high", math.nan)
    if math.isfinite(low) and math.isfinite(high) and not (low == high == value):
        text += f" ({low:.3f}–{high:.3f})" if relative else f" ({readable(low)}–{readable(high)})"
    return text


def _columns(series: Mapping[str, Any]) -> list[str]:
    names: dict[str, None] = {}
    for point in series["points"]:
        names |= dict.fromkeys(point["figures"])
    chosen = [n for n, _ in names.items() if n not in SHORT_COUNTERS]
    return chosen + [n for n in SHOWN_COUNTERS if n in names]


def series_heading(series: Mapping[str, Any]) -> str:
    kind = (f"relative to {series['reference']} (time-shared pairs; values are build / reference)"
            if series["kind"] == "relative" else "absolute (runs of each build; median or geometric mean)")
    host = f", host {series['host']}" if series.get("host") else ""
    return (f"{series['benchmark']} — series {series['series_id']}, {kind}{host}, "
            f"{len(series['points'])} point(s) over the {series['axis']}")


def print_document(console: Console, document: Mapping[str, Any], *, check: bool = False) -> None:
    suite = document["suite"]
    method, counters = suite["method"], suite["counter_method"]
    console.print(f"[bold]suite {escape(suite['name'])}[/] ({escape(suite['path'])}): changes at p ≤ "
                  f"{method['p_value']:g}, time figures ≥ {method['min_magnitude'] * 100:g} %, the engine's work per "
                  f"unit ≥ {counters['min_magnitude'] * 100:g} %; point against point below {method['long_series']} "
                  f"points, else Otava's e-divisive means (window {method['window']}); check threshold "
                  f"{suite['threshold'] * 100:g} %", highlight=False, soft_wrap=True)
    if not document["series"]:
        console.print("no points yet: fbbench track run SUITE --engine NAME", highlight=False)
    for series in document["series"]:
        _print_series(console, series)
    if check:
        print_check(console, document["check"])


def _print_series(console: Console, series: Mapping[str, Any]) -> None:
    console.print()
    console.print(f"[bold]{escape(series_heading(series))}[/]", highlight=False, soft_wrap=True)
    if series.get("reason"):
        console.print(f"  {escape(series['reason'])}", highlight=False, soft_wrap=True)
    relative = series["kind"] == "relative"
    columns = _columns(series)
    table = Table(show_edge=False, pad_edge=False)
    for name in ("point", "engine", "build"):
        table.add_column(name, overflow="fold")
    for name in columns:
        unit = next((p["figures"][name].get("unit") for p in series["points"] if name in p["figures"]), "") or ""
        shown = SHORT_COUNTERS.get(name, name) + ("" if relative else (f" ({unit.strip()})" if unit.strip() else ""))
        table.add_column(shown, justify="right", overflow="fold")
    for point in series["points"]:
        build = (point.get("engine_build") or "").split(" ")[0].removeprefix("LI-V")
        table.add_row(escape(point["label"]), escape(point["engine"]), escape(build),
                      *[_value(point["figures"].get(name, {}), relative) for name in columns])
    console.print(table)
    for event in series["events"]:
        console.print(f"  [bold]{escape(event['before']['label'])} → {escape(event['after']['label'])}[/]: "
                      f"{escape(event['cause'])}", highlight=False, soft_wrap=True)
        for moved in event["figures"]:
            method = moved["method"].split(":")[0]
            console.print(f"    {escape(moved['text'])}, p {moved['p_value']:.2g} ({escape(method)})", highlight=False,
                          soft_wrap=True)
        for plan in event["plans"]:
            _print_plan(console, plan)
    for change in series["changes"]:
        if change["state"] == "current":
            continue
        what = (f"moved at point {change['ended_at']} (now {change['moved_to']})" if change["state"] == "moved"
                else f"withdrawn at point {change['ended_at']}: no longer found")
        console.print(f"  [dim]earlier change {change['figure']} {change['before']['label']} → "
                      f"{change['after']['label']} {what}[/]", highlight=False, soft_wrap=True)


def _print_plan(console: Console, plan: Mapping[str, Any]) -> None:
    if plan["change"] != "plan":
        console.print(f"    {escape(plan['name'])}: {escape(plan['change'])}", highlight=False, soft_wrap=True)
        return
    console.print(f"    plan of {escape(plan['name'])}:", highlight=False, soft_wrap=True)
    for side in ("before", "after"):
        text = (plan.get(side) or "(none)").replace("\n", "\n        ")
        console.print(f"      {side}:\n        {escape(text)}", highlight=False, soft_wrap=True)


def print_check(console: Console, verdict: Mapping[str, Any]) -> None:
    console.print()
    if verdict["passed"]:
        console.print(f"[bold green]check passed[/]: no regression beyond {verdict['threshold'] * 100:g} % brought "
                      "by the newest points", highlight=False)
    else:
        console.print(f"[bold red]check failed[/]: {len(verdict['failures'])} regression(s) beyond "
                      f"{verdict['threshold'] * 100:g} %", highlight=False)
    for failure in verdict["failures"]:
        console.print(f"  [red]{escape(_failure_line(failure))}[/]", highlight=False, soft_wrap=True)
    for note in verdict["notes"]:
        console.print(f"  note: {escape(_note_line(note))}", highlight=False, soft_wrap=True)


def _failure_line(failure: Mapping[str, Any]) -> str:
    where = f"{failure['benchmark']} at {failure['point']}"
    if failure["kind"] == "against the reference":
        return f"{where}: {failure['change']}"
    return f"{where}: {failure['change']} ({failure['between']}); {failure.get('cause') or ''}".rstrip("; ")


def _note_line(note: Mapping[str, Any]) -> str:
    where = f"{note['benchmark']} at {note['point']}"
    if note["kind"] == "plan":
        names = ", ".join(p["name"] for p in note["plans"])
        return f"{where}: plans changed ({names})"
    return f"{where}: {note['change']} ({note['between']}), not failing: {note['why_not_failing']}"


def markdown(document: Mapping[str, Any]) -> str:
    """A summary a CI job can publish (e.g. to $GITHUB_STEP_SUMMARY): the verdict, the failures and
    notes, then each series' newest points."""
    verdict, suite = document["check"], document["suite"]
    state = "passed" if verdict["passed"] else f"FAILED — {len(verdict['failures'])} regression(s)"
    lines = [paths.MARKDOWN_GENERATOR, f"## fbbench track check: {suite['name']} — {state}", "",
             f"Threshold {verdict['threshold'] * 100:g} %; changes at p ≤ {suite['method']['p_value']:g}.", ""]
    if verdict["failures"]:
        lines += ["| benchmark | point | regression | cause |", "|---|---|---|---|"]
        lines += [f"| {_cell(f['benchmark'])} | {_cell(f['point'])} | {_cell(f['change'])} | "
                  f"{_cell(f.get('cause') or f['kind'])} |" for f in verdict["failures"]]
        lines.append("")
    for note in verdict["notes"]:
        lines.append(f"- {_cell(_note_line(note))}")
    if verdict["notes"]:
        lines.append("")
    for series in document["series"]:
        lines += _series_markdown(series)
    return "\n".join(lines) + "\n"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _series_markdown(series: Mapping[str, Any], last: int = 10) -> list[str]:
    relative = series["kind"] == "relative"
    columns = _columns(series)
    lines = [f"### {_cell(series_heading(series))}", "",
             "| point | engine | " + " | ".join(_cell(SHORT_COUNTERS.get(c, c)) for c in columns) + " |",
             "|---|---|" + "---|" * len(columns)]
    for point in series["points"][-last:]:
        values = [_cell(_value(point["figures"].get(name, {}), relative)) for name in columns]
        lines.append(f"| {_cell(point['label'])} | {_cell(point['engine'])} | " + " | ".join(values) + " |")
    for event in series["events"]:
        lines.append(f"- **{_cell(event['before']['label'])} → {_cell(event['after']['label'])}**: "
                     f"{_cell(event['cause'])}")
    return [*lines, ""]


def check_json(document: Mapping[str, Any]) -> dict[str, Any]:
    return {"format": "fbbench-track-check", "schema_version": document["schema_version"],
            "suite": document["suite"]["name"], **document["check"]}

