"""Track series, points and changes in the results store (schema 9, :mod:`fbbench.store.schema`).

A point is written whole, once its runs are all in: a point half made is never recorded. Changes
are written as they are found, and never deleted: a change that moves or disappears as points
come keeps its row, with its state saying what became of it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fbbench.store.results import ResultsStore, store_error


@dataclass
class SeriesRow:
    series_id: str
    suite: str
    benchmark: str
    kind: str
    axis: str
    reference_build: str | None
    created_at: float
    reason: str | None
    evaluated: int


@dataclass
class PointRow:
    point_id: str
    series_id: str
    suite: str
    benchmark: str
    label: str
    engine: str
    engine_build: str | None
    engine_binaries: str | None
    reference: str | None
    created_at: float
    series_a: str | None
    series_b: str | None
    conditions: dict[str, Any]
    figures: dict[str, dict[str, Any]]
    plans: dict[str, Any] = field(default_factory=dict)
    runs: dict[str, list[str]] = field(default_factory=dict)  # "B": the build's runs, "A": the reference's


@dataclass
class ChangeRow:
    change_id: str
    series_id: str
    figure: str
    before_point: str
    after_point: str
    first_seen: int
    state: str  # current / moved / withdrawn
    ended_at: int | None
    moved_to: str | None
    detail: dict[str, Any]


def _rows(store: ResultsStore, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """The rows of a read, or one line when the store cannot give them (damaged, locked, not ours)."""
    try:
        return store.db.execute(sql, tuple(args)).fetchall()
    except sqlite3.DatabaseError as error:
        raise store_error(store.path, error, "read") from None


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str)  # in the order made: a point's figures are listed as the suite names them


def add_series(store: ResultsStore, row: SeriesRow) -> None:
    with store.transaction() as db:
        db.execute("insert into track_series (series_id, suite, benchmark, kind, axis, reference_build, created_at, "
                   "reason, evaluated) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (row.series_id, row.suite, row.benchmark, row.kind, row.axis, row.reference_build, row.created_at,
                    row.reason, row.evaluated))


def add_point(store: ResultsStore, row: PointRow) -> None:
    with store.transaction() as db:
        db.execute("insert into track_points (point_id, series_id, suite, benchmark, label, engine, engine_build, "
                   "engine_binaries, reference, created_at, series_a, series_b, conditions_json, figures_json, "
                   "plans_json, runs_json) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (row.point_id, row.series_id, row.suite, row.benchmark, row.label, row.engine, row.engine_build,
                    row.engine_binaries, row.reference, row.created_at, row.series_a, row.series_b,
                    _dumps(row.conditions), _dumps(row.figures), _dumps(row.plans), _dumps(row.runs)))


_SERIES_COLUMNS = "series_id, suite, benchmark, kind, axis, reference_build, created_at, reason, evaluated"
_POINT_COLUMNS = ("point_id, series_id, suite, benchmark, label, engine, engine_build, engine_binaries, reference, "
                  "created_at, series_a, series_b, conditions_json, figures_json, plans_json, runs_json")
_CHANGE_COLUMNS = ("change_id, series_id, figure, before_point, after_point, first_seen, state, ended_at, moved_to, "
                   "detail_json")


def series_of(store: ResultsStore, suite: str, benchmark: str | None = None) -> list[SeriesRow]:
    """The suite's series (of one benchmark), oldest first."""
    sql = f"select {_SERIES_COLUMNS} from track_series where suite = ?"
    args: list[Any] = [suite]
    if benchmark is not None:
        sql += " and benchmark = ?"
        args.append(benchmark)
    return [SeriesRow(*row) for row in _rows(store, sql + " order by created_at, series_id", args)]


def suites(store: ResultsStore) -> list[str]:
    return [row[0] for row in _rows(store, "select distinct suite from track_series order by suite")]


def _point(row: tuple[Any, ...]) -> PointRow:
    *head, conditions, figures, plans, runs = row
    fields: list[Any] = [*head, json.loads(conditions), json.loads(figures), json.loads(plans) if plans else {},
                         json.loads(runs)]
    return PointRow(*fields)


def points_of(store: ResultsStore, series_id: str) -> list[PointRow]:
    """A series' points in the order they were made."""
    return [_point(row) for row in _rows(store,
        f"select {_POINT_COLUMNS} from track_points where series_id = ? order by created_at, point_id", (series_id,))]


def point_count(store: ResultsStore, series_id: str) -> int:
    return int(_rows(store, "select count(*) from track_points where series_id = ?", (series_id,))[0][0])


def points_of_suite(store: ResultsStore, suite: str) -> list[PointRow]:
    return [_point(row) for row in _rows(store,
        f"select {_POINT_COLUMNS} from track_points where suite = ? order by created_at, point_id", (suite,))]


def _change(row: tuple[Any, ...]) -> ChangeRow:
    fields: list[Any] = [*row[:-1], json.loads(row[-1])]
    return ChangeRow(*fields)


def changes_of(store: ResultsStore, series_id: str) -> list[ChangeRow]:
    """Every change ever found in a series (current, moved and withdrawn), in the order found."""
    return [_change(row) for row in _rows(store,
        f"select {_CHANGE_COLUMNS} from track_changes where series_id = ? order by first_seen, change_id",
        (series_id,))]


def save_evaluation(store: ResultsStore, series_id: str, evaluated: int, added: Iterable[ChangeRow],
                    ended: Iterable[ChangeRow]) -> None:
    """What one look at a series found, written at once: new changes, changes that moved or were
    withdrawn (their new state), and how many of its points have now been looked at."""
    with store.transaction() as db:
        for change in added:
            db.execute(f"insert into track_changes ({_CHANGE_COLUMNS}) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (change.change_id, change.series_id, change.figure, change.before_point, change.after_point,
                        change.first_seen, change.state, change.ended_at, change.moved_to, _dumps(change.detail)))
        for change in ended:
            db.execute("update track_changes set state = ?, ended_at = ?, moved_to = ? where change_id = ?",
                       (change.state, change.ended_at, change.moved_to, change.change_id))
        db.execute("update track_series set evaluated = ? where series_id = ?", (evaluated, series_id))
