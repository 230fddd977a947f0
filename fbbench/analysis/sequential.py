"""Pairs run until their comparison is resolved (``compare --paired --until-resolved``): an
interval valid at every look, and when it allows the pairs to stop.

Looking after every pair at an ordinary 95 % interval and stopping the first time it excludes
"no change" claims a difference between identical sides far more often than 5 % of the time:
each look is another chance for the noise to cross. A **confidence sequence** is a sequence of
intervals that holds the true ratio at *every* look at once with probability ≥ 95 %, so stopping
whenever it says so — or at a time limit, on Ctrl-C, or never — keeps the error rate honest.

The one used here is the t mixture (Lai 1976; the "safe" one-sample t-test of Grünwald, de Heide
and Koolen, and Pérez-Ortiz et al. 2024): on the per-pair log ratios x_i = log(b_i / a_i),
assumed normal with unknown mean μ and spread σ, the Bayes factor of "μ ≠ μ0" against "μ = μ0"
with a normal prior of variance ``mixture`` on the effect size (μ − μ0)/σ and the scale-invariant
prior on σ is a non-negative martingale under μ = μ0, whatever σ is. By Ville's inequality it
ever reaches 1/α with probability ≤ α, so the μ0 it has not rejected — a t interval whose
critical value grows slowly with n (:func:`critical_t`) — form a confidence sequence. With
α = 0.05 and mixture 1 the critical t is 8.45 at 5 pairs, 3.87 at 10, 3.42 at 20 and 3.35 at 40
(a fixed-sample interval's is about 2.0): the price of looking at every pair. Fewer than 5 pairs
give no interval at all.

Its two stopping claims are honest at once: the sequence excludes 1 (a difference: wrong for
identical sides at most 5 % of the time), or it lies within ±``threshold`` (no difference that
large: wrong at most 5 % of the time when the true one is larger). Measured on A/A data
(normal, heavy-tailed and disturbed per-pair noise, up to 300 looks; ``tests/test_sequential.py``
and ``benchmarks/compare_resolution.py``): 2–3.5 % of paths ever claim a difference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from fbbench.analysis import stats

MIXTURE = 1.0  # the prior variance of the effect size (μ − μ0)/σ: a difference about one spread wide
THRESHOLD = 0.01  # the smallest difference that matters, by default: ±1 %
METHOD = ("geometric mean of the per-pair ratios; confidence sequence valid at every look (t mixture, "
          "mixture {mixture:g})")

# Why the pairs stopped: the key the comparison document keeps, and what it says.
DIFFERENCE, WITHIN, MAX_TIME, MAX_PAIRS, INTERRUPTED, FAILED = (
    "difference", "within_threshold", "max_time", "max_pairs", "interrupted", "failed")
RESOLVED = (DIFFERENCE, WITHIN)


@dataclass(frozen=True)
class Design:
    """What the pairs ran under, as each run records it (``settings.timeshare.until_resolved``):
    the interval's confidence, the smallest difference that matters, the mixture, and the limits
    (None: none) that could end the pairs before the interval allowed it."""

    confidence: float = stats.CONFIDENCE
    threshold: float = THRESHOLD
    mixture: float = MIXTURE
    max_seconds: float | None = None
    max_pairs: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> Design:
        return cls(float(value.get("confidence", stats.CONFIDENCE)), float(value.get("threshold", THRESHOLD)),
                   float(value.get("mixture", MIXTURE)),
                   None if value.get("max_seconds") is None else float(value["max_seconds"]),
                   None if value.get("max_pairs") is None else int(value["max_pairs"]))

    @property
    def method(self) -> str:
        return METHOD.format(mixture=self.mixture)


def critical_t(pairs: int, confidence: float = stats.CONFIDENCE, mixture: float = MIXTURE) -> float:
    """The |t| from which the sequence excludes a ratio after ``pairs`` pairs (inf: none yet).

    The Bayes factor after n pairs, with ν = n − 1 and r = 1 + n·mixture, is
    r^(−1/2) · ((1 + t²/ν) / (1 + t²/(ν·r)))^(n/2); it reaches 1/α where t²/ν = (K − 1)/(1 − K/r),
    K = (√r / α)^(2/n) — and never while K ≥ r (too few pairs)."""
    if pairs < 2:
        return math.inf
    alpha = 1 - confidence
    spread = 1 + pairs * mixture
    k = (math.sqrt(spread) / alpha) ** (2 / pairs)
    if k >= spread:
        return math.inf
    return math.sqrt((k - 1) / (1 - k / spread) * (pairs - 1))


def first_pairs(confidence: float = stats.CONFIDENCE, mixture: float = MIXTURE) -> int:
    """The fewest pairs that give the sequence an interval at all."""
    return next(n for n in range(2, 10_000) if math.isfinite(critical_t(n, confidence, mixture)))


def interval(ratios: Sequence[float], design: Design = Design()) -> stats.Ratio:
    """B / A over per-pair ratios b_i / a_i: their geometric mean, with the sequence's interval."""
    n = len(ratios)
    method = design.method
    values = np.asarray([float(r) for r in ratios], dtype=float) if n else np.zeros(0)
    if n == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        return stats.Ratio(math.nan, math.nan, math.nan, n, n, "pairs", method, design.confidence,
                           "a ratio is missing or not a positive number")
    logs = np.log(values)
    point = float(np.exp(logs.mean()))
    critical = critical_t(n, design.confidence, design.mixture)
    if not math.isfinite(critical):
        return stats.Ratio(point, math.nan, math.nan, n, n, "pairs", method, design.confidence,
                           f"{n} pair(s): the sequence gives an interval from "
                           f"{first_pairs(design.confidence, design.mixture)} pairs")
    if np.ptp(logs) == 0:
        return stats.Ratio(point, math.nan, math.nan, n, n, "pairs", method, design.confidence, stats.NO_SPREAD)
    half = critical * float(logs.std(ddof=1)) / math.sqrt(n)
    return stats.Ratio(point, float(np.exp(logs.mean() - half)), float(np.exp(logs.mean() + half)), n, n, "pairs",
                       method, design.confidence)


def decision(estimate: stats.Ratio, threshold: float) -> str | None:
    """DIFFERENCE when the interval excludes 1, WITHIN when it lies inside ±threshold (on the
    log scale: between 1/(1 + threshold) and 1 + threshold), None while it does neither."""
    if not estimate.has_interval:
        return None
    if estimate.resolved:
        return DIFFERENCE
    if estimate.low > 1 / (1 + threshold) and estimate.high < 1 + threshold:
        return WITHIN
    return None


@dataclass(frozen=True)
class Look:
    """The sequence after ``pairs`` complete pairs, and what it allowed."""

    pairs: int
    estimate: stats.Ratio
    decision: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": self.pairs, "ratio": self.estimate.ratio, "low": self.estimate.low,
                "high": self.estimate.high, "decision": self.decision}


def looks(ratios: Sequence[float], design: Design = Design()) -> list[Look]:
    """The look after each pair, up to the first that decided (the pairs stop there)."""
    found = []
    for n in range(1, len(ratios) + 1):
        estimate = interval(ratios[:n], design)
        found.append(Look(n, estimate, decision(estimate, design.threshold)))
        if found[-1].decision is not None:
            break
    return found


def stop_text(reason: str | None, design: Design, pairs: int) -> str:
    """Why the pairs stopped, in words."""
    threshold = f"±{design.threshold * 100:g} %"
    texts = {
        DIFFERENCE: f"resolved after {pairs} pair(s): the interval excludes no change",
        WITHIN: f"resolved after {pairs} pair(s): the interval lies within {threshold}, no difference that large",
        MAX_TIME: f"not resolved within --max-time ({pairs} pair(s)): another pair would not have ended in time",
        MAX_PAIRS: f"not resolved within --pairs {pairs}",
        INTERRUPTED: f"interrupted by the user after {pairs} complete pair(s)",
        FAILED: f"a run failed after {pairs} complete pair(s)",
    }
    return texts.get(reason or "", f"stopped after {pairs} pair(s) without a recorded reason (the command was "
                                   "killed?)")


def false_claims(log_ratios: Sequence[float] | None, design: Design, max_pairs: int, *, paths: int = 20_000,
                 seed: int = 0, spread: float = 1.0) -> float:
    """The share of A/A paths of up to ``max_pairs`` looks on which the sequence ever claims a
    difference. Each path draws per-pair log ratios with replacement from ``log_ratios`` and
    their negatives — the machine's noise as measured, made symmetric as identical sides make it
    (which side is called B is arbitrary; a bias between the sides is for the A/A interval to
    show) — or from a normal of ``spread`` when None."""
    rng = np.random.default_rng(seed)
    if log_ratios is None:
        draws = rng.normal(0.0, spread, (paths, max_pairs))
    else:
        measured = np.asarray(log_ratios, dtype=float)
        draws = rng.choice(np.concatenate([measured, -measured]), (paths, max_pairs), replace=True)
    n = np.arange(1, max_pairs + 1)
    sums, squares = np.cumsum(draws, axis=1), np.cumsum(draws * draws, axis=1)
    mean = sums / n
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = np.maximum(squares - n * mean * mean, 0.0) / (n - 1)
        # No spread (a path that drew one value n times) gives no interval, as in interval().
        t = np.where(variance > 0, np.abs(mean) / np.sqrt(variance / n), 0.0)
    critical = np.array([critical_t(int(k), design.confidence, design.mixture) for k in n])
    claimed = np.nan_to_num(t, nan=0.0) >= critical
    return float(claimed.any(axis=1).mean())


# ------------------------------------------------------------------ the comparison's part


def design_of_runs(runs: Sequence[Mapping[str, Any]]) -> Design | None:
    """The design time-shared pairs ran under (``compare --paired --until-resolved``), as their
    runs recorded it; None for pairs of a fixed number, or runs that were not paired."""
    for run in runs:
        recorded = ((run.get("settings") or {}).get("timeshare") or {}).get("until_resolved")
        if isinstance(recorded, Mapping):
            return Design.from_dict(recorded)
    return None


def recorded_stop(runs: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """Why the pairs stopped, as the command recorded it on the runs of the last pair."""
    for run in reversed(runs):
        for phase in run.get("phases") or ():
            if phase.get("name") == "until_resolved" and isinstance(phase.get("detail"), Mapping):
                return dict(phase["detail"])
    return None


def document(figure: str, ratios: Sequence[float], design: Design,
             recorded: Mapping[str, Any] | None) -> dict[str, Any]:
    """The comparison document's ``sequential`` (docs/compare-result.md): the design, every look
    (one after each complete pair), where the sequence decided, and why the pairs stopped."""
    every = []
    for n in range(1, len(ratios) + 1):
        estimate = interval(ratios[:n], design)
        every.append(Look(n, estimate, decision(estimate, design.threshold)))
    decided = next((look.pairs for look in every if look.decision is not None), None)
    reason = (recorded or {}).get("stopped_because") or (every[-1].decision if every else None)
    return {"figure": figure, "design": design.to_dict() | {"method": design.method,
                                                          "first_interval_at": first_pairs(design.confidence,
                                                                                           design.mixture)},
            "looks": [look.to_dict() for look in every], "decided_at": decided, "stopped_because": reason,
            "text": stop_text(reason, design, len(ratios))}
