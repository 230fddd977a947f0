"""Track series as documents: the figures a point holds, the plans that changed between two
points, what a change moved with (its likely cause), and the verdict of ``fbbench track check``.

Pure functions over what the results store holds (:mod:`fbbench.store.track`); the changes
themselves are found by :mod:`fbbench.analysis.changepoints` and kept by :mod:`fbbench.track.changes`.

**Figures.** Every figure ``compare`` shows can be tracked — the workload's headline, its other
figures and DB-side metrics, the score, TPM, a unit's throughput and its p50/p95/p99 latency,
conflicts and errors — under the name ``compare`` gives it. Beside them a point always holds the
engine's work per unit the load ran (:data:`COUNTERS`: page fetches, reads, writes and marks,
records read naturally and by index), the **counters**: with a fixed seed, fixed work and one
attachment they repeat almost exactly run to run on one build, so a plan or access-path change
shows in them as a step with next to no noise, long before a timing resolves it.

**A point's samples.** An absolute point: the figure of each of its runs. A relative point
(``--reference``): the per-pair ratio build / reference of each time-shared pair, free of the
machine's drift. Its value: the median with its exact 95 % interval (six samples or more), the
geometric mean with a t interval on logs (two to five), as
:func:`fbbench.analysis.stats.ratio_of_ratios` gives them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from fbbench.errors import FbbenchError
from fbbench.store.model import StoredRun

SCHEMA_VERSION = 1  # of the track document: docs/tracking.md
COUNTERS = ("page_fetches", "page_reads", "page_writes", "page_marks", "idx_reads", "seq_reads")
# Which way is worse is not theirs to say: records read by index instead of naturally is the
# access path changing (an index used, or lost), which the page fetches judge. They name a cause
# and never fail a check by themselves.
ACCESS_PATH = ("idx_reads", "seq_reads")
NEITHER = "neither"
FIGURE, COUNTER = "figure", "counter"


def counter_names() -> dict[str, str]:
    """The counters as ``compare`` names them ("page fetches per unit"), by their short names."""
    # Imported here, as in every function that needs them: publishing a site reads stored figures
    # and needs neither compare's definitions nor numpy, whose import cost a third of a publish.
    from fbbench.analysis.comparison import engine_defs

    defs = {d.definition: d.name for d in engine_defs()}
    return {key: defs[key] for key in COUNTERS}


def figure_names(workload: Any, fixed_work: bool) -> dict[str, str]:
    """Every name a suite may track for a workload's runs (lower case) → the figure's name as
    ``compare`` and the point show it; ``headline`` stands for the workload's headline."""
    names: dict[str, str] = {"headline": workload.headline(fixed_work).name}
    for figure in (*workload.headlines, *workload.figures):
        if figure.applies(fixed_work):
            names[figure.name] = figure.name
    for metric in workload.metrics:
        names[metric.name] = metric.name
        names[f"metrics.{metric.name}"] = metric.name
    for name in ("score", "TPM", "conflicts", "errors"):
        names[name] = name
    for unit in workload.units:
        for suffix in ("ok", "p50", "p95", "p99"):
            names[f"{unit.name} {suffix}"] = f"{unit.name} {suffix}"
    for key, name in counter_names().items():
        names[key] = name
        names[name] = name
    return {key.lower(): value for key, value in names.items()}


def resolve_figures(wanted: Sequence[str], workload: Any, fixed_work: bool, where: str) -> list[str]:
    """The figures a benchmark tracks (the counters appended), or one line naming a figure its
    workload does not produce, with those it does."""
    known = figure_names(workload, fixed_work)
    resolved: list[str] = []
    for text in wanted:
        name = known.get(text.strip().lower())
        if name is None:
            shown = sorted({value for key, value in known.items() if key != "headline"})
            raise FbbenchError(f"{where}: figure '{text}' is not one workload {workload.name} produces",
                               hint="its figures: headline, " + ", ".join(shown))
        if name not in resolved:
            resolved.append(name)
    resolved += [name for name in counter_names().values() if name not in resolved]
    return resolved


def _center(samples: Sequence[float]) -> dict[str, Any]:
    from fbbench.analysis import stats

    estimate = stats.ratio_of_ratios(samples)
    return {"value": estimate.ratio, "low": estimate.low, "high": estimate.high, "n": len(samples),
            "method": estimate.method.replace("per-pair ratios", "samples")}


def read_point(names: Sequence[str], runs_b: Sequence[StoredRun],
               runs_a: Sequence[StoredRun] | None = None) -> dict[str, dict[str, Any]]:
    """Each tracked figure of a point: its samples (per run, or per pair build / reference), value
    and interval, unit, which way is better, whether it is a counter; ``missing`` when a run did
    not produce it (a counter without the sampler, a unit that never ran)."""
    from fbbench.analysis.comparison import engine_defs, figure_defs

    runs = [*runs_b, *(runs_a or [])]
    defs = {d.name: d for d in [*figure_defs(runs), *engine_defs()]}
    counters = set(counter_names().values())
    figures: dict[str, dict[str, Any]] = {}
    for name in names:
        definition = defs.get(name)
        entry: dict[str, Any] = {"kind": COUNTER if name in counters else FIGURE}
        if definition is None:
            figures[name] = {**entry, "missing": "no run of the point produced it"}
            continue
        neutral = {counter_names()[key] for key in ACCESS_PATH}
        entry.update(better=NEITHER if name in neutral else definition.better, unit=definition.unit)
        built = [definition.value(run) for run in runs_b]
        entry["build"] = built
        if any(v is None or not math.isfinite(float(v)) for v in built):
            figures[name] = {**entry, "missing": "a run of the point did not produce it"}
            continue
        samples = [float(v) for v in built]  # type: ignore[arg-type]
        if runs_a is not None:
            reference = [definition.value(run) for run in runs_a]
            entry["reference"] = reference
            if any(v is None or not float(v) > 0 for v in reference) or any(v <= 0 for v in samples):
                figures[name] = {**entry, "missing": "a pair has no positive value on a side: no ratio"}
                continue
            samples = [b / float(a) for b, a in zip(samples, reference, strict=True)]  # type: ignore[arg-type]
        if not samples or any(v <= 0 for v in samples):
            figures[name] = {**entry, "missing": "zero or negative: nothing to follow as a ratio"}
            continue
        figures[name] = {**entry, "samples": samples, **_center(samples)}
    return figures


# --------------------------------------------------------------------------------------- plans


def _plan_text(entry: Mapping[str, Any]) -> str | None:
    text = entry.get("explained") or entry.get("plan")
    if not text:
        return None
    return "\n".join(line.rstrip() for line in str(text).strip().splitlines() if line.strip())


def plan_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The statements and routines whose plan differs between two points, with both plans.

    A statement is its unit and number; when its SQL changed too (an application's commit) that
    is said instead of a plan change. A routine (Firebird 5.0+) compiled on one side only is
    listed as such."""
    found: list[dict[str, Any]] = []
    old = {(s["unit"], s["statement"]): s for s in before.get("statements") or []}
    for statement in after.get("statements") or []:
        key = (statement["unit"], statement["statement"])
        name = f"{statement['unit']} statement {statement['statement']}"
        earlier = old.get(key)
        if earlier is None:
            continue
        if earlier.get("sql") != statement.get("sql"):
            found.append({"kind": "statement", "name": name, "change": "its SQL changed",
                          "sql_before": earlier.get("sql"), "sql": statement.get("sql")})
            continue
        a, b = _plan_text(earlier), _plan_text(statement)
        if a != b and (a or b):
            found.append({"kind": "statement", "name": name, "change": "plan", "sql": statement.get("sql"),
                          "before": a, "after": b})
    routines = {(r["type"], r.get("package"), r["name"]): r for r in before.get("routines") or []}
    later = {(r["type"], r.get("package"), r["name"]): r for r in after.get("routines") or []}
    for routine in sorted(set(routines) | set(later), key=lambda k: (k[0], k[1] or "", k[2])):
        kind, package, name = routine
        shown = f"{kind} {package + '.' if package else ''}{name}"
        if routine not in routines or routine not in later:
            if routines and later:  # both sides saw routines: one compiled only on one of them
                side = "after" if routine in later else "before"
                found.append({"kind": "routine", "name": shown, "change": f"compiled only {side} the change"})
            continue
        a, b = _plan_text(routines[routine]), _plan_text(later[routine])
        if a != b:
            found.append({"kind": "routine", "name": shown, "change": "plan", "before": a, "after": b})
    return found


# -------------------------------------------------------------------------------------- causes


def _moved(change: Mapping[str, Any]) -> str:
    detail = change["detail"]
    interval = ""
    if detail.get("method", "").startswith("exact"):
        interval = " (exact)"
    elif math.isfinite(detail.get("low", math.nan)) and math.isfinite(detail.get("high", math.nan)):
        interval = f" (95 % CI {_signed((detail['low'] - 1) * 100)} to {_signed((detail['high'] - 1) * 100)})"
    return f"{change['figure']} {_signed((detail['ratio'] - 1) * 100)}{interval}"


def _signed(percent: float) -> str:
    return f"{'−' if percent < 0 else '+'}{abs(percent):.1f} %"


def cause(changes: Sequence[Mapping[str, Any]], plans: Sequence[Mapping[str, Any]]) -> str:
    """What the figures that moved at one transition, and the plans that changed there, point to:
    a changed plan is named; time and the engine's work together → a plan or access-path change;
    time alone → CPU or I/O (no counter moved); the engine's work alone → time did not resolve it."""
    timed = [c for c in changes if c["kind"] == FIGURE]
    counted = [c for c in changes if c["kind"] == COUNTER]
    plan_names = [p["name"] for p in plans if p["change"] == "plan"]
    other = [f"{p['name']}: {p['change']}" for p in plans if p["change"] != "plan"]
    parts = []
    if plan_names:
        parts.append("plan changed: " + ", ".join(plan_names))
    if other:
        parts.append("; ".join(other))
    work = ", ".join(_moved(c) for c in counted)
    if timed and counted:
        parts.append(f"with it, time and the engine's work per unit moved ({work})" if plan_names else
                     f"time and the engine's work per unit moved together ({work}): a plan or access-path change")
    elif counted:
        parts.append(f"{'with it, ' if plan_names else ''}the engine's work per unit moved ({work}); no time figure "
                     "resolved a change")
    elif timed:
        parts.append("time alone moved, no counter" + (" (a plan changed)" if plan_names else " and no plan")
                     + ": CPU or I/O, not the work the engine did per unit")
    return "; ".join(parts) or "no figure moved"


# ------------------------------------------------------------------------------------ the check


def _beyond(change: Mapping[str, Any], threshold: float) -> bool:
    """A regression beyond ``threshold`` whose 95 % interval lies beyond it too."""
    detail, better = change["detail"], change.get("better", "higher")
    ratio, low, high = detail["ratio"], detail.get("low", math.nan), detail.get("high", math.nan)
    if not (math.isfinite(low) and math.isfinite(high)):
        return False
    if better == "lower":
        return ratio >= 1 + threshold and low >= 1 + threshold
    return ratio <= 1 - threshold and high <= 1 - threshold


def worse(change: Mapping[str, Any]) -> bool:
    """Whether a change goes the worse way (never for the access-path counters, :data:`ACCESS_PATH`)."""
    ratio, better = change["detail"]["ratio"], change.get("better")
    if better == NEITHER:
        return False
    return ratio > 1 if better == "lower" else ratio < 1


def check(series: Sequence[Mapping[str, Any]], threshold: float) -> dict[str, Any]:
    """``fbbench track check``: what fails (exit 1) and what is only said.

    Fails: a change the newest point of a series brought (first found when it was added — a
    change found earlier never alerts again) that is a regression beyond ``threshold`` with its
    interval beyond it; and, for a series of points relative to a reference build, a newest point
    whose own ratio to the reference is such a regression. Said, not failing: every other change
    the newest point brought, and the plans that changed at it."""
    failures: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    for entry in series:
        points = entry["points"]
        if not points:
            continue
        newest = points[-1]
        where = {"benchmark": entry["benchmark"], "series_id": entry["series_id"], "point": newest["label"]}
        events = [e for e in entry["events"] if e["after"]["point_id"] == newest["point_id"]]
        for change in entry["changes"]:
            if change["state"] != "current" or change["first_seen"] != len(points):
                continue
            event = next((e for e in entry["events"] if e["after"]["point_id"] == change["after"]["point_id"]), None)
            item = {**where, "figure": change["figure"], "change": _moved(change),
                    "between": f"{change['before']['label']} → {change['after']['label']}",
                    "cause": event["cause"] if event else None}
            if worse(change) and _beyond(change, threshold):
                failures.append({**item, "kind": "change"})
            else:
                notes.append({**item, "kind": "change", "why_not_failing": _why_not(change, threshold)})
        if entry["kind"] == "relative":
            for name, figure in newest["figures"].items():
                if "value" not in figure:
                    continue
                pseudo = {"figure": name, "better": figure.get("better"),
                          "detail": {"ratio": figure["value"], "low": figure["low"], "high": figure["high"]}}
                if worse(pseudo) and _beyond(pseudo, threshold):
                    failures.append({**where, "figure": name, "kind": "against the reference",
                                     "change": _moved(pseudo) + f" against {entry['reference']}"})
        for event in events:
            if event["plans"]:
                notes.append({**where, "kind": "plan", "plans": event["plans"], "cause": event["cause"]})
    return {"threshold": threshold, "passed": not failures, "failures": failures, "notes": notes}


def _why_not(change: Mapping[str, Any], threshold: float) -> str:
    if change.get("better") == NEITHER:
        return "the access path moved (records read by index against naturally): the page fetches judge it"
    if not worse(change):
        return "an improvement"
    detail = change["detail"]
    if not (math.isfinite(detail.get("low", math.nan)) and math.isfinite(detail.get("high", math.nan))):
        return "no interval to hold against the threshold"
    return f"within the threshold of {threshold * 100:g} % (or its interval reaches inside it)"



def events(points: Sequence[Mapping[str, Any]], changes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per transition at which a current change was found or a plan changed: the figures that
    moved together, the plans that changed, and the cause they point to."""
    found = []
    for index in range(1, len(points)):
        before, after = points[index - 1], points[index]
        moved = [c for c in changes if c["state"] == "current" and c["after"]["point_id"] == after["point_id"]]
        plans = plan_changes(before.get("plans") or {}, after.get("plans") or {})
        if not moved and not plans:
            continue
        found.append({"before": {"point_id": before["point_id"], "label": before["label"]},
                      "after": {"point_id": after["point_id"], "label": after["label"]},
                      "figures": [{"figure": c["figure"], "text": _moved(c), "p_value": c["detail"]["p_value"],
                                   "method": c["detail"]["method"]} for c in moved],
                      "plans": plans, "cause": cause(moved, plans)})
    return found
