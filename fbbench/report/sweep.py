"""A sweep's document (:mod:`fbbench.analysis.sweep`) on the console and as a page."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fbbench.paths import write_whole
from fbbench.report import html


def print_sweep(document: Mapping[str, Any], console: Console) -> None:
    head = document["headline"]
    unit = head.get("unit") or ""
    direction = "higher is better" if head.get("better", "higher") == "higher" else "lower is better"
    console.print(f"\n[bold]sweep {document['sweep_id']}[/] — {document['status']}; {len(document['cells'])} "
                  f"cell(s) × {document['repeats']} repeat(s); {escape(head.get('name') or 'score')} ({direction})")
    hosts = (document.get("blocks") or {}).get("hosts") or []
    if hosts:
        console.print(f"hosts are blocks ({escape(', '.join(hosts))}): every cell ran on each; cells are compared "
                      "within each host and the hosts' ratios combined, never pooled", highlight=False)
    table = Table(title_justify="left")
    for column in ("cell", "settings", "runs", f"{head.get('name') or 'score'} median", "95 % CI", "spread",
                   *(f"{host} median" for host in hosts), "p95 ms"):
        table.add_column(column, justify="left" if column in ("cell", "settings") else "right")
    unrun = [cell["index"] for cell in document["cells"] if _never_ran(cell)]
    # A huge sweep interrupted early (10,000 cells, one run done): a row for every cell not yet run
    # took rich 12 s to lay out and said nothing; they are counted below instead.
    folded = set(unrun) if len(unrun) > UNRUN_ROWS_SHOWN else set()
    for cell in document["cells"]:
        if cell["index"] in folded:
            continue
        summary = cell["summary"] or {}
        ci = (f"{summary['low']:,.0f}–{summary['high']:,.0f}" if summary.get("low") is not None else "–")
        spread = f"±{summary['spread'] * 50:.1f} %" if summary.get("spread") is not None else "–"
        runs = f"{summary.get('n', 0)}" + (f" (+{cell['not_completed']} not completed)" if cell["not_completed"]
                                           else "")
        per_host = [f"{(cell['hosts'] or {}).get(host)['median']:,.0f}{unit}"  # type: ignore[index]
                    if (cell["hosts"] or {}).get(host) else "–" for host in hosts]
        table.add_row(str(cell["index"]), escape(cell["label"]), runs,
                      f"{summary['median']:,.0f}{unit}" if summary else "–", ci, spread, *per_host,
                      f"{cell['p95_ms_median']:,.2f}" if cell["p95_ms_median"] is not None else "–")
    console.print(table)
    if folded:
        console.print(f"{len(folded):,} cell(s) with no run yet are not listed here ({_ranges(unrun)}); "
                      "the JSON and HTML reports list every cell", highlight=False)
    best = document.get("best")
    if best:
        figure = "level over the hosts" if hosts else "one run" if best.get("n") == 1 else "median"
        console.print(f"best: cell {best['cell']} ({escape(best['label'])}), {figure}: {best['median']:,.0f}{unit}")
        if best.get("versus_runner_up"):
            sure = "[yellow]not distinguishable from the runner-up:[/] " if best.get("resolved") is False else ""
            console.print(f"  {sure}{escape(best['versus_runner_up'])}")
    advisor = document.get("one_at_a_time")
    if advisor:
        console.print(f"one factor at a time, against the baseline (cell {advisor['baseline_cell']}):")
        for step in advisor["steps"]:
            console.print(f"  cell {step['cell']} ({escape(step['label'])}): {escape(step['text'])}")
        console.print(f"[bold]{escape(advisor['conclusion'])}[/]")
    groups = document.get("lint_groups", [])
    for group in groups[:12]:
        colour = {"error": "red", "warning": "yellow"}.get(group["severity"], "dim")
        console.print(f"  [{colour}]{group['rule']} {group['severity']}[/] {escape(group['about'])}: "
                      f"{escape(group['message'])}", highlight=False, soft_wrap=True)
    if len(groups) > 12:
        console.print(f"  … and {len(groups) - 12} more in the report")
    overhead = document.get("overhead")
    if overhead:
        console.print(f"sweep overhead: the runs took {overhead['runs_wall_seconds']:,.0f} s for "
                      f"{overhead['load_seconds']:,.0f} s of warm-up and measurement: "
                      f"+{overhead['share'] * 100:.1f} % (population, start-up, checks, reports)")


UNRUN_ROWS_SHOWN = 20  # more cells than this with no run are counted, not listed, on the console


def _never_ran(cell: Mapping[str, Any]) -> bool:
    return not cell["runs"]


def _ranges(indices: list[int]) -> str:
    """1, 2, 3, 5, 7, 8 → "cells 1–3, 5, 7–8"; at most eight ranges, then "…"."""
    spans: list[list[int]] = []
    for index in indices:
        if spans and index == spans[-1][1] + 1:
            spans[-1][1] = index
        else:
            spans.append([index, index])
    said = [f"{first}" if first == last else f"{first}–{last}" for first, last in spans[:8]]
    return "cells " + ", ".join(said) + (", …" if len(spans) > 8 else "")


def write(document: Mapping[str, Any], path: Path) -> Path:
    path = path.expanduser().resolve()
    write_whole(path, html.render_page("sweep", f"fbbench sweep {document['sweep_id']}", document))
    return path
