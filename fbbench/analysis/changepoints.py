"""Changes in a series of points: where one figure moved, by how much, and how sure that is.

A point is one measurement of a figure on one build (or commit, or day): its samples — the
values of its runs (an absolute point), or the per-pair ratios against a reference build (a
relative point) — and the value that stands for them (their median, or the pairs' median
ratio). Two methods find the changes; both speak as :class:`Change`:

- **point against point**, for short series (fewer than ``long_series`` points, e.g. three
  builds): each point against the one before, by their own samples, as ``compare`` judges two
  series — the ratio of the later point to the earlier with its 95 % interval
  (:func:`fbbench.analysis.stats.ratio_of_series`), and the p-value of Welch's t-test on the
  logarithms of the samples. Samples that repeat exactly on both sides (a deterministic counter
  such as page fetches per unit) are compared exactly: p = 0 when they differ.
- **exactly**, whatever the series' length, between two neighbouring points whose samples each
  repeat one value (a counter on a quiet engine): no statistics are needed to see that 1,000
  page fetches a unit became 1,500.
- **change points**, for long series (days, commits): Apache Otava's e-divisive means with
  Student's t-test between the segments (Fleming et al., ICPE 2023; Daly et al., ICPE 2020),
  over the points' values, with the window, p-value and minimum magnitude stated. A change's
  magnitude is the geometric mean of the segment after over that of the segment before, with the
  95 % interval of Welch's t on the logarithms of the two segments' points; its p-value is
  Otava's. A figure whose every point repeats one value is left to the exact comparison.

A change is reported when its p-value is at most ``p_value`` and its magnitude at least
``min_magnitude`` away from no change. The maths is the library's (Otava) and scipy's; this
module only cuts the series and says the result one way.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

# numpy and the statistics are imported in the functions that compute: a site's publish reads a
# suite (and its Method) without computing anything, and numpy's import was a third of it.

POINT_AGAINST_POINT = "point against point: the later point's samples against the earlier's"
CHANGE_POINT = "change point: Apache Otava's e-divisive means with a t-test between segments"
EXACT = "exact: every sample of both points is the same value"


@dataclass(frozen=True)
class Method:
    """How changes are found (stated with every result): the largest p-value a change may have,
    the smallest relative magnitude, Otava's window, and from how many points on a series is long."""

    p_value: float = 0.001
    min_magnitude: float = 0.0  # relative: 0.02 is 2 %
    window: int = 50
    long_series: int = 10

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        return (f"p ≤ {self.p_value:g}, magnitude ≥ {self.min_magnitude * 100:g} %; point against point below "
                f"{self.long_series} points, else Otava's e-divisive means (window {self.window}, t-test)")


@dataclass(frozen=True)
class Change:
    """One change of one figure between the points ``index - 1`` and ``index`` (0-based).

    ``before`` and ``after``: the level on each side (the two points' values, or the two segments'
    means); ``ratio`` after / before with its 95 % interval ``low``–``high`` (NaN when none can be
    given); ``p_value``; ``method`` one of :data:`POINT_AGAINST_POINT`, :data:`CHANGE_POINT`,
    :data:`EXACT`; ``points_before`` / ``points_after``: the points each side's level stands on."""

    index: int
    before: float
    after: float
    ratio: float
    low: float
    high: float
    p_value: float
    method: str
    points_before: int
    points_after: int

    @property
    def percent(self) -> float:
        return (self.ratio - 1.0) * 100.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _positive(values: Sequence[float]) -> np.ndarray | None:
    import numpy as np

    array = np.asarray([float(v) for v in values], dtype=float)
    if len(array) == 0 or not np.all(np.isfinite(array)) or np.any(array <= 0):
        return None
    return array


def _welch_p(before: np.ndarray, after: np.ndarray) -> float:
    """Welch's t-test on log values; NaN when either side has a single sample."""
    import numpy as np

    from fbbench.analysis import stats

    if len(before) < 2 or len(after) < 2:
        return math.nan
    logs_a, logs_b = np.log(before), np.log(after)
    if np.ptp(logs_a) == 0 and np.ptp(logs_b) == 0:
        return 0.0 if logs_a[0] != logs_b[0] else 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = stats.scipy_stats().ttest_ind(logs_a, logs_b, equal_var=False)
    return float(result.pvalue)


def compare_points(before: Sequence[float], after: Sequence[float], index: int) -> Change | None:
    """One point's samples against the previous point's; None when either has no usable sample
    (a figure the run did not produce, zero or negative values)."""
    import numpy as np

    from fbbench.analysis import stats

    xa, xb = _positive(before), _positive(after)
    if xa is None or xb is None:
        return None
    level_a, level_b = float(np.median(xa)), float(np.median(xb))
    if np.ptp(xa) == 0 and np.ptp(xb) == 0 and min(len(xa), len(xb)) >= 2:
        ratio = level_b / level_a
        return Change(index, level_a, level_b, ratio, ratio, ratio, 0.0 if ratio != 1.0 else 1.0, EXACT,
                      len(xa), len(xb))
    estimate = stats.ratio_of_series(list(xa), list(xb))
    return Change(index, level_a, level_b, estimate.ratio, estimate.low, estimate.high, _welch_p(xa, xb),
                  POINT_AGAINST_POINT, len(xa), len(xb))


def _segment_change(values: np.ndarray, start: int, index: int, end: int, p_value: float) -> Change:
    import numpy as np

    from fbbench.analysis import stats

    before, after = values[start:index], values[index:end]
    ratio, low, high = stats.ratio_of_geometric_means(list(before), list(after))
    level_a = float(np.exp(np.log(before).mean()))
    return Change(index, level_a, level_a * ratio, ratio, low, high, p_value, CHANGE_POINT, len(before), len(after))


def change_points(values: Sequence[float], method: Method) -> list[Change]:
    """Otava's change points in one series of point values (every value positive and finite)."""
    import numpy as np
    from otava.analysis import compute_change_points

    series = np.asarray([float(v) for v in values], dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a segment of equal values makes scipy warn of a precision loss
        found, _weak = compute_change_points(list(series), window_len=method.window, max_pvalue=method.p_value,
                                             min_magnitude=method.min_magnitude)
    indices = [int(point.index) for point in found]
    bounds = [0, *indices, len(series)]
    changes = []
    for position, point in enumerate(found):
        changes.append(_segment_change(series, bounds[position], int(point.index), bounds[position + 2],
                                       float(point.stats.pvalue)))
    return changes


def significant(change: Change, method: Method) -> bool:
    """Whether a change is reported: p small enough and the magnitude large enough."""
    if not math.isfinite(change.p_value) or change.p_value > method.p_value:
        return False
    return abs(change.ratio - 1.0) >= method.min_magnitude and change.ratio != 1.0


def _exact(samples: Sequence[float]) -> bool:
    return len(samples) >= 2 and max(samples) == min(samples)


def find_changes(points: Sequence[Sequence[float] | None], method: Method,
                 memo: dict[int, Change | None] | None = None) -> list[Change]:
    """The reported changes of one figure over a series of points (each the point's samples, in
    order; None where the point lacks the figure). Short series: point against point; long
    series: change points over the points' values (the median of each point's samples), and
    exactly between neighbours that each repeat one value. ``memo``: the comparisons of
    neighbours made for a shorter prefix of the same points (by the later point's index), which a
    longer prefix does not change — looking at a series one length at a time stays linear."""
    import numpy as np

    present = [(i, list(p)) for i, p in enumerate(points) if p is not None and _positive(p) is not None]
    if len(present) < 2:
        return []
    long = len(present) >= method.long_series
    changes: dict[int, Change] = {}
    for (_, before), (index, after) in itertools.pairwise(present):
        if long and not (_exact(before) and _exact(after)):
            continue
        if memo is not None and index in memo:
            change = memo[index]
        else:
            change = compare_points(before, after, index)
            if memo is not None:
                memo[index] = change
        if change is not None and significant(change, method):
            changes[index] = change
    if long and not all(_exact(samples) for _, samples in present):
        values = [float(np.median(samples)) for _, samples in present]
        # Otava counts positions among the present points: mapped back to the series' points.
        for change in change_points(values, method):
            index = present[change.index][0]
            if index not in changes and significant(change, method):
                changes[index] = Change(**{**asdict(change), "index": index})
    return [changes[index] for index in sorted(changes)]
