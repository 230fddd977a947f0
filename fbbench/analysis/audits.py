"""Audits: the workload's bounds on what the client submitted and counted (e.g. TPC-C's 1 % of
New-Order rollbacks), judged on the measured period's unit totals, tallies and metrics — with
their sampling interval, so that a short run is not failed by chance.

**The interval.** The audit's expression is read for its shape:

- ``X / Y``, ``c * X / Y``, ``X / Y * c`` with X and Y sums of counts (unit outcomes such as
  ``new_order.rolled_back``, tallies such as ``payment.tally.REMOTE``; ``c`` a constant, e.g. 100
  for a percentage):

  - a **proportion** when X counts some of the Y trials — X's names are among Y's, or X ≤ Y
    (rolled back among submitted New-Orders, remote Payments among Payments, remote lines among
    order lines): each trial is taken as an independent yes/no, and the interval is the exact
    Clopper–Pearson binomial interval of X successes in n = Y trials (as ``scipy.stats.binomtest``);
    exact means its coverage is at least 95 % for every n, which is what a verdict needs;
  - a **mean** per unit otherwise (X > Y, e.g. order lines per New-Order): the sum of a tally
    over n = Y units has no stored spread, so the per-unit variance is taken equal to the mean
    (Poisson; TPC-C's order-line count, uniform 5–15, has variance 10 for mean 10) and the normal
    interval X/Y ± 1.96 · √(X/Y / Y) is used from 30 units on; below 30 there is no interval and
    the audit is judged as a short run below.

- any other shape (a metric, a sum without a division): no interval; the value alone decides.

**The verdict** (``passed``):

- ``False`` (FAIL) only when the whole interval lies outside the bounds: the run's mix really is
  off, chance cannot explain it;
- ``True`` (PASS) when the measured value lies inside the bounds: the run met them as measured
  and nothing contradicts it (its interval may still reach outside: a short run proves little,
  and the detail shows the interval);
- ``None`` with "too few transactions to judge" when the value lies outside the bounds but its
  interval reaches inside them (or a mean has fewer than 30 units): chance can explain the
  miss, so it is neither a pass nor a failure;
- ``None`` also for an audit without bounds (information) or one that cannot be evaluated.
"""

from __future__ import annotations

import ast
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fbbench.analysis import beta, figures
from fbbench.workloads.expressions import ExpressionError, dotted_name, evaluate
from fbbench.workloads.spec import Workload

CONFIDENCE = 0.95
MIN_MEAN_UNITS = 30  # a mean per unit gets a normal interval from this many units on


@dataclass(frozen=True)
class Sampling:
    """The sampling interval of an audit's value: ``low``–``high`` over ``n`` trials or units."""

    kind: str  # proportion / mean
    low: float | None
    high: float | None
    n: int


def _constant(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    return None


def _peel(node: ast.AST) -> tuple[float, ast.AST]:
    """``c * E`` / ``E * c`` → (c, E), repeatedly."""
    scale = 1.0
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = _constant(node.left), _constant(node.right)
        if left is not None:
            scale, node = scale * left, node.right
        elif right is not None:
            scale, node = scale * right, node.left
        else:
            break
    return scale, node


def _sum_of_counts(node: ast.AST) -> list[str] | None:
    """The names of ``a + b + c`` when each is a count (not a metric, not the seconds)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _sum_of_counts(node.left), _sum_of_counts(node.right)
        return None if left is None or right is None else left + right
    name = dotted_name(node)
    if name is None or name.startswith("metrics.") or name == "seconds":
        return None
    return [name]


def ratio_shape(expression: str) -> tuple[float, list[str], list[str]] | None:
    """(c, X names, Y names) when ``expression`` is ``c · X / Y`` over sums of counts, else None."""
    try:
        tree = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        return None
    outer, node = _peel(tree)
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
        return None
    inner, numerator = _peel(node.left)
    names_x, names_y = _sum_of_counts(numerator), _sum_of_counts(node.right)
    if names_x is None or names_y is None:
        return None
    return outer * inner, names_x, names_y


def sampling(expression: str, available: Mapping[str, float], confidence: float = CONFIDENCE) -> Sampling | None:
    """The sampling interval of ``expression``'s value, or None when its shape is not known.

    A mean of fewer than 30 units comes back with ``low``/``high`` None (too few to judge).
    """
    shape = ratio_shape(expression)
    if shape is None:
        return None
    scale, names_x, names_y = shape
    try:
        x = sum(float(available[name]) for name in names_x)
        y = sum(float(available[name]) for name in names_y)
    except KeyError:
        return None
    if y <= 0 or x < 0:
        return None
    n = round(y)
    if set(names_x) <= set(names_y) or x <= y:
        k = min(round(x), n)
        low, high = clopper_pearson(k, n, confidence)
        return Sampling("proportion", scale * low, scale * high, n)
    if n < MIN_MEAN_UNITS:
        return Sampling("mean", None, None, n)
    mean = x / y
    half = statistics.NormalDist().inv_cdf(0.5 + confidence / 2) * math.sqrt(mean / y)
    return Sampling("mean", scale * (mean - half), scale * (mean + half), n)


def clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """The exact (Clopper–Pearson) interval of k successes in n trials: the Beta quantiles that
    scipy.stats.binomtest(k, n).proportion_ci(method="exact") gives, computed by
    :mod:`fbbench.analysis.beta` — it runs at the end of every run, in the engine process, where
    importing scipy would cost more than the rest of the audits."""
    alpha = 1 - confidence
    low = 0.0 if k == 0 else beta.quantile(k, n - k + 1, alpha / 2)
    high = 1.0 if k == n else beta.quantile(k + 1, n - k, 1 - alpha / 2)
    return low, high


def _inside(value: float, low: float | None, high: float | None) -> bool:
    return (low is None or value >= low) and (high is None or value <= high)


def judge(value: float, bound_min: float | None, bound_max: float | None,
          sample: Sampling | None) -> tuple[bool | None, str]:
    """(passed, why) by the rule in the module."""
    if bound_min is None and bound_max is None:
        return None, ""
    if _inside(value, bound_min, bound_max):
        return True, ""
    if sample is None:
        return False, "no sampling interval for this expression: judged on its value"
    if sample.low is None or sample.high is None:
        return None, "too few transactions to judge"
    entirely_below = bound_min is not None and sample.high < bound_min
    entirely_above = bound_max is not None and sample.low > bound_max
    if entirely_below or entirely_above:
        return False, ""
    return None, "too few transactions to judge"


def run_audits(workload: Workload, units: Mapping[str, Mapping[str, Any]],
               metrics: Mapping[str, float | None]) -> list[dict[str, Any]]:
    """Each audit: name, passed (True / False / None), value, detail, and its interval (``low``,
    ``high``) over ``n`` trials or units (None where there is none)."""
    available = figures.names(units, metrics)
    results: list[dict[str, Any]] = []
    for audit in workload.audits:
        try:
            figure = float(evaluate(audit.value, available))
        except ExpressionError as error:
            results.append({"name": audit.name, "passed": None, "value": None, "detail": f"not evaluated: {error}",
                            "low": None, "high": None, "n": None})
            continue
        sample = sampling(audit.value, available)
        passed, why = judge(figure, audit.min, audit.max, sample)
        bounds = []
        if audit.min is not None and audit.min == audit.max:
            bounds.append(f"= {audit.min:g}")
        else:
            if audit.min is not None:
                bounds.append(f"≥ {audit.min:g}")
            if audit.max is not None:
                bounds.append(f"≤ {audit.max:g}")
        parts = []
        if sample is not None and sample.low is not None and sample.high is not None:
            parts.append(f"95 % CI {sample.low:.3f}–{sample.high:.3f}{audit.unit}, n = {sample.n:,}")
        elif sample is not None:
            parts.append(f"n = {sample.n:,}, fewer than {MIN_MEAN_UNITS} for an interval")
        if bounds:
            parts.append(f"required {' and '.join(bounds)}")
        # A count (a difference of counts) is a whole number: 0, not 0.000.
        shown = f"{figure:,.0f}" if figure.is_integer() else f"{figure:.3f}"
        detail = f"{shown}{audit.unit}" + (f" ({'; '.join(parts)})" if parts else "")
        if why:
            detail = f"{why}: {detail}"
        results.append({"name": audit.name, "passed": passed, "value": figure, "detail": detail,
                        "low": None if sample is None else sample.low, "high": None if sample is None else sample.high,
                        "n": None if sample is None else sample.n})
    return results
