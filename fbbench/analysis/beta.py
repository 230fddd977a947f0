"""The Beta distribution's quantile in plain Python, for the exact (Clopper–Pearson) binomial
interval an audit gives at the end of every run, and what derives from it: Student's t critical
value (for Welch's and the one-sample t intervals) and the order statistics that bound a median
(the exact interval scipy.stats.quantile_test gives).

scipy.special has it (``betaincinv``), but importing scipy.special takes 0.6–0.8 s on this
project's 2-core VMs, and every run's engine process would pay it once more, after its load, in
the time a sweep spends beyond its runs (``benchmarks/sweep_overhead.py``). Here the regularized
incomplete beta function I_x(a, b) is Lentz's continued fraction (Numerical Recipes, 6.4), and
its inverse a bisection on x to a relative 1e-15; ``tests/test_analysis.py`` holds it to
scipy's binomtest, ``t_critical`` to scipy.stats.t and ``median_bounds`` to quantile_test: a
compare, a sweep's report or a series' line no longer imports scipy.stats (1.5 s of CPU) for
them. (lgamma's rounding at a, b ≈ 10⁷ leaves a relative 1e-8, immaterial to an
audit's bounds.)
"""

from __future__ import annotations

import math
from collections.abc import Callable

TINY = 1e-300  # keeps Lentz's quotients away from zero
EPSILON = 1e-15
MAX_TERMS = 1_000_000  # the fraction converges in about √max(a, b) terms; this is beyond any count


def _fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of I_x(a, b), good for x < (a + 1) / (a + b + 2)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > TINY else TINY)
    h = d
    for m in range(1, MAX_TERMS):
        for numerator in (m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > TINY else TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > TINY else TINY
            h *= d * c
        if abs(d * c - 1.0) < EPSILON:
            return h
    raise ArithmeticError(f"the incomplete beta's fraction did not converge (a={a}, b={b}, x={x})")


def incomplete(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), a, b > 0."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _fraction(x, a, b) / a
    return 1.0 - front * _fraction(1.0 - x, b, a) / b


def quantile(a: float, b: float, p: float) -> float:
    """The x with I_x(a, b) = p (scipy.special.betaincinv), 0 < p < 1."""
    low, high = 0.0, 1.0
    while high - low > EPSILON * high:
        middle = (low + high) / 2
        if not low < middle < high:  # as close as floating point gets
            break
        if incomplete(a, b, middle) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def t_critical(confidence: float, df: float) -> float:
    """The two-sided critical value of Student's t with ``df`` degrees of freedom (any df > 0, as
    Welch's gives): the t with P(|T| ≤ t) = ``confidence`` (scipy.stats.t.ppf(0.5 + confidence / 2,
    df)). P(|T| > t) is I_x(df / 2, 1 / 2) at x = df / (df + t²), so x is that Beta quantile of
    1 − confidence."""
    x = quantile(df / 2, 0.5, 1.0 - confidence)
    return math.sqrt(df * (1.0 - x) / x)


def median_bounds(n: int, confidence: float) -> tuple[int | None, int | None]:
    """The 0-based positions, in the sorted values, of the exact distribution-free interval of a
    median of ``n`` values (scipy.stats.quantile_test(x, p=0.5).confidence_interval): with K the
    count of values below the median, Binomial(n, 1/2), the low end is the order statistic
    ppf(α/2) − 1 and the high end isf(α/2), α = 1 − confidence. None where an end falls outside
    the values (too few of them for the confidence asked). P(K ≤ k) is I_½(n − k, k + 1)."""
    tail = (1.0 - confidence) / 2

    def at_most(k: int) -> float:
        return 1.0 if k >= n else incomplete(n - k, k + 1, 0.5)

    def smallest(holds: Callable[[int], bool]) -> int | None:
        """The smallest k in 0 .. n for which ``holds`` (true from some k on), else None."""
        if not holds(n):
            return None
        low, high = 0, n
        while low < high:
            middle = (low + high) // 2
            if holds(middle):
                high = middle
            else:
                low = middle + 1
        return low

    ppf = smallest(lambda k: at_most(k) >= tail)
    isf = smallest(lambda k: 1.0 - at_most(k) <= tail)
    low = None if ppf is None or ppf < 1 else ppf - 1
    high = None if isf is None or isf >= n else isf
    return low, high
