"""Statistics of comparisons: the ratio of B to A with its 95 % interval, the verdict it allows,
and the median of one series with its interval and spread.

A comparison holds, for each side, either a **series** (several runs with the same conditions)
or a **single run**. The data decide the method, and every result says which one it used:

============================  ==========  ===================================================
sides                         basis       method
============================  ==========  ===================================================
series, ≥ 5 runs a side       repeats     ratio of medians; BCa bootstrap (scipy), resamples
                                          of each side drawn independently
series, 2–4 runs a side       repeats     ratio of geometric means; Welch's t on log values
series against one run        repeats     one run against the series' geometric mean; t
                                          prediction interval on log values
pairs A B A B … (≥ 6 pairs)   pairs       median of the per-pair ratios; exact
                                          distribution-free interval of a median
pairs (2–5 pairs)             pairs       geometric mean of the per-pair ratios; t on logs
one run a side                intervals   batch means of each run's measured intervals;
                                          Welch's t on log batch means
sides run on several hosts    hosts       one of the above within each host (a block); the
(a lab's blocks)                          geometric mean of the per-host ratios, its interval
                                          from theirs on a log scale (hosts independent)
============================  ==========  ===================================================

Why these (A/A simulations, log-normal noise of 10 %, and the same with 15 % of runs disturbed
by −30 %; `tests/test_analysis.py` keeps the claims honest):

- The bootstrap of a ratio of medians claims a difference between identical sides 4–6 % of the
  time with 5 or more runs a side, and is robust to a disturbed run; with 3 a side it claims one
  11 % of the time, so below 5 runs Welch's t on logs is used (≤ 5 %, assumes log-normal noise;
  a disturbed run widens it rather than inventing a difference).
- A bootstrap of one sample's median is too narrow below ~15 values (9 % false claims at 9
  pairs); the order-statistic interval of a median is exact for any continuous distribution,
  and needs 6 values to reach 95 % at all.
- Consecutive intervals of one run are autocorrelated: a circular block bootstrap over them
  claimed differences 14–40 % of the time at 30 intervals. Batch means (5 contiguous batches,
  the classic method for steady-state simulation output) stay near 5 % unless the intervals are
  strongly autocorrelated, which is checked: the interval is refused then. Even so, intervals of
  one run say nothing about the drift from one run to the next (±10–20 % on a 2-core VM, see
  DESIGN.md), so a verdict on that basis says "within these two runs".

All values are positive figures (throughput, elapsed seconds, latency); ratios of them are
compared on a log scale, where B/A and A/B are symmetric.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from fbbench.analysis import beta


def readable(value: float) -> str:
    """A level or a time in a sentence, as a reader takes it in: 14,190 and 0.5, never 1.419e+04."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def scipy_stats() -> Any:
    """scipy.stats, imported on first use: it takes 1.5 s of CPU to import, and every run's
    engine process imports this package (audits). Only the bootstrap (5 or more runs a side)
    still needs it here: the t and order-statistic intervals come from :mod:`fbbench.analysis.beta`,
    held to scipy's in tests/test_analysis.py."""
    from scipy import stats

    return stats


def theil_sen(y: Sequence[float], x: Sequence[float], confidence: float) -> tuple[float, float, float]:
    """Theil–Sen's slope of ``y`` over ``x`` (the median of the pairwise slopes) and its interval
    by Sen's (1968) normal approximation, ties in ``x`` and ``y`` accounted for: what
    ``scipy.stats.theilslopes(y, x, confidence)`` gives as (slope, low_slope, high_slope), nan
    for an interval it cannot give. Computed here because importing scipy.stats costs 1.5 s of
    CPU (0.8 s of wall) and every run's lint fits one trend (its steady state): a run of a few
    seconds ended that much later for it. tests/test_analysis.py holds it to scipy's on random
    series, with ties."""
    ys, xs = np.asarray(y, dtype=float).ravel(), np.asarray(x, dtype=float).ravel()
    dx, dy = xs[:, np.newaxis] - xs, ys[:, np.newaxis] - ys
    slopes = np.sort(dy[dx > 0] / dx[dx > 0])
    if not slopes.size:
        return math.nan, math.nan, math.nan
    middle = float(np.median(slopes))
    alpha = 1.0 - confidence if confidence > 0.5 else confidence
    z = NormalDist().inv_cdf(alpha / 2)

    def ties(values: np.ndarray) -> float:
        counts = np.unique(values, return_counts=True)[1]
        return float(sum(k * (k - 1) * (2 * k + 5) for k in counts[counts > 1]))

    n, pairs = len(ys), len(slopes)
    variance = (n * (n - 1) * (2 * n + 5) - ties(xs) - ties(ys)) / 18
    if not variance >= 0:
        return middle, math.nan, math.nan
    sigma = math.sqrt(variance)
    upper = min(int(np.round((pairs - z * sigma) / 2)), pairs - 1)
    lower = max(int(np.round((pairs + z * sigma) / 2)) - 1, 0)
    return middle, float(slopes[lower]), float(slopes[upper])

CONFIDENCE = 0.95
MIN_TREND_POINTS = 5  # a slope over fewer points has no useful interval
MIN_BOOTSTRAP_RUNS = 5  # per side: below this the bootstrap's interval is too narrow (see above)
MIN_EXACT_MEDIAN = 6  # the smallest n whose order-statistic interval of a median reaches 95 %
BATCHES = 5  # batch means of a single run's intervals: 5 batches, 4 degrees of freedom a side
MIN_INTERVALS = 10  # per run, for the intervals basis: at least 2 intervals in each batch
MAX_BATCH_CORRELATION = 0.2  # refuse batch means whose neighbours would be more correlated than this
RESAMPLES = 9999


@dataclass(frozen=True)
class Ratio:
    """B / A with its interval.

    ``ratio`` is the point estimate (what it is depends on ``method``); ``low`` and ``high`` the
    interval at ``confidence`` (NaN when none can be given: ``note`` says why); ``n_a``/``n_b``
    the runs (repeats, pairs) or intervals each side contributed; ``basis`` what was resampled:
    ``repeats`` (independent runs), ``pairs`` (runs interleaved A B A B: per-pair ratios) or
    ``intervals`` (the measured intervals of one run a side: weaker, see the module).
    """

    ratio: float
    low: float
    high: float
    n_a: int
    n_b: int
    basis: str
    method: str
    confidence: float = CONFIDENCE
    note: str = ""

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    @property
    def resolved(self) -> bool:
        """The interval excludes 1: the data show a difference at this confidence."""
        return self.has_interval and (self.low > 1.0 or self.high < 1.0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"resolved": self.resolved}


@dataclass(frozen=True)
class Side:
    """One side of a comparison.

    ``values``: the headline figure of each run of a series, in run order (one value: a single
    run). ``intervals`` and ``interval_seconds``: for a single run, the headline of each measured
    interval and its length (see :func:`fbbench.analysis.steady.interval_series`).
    """

    values: tuple[float, ...]
    intervals: tuple[float, ...] = ()
    interval_seconds: tuple[float, ...] = ()
    label: str = ""


def _finite(values: Sequence[float]) -> np.ndarray | None:
    """The values as an array; None when any is missing or not finite."""
    try:
        array = np.asarray([float(v) for v in values], dtype=float)
    except (TypeError, ValueError):
        return None
    return array if np.all(np.isfinite(array)) else None


def _clean(values: Sequence[float]) -> np.ndarray | None:
    """The values as an array; None when any is missing, not finite or not positive."""
    array = _finite(values)
    return None if array is None or np.any(array <= 0) else array


def _measured(values: Sequence[float]) -> np.ndarray | None:
    """The intervals' values as an array; None when any is missing, not finite or negative. Zero
    is a measurement: an interval in which no unit completed (a stall, a lock wait)."""
    array = _finite(values)
    return None if array is None or np.any(array < 0) else array


def _rng_argument(seed: int) -> dict[str, Any]:
    # scipy 1.15 renamed random_state to rng; both take a Generator.
    name = "rng" if "rng" in inspect.signature(scipy_stats().bootstrap).parameters else "random_state"
    return {name: np.random.default_rng(seed)}


def _no_interval(ratio: float, n_a: int, n_b: int, basis: str, method: str, note: str) -> Ratio:
    return Ratio(ratio, math.nan, math.nan, n_a, n_b, basis, method, CONFIDENCE, note)


def _median_ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(b, axis=axis) / np.median(a, axis=axis)


# Identical values on both sides do not make a ratio known exactly: a figure the load fixes (a
# target rate's count) or one too coarse to vary (whole units in a short window) repeats itself,
# and a zero-width interval would turn one unit more into "0.8 % faster".
NO_SPREAD = ("every run on each side gave the same value: no spread to judge a difference by (a figure the load "
             "fixes, such as a target rate's, or one too coarse to vary)")


def _welch_log(a: np.ndarray, b: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """exp of Welch's t interval of mean(log b) − mean(log a): (point, low, high); no interval
    (NaN) when neither side has any spread (see :data:`NO_SPREAD`)."""
    la, lb = np.log(a), np.log(b)
    difference = float(lb.mean() - la.mean())
    point = math.exp(difference)
    if np.ptp(la) == 0 and np.ptp(lb) == 0:
        return point, math.nan, math.nan
    # Welch's interval, as scipy.stats.ttest_ind(lb, la, equal_var=False) gives it (held to it in
    # tests/test_analysis.py), with the Welch–Satterthwaite degrees of freedom.
    share_a, share_b = float(la.var(ddof=1)) / len(la), float(lb.var(ddof=1)) / len(lb)
    freedom = (share_a + share_b) ** 2 / (share_a ** 2 / (len(la) - 1) + share_b ** 2 / (len(lb) - 1))
    half = beta.t_critical(confidence, freedom) * math.sqrt(share_a + share_b)
    return point, math.exp(difference - half), math.exp(difference + half)


def ratio_of_geometric_means(a: Sequence[float], b: Sequence[float], *,
                              confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(ratio, low, high): the geometric mean of ``b`` over that of ``a`` with Welch's t interval
    on logs (NaN ends below two values a side, or without spread). Analytic, for callers that
    need thousands of intervals (a track series looked at point by point)."""
    xa, xb = _clean(a), _clean(b)
    if xa is None or xb is None or len(xa) < 2 or len(xb) < 2:
        point = float(np.exp(np.log(xb).mean() - np.log(xa).mean())) if xa is not None and xb is not None \
            and len(xa) and len(xb) else math.nan
        return point, math.nan, math.nan
    return _welch_log(xa, xb, confidence)


def _t_log_one_sample(ratios: np.ndarray, confidence: float) -> tuple[float, float, float]:
    logs = np.log(ratios)
    mean = float(logs.mean())
    point = math.exp(mean)
    if np.ptp(logs) == 0:
        return point, point, point
    # The one-sample t interval of the mean log (scipy.stats.ttest_1samp's confidence_interval).
    half = beta.t_critical(confidence, len(logs) - 1) * float(logs.std(ddof=1)) / math.sqrt(len(logs))
    return point, math.exp(mean - half), math.exp(mean + half)


def ratio_of_series(a: Sequence[float], b: Sequence[float], *, confidence: float = CONFIDENCE,
                    resamples: int = RESAMPLES, seed: int = 0) -> Ratio:
    """B / A for two series of independent runs (repeats not interleaved in pairs).

    Assumes the runs of a side are independent draws of the same conditions. ≥ 5 runs a side:
    ratio of medians with a BCa bootstrap interval (percentile when BCa degenerates), each side
    resampled on its own. 2–4 runs a side: ratio of geometric means, Welch's t on log values
    (assumes log-normal noise). One run against a series: that run over the series' geometric
    mean, with a t prediction interval on logs (assumes the single run spreads like the series).
    One run a side: the plain ratio, no interval (use :func:`ratio_of_intervals`). No spread on
    either side (every run gave the same value): no interval either (:data:`NO_SPREAD`).
    ``seed`` fixes the resampling: the same figures always give the same interval.
    """
    n_a, n_b = len(a), len(b)
    xa, xb = _clean(a), _clean(b)
    if xa is None or xb is None or n_a == 0 or n_b == 0:
        return _no_interval(math.nan, n_a, n_b, "repeats", "none",
                            "a side has no value, or a value that is not a positive number")
    if n_a == 1 and n_b == 1:
        return _no_interval(float(xb[0] / xa[0]), 1, 1, "repeats", "ratio of two single runs",
                            "one run a side: no spread to judge the difference by; repeat the runs, "
                            "or compare their measured intervals")
    if min(n_a, n_b) == 1:
        return _one_against_series(xa, xb, confidence)
    if np.ptp(xa) == 0 and np.ptp(xb) == 0:
        return _no_interval(float(xb[0] / xa[0]), n_a, n_b, "repeats", "ratio of the sides' common values", NO_SPREAD)
    if min(n_a, n_b) < MIN_BOOTSTRAP_RUNS:
        point, low, high = _welch_log(xa, xb, confidence)
        return Ratio(point, low, high, n_a, n_b, "repeats", "ratio of geometric means, Welch's t on log values "
                     f"(fewer than {MIN_BOOTSTRAP_RUNS} runs a side: too few for a bootstrap)", confidence)
    point = float(_median_ratio(xa, xb))
    low = high = math.nan
    method = ""
    for kind in ("BCa", "percentile"):
        with warnings.catch_warnings():
            # A degenerate BCa (too little spread) warns and returns NaN: fall back to percentile.
            warnings.simplefilter("ignore")
            result = scipy_stats().bootstrap((xa, xb), _median_ratio, n_resamples=resamples, vectorized=True,
                                   confidence_level=confidence, method=kind, **_rng_argument(seed))
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
        method = f"ratio of medians, {kind} bootstrap ({resamples} resamples, sides resampled independently)"
        if math.isfinite(low) and math.isfinite(high):
            break
    return Ratio(point, low, high, n_a, n_b, "repeats", method, confidence)


def center(values: Sequence[float], n_other: int) -> tuple[float, str]:
    """The centre of one side that :func:`ratio_of_series` divides, and its name, so that a report
    shows the two numbers its ratio is of: the median with 5 or more runs on both sides, the
    geometric mean of a series against 2–4 runs or one run, a single run's value."""
    array = _clean(values)
    if array is None or len(array) == 0:
        return math.nan, "none"
    if len(array) == 1:
        return float(array[0]), "value"
    if min(len(array), n_other) >= MIN_BOOTSTRAP_RUNS:
        return float(np.median(array)), "median"
    return float(np.exp(np.log(array).mean())), "geometric mean"


def _one_against_series(xa: np.ndarray, xb: np.ndarray, confidence: float) -> Ratio:
    """One run against a series: a prediction interval for a new run of the series' conditions."""
    single_is_b = len(xb) == 1
    series = xa if single_is_b else xb
    single = float((xb if single_is_b else xa)[0])
    logs = np.log(series)
    n = len(series)
    if np.ptp(logs) == 0:
        ratio = (single / float(series[0])) if single_is_b else (float(series[0]) / single)
        return _no_interval(ratio, len(xa), len(xb), "repeats", "one run against a series' common value",
                            "the series' runs all gave the same value: no spread to predict a new run's by")
    difference = (math.log(single) - logs.mean()) * (1 if single_is_b else -1)
    point = math.exp(difference)
    spread = float(logs.std(ddof=1)) * math.sqrt(1 + 1 / n)
    half = beta.t_critical(confidence, n - 1) * spread
    return Ratio(point, math.exp(difference - half), math.exp(difference + half), len(xa), len(xb), "repeats",
                 "one run against a series' geometric mean, t prediction interval on log values "
                 "(assumes the single run spreads like the series)", confidence)


def ratio_of_ratios(ratios: Sequence[float], *, confidence: float = CONFIDENCE) -> Ratio:
    """B / A from per-pair ratios b_i / a_i of runs interleaved in pairs (A B A B …).

    Pairs taken close together share the machine's drift, which their ratio cancels. Assumes the
    pairs are independent of one another. ≥ 6 pairs: the median ratio with the exact
    order-statistic interval of a median (scipy.stats.quantile_test; no assumption on the
    distribution). 2–5 pairs: the geometric mean ratio, t interval on logs (assumes log-normal).
    """
    n = len(ratios)
    values = _clean(ratios)
    if values is None or n == 0:
        return _no_interval(math.nan, n, n, "pairs", "none", "a ratio is missing or not a positive number")
    if n == 1:
        return _no_interval(float(values[0]), 1, 1, "pairs", "one pair", "one pair: no spread to judge by")
    if n < MIN_EXACT_MEDIAN:
        point, low, high = _t_log_one_sample(values, confidence)
        return Ratio(point, low, high, n, n, "pairs", "geometric mean of the per-pair ratios, t on log values "
                     f"(fewer than {MIN_EXACT_MEDIAN} pairs: too few for an exact interval of the median)", confidence)
    point, low, high = _median_interval(values, confidence)
    return Ratio(point, low, high, n, n, "pairs", "median of the per-pair ratios, exact order-statistic interval",
                 confidence)


def ratio_of_pairs(a: Sequence[float], b: Sequence[float], *, confidence: float = CONFIDENCE) -> Ratio:
    """B / A for runs interleaved in pairs: ``a[i]`` and ``b[i]`` ran one after the other."""
    if len(a) != len(b):
        raise ValueError(f"paired comparison needs as many runs on each side, got {len(a)} and {len(b)}")
    xa, xb = _clean(a), _clean(b)
    if xa is None or xb is None:
        return _no_interval(math.nan, len(a), len(b), "pairs", "none", "a value is missing or not a positive number")
    return ratio_of_ratios(list(xb / xa), confidence=confidence)


def _median_interval(values: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """(median, low, high): exact distribution-free interval of the median (NaN below 6 values)."""
    median = float(np.median(values))
    if len(values) < MIN_EXACT_MEDIAN:
        return median, math.nan, math.nan
    ordered = np.sort(values)
    low, high = beta.median_bounds(len(ordered), confidence)
    return (median, math.nan if low is None else float(ordered[low]),
            math.nan if high is None else float(ordered[high]))


def _lag1(values: np.ndarray) -> float:
    centred = values - values.mean()
    denominator = float(np.dot(centred, centred))
    return 0.0 if denominator == 0 else float(np.dot(centred[:-1], centred[1:]) / denominator)


def _batch_means(values: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    # Each batch's rate over its time: the same figure the run reports, on part of the run.
    return np.asarray([float(np.dot(v, s) / s.sum()) for v, s in
                       zip(np.array_split(values, BATCHES), np.array_split(seconds, BATCHES), strict=True)])


def ratio_of_intervals(a: Sequence[float], b: Sequence[float], a_seconds: Sequence[float] | None = None,
                       b_seconds: Sequence[float] | None = None, *, confidence: float = CONFIDENCE) -> Ratio:
    """B / A for two single runs, from the headline of each measured interval (weaker basis).

    Each run's intervals are cut into 5 contiguous batches; each batch's rate (weighted by the
    intervals' seconds) is one value, and Welch's t on the log batch means gives the interval.
    Assumes the batch means of a run are nearly independent: when the intervals' lag-1
    autocorrelation r makes neighbouring batches of m intervals correlated by more than 0.2
    (r / ((1 − r)·m)), no interval is given. It needs 10 intervals a run. Whatever it says holds
    for these two runs only: the drift between runs is not in it.
    """
    n_a, n_b = len(a), len(b)
    xa, xb = _measured(a), _measured(b)
    method = f"batch means ({BATCHES} batches a run), Welch's t on log batch means"
    if xa is None or xb is None or n_a == 0 or n_b == 0:
        return _no_interval(math.nan, n_a, n_b, "intervals", method,
                            "an interval has no value, or one that is negative or not a number")
    sa = np.ones(n_a) if a_seconds is None else np.asarray(a_seconds, dtype=float)
    sb = np.ones(n_b) if b_seconds is None else np.asarray(b_seconds, dtype=float)
    rate_a, rate_b = float(np.dot(xa, sa) / sa.sum()), float(np.dot(xb, sb) / sb.sum())
    if rate_a <= 0 or rate_b <= 0:
        return _no_interval(math.nan, n_a, n_b, "intervals", method,
                            f"run {'A' if rate_a <= 0 else 'B'} measured nothing in any interval")
    overall = rate_b / rate_a
    if min(n_a, n_b) < MIN_INTERVALS:
        return _no_interval(overall, n_a, n_b, "intervals", method,
                            f"{min(n_a, n_b)} measured intervals in a run: at least {MIN_INTERVALS} are needed "
                            "(a shorter --interval or a longer run), or repeat the runs")
    batches_a, batches_b = _batch_means(xa, sa), _batch_means(xb, sb)
    for label, batches in (("A", batches_a), ("B", batches_b)):
        if np.any(batches <= 0):
            # A log scale has no place for a batch that measured nothing; the stall is the finding.
            return _no_interval(overall, n_a, n_b, "intervals", method,
                                f"a fifth of run {label} measured nothing (a stall): no interval from its batches; "
                                "repeat the runs")
    for label, values in (("A", xa), ("B", xb)):
        r = min(max(_lag1(values), 0.0), 0.99)
        size = len(values) / BATCHES
        if r / ((1 - r) * size) > MAX_BATCH_CORRELATION:
            return _no_interval(overall, n_a, n_b, "intervals", method,
                                f"run {label}'s intervals are too autocorrelated (lag-1 r = {r:.2f}) for batches of "
                                f"{size:.0f} intervals: run longer, or repeat the runs")
    point, low, high = _welch_log(batches_a, batches_b, confidence)
    note = ("within these two runs only: the drift between runs is not in the interval" if math.isfinite(low)
            else "every batch of each run gave the same value: no spread to judge a difference by")
    return Ratio(point, low, high, n_a, n_b, "intervals", method, confidence, note)


def combine_hosts(per_host: Mapping[str, Ratio], *, confidence: float = CONFIDENCE) -> Ratio:
    """B / A over several hosts, each compared within itself (host is a block: runs of two machines
    are never pooled as one series). The point is the geometric mean of the hosts' ratios, each
    host weighing the same; the interval adds the hosts' log-scale variances, each read back from
    its own interval as a normal one (assumes the hosts' noise is independent). A host without an
    interval leaves the combination without one."""
    ratios = list(per_host.values())
    n_a, n_b = sum(r.n_a for r in ratios), sum(r.n_b for r in ratios)
    bases = ", ".join(sorted({r.basis for r in ratios}))
    method = f"geometric mean of {len(ratios)} hosts' ratios (each within its host: {bases})"
    if not ratios or not all(math.isfinite(r.ratio) and r.ratio > 0 for r in ratios):
        return _no_interval(math.nan, n_a, n_b, "hosts", method, "a host has no ratio")
    logs = [math.log(r.ratio) for r in ratios]
    point = math.exp(sum(logs) / len(logs))
    lacking = [host for host, r in per_host.items() if not r.has_interval]
    if lacking:
        return _no_interval(point, n_a, n_b, "hosts", method,
                            f"no interval on host(s) {', '.join(lacking)}: " + (ratios[0].note or "too few runs"))
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    variance = sum(((math.log(r.high) - math.log(r.low)) / (2 * NormalDist().inv_cdf(0.5 + r.confidence / 2)))
                   ** 2 for r in ratios) / len(ratios) ** 2
    half = z * math.sqrt(variance)
    return Ratio(point, math.exp(math.log(point) - half), math.exp(math.log(point) + half), n_a, n_b, "hosts",
                 method, confidence, "within each host; hosts weigh the same")


def compare(a: Side, b: Side, *, paired: bool = False, confidence: float = CONFIDENCE,
            resamples: int = RESAMPLES, seed: int = 0) -> Ratio:
    """B / A for whatever the two sides hold (see the table in the module)."""
    if paired:
        return ratio_of_pairs(a.values, b.values, confidence=confidence)
    if len(a.values) == 1 and len(b.values) == 1 and a.intervals and b.intervals:
        return ratio_of_intervals(a.intervals, b.intervals, a.interval_seconds or None, b.interval_seconds or None,
                                  confidence=confidence)
    return ratio_of_series(a.values, b.values, confidence=confidence, resamples=resamples, seed=seed)


# ------------------------------------------------------------------------------------ verdicts


@dataclass(frozen=True)
class Verdict:
    """What a ratio allows one to say.

    ``change``, ``low``, ``high``: B against A in signed per cent ((ratio − 1) × 100, and the
    interval's ends). ``word`` (faster / slower / higher / lower) and ``better`` only when the
    interval excludes no change. ``spread``: the interval's half-width in per cent — the "±" of an
    unresolved comparison (NaN without an interval). ``text``: the sentence to show.
    """

    resolved: bool
    word: str | None
    better: bool | None
    change: float
    low: float
    high: float
    spread: float
    text: str


def verdict(estimate: Ratio, better: str = "higher", *, rate: bool = True, a: str = "A", b: str = "B") -> Verdict:
    """The sentence for ``estimate`` of a figure where ``better`` is "higher" or "lower".

    ``rate``: the figure is a rate (per minute, per second), so higher is "faster". Examples:
    "B is 7.2 % faster (95 % CI 4.1–10.3 %)"; "B is 7.0 % lower (better) (95 % CI 2.0–12.0 %)";
    "no difference resolved: the 95 % interval of B against A spans −4.1 % to +8.3 % (±6.2 %)".
    """
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', got {better!r}")
    change = (estimate.ratio - 1) * 100
    low, high = (estimate.low - 1) * 100, (estimate.high - 1) * 100
    spread = (high - low) / 2 if estimate.has_interval else math.nan
    level = f"{estimate.confidence * 100:g} %"
    within = " within these two runs" if estimate.basis == "intervals" else ""
    if not estimate.has_interval:
        shown = f"{b}/{a} {estimate.ratio:.3f}; " if math.isfinite(estimate.ratio) else ""
        return Verdict(False, None, None, change, low, high, spread,
                       f"no difference resolved: {shown}no {level} interval: {estimate.note}")
    if not estimate.resolved:
        return Verdict(False, None, None, change, low, high, spread,
                       f"no difference resolved{within}: the {level} interval of {b} against {a} spans "
                       f"{_signed(low)} to {_signed(high)} (±{spread:.1f} %)")
    up = estimate.low > 1.0
    is_better = up if better == "higher" else not up
    if better == "higher" and rate:
        word, judged = ("faster" if up else "slower"), ""
    else:
        word, judged = ("higher" if up else "lower"), (" (better)" if is_better else " (worse)")
    size, near, far = (change, low, high) if up else (-change, -high, -low)
    text = f"{b} is {size:.1f} % {word}{judged}{within} ({level} CI {near:.1f}–{far:.1f} %)"
    return Verdict(True, word, is_better, change, low, high, spread, text)


def verdict_for(estimate: Ratio, headline: Mapping[str, Any] | None, *, a: str = "A", b: str = "B") -> Verdict:
    """:func:`verdict` for a workload's headline as a run stores it (``summary["headline"]``:
    ``better`` and ``per``); the default headline (the score) is a rate where higher is better."""
    headline = headline or {}
    return verdict(estimate, str(headline.get("better") or "higher"),
                   rate=headline.get("per", "minute") in ("minute", "second"), a=a, b=b)


def _signed(percent: float) -> str:
    return f"{'−' if percent < 0 else '+'}{abs(percent):.1f} %"


# ------------------------------------------------------------------------------- one series


@dataclass(frozen=True)
class SeriesSummary:
    """One series of runs (or any sample of one figure).

    ``median`` with its exact order-statistic interval ``low``–``high`` (NaN below 6 values);
    ``cv``: coefficient of variation, sample standard deviation / mean (NaN below 2 values);
    ``spread``: (max − min) / median, the min–max relative spread (NaN below 2 values: one value
    has no spread, not a spread of 0).
    """

    n: int
    median: float
    low: float
    high: float
    mean: float
    cv: float
    minimum: float
    maximum: float
    spread: float
    method: str

    @property
    def text(self) -> str:
        interval = (f" (95 % CI {readable(self.low)}–{readable(self.high)})" if math.isfinite(self.low)
                    else f" (no 95 % interval below {MIN_EXACT_MEDIAN} values)")
        cv = f", CV {self.cv * 100:.1f} %" if math.isfinite(self.cv) else ""
        spread = f", min–max {self.spread * 100:.1f} % of the median" if math.isfinite(self.spread) else ""
        return f"median {readable(self.median)}{interval}{cv}{spread} over {self.n}"


def summarize(values: Sequence[float], *, confidence: float = CONFIDENCE) -> SeriesSummary:
    """Median with its interval, CV and min–max spread of ``values`` (assumed independent draws)."""
    array = np.asarray([float(v) for v in values], dtype=float)
    if len(array) == 0 or not np.all(np.isfinite(array)):
        raise ValueError("summarize needs at least one finite value")
    median, low, high = _median_interval(array, confidence)
    mean = float(array.mean())
    cv = float(array.std(ddof=1) / mean) if len(array) > 1 and mean != 0 else math.nan
    spread = float(np.ptp(array) / median) if len(array) > 1 and median != 0 else math.nan
    return SeriesSummary(len(array), median, low, high, mean, cv, float(array.min()), float(array.max()), spread,
                         "median with the exact order-statistic interval (scipy.stats.quantile_test)")


def trend(values: Sequence[float], *, confidence: float = CONFIDENCE) -> tuple[float, float, float] | None:
    """The slope of ``values`` over their position (0, 1, 2 …) and its interval: Theil–Sen's
    median of pairwise slopes, robust to a stray point; None with fewer than
    :data:`MIN_TREND_POINTS` finite values."""
    points = [(float(i), float(v)) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    if len(points) < MIN_TREND_POINTS:
        return None
    xs, ys = zip(*points, strict=True)
    if max(ys) == min(ys):
        return 0.0, 0.0, 0.0
    return theil_sen(ys, xs, confidence)
