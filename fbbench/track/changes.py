"""The changes of a series, found as its points come and kept under one identity.

A change is one figure's change between two neighbouring points (:mod:`fbbench.analysis.changepoints`
finds them); its identity is the series, the figure and those two points, so finding it again is
finding the same change — re-running never re-alerts. Each time points are added the series is
looked at again for every length it did not have yet, one point at a time, as if the points had
come one by one (so a bundle's or a late look gives the same answer as looking after every point):
a change found at a length records that length (``first_seen``); a change no longer found is not
deleted but marked ``moved`` (to the change found in its stead near it) or ``withdrawn``, with
the length at which that happened — appending never moves an old change without saying so.
"""

from __future__ import annotations

import hashlib
from typing import Any

from fbbench.analysis import track as tracking
from fbbench.analysis.changepoints import Method, find_changes
from fbbench.store import ResultsStore
from fbbench.store import track as stored


def change_id(series_id: str, figure: str, before: str, after: str) -> str:
    return "c" + hashlib.sha256(f"{series_id}\0{figure}\0{before}\0{after}".encode()).hexdigest()[:15]


def _figures(points: list[stored.PointRow]) -> list[str]:
    names: dict[str, None] = {}
    for point in points:
        names |= dict.fromkeys(point.figures)
    return list(names)


def _found(series_id: str, points: list[stored.PointRow], methods: dict[str, Method],
           memos: dict[str, dict[int, Any]]) -> dict[str, stored.ChangeRow]:
    """The changes in ``points`` (a series' first points), by identity; ``memos``: per figure, the
    neighbours compared for a shorter prefix (:func:`fbbench.analysis.changepoints.find_changes`)."""
    found: dict[str, stored.ChangeRow] = {}
    length = len(points)
    for name in _figures(points):
        kinds = {p.figures[name].get("kind") for p in points if name in p.figures}
        kind = tracking.COUNTER if tracking.COUNTER in kinds else tracking.FIGURE
        method = methods[kind]
        samples = [(p.figures.get(name) or {}).get("samples") for p in points]
        better = next((p.figures[name].get("better") for p in points if p.figures.get(name, {}).get("better")), None)
        for change in find_changes(samples, method, memos.setdefault(name, {})):
            before, after = points[change.index - 1], points[change.index]
            identity = change_id(series_id, name, before.point_id, after.point_id)
            detail = {**change.to_dict(), "kind": kind, "better": better, "parameters": method.to_dict()}
            found[identity] = stored.ChangeRow(identity, series_id, name, before.point_id, after.point_id, length,
                                               "current", None, None, detail)
    return found


def evaluate(store: ResultsStore, series: stored.SeriesRow, methods: dict[str, Method]) -> list[stored.ChangeRow]:
    """Look at the series for each length it has not been looked at yet; returns the changes
    first found now (in the order found). ``methods``: figure kind → how changes are found."""
    if series.evaluated >= stored.point_count(store, series.series_id):  # nothing new: the points stay unread
        return []
    points = stored.points_of(store, series.series_id)
    every = {c.change_id: c for c in stored.changes_of(store, series.series_id)}
    current = {identity: c for identity, c in every.items() if c.state == "current"}
    added: list[stored.ChangeRow] = []
    updated: dict[str, stored.ChangeRow] = {}
    memos: dict[str, dict[int, Any]] = {}
    for length in range(max(series.evaluated, 1) + 1, len(points) + 1):
        found = _found(series.series_id, points[:length], methods, memos)
        new = [identity for identity in found if identity not in current]
        for identity in new:
            if identity in every:  # found again where it once was: the same change, current again
                revived = every[identity]
                revived.state, revived.ended_at, revived.moved_to = "current", None, None
                updated[identity] = current[identity] = revived
            else:
                every[identity] = current[identity] = found[identity]
                added.append(found[identity])
        for identity in [i for i in current if i not in found]:
            gone = current.pop(identity)
            window = methods[gone.detail.get("kind", tracking.FIGURE)].window
            place = {p.point_id: n for n, p in enumerate(points)}
            near = [i for i in new if found[i].figure == gone.figure
                    and abs(place[found[i].after_point] - place[gone.after_point]) <= window]
            gone.state = "moved" if near else "withdrawn"
            gone.ended_at, gone.moved_to = length, (near[0] if near else None)
            updated[identity] = gone
    stored.save_evaluation(store, series.series_id, len(points), added,
                           [c for i, c in updated.items() if c not in added])
    series.evaluated = len(points)
    return [c for c in added if c.state == "current"]


def methods_of(suite_method: Method, counter_method: Method) -> dict[str, Method]:
    return {tracking.FIGURE: suite_method, tracking.COUNTER: counter_method}


def evaluate_suite(store: ResultsStore, suite_name: str, methods: dict[str, Method]) -> None:
    """Look at every series of the suite that has points not looked at yet (after an import)."""
    for series in stored.series_of(store, suite_name):
        evaluate(store, series, methods)
