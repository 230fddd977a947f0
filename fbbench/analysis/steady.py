"""Steady state and tiredness of one run, from its intervals (warm-up included).

The input is the run's headline figure per interval, warm-up intervals first (see
:func:`interval_series`). What comes out (:class:`SteadyState`):

- **The steady band**: centre = the median of the second half of the measured intervals (the part
  most likely settled); half-width = 3 × the interval-to-interval noise, at least 1 % of the
  centre. The noise is a robust standard deviation of the first differences
  (1.4826 × MAD / √2): differences cancel a slow trend, and the MAD ignores single spikes, so
  the band measures how much one interval scatters around the next, not how far the level moved.
- **Settled at**: the first interval from which the series stays in the band, where "stays"
  tolerates a single interval outside it (a checkpoint, a garbage-collection burst) but not two
  in a row. Warm-up intervals count, so a warm-up that was too short shows: the run settled only
  after its measured period had begun. No such interval (or fewer than 3 after it): **never
  settled** — the level kept moving by more than its noise. Nor has a run settled whose measured
  second half has a median of zero while it did work before (it **fell to zero**: its trend is
  declining whatever the fitted line says), or whose intervals scatter so much that the band
  reaches zero or the CV exceeds 50 % (a band that holds a stopped run as well as a working one
  says nothing: a run whose intervals count 0, 1 or 2 units looked "steady" while each unit took
  1.3 times as long as the one before).
- **Trend** ("how Firebird gets tired", as OLTP-EMUL puts it): the Theil–Sen line of the
  measured intervals against time, with its 95 % interval of the slope. Each line (the fit and its
  two bounds) passes through the median interval, as Theil–Sen's intercept is defined, and is
  read **relative to its own value at the start of the measured period** (the fitted start): the
  change over the measured period (and per hour, for runs of an hour or more) as a fraction of
  that start. A throughput cannot lose more than all of it: a line that reaches zero before the
  measured period ends has **collapsed** (a change of −100 %, and the time it reached zero is
  said), and per hour no line loses more than 100 % of its start. A line whose fitted start is
  not above zero while it rises has no relative change (it rose from nothing: unbounded).
  It counts as a trend when the slope's interval excludes 0 *and* the fitted change over the
  measured period is at least 5 %: the slope's interval assumes independent intervals, which
  consecutive intervals are not, so a small "significant" slope is not taken as a finding. A
  change of 5 % or more whose interval includes 0 is "no clear trend", said with its interval.
- **CV**: standard deviation / mean of the measured intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fbbench.analysis import figures
from fbbench.analysis.stats import readable, theil_sen
from fbbench.store.model import StoredRun

BAND_K = 3.0  # band half-width in robust standard deviations of the interval-to-interval noise
MIN_BAND = 0.01  # … and at least 1 % of the centre (a run at a fixed target rate has no noise)
MIN_MEASURED = 5  # fewer measured intervals: too short to judge steadiness or trend
MIN_SETTLED = 3  # intervals in band after the settling point, or it did not settle
MIN_TREND = 0.05  # a trend must move the level by at least 5 % over the measured period
MAX_CV = 0.10  # above this the lint calls a run unsteady
MAX_STEADY_CV = 0.50  # above this no run is called settled, whatever its band says
_MAD_TO_SD = 1.4826  # MAD × this = standard deviation, for normal noise


@dataclass(frozen=True)
class IntervalSeries:
    """A run's figure per interval, warm-up intervals first.

    ``starts``: each interval's start, seconds from the start of the warm-up; ``measured``:
    False for warm-up intervals; ``figure``/``unit``: which figure the values are (the run's
    headline when it can be computed per interval, else the score); ``note``: why not.
    """

    values: tuple[float, ...]
    seconds: tuple[float, ...]
    starts: tuple[float, ...]
    measured: tuple[bool, ...]
    figure: str = figures.SCORE.name
    unit: str = figures.SCORE.unit
    note: str = ""

    @property
    def measured_values(self) -> tuple[float, ...]:
        return tuple(v for v, m in zip(self.values, self.measured, strict=True) if m)

    @property
    def measured_seconds(self) -> tuple[float, ...]:
        return tuple(s for s, m in zip(self.seconds, self.measured, strict=True) if m)

    @property
    def warmup_seconds(self) -> float:
        return sum(s for s, m in zip(self.seconds, self.measured, strict=True) if not m)


def _headline(run: StoredRun) -> figures.Figure:
    stored = ((run.get("summary") or {}).get("headline")) or {}
    known = set(figures.Figure.__dataclass_fields__)
    return figures.Figure.from_dict({k: v for k, v in stored.items() if k in known})


def _interval_rows(run: StoredRun) -> list[dict[str, Any]]:
    """The run's intervals with a length, in order: phase, start, seconds and each unit's outcomes."""
    rows: dict[int, dict[str, Any]] = {}
    for row in run.get("intervals") or []:
        item = rows.setdefault(row["index"], {"index": row["index"], "phase": row["phase"],
                                              "start": row["start_offset"], "seconds": row["seconds"], "units": {}})
        item["units"][row["unit"]] = {key: row[key] for key in figures.OUTCOMES}
    return [rows[i] for i in sorted(rows) if (rows[i]["seconds"] or 0) > 0]


def interval_values(run: StoredRun, figure: figures.Figure) -> list[tuple[float | None, float, bool]]:
    """``figure`` in each interval of a stored run: (value, seconds, measured), warm-up first.

    The value is None where the figure cannot be computed from the interval's unit counts (it uses
    tallies, metrics or the run's elapsed time, or the interval has none of what it counts).
    """
    found = []
    for interval in _interval_rows(run):
        value = None
        if figure.per != "run":
            value = figures.value(figure, figures.names(interval["units"], None, interval["seconds"]),
                                  interval["seconds"])
        found.append((value, float(interval["seconds"]), interval["phase"] != "warmup"))
    return found


def interval_series(run: StoredRun) -> IntervalSeries | None:
    """The per-interval figure of a stored run (``ResultsStore.load_run``); None without intervals.

    The headline is computed per interval with :func:`figures.value` from the interval's unit
    counts when its expression uses only counts and it is a rate (per minute / second); a
    headline over tallies or metrics, or one per run (elapsed time), cannot be, and the score
    (successful units per minute) is used instead, saying so in ``note``.
    """
    intervals = _interval_rows(run)
    if not intervals:
        return None
    headline = _headline(run)

    def values_of(figure: figures.Figure) -> list[float | None]:
        return [figures.value(figure, figures.names(i["units"], None, i["seconds"]), i["seconds"]) for i in intervals]

    figure, note = headline, ""
    values = values_of(headline) if headline.per != "run" else [None]
    if any(v is None for v in values):
        figure = figures.SCORE
        note = f"the headline {headline.name} cannot be computed per interval; the score is used"
        values = values_of(figure)
    return IntervalSeries(tuple(float(v or 0.0) for v in values), tuple(float(i["seconds"]) for i in intervals),
                          tuple(float(i["start"]) for i in intervals),
                          tuple(i["phase"] != "warmup" for i in intervals), figure.name, figure.unit, note)


@dataclass(frozen=True)
class SteadyState:
    """Steady state and trend of one run (see the module for every definition).

    Positions count from the first warm-up interval. ``settled_index``/``settled_after`` (seconds
    from the start of the warm-up): where the run entered its band for good, None when it never
    settled. ``warmup_too_short``: it settled only after the measured period had begun.
    ``start_level``: the fitted line at the start of the measured period, in the figure's unit.
    ``change``/``change_low``/``change_high``: the fitted change over the measured period as a
    fraction of the fitted start, with its 95 % interval, never below −1 (+inf: rose from nothing).
    ``slope``/``slope_low``/``slope_high``: the same per hour (−0.08 = −8 % of the start per hour),
    never below −1. ``collapsed``: the fitted line reached zero at ``collapsed_at`` (seconds from
    the start of the warm-up), before the measured period ended. ``trend``: "rising", "declining"
    or "none", ``trend_text`` the words for it.
    ``verdict``: "steady", "trend", "never settled" or "too short".
    """

    n_warmup: int
    n_measured: int
    center: float
    noise: float
    band_low: float
    band_high: float
    settled_index: int | None
    settled_after: float | None
    warmup_seconds: float
    warmup_too_short: bool
    slope: float
    slope_low: float
    slope_high: float
    trend: str
    trend_text: str
    cv: float
    verdict: str
    text: str
    start_level: float = math.nan
    change: float = math.nan
    change_low: float = math.nan
    change_high: float = math.nan
    collapsed: bool = False
    collapsed_at: float | None = None
    # The Theil–Sen line itself, in the figure's unit: its value at the start of the warm-up and
    # its change per hour (NaN when too short). Reports draw it; the findings use ``change``.
    line_intercept: float = math.nan
    line_slope: float = math.nan

    def trend_line(self, series: IntervalSeries) -> list[tuple[float, float]]:
        """(middle of the interval in seconds from the start of the warm-up, the fitted value) for
        each measured interval; empty when there is no line. A throughput is never below zero: where
        the line crosses zero it ends (or starts) at the crossing instead of going on below it."""
        if not (math.isfinite(self.line_intercept) and math.isfinite(self.line_slope)):
            return []
        points = [(start + seconds / 2, self.line_intercept + self.line_slope * (start + seconds / 2) / 3600)
                  for start, seconds, measured in zip(series.starts, series.seconds, series.measured, strict=True)
                  if measured]
        kept = [(at, value) for at, value in points if value >= 0]
        if len(kept) < len(points) and self.line_slope != 0:
            zero_at = -self.line_intercept / self.line_slope * 3600
            if points[0][0] <= zero_at <= points[-1][0]:
                kept.append((zero_at, 0.0))
        return sorted(kept)


def _robust_noise(measured: np.ndarray) -> float:
    differences = np.diff(measured)
    if len(differences) >= 2:
        noise = _MAD_TO_SD * float(np.median(np.abs(differences - np.median(differences)))) / math.sqrt(2)
        if noise > 0:
            return noise
    return _MAD_TO_SD * float(np.median(np.abs(measured - np.median(measured))))


def _settled_index(inside: Sequence[bool]) -> int | None:
    """First position from which no two consecutive values are outside the band."""
    start = 0
    for i in range(len(inside) - 1):
        if not inside[i] and not inside[i + 1]:
            start = i + 2
    return next((i for i in range(start, len(inside)) if inside[i]), None)


def steady_state(series: IntervalSeries) -> SteadyState:
    """Judge one run's intervals: band, settling point, trend and CV (see the module)."""
    values = np.asarray(series.values, dtype=float)
    measured_mask = np.asarray(series.measured, dtype=bool)
    measured = values[measured_mask]
    n_warmup, n_measured = int((~measured_mask).sum()), len(measured)
    warmup_seconds = series.warmup_seconds
    cv = float(measured.std(ddof=1) / measured.mean()) if n_measured > 1 and measured.mean() > 0 else math.nan
    nan = math.nan
    if n_measured < MIN_MEASURED:
        # Shown after the verdict ("too short — …"): the text says by how much, not the verdict again.
        text = (f"{n_measured} measured interval(s); at least {MIN_MEASURED} are needed "
                "(a shorter --interval or a longer --duration)")
        center = float(np.median(measured)) if n_measured else nan
        return SteadyState(n_warmup, n_measured, center, nan, nan, nan, None, None, warmup_seconds, False,
                           nan, nan, nan, "none", "", cv, "too short", text)

    center = float(np.median(measured[n_measured // 2:]))
    noise = _robust_noise(measured)
    half = max(BAND_K * noise, MIN_BAND * abs(center))
    low, high = center - half, center + half
    inside = [bool(low <= v <= high) for v in values]
    settled = _settled_index(inside)
    if settled is not None and len(values) - settled < MIN_SETTLED:
        settled = None
    first_half = float(np.median(measured[: max(n_measured // 2, 1)]))
    fell_to_zero = center <= 0 < float(measured.max())
    scattered = not fell_to_zero and (low <= 0 or (math.isfinite(cv) and cv > MAX_STEADY_CV))
    if fell_to_zero or scattered:
        settled = None
    first_measured = int(np.argmax(measured_mask))
    settled_after = series.starts[settled] if settled is not None else None
    too_short = settled is not None and settled > first_measured

    # Trend over the measured intervals, against each interval's middle, in hours.
    starts = np.asarray(series.starts, dtype=float)[measured_mask]
    lengths = np.asarray(series.seconds, dtype=float)[measured_mask]
    hours = (starts + lengths / 2) / 3600
    first_hour, last_hour = float(starts[0]) / 3600, float(starts[-1] + lengths[-1]) / 3600
    span_hours = float(lengths.sum()) / 3600
    slopes = (0.0, 0.0, 0.0) if np.ptp(measured) == 0 else theil_sen(measured, hours, 0.95)
    # Every line through the median point, as scipy's Theil–Sen intercept ("separate") is defined.
    lines = [_Line(float(np.median(measured)) - b * float(np.median(hours)), b) for b in slopes]
    fitted = lines[0]
    (change, change_low, change_high) = (line.change(first_hour, last_hour) for line in lines)
    (slope, slope_low, slope_high) = (line.per_hour(first_hour) for line in lines)
    zero_hour = fitted.zero_at()
    collapsed = fitted.slope < 0 and zero_hour is not None and zero_hour <= last_hour
    material = abs(change) >= MIN_TREND
    trend = "none"
    if material and slopes[1] > 0:
        trend = "rising"
    elif (material and slopes[2] < 0) or fell_to_zero:
        trend = "declining"

    if fell_to_zero:
        verdict = "never settled"
        head = (f"never settled: the {series.figure} fell to {readable(center)}{series.unit} (the median of the "
                f"measured second half) from {readable(first_half)}{series.unit} in the first half")
    elif scattered:
        verdict = "never settled"
        why = (f"the level of its last half, {readable(center)}{series.unit}, ± {BAND_K:g} × its "
               f"interval-to-interval noise of {readable(noise)}{series.unit} reaches 0" if low <= 0
               else f"its CV is above {MAX_STEADY_CV:.0%}")
        head = (f"never settled: the {series.figure} scatters from one interval to the next too much to show a "
                f"level ({why}) — where each interval counts only a few units, a longer --interval may show one")
    elif settled is None:
        verdict = "never settled"
        head = (f"never settled: the {series.figure} did not stay within {readable(low)}–{readable(high)}"
                f"{series.unit} (the level of its last half ± {BAND_K:g} × its interval-to-interval noise)")
    else:
        verdict = "trend" if trend != "none" else "steady"
        head = f"settled after {readable(series.starts[settled])} s"
        if too_short:
            head += f": the warm-up ({readable(warmup_seconds)} s) was too short, the measured period began unsettled"
        else:
            head += f" (warm-up {readable(warmup_seconds)} s)"
    start_level = fitted.at(first_hour)
    measured_text = f"the measured {readable(span_hours * 3600)} s"
    start_text = f"from a fitted {readable(start_level)}{series.unit}"
    if start_level <= 0:
        slope_text = f"from a fitted start of 0 over {measured_text}: no change relative to it"
    elif span_hours >= 1:
        slope_text = (f"{_percent(slope)}/h ({start_text}), 95 % CI {_percent(slope_low)} to "
                      f"{_percent(slope_high)}/h")
    else:  # a short run: the change over what was measured, not an hour's extrapolation
        slope_text = (f"{_percent(change)} over {measured_text} ({start_text}), 95 % CI "
                      f"{_percent(change_low)} to {_percent(change_high)}")
    if collapsed:
        assert zero_hour is not None
        trend_text = (f"collapsed: its fitted trend fell from {readable(start_level)}{series.unit} to 0 within "
                      f"{readable(max(zero_hour - first_hour, 0.0) * 3600)} s of {measured_text} (−100 %, 95 % CI of "
                      f"the change {_percent(change_low)} to {_percent(change_high)})")
    elif fell_to_zero:
        trend_text = f"declining to {readable(center)}{series.unit} (fitted: {slope_text})"
    elif trend == "none" and material and start_level > 0:
        trend_text = f"no clear trend ({slope_text}: the interval includes no change)"
    else:
        trend_text = {"none": f"no trend ({slope_text})", "rising": f"rising {slope_text}",
                      "declining": f"declining {slope_text}"}[trend]
    text = f"{head}; {trend_text}; CV {cv * 100:.1f} %"
    return SteadyState(n_warmup, n_measured, center, noise, low, high, settled, settled_after, warmup_seconds,
                       too_short, slope, slope_low, slope_high, trend, trend_text, cv, verdict, text,
                       start_level, change, change_low, change_high, collapsed,
                       zero_hour * 3600 if collapsed and zero_hour is not None else None,
                       fitted.intercept, fitted.slope)


@dataclass(frozen=True)
class _Line:
    """value = intercept + slope × hours (hours from the start of the warm-up), in the figure's unit."""

    intercept: float
    slope: float

    def at(self, hour: float) -> float:
        return self.intercept + self.slope * hour

    def zero_at(self) -> float | None:
        return -self.intercept / self.slope if self.slope != 0 else None

    def change(self, start: float, end: float) -> float:
        """(end − start) / start of the line between two hours: −1 when it reached zero by ``end``,
        +inf when it rose from a start not above zero."""
        first, last = self.at(start), self.at(end)
        if last <= 0:
            return -1.0
        if first <= 0:
            return math.inf
        return last / first - 1

    def per_hour(self, start: float) -> float:
        """The slope as a fraction of the line's value at ``start``, never below −1 per hour."""
        first = self.at(start)
        if first <= 0:
            return math.inf if self.slope > 0 else -1.0 if self.slope < 0 else 0.0
        return max(self.slope / first, -1.0)


def _percent(fraction: float) -> str:
    if fraction == math.inf:
        return "unbounded"
    return f"{'−' if fraction < 0 else '+'}{abs(fraction) * 100:.1f} %"
