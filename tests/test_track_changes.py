"""Changes in track series without an engine: the two methods of
:mod:`fbbench.analysis.changepoints` on known series, and a change's identity in the results
store as points come (:mod:`fbbench.track.changes`) — found once, never re-alerted, moved or
withdrawn only with a word."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from fbbench.analysis import track as tracking
from fbbench.analysis.changepoints import CHANGE_POINT, EXACT, POINT_AGAINST_POINT, Method, find_changes
from fbbench.store import ResultsStore
from fbbench.store import track as stored
from fbbench.track.changes import evaluate

FIGURE = "elapsed"


def test_short_series_are_judged_point_against_point_with_intervals_and_p_values() -> None:
    rng = np.random.default_rng(7)
    points = [list(rng.normal(100, 2, 5)) for _ in range(3)] + [list(rng.normal(110, 2, 5)) for _ in range(2)]
    [change] = find_changes(points, Method())
    assert change.index == 3 and change.method == POINT_AGAINST_POINT
    assert 1.05 < change.low < change.ratio < change.high < 1.15 and change.p_value <= 0.001


def test_counters_that_repeat_exactly_are_compared_exactly() -> None:
    points = [[1000.0] * 3, [1000.0] * 3, [1500.0] * 3]
    [change] = find_changes(points, Method(min_magnitude=0.02))
    assert (change.index, change.ratio, change.low, change.high, change.p_value, change.method) == \
        (2, 1.5, 1.5, 1.5, 0.0, EXACT)
    assert find_changes([[1000.0] * 3, [1010.0] * 3], Method(min_magnitude=0.02)) == []  # below the magnitude


def test_long_series_use_otava_and_a_flat_one_has_no_change() -> None:
    rng = np.random.default_rng(11)
    step = [[v] for v in [*rng.normal(100, 3, 30), *rng.normal(94, 3, 30)]]
    found = find_changes(step, Method())
    assert all(change.method == CHANGE_POINT for change in found)
    # Otava's segmentation may split a segment more than once; the step itself is among them.
    assert any(abs(change.index - 30) <= 1 and change.high < 1.0 for change in found), found
    flat = [[v] for v in rng.normal(100, 3, 200)]
    assert find_changes(flat, Method()) == []


def _point(store: ResultsStore, series: str, number: int, value: float, exact: bool = False) -> None:
    samples = [value] * 3 if exact else [value * 0.99, value, value * 1.01]
    stored.add_point(store, stored.PointRow(
        f"p{number:04d}", series, "s", "b", f"build {number}", "5.0", None, None, None, time.time() + number, None,
        f"series {number}", {"data": {}}, {FIGURE: {"kind": tracking.COUNTER, "better": "lower", "samples": samples,
                                                     "value": value}}, {}))


@pytest.fixture
def store(tmp_path: Path) -> ResultsStore:
    opened = ResultsStore(tmp_path / "r.sqlite")
    stored.add_series(opened, stored.SeriesRow("t1", "s", "b", "absolute", "engine", None, time.time(), None, 0))
    return opened


def _series(store: ResultsStore) -> stored.SeriesRow:
    return stored.series_of(store, "s")[0]


METHODS = {tracking.FIGURE: Method(), tracking.COUNTER: Method(min_magnitude=0.02, long_series=6, window=6)}


def test_a_change_is_found_once_and_keeps_its_identity_as_points_come(store: ResultsStore) -> None:
    for number, value in enumerate([100, 100, 150], 1):
        _point(store, "t1", number, value, exact=True)
    [first] = evaluate(store, _series(store), METHODS)
    assert (first.before_point, first.after_point, first.first_seen) == ("p0002", "p0003", 3)
    assert first.detail["method"] == EXACT
    _point(store, "t1", 4, 150, exact=True)
    assert evaluate(store, _series(store), METHODS) == []  # re-running or appending never re-alerts
    assert [c.change_id for c in stored.changes_of(store, "t1") if c.state == "current"] == [first.change_id]
    for number in range(5, 12):  # long now (6 points and more): exact neighbours are still compared exactly
        _point(store, "t1", number, 150, exact=True)
        assert evaluate(store, _series(store), METHODS) == []
    assert [c.change_id for c in stored.changes_of(store, "t1")] == [first.change_id]


def test_a_change_the_long_series_method_does_not_confirm_is_withdrawn_with_a_word(store: ResultsStore) -> None:
    """Point against point finds 100 → 140 at the 4th point; once the series is long (6 points
    here) Otava judges the segments, and a bump of two points back to 100 is not a change there:
    the old change is kept, marked withdrawn at the 6th point — never silently gone."""
    for number, value in enumerate([100, 100, 100, 140, 140, 100], 1):
        _point(store, "t1", number, value)
        evaluate(store, _series(store), METHODS)
    [change] = stored.changes_of(store, "t1")
    assert (change.before_point, change.after_point, change.first_seen) == ("p0003", "p0004", 4)
    assert (change.state, change.ended_at, change.moved_to) == ("withdrawn", 6, None)


def test_looking_late_gives_what_looking_after_every_point_gives(tmp_path: Path) -> None:
    values = [100, 100, 100, 140, 140, 100, 100]
    found = []
    for late in (False, True):
        store = ResultsStore(tmp_path / f"{late}.sqlite")
        stored.add_series(store, stored.SeriesRow("t1", "s", "b", "absolute", "engine", None, time.time(), None, 0))
        for number, value in enumerate(values, 1):
            _point(store, "t1", number, value)
            if not late:
                evaluate(store, _series(store), METHODS)
        evaluate(store, _series(store), METHODS)
        found.append([(c.before_point, c.after_point, c.first_seen, c.state, c.ended_at)
                      for c in stored.changes_of(store, "t1")])
        store.close()
    assert found[0] == found[1] == [("p0003", "p0004", 4, "withdrawn", 6)]
