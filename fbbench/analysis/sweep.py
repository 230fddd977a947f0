"""What a sweep found, from its stored runs: each cell's series (median with its interval,
spread, p95 latency), the best cell and how sure that is, the lint across the sweep (conditions
that drifted between cells, unstable cells), the size series of a growing axis, and what the
sweep cost beyond its runs' load time. The console, the JSON and the HTML page all start from
this one document (:func:`sweep_document`; printed and drawn by :mod:`fbbench.report.sweep`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fbbench.analysis import conditions, figures, lint, lint_rules, stats
from fbbench.analysis.finite import finite
from fbbench.analysis.host_conditions import host_name
from fbbench.store.model import StoredRun

SCHEMA_VERSION = 1


def _p95_ms(run: StoredRun) -> float | None:
    """p95 latency over every unit of the run's measured period (the histograms merge exactly)."""
    histograms = [histogram for unit in (run.get("units") or {}).values() if (histogram := unit.get("histogram"))]
    return figures.latency_ms(histograms).get("p95")


def _headline(run: StoredRun) -> float | None:
    value = ((run.get("summary") or {}).get("headline") or {}).get("result")
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _summary(values: list[float]) -> dict[str, Any] | None:
    if not values:
        return None
    summary = stats.summarize(values)
    return {"n": summary.n, "median": summary.median, "low": finite(summary.low), "high": finite(summary.high),
            "cv": finite(summary.cv), "spread": finite(summary.spread), "min": summary.minimum,
            "max": summary.maximum, "text": summary.text}


def sweep_document(sweep: Mapping[str, Any], runs: Mapping[str, StoredRun]) -> dict[str, Any]:
    """The sweep's document (``ResultsStore.load_sweep``) from its runs (run id → ``load_run``)."""
    spec = sweep["spec"]
    headline = next(((r.get("summary") or {}).get("headline") for r in runs.values()
                     if (r.get("summary") or {}).get("headline")), None) or {"name": "score", "unit": "/min",
                                                                              "better": "higher"}
    lab = spec.get("lab") or {}
    # A lab's sweep without a host axis ran every cell on every host: hosts are blocks, compared
    # within and combined, never pooled (docs/compare-result.md, "Hosts as blocks").
    hosts: list[str] = list(lab.get("hosts") or []) if lab.get("blocks") and len(lab.get("hosts") or []) > 1 else []
    cells = []
    for cell in spec.get("cells", []):
        index = cell["index"]
        members = [runs[r["run_id"]] for r in sweep["runs"] if r["cell"] == index]
        completed = [run for run in members if run["status"] == "completed" and _headline(run) is not None]
        values = [_headline(run) for run in completed]
        latencies = [v for v in (_p95_ms(run) for run in completed) if v is not None]
        label = ", ".join(f"{key}={value}" for key, value in cell["values"].items()) or "baseline"
        per_host = {host: _summary([_headline(run) for run in completed  # type: ignore[misc]
                                    if host_name(run) == host]) for host in hosts}
        cells.append({
            "index": index, "label": label, "values": cell["values"],
            "hosts": per_host if hosts else None,
            "host_level": _host_level(per_host) if hosts else None,
            "runs": [{"run_id": run["run_id"], "repeat_index": run.get("repeat_index"), "status": run["status"],
                      "host": host_name(run),
                      "headline": _headline(run), "p95_ms": _p95_ms(run),
                      "database_bytes": ((run.get("database") or {}).get("after") or {}).get("size_bytes"),
                      "load": {k: (run.get("load") or {}).get(k) for k in ("source", "mb_per_second",
                                                                          "grown_bytes", "load_seconds")}}
                     for run in members],
            "summary": _summary(values),  # type: ignore[arg-type]
            "p95_ms_median": sorted(latencies)[len(latencies) // 2] if latencies else None,
            "not_completed": len(members) - len(completed),
        })
    document: dict[str, Any] = {
        "format": "fbbench-sweep", "schema_version": SCHEMA_VERSION,
        "sweep_id": sweep["sweep_id"], "status": sweep["status"],
        "created_at": sweep["created_at"], "ended_at": sweep["ended_at"], "mode": spec.get("mode"),
        "repeats": spec.get("repeats"), "axes": spec.get("axes", []), "base": spec.get("base", {}),
        "headline": {k: headline.get(k) for k in ("name", "unit", "better", "per", "description")},
        "cells": cells,
        "blocks": {"hosts": hosts} if hosts else None,
    }
    document["best"] = _best(cells, headline, hosts)
    if spec.get("mode") == "one_at_a_time":
        document["one_at_a_time"] = _one_at_a_time(cells, spec.get("baseline") or {}, headline)
    document.update(_credibility(spec, sweep, runs, bool(hosts)))
    document["overhead"] = _overhead(sweep, runs)
    grow = next((axis for axis in spec.get("axes", []) if axis.get("grow")), None)
    document["size_series"] = _size_series(cells, grow["key"]) if grow else None
    return finite(document)  # a ratio without an interval has NaN ends: JSON has no NaN


def _host_level(per_host: Mapping[str, dict[str, Any] | None]) -> float | None:
    """A cell's level over its hosts: the geometric mean of each host's median, every host
    weighing the same (None unless every host has one)."""
    medians = [summary["median"] for summary in per_host.values() if summary]
    if not medians or len(medians) != len(per_host) or min(medians) <= 0:
        return None
    return math.exp(sum(math.log(m) for m in medians) / len(medians))


def _completed(cell: Mapping[str, Any], host: str | None = None) -> list[float]:
    return [run["headline"] for run in cell["runs"] if run["status"] == "completed" and run["headline"]
            and (host is None or run["host"] == host)]


def _best(cells: list[dict[str, Any]], headline: Mapping[str, Any], hosts: list[str]) -> dict[str, Any] | None:
    """The best cell by its median (hosts as blocks: by its level over the hosts), and whether it
    is distinguishable from the runner-up (within each host, combined)."""
    def level(cell: Mapping[str, Any]) -> float | None:
        return cell["host_level"] if hosts else (cell["summary"] or {}).get("median")

    ranked = [cell for cell in cells if level(cell) is not None]
    if not ranked:
        return None
    lower = headline.get("better") == "lower"
    ranked.sort(key=lambda cell: level(cell) or 0.0, reverse=not lower)
    best = ranked[0]
    result: dict[str, Any] = {"cell": best["index"], "label": best["label"], "median": level(best),
                              "n": (best["summary"] or {}).get("n")}
    if len(ranked) > 1:
        runner = ranked[1]
        a, b = _completed(runner), _completed(best)
        if hosts:
            pairs = {host: (_completed(runner, host), _completed(best, host)) for host in hosts}
            enough = all(len(x) > 1 and len(y) > 1 for x, y in pairs.values())
            estimate = stats.combine_hosts({host: stats.ratio_of_series(x, y) for host, (x, y) in pairs.items()}) \
                if enough else None
        else:
            estimate = stats.ratio_of_series(a, b) if len(a) > 1 and len(b) > 1 else None
        if estimate is None:
            result["versus_runner_up"] = (f"one run per cell: whether {best['label']} beats {runner['label']} "
                                          "cannot be told (give the sweep repeats)")
            result["resolved"] = None  # nothing to test, so neither resolved nor "not distinguishable"
        else:
            verdict = stats.verdict_for(estimate, headline, a=runner["label"], b=best["label"])
            result["versus_runner_up"] = verdict.text
            result["resolved"] = verdict.resolved
            result["ratio"] = estimate.to_dict()
        result["runner_up"] = {"cell": runner["index"], "label": runner["label"], "median": level(runner)}
    return result


def _versus(base: Mapping[str, Any], other: Mapping[str, Any], headline: Mapping[str, Any]) -> dict[str, Any]:
    a = [run["headline"] for run in base["runs"] if run["status"] == "completed" and run["headline"]]
    b = [run["headline"] for run in other["runs"] if run["status"] == "completed" and run["headline"]]
    if len(a) < 2 or len(b) < 2:
        return {"text": "too few completed repeats to tell (give the sweep repeats)", "resolved": None}
    estimate = stats.ratio_of_series(a, b)
    verdict = stats.verdict_for(estimate, headline, a="the baseline", b=other["label"])
    return {"text": verdict.text, "resolved": verdict.resolved, "ratio": estimate.to_dict()}


def _one_at_a_time(cells: list[dict[str, Any]], baseline: Mapping[str, Any],
                   headline: Mapping[str, Any]) -> dict[str, Any] | None:
    """The config advisor: each axis's values against the baseline, and the best combination
    against the baseline — saying plainly when nothing is distinguishable."""
    base = next((cell for cell in cells if cell["values"] == dict(baseline)), None)
    if base is None:
        return None
    steps = []
    for cell in cells:
        differing = [key for key, value in cell["values"].items() if baseline.get(key) != value]
        if cell is base or not differing:
            continue
        kind = "one factor" if len(differing) == 1 else "best combination"
        steps.append({"cell": cell["index"], "label": cell["label"], "kind": kind, **_versus(base, cell, headline)})
    combination = next((step for step in steps if step["kind"] == "best combination"), None)
    resolved = [step for step in steps if step["resolved"]]
    if combination is not None:
        conclusion = (f"the best combination ({combination['label']}) is not distinguishable from the baseline: "
                      f"{combination['text']}" if combination["resolved"] is False else
                      f"the best combination ({combination['label']}): {combination['text']}")
    elif steps and all(step["resolved"] is None for step in steps):
        conclusion = "too few completed repeats to tell any setting tried from the baseline (give the sweep repeats)"
    elif not resolved:
        conclusion = "no setting tried is distinguishable from the baseline"
    else:
        conclusion = "the best combination is the baseline or one of the cells already run"
    return {"baseline_cell": base["index"], "steps": steps, "conclusion": conclusion}


def _credibility(spec: Mapping[str, Any], sweep: Mapping[str, Any], runs: Mapping[str, Any],
                 blocks: bool = False) -> dict[str, Any]:
    """The sweep's conditions (what every cell shares, where the cells differ) and its lint:
    conditions that differ between cells other than the sweep's own axes, runs of one cell that
    differ, and each run's own findings (unstable, too short, failed…), each with its scope
    (``sweep``, ``series`` for a cell, ``run``) and side (the cell), then grouped by rule and cell."""
    by_cell: dict[int, list[Any]] = {}
    for item in sweep["runs"]:
        run = runs[item["run_id"]]
        if run["status"] == "completed":
            by_cell.setdefault(item["cell"], []).append(run)
    found: list[dict[str, Any]] = []
    records = {}
    for index, members in sorted(by_cell.items()):
        record_list = [conditions.without_host(conditions.record(run)) if blocks else conditions.record(run)
                       for run in members]
        label = f"cell {index}"
        found += [{**f.to_dict(), "scope": "series", "side": label, "excluded": False}
                  for f in lint.lint_series(record_list, label)]
        records[label], _ = conditions.series_record(record_list)
    axes = [axis["key"] for axis in spec.get("axes", [])]
    if len(records) > 1:
        found += [{**f.to_dict(), "scope": "sweep", "side": None, "excluded": False}
                  for f in lint.lint_comparison(records, axes) if f.rule != "FB010" or len(axes) == 0]
    for item in sweep["runs"]:
        found += [{**f.to_dict(), "scope": "run", "side": f"cell {item['cell']}", "excluded": False}
                  for f in lint.lint_run(runs[item["run_id"]]) if f.severity != "note"]
    order = {"error": 0, "warning": 1, "note": 2}
    found.sort(key=lambda f: order.get(f["severity"], 3))
    cells = {f"cell {cell['index']}": ("series", sum(1 for item in sweep["runs"] if item["cell"] == cell["index"]))
             for cell in spec.get("cells", [])}
    rows = conditions.diff(records) if len(records) > 1 else []
    try:
        on_axis, others = conditions.axis(rows, axes or None)
    except conditions.AxisError:  # an axis whose cells all failed: no difference to show it by
        on_axis, others = [], rows
    first: Mapping[str, str] = next(iter(records.values()), {})
    return {
        "conditions": {"axis": [{"key": row.key, "values": row.values, "follows": row.follows} for row in on_axis],
                       "differences": [{"key": row.key, "values": row.values, "follows": row.follows}
                                       for row in others],
                       "equal": {key: value for key, value in first.items()
                                 if key not in {row.key for row in rows}}},
        "lint": finite(found),
        "lint_groups": finite(lint_rules.grouped(found, cells)),
    }


def _overhead(sweep: Mapping[str, Any], runs: Mapping[str, Any]) -> dict[str, Any] | None:
    """Wall time of the sweep's completed runs against their load time (warm-up + measured); a run
    that failed or stopped may never have warmed up."""
    load = wall = 0.0
    for item in sweep["runs"]:
        run = runs[item["run_id"]]
        if item["status"] != "completed" or not run.get("ended_at"):
            continue
        wall += run["ended_at"] - run["started_at"]
        load += ((run.get("settings") or {}).get("warmup") or 0) if (run.get("settings") or {}).get(
            "transactions") is None else 0
        load += (run.get("summary") or {}).get("measured_seconds") or 0
    if load <= 0:
        return None
    between = (sweep.get("result") or {}).get("wall_seconds")
    return {"runs_wall_seconds": wall, "load_seconds": load, "share": (wall - load) / load,
            "sweep_wall_seconds": between}


def _size_series(cells: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """Per size of the growing axis: database size, load speed of the step, the headline."""
    points = []
    for cell in cells:
        completed = [run for run in cell["runs"] if run["status"] == "completed"]
        # A run stopped before its population was done has no source (None).
        grown = next((run["load"] for run in cell["runs"] if ((run["load"] or {}).get("source") or "").startswith(
            ("grown", "built"))), None)
        points.append({"size": cell["values"].get(key), "cell": cell["index"],
                       "database_bytes": max((run["database_bytes"] or 0 for run in completed), default=None),
                       "load_mb_per_second": (grown or {}).get("mb_per_second"),
                       "load_source": (grown or {}).get("source"),
                       "headline": (cell["summary"] or {}).get("median"),
                       "p95_ms": cell["p95_ms_median"]})
    return points
