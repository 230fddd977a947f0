"""A comparison on the console, and as the single-file HTML page ``compare`` (templates/compare.*).

Both draw the comparison document (:mod:`fbbench.analysis.comparison`, docs/compare-result.md)
as it is: nothing is computed here but text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fbbench.paths import write_whole
from fbbench.report import html
from fbbench.report.console import SEVERITY_STYLE, lint_count

KIND_TITLE = {"headline": "headline", "figure": "figure", "metric": "database", "score": "score",
              "tpm": "", "unit": "throughput", "latency": "latency", "outcomes": "", "engine": ""}


def number(value: Any, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    digits = 0 if abs(value) >= 100 else 2 if abs(value) >= 1 or value == 0 else 3
    return f"{value:,.{digits}f}{unit}"


def _ratio_text(ratio: Mapping[str, Any] | None) -> tuple[str, str]:
    if ratio is None:
        return "–", ""
    point = "–" if ratio.get("ratio") is None else f"{ratio['ratio']:.3f}"
    if ratio.get("low") is None or ratio.get("high") is None:
        return point, "no interval"
    return point, f"{ratio['low']:.3f}–{ratio['high']:.3f}"


def _verdict_cell(verdict: Mapping[str, Any] | None) -> str:
    if verdict is None:
        return ""
    if verdict.get("withheld"):
        return "[red]withheld[/]"
    if not verdict.get("resolved"):
        return "[dim]not resolved[/]"
    word = verdict.get("word") or ""
    better = verdict.get("better")
    colour = "green" if better is True else "red" if better is False else ""
    return f"[{colour}]{word}[/]" if colour else word


def condition_rows(document: Mapping[str, Any], *, followers: bool = True) -> list[tuple[str, dict[str, Any], str]]:
    """(key, values by side, what the row is) for every condition that differs; ``followers``
    False leaves out the axis rows that follow from it (an engine's ODS and conf defaults)."""
    conditions = document["conditions"]
    rows = []
    for row in conditions["axis"]:
        if row["follows"] and not followers:
            continue
        rows.append((row["key"], row["values"], "axis" + (f" (follows {row['follows']})" if row["follows"] else "")))
    rules = {f["evidence"].get("key"): f"{f['rule']} {f['severity']}" for f in document["lint"]
             if f["scope"] == "comparison" and isinstance(f.get("evidence"), dict) and f["evidence"].get("key")}
    for row in conditions["differences"]:
        what = rules.get(row["key"]) or (f"follows {row['follows']}" if row["follows"] else "differs")
        rows.append((row["key"], row["values"], f"outside the axis: {what}"))
    return rows


def lint_lines(findings: Sequence[Mapping[str, Any]], sides: Sequence[Mapping[str, Any]] | None = None) -> list[str]:
    """The findings on the console, one line per rule and side (:func:`fbbench.analysis.lint_rules.grouped`),
    its why beneath."""
    from fbbench.analysis.lint_rules import grouped

    lines = []
    for group in grouped(findings, {s["label"]: (s["kind"], len(s["runs"])) for s in sides or []}):
        style = SEVERITY_STYLE.get(group["severity"], "")
        where = "" if group["scope"] == "comparison" else f"{group['about']}: "
        excluded = " [dim](a run not used: its findings do not count)[/]" if group["excluded"] else ""
        lines.append(f"  [{style}]{group['rule']} {group['severity']}[/] {escape(where + group['message'])}{excluded}")
        lines.append(f"      [dim]why: {escape(group['why'])}[/]")
    return lines


def print_comparison(document: Mapping[str, Any], console: Console) -> None:
    sides = document["sides"]
    names = {s["label"]: s["name"] for s in sides}
    base = document["baseline"]
    workload = ", ".join(document["workload"])
    console.print(f"\n[bold]comparison[/] of {escape(workload)} — baseline {escape(names[base])}", highlight=False)
    for side in sides:
        flagged = [f"{r['run_id']} {r['status']}" + (" (its pair's other run did not complete)"
                                                      if r.get("partner_incomplete") else "")
                   for r in side["runs"] if not r["used"]]
        flag = f" [red]not used: {escape(', '.join(flagged))}[/]" if flagged else ""
        console.print(f"  {escape(side['name'])} = {escape(side['description'])}{flag}", highlight=False,
                      soft_wrap=True)

    pairing = document.get("pairing")
    if pairing:
        turn = f" in turns of {pairing['turn_seconds']:g} s" if pairing.get("turn_seconds") else ""
        console.print(f"  paired: {pairing['complete']} of {pairing['pairs']} pair(s) complete — each pair's runs "
                      f"shared the same seconds{turn}, and every figure is compared pair by pair", highlight=False,
                      soft_wrap=True)
    until = document.get("sequential")
    if until:
        console.print(f"  until resolved: {escape(until['text'])}; {len(until['looks'])} look(s), one after each "
                      f"complete pair — the {until['figure']}'s interval is a "
                      f"{until['design']['confidence'] * 100:g} % confidence sequence, valid at every look",
                      highlight=False, soft_wrap=True)
    conditions = document["conditions"]
    rows = condition_rows(document, followers=False)
    following = [row for row in conditions["axis"] if row["follows"]]
    equal = len(conditions["equal"])
    if rows:
        console.print(f"conditions: {len(rows) + len(following)} differ, {equal} equal (folded away; all in the JSON "
                      "and the HTML report)", highlight=False)
        table = Table()
        table.add_column("condition", no_wrap=True)
        for side in sides:
            table.add_column(side["label"], overflow="fold")
        table.add_column("", overflow="fold")
        for key, values, what in rows:
            style = "bold" if what.startswith("axis") and "follows" not in what else ""
            cells = [escape(str(values[s["label"]])) if values.get(s["label"]) is not None else "[dim]not visible[/]"
                     for s in sides]
            colour = "red" if " error" in what else "yellow" if "warning" in what else ""
            table.add_row(f"[{style}]{escape(key)}[/]" if style else escape(key), *cells,
                          f"[{colour}]{escape(what)}[/]" if colour else escape(what))
        console.print(table)
        if following:
            keys = ", ".join(row["key"] for row in following[:8]) + (", …" if len(following) > 8 else "")
            factors = ", ".join(dict.fromkeys(row["follows"] for row in following))
            console.print(f"  and {len(following)} that follow from the axis ({escape(factors)}): {escape(keys)}",
                          highlight=False, soft_wrap=True)
    else:
        console.print(f"conditions: the same in all {equal} recorded (no axis: the sides repeat each other)")
    for label, within in (conditions.get("series_differences") or {}).items():
        console.print(f"  [red]series {label}'s runs differ in: {', '.join(r['key'] for r in within)}[/]")

    findings = document["lint"]
    counted = [f for f in findings if not f["excluded"]]
    console.print(f"credibility lint: {lint_count(counted)}"
                  + (f" (and {len(findings) - len(counted)} on runs not used)" if len(counted) < len(findings) else ""),
                  highlight=False)
    for line in lint_lines(findings, sides):
        console.print(line, highlight=False, soft_wrap=True)

    print_figures(document, console)
    engine = document.get("engine") or {}
    if engine.get("available"):
        print_figures(document, console, engine=True)
    for line in profile_lines(document, names):
        console.print(line, highlight=False, soft_wrap=True)

    console.print()
    for label, verdict in document["verdicts"].items():
        colour = "red" if verdict.get("withheld") else "bold" if verdict.get("resolved") else ""
        text = escape(verdict["text"])
        console.print(f"[bold]verdict[/] {escape(names[label])} against {escape(names[base])}: "
                      + (f"[{colour}]{text}[/]" if colour else text), highlight=False, soft_wrap=True)
    if any(v.get("withheld") for v in document["verdicts"].values()):
        console.print("  [dim]fix the errors above (or name the difference with --axis); --force shows the verdict "
                      "anyway[/]", highlight=False)
    elif _paired_would_help(document):
        console.print("  [dim]runs taken one after the other carry the machine's drift between them: compare "
                      "--paired SPEC_A SPEC_B runs A and B at the same time in turns and resolves a few per cent in "
                      "minutes (README, Comparing)[/]", highlight=False, soft_wrap=True)


def _rate(value: Any) -> str:
    return "–" if value is None else f"{value:,.2f} ms/s" if abs(value) < 100 else f"{value:,.0f} ms/s"


def profile_lines(document: Mapping[str, Any], names: Mapping[str, str], shown: int = 5) -> list[str]:
    """Where the time went, side by side (--profile runs): the top changes per PSQL line and per
    statement in the engine's time per second of profile."""
    profile = document.get("profile")
    if not profile:
        return []
    base = document["baseline"]
    if not profile.get("available"):
        return [f"where the time went (profiler): not comparable — {escape(profile['note'])}"]
    out = [f"where the time went (profiler): the top changes in engine time per second of profile "
           f"(baseline {escape(names[base])})"]
    for title, rows in (("PSQL lines", profile["psql_lines"]), ("statements", profile["statements"])):
        if not rows:
            continue
        out.append(f"  {title}:")
        for row in rows[:shown]:
            what = row["statement"] + (f" line {row['line']}:{row['column']}" if "line" in row else "")
            values = row["values"]
            parts = [f"{label} {_rate((values.get(label) or {}).get('ms_per_second'))}" for label in values]
            changes = [f"{'+' if c >= 0 else '−'}{_rate(abs(c))} in {label}"
                       for label, c in row["change_ms_per_second"].items() if c is not None]
            avg = [f"avg ×{r:.2f} in {label}" for label, r in (row.get("avg_ratio") or {}).items() if r is not None]
            out.append(f"    {escape(what)}: {', '.join(parts)}" + (f" ({'; '.join(changes + avg)})" if changes
                                                                         or avg else " (beyond a run's top lines)"))
    return out


def _paired_would_help(document: Mapping[str, Any]) -> bool:
    """An unresolved headline between series of embedded runs that did not share the machine —
    and on one machine: runs of a lab's hosts (hosts as blocks, or a host axis) ran on others,
    at the same time, where time-sharing one machine is no remedy."""
    unresolved = any(not v.get("resolved") for v in document["verdicts"].values())
    series = all(side["kind"] == "series" for side in document["sides"])
    embedded = (document["conditions"].get("equal") or {}).get("protocol") == "embedded"
    hosts = document.get("blocks") or any(row.get("key") == "host.name" for row in
                                          (document["conditions"].get("axis") or []))
    return unresolved and series and embedded and not document.get("pairing") and not hosts


def print_figures(document: Mapping[str, Any], console: Console, engine: bool = False) -> None:
    sides = document["sides"]
    base = document["baseline"]
    others = [s["label"] for s in sides if s["label"] != base]
    rows = document["engine"]["figures"] if engine else document["figures"]
    centres = sorted({c for row in rows for label, c in (row.get("centres") or {}).items()
                      if c in ("median", "geometric mean")})
    shown = f"a series: the {' or '.join(centres)} of its runs, as the ratio divides it" if centres else ""
    title = ("engine work per unit the load ran (where a difference came from)" if engine
             else "results" + (f" ({shown})" if shown else ""))
    table = Table(title=title, title_justify="left")
    table.add_column("figure", no_wrap=True)
    table.add_column("better")
    for side in sides:
        table.add_column(side["label"], justify="right")
    for label in others:
        table.add_column(f"{label}/{base}", justify="right")
        table.add_column("95 % CI", justify="right")
        if not engine:
            table.add_column("verdict")
    for row in rows:
        cells = [escape(row["name"]) + (f" [dim]({KIND_TITLE[row['kind']]})[/]" if KIND_TITLE.get(row["kind"]) else ""),
                 "↑" if row["better"] == "higher" else "↓"]
        cells += [number(row["values"].get(s["label"]), row["unit"] if not engine else "") for s in sides]
        for label in others:
            point, interval = _ratio_text(row["ratios"].get(label))
            cells += [point, interval]
            if not engine:
                cells.append(_verdict_cell(row["verdicts"].get(label)))
        table.add_row(*cells)
    console.print(table)
    if engine:
        return
    methods: dict[str, Mapping[str, Any]] = {}
    without: dict[str, list[str]] = {}
    for row in rows:
        for label in others:
            ratio = row["ratios"].get(label)
            if ratio and ratio.get("low") is not None:
                methods.setdefault(ratio["method"], ratio)
            elif ratio:
                without.setdefault(ratio.get("note") or "", []).append(row["name"])
    for method, ratio in methods.items():
        weaker = (" — weaker: the drift between runs is not in it; repeat the runs (--repeat) for a verdict across "
                  "runs" if ratio["basis"] == "intervals" else "")
        console.print(f"  [dim]95 % CI over the {ratio['basis']}: {escape(method)}{weaker}[/]", highlight=False,
                      soft_wrap=True)
    for note, names in without.items():
        console.print(f"  [dim]no interval for {escape(', '.join(names))}: {escape(note)}[/]", highlight=False,
                      soft_wrap=True)
    for side in sides:
        summary = side.get("summary")
        if summary:
            console.print(f"  [dim]{escape(side['name'])} repeats: {escape(summary['text'])}[/]", highlight=False,
                          soft_wrap=True)
    compared = sum(1 for row in rows for label in others if row["ratios"].get(label))
    if compared > 1:
        console.print(f"  [dim]the verdict is the headline's; the other {compared - 1} ratio(s) are judged each at "
                      "95 %: about 1 in 20 resolves by chance alone[/]", highlight=False, soft_wrap=True)


def render(document: Mapping[str, Any]) -> str:
    sides = ", ".join(s["name"] for s in document["sides"])
    return html.render_page("compare", f"fbbench comparison: {sides}", document)


def write(document: Mapping[str, Any], path: Path) -> Path:
    path = path.expanduser().resolve()
    write_whole(path, render(document))
    return path
