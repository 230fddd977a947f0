"""Which series a point belongs to, and a suite's series as a document.

A series is one benchmark of one suite, of one kind (absolute, or relative to one reference
build), over the suite's axis: the engine build (``axis = "engine"``) or the workload's files
(``axis = "workload"``, an application's commits). A point joins the newest series of its kind
whose last point's conditions equal its own but for the axis and what follows from it (an engine's
ODS, its firebird.conf defaults); the host is a condition like any other, so hosts are never
pooled. A point whose conditions differ elsewhere starts a new series, which keeps the
differences as the reason it began — never silently joining one.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from fbbench.analysis import conditions as cond
from fbbench.analysis import track as tracking
from fbbench.store import ResultsStore
from fbbench.store import track as stored
from fbbench.store.model import StoredRun
from fbbench.track.suite import Suite

AXIS_FACTORS = {"engine": "engine", "workload": "workload.hash"}


def point_conditions(runs: list[StoredRun]) -> cond.Conditions:
    """The conditions a point's runs share (a series record: a fixed seed is one)."""
    return cond.series_record([cond.record(run) for run in runs])[0]


def build_identity(record: cond.Conditions) -> str:
    """A build as the conditions know it: its version string, and the hash of its binaries where
    the run recorded one (two names for the same files are the same build)."""
    parts = [record.get("engine.build") or record.get("engine.version") or "unknown build"]
    if record.get("engine.binaries"):
        parts.append(str(record["engine.binaries"]))
    return " ".join(parts)


def _shown(rows: list[cond.DiffRow], limit: int = 6) -> str:
    text = "; ".join(f"{row.key} ({row.shown()})" for row in rows[:limit])
    return text + (f"; and {len(rows) - limit} more" if len(rows) > limit else "")


def series_for(store: ResultsStore, suite: Suite, benchmark: str, kind: str, reference_build: str | None,
               record: cond.Conditions) -> tuple[str, str | None]:
    """The series a point with ``record`` joins, made when there is none; and, for a new series
    after others of the benchmark, why it did not join one."""
    factor = AXIS_FACTORS[suite.axis]
    known = stored.series_of(store, suite.name, benchmark)
    reasons: list[str] = []
    for series in reversed(known):
        if series.kind != kind or series.axis != suite.axis:
            reasons.append(f"series {series.series_id} holds {series.kind} points over the {series.axis}")
            continue
        if series.reference_build != reference_build:
            reasons.append(f"series {series.series_id} is relative to another reference build "
                           f"({series.reference_build})")
            continue
        points = stored.points_of(store, series.series_id)
        if not points:
            continue
        last = cond.from_json(points[-1].conditions)
        rows = cond.differences_outside({"last point": last, "this point": record}, factor)
        if not rows:
            return series.series_id, None
        reasons.append(f"series {series.series_id} (last point {points[-1].label}) differs in {_shown(rows)}")
    reason = None if not known else "a new series: " + reasons[0]
    digest = hashlib.sha256(f"{suite.name}/{benchmark}/{time.time_ns()}".encode()).hexdigest()[:8]
    series_id = f"t{time.strftime('%Y%m%d-%H%M%S')}-{digest}"
    stored.add_series(store, stored.SeriesRow(series_id, suite.name, benchmark, kind, suite.axis, reference_build,
                                              time.time(), reason, 0))
    return series_id, reason


def point_document(point: stored.PointRow) -> dict[str, Any]:
    # Not dataclasses.asdict: its deep copy of every figure's samples cost 1.3 s for 1,000 points.
    return {key: getattr(point, key) for key in ("point_id", "label", "engine", "engine_build", "engine_binaries",
                                                 "reference", "created_at", "series_a", "series_b", "figures",
                                                 "plans", "runs")}


def change_document(change: stored.ChangeRow, points: dict[str, dict[str, Any]]) -> dict[str, Any]:
    before, after = points.get(change.before_point), points.get(change.after_point)
    figure = (after or {}).get("figures", {}).get(change.figure, {})
    return {"change_id": change.change_id, "figure": change.figure, "kind": change.detail.get("kind"),
            "better": figure.get("better") or change.detail.get("better"),
            "before": {"point_id": change.before_point, "label": (before or {}).get("label")},
            "after": {"point_id": change.after_point, "label": (after or {}).get("label")},
            "first_seen": change.first_seen, "state": change.state, "ended_at": change.ended_at,
            "moved_to": change.moved_to, "detail": change.detail}


def series_document(store: ResultsStore, series: stored.SeriesRow) -> dict[str, Any]:
    rows = stored.points_of(store, series.series_id)
    points = [point_document(p) for p in rows]
    by_id = {p["point_id"]: p for p in points}
    changes = [change_document(c, by_id) for c in stored.changes_of(store, series.series_id)]
    current = [c for c in changes if c["state"] == "current"]
    first = rows[:1]
    record = cond.from_json(first[0].conditions) if first else None
    factor = AXIS_FACTORS.get(series.axis, series.axis)
    shared = {key: value for key, value in (record or {}).items() if cond.factor_of(key) != factor}
    return {"series_id": series.series_id, "benchmark": series.benchmark, "kind": series.kind, "axis": series.axis,
            "reference": points[0]["reference"] if points else None, "reference_build": series.reference_build,
            "reason": series.reason, "created_at": series.created_at, "host": shared.get("host.name"),
            "conditions": shared, "points": points, "changes": changes,
            "events": tracking.events(points, current)}


def suite_document(store: ResultsStore, suite: Suite) -> dict[str, Any]:
    """Every series of the suite with its points, changes and events, and the check's verdict."""
    series = [series_document(store, s) for s in stored.series_of(store, suite.name)]
    return {"format": "fbbench-track", "schema_version": tracking.SCHEMA_VERSION, "suite": suite.describe(),
            "series": series,
            "check": tracking.check(series, suite.threshold)}
