"""The Beta distribution's quantile in plain Python, for the exact (Clopper–Pearson) binomial
interval an audit gives at the end of every run.

scipy.special has it (``betaincinv``), but importing scipy.special takes 0.6–0.8 s on this
project's 2-core VMs, and every run's engine process would pay it once more, after its load, in
the time a sweep spends beyond its runs (``benchmarks/sweep_overhead.py``). Here the regularized
incomplete beta function I_x(a, b) is Lentz's continued fraction (Numerical Recipes, 6.4), and
its inverse a bisection on x to a relative 1e-15; ``tests/test_analysis.py`` holds it to
scipy's binomtest. (lgamma's rounding at a, b ≈ 10⁷ leaves a relative 1e-8, immaterial to an
audit's bounds.)
"""

from __future__ import annotations

import math

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
