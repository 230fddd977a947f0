"""The figures a run reports, each computed once: the workload's headline, the score, TPM.

What a figure *is* (``Figure``, the score, the outcome names) is the workload format's
(:mod:`fbbench.workloads.figures`); how its value comes out of a run's counts is here.

Every place that shows one of them — the summary stored with the run, the live line, the
per-interval chart, ``results list``, comparisons — computes it here, from the same inputs the
store keeps (unit counts, tallies, metric values, measured seconds).

Names a figure's expression can use (also the names audits use):

- ``ok``, ``rolled_back``, ``conflicts``, ``errors``, ``total``: summed over all units;
- ``<unit>.ok`` … ``<unit>.total``, ``<unit>.tally.<COLUMN>``;
- ``metrics.<name>``: a DB-side metric's reported value (per minute when the metric says so);
- ``seconds``: the measured seconds (elapsed time, for fixed work).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fbbench.workloads.expressions import ExpressionError, evaluate
from fbbench.workloads.figures import OUTCOMES, PER_SECONDS, SCORE, Figure


def names(units: Mapping[str, Mapping[Any, Any]], metrics: Mapping[str, float | None] | None = None,
          seconds: float | None = None) -> dict[str, float]:
    """The names a figure or an audit may use, from unit totals (with tallies) and metric values."""
    found: dict[str, float] = dict.fromkeys((*OUTCOMES, "total"), 0.0)
    for unit, totals in units.items():
        for key in OUTCOMES:
            count = float(totals.get(key, 0) or 0)
            found[f"{unit}.{key}"] = count
            found[key] += count
        found[f"{unit}.total"] = sum(found[f"{unit}.{key}"] for key in OUTCOMES)
        for column, total in (totals.get("tally") or {}).items():
            found[f"{unit}.tally.{column}"] = float(total)
    found["total"] = sum(found[key] for key in OUTCOMES)
    for name, value in (metrics or {}).items():
        if value is not None:
            found[f"metrics.{name}"] = float(value)
    if seconds is not None:
        found["seconds"] = float(seconds)
    return found


def metric_unit(per_minute: bool) -> str:
    """The unit of a DB-side metric's reported value: per minute, or a count (its change)."""
    return "/min" if per_minute else ""


def value(figure: Figure, available: Mapping[str, float], seconds: float | None) -> float | None:
    """The figure's value; None when it cannot be computed (no measured time, a name missing, 0/0)."""
    try:
        raw = float(evaluate(figure.value, available))
    except ExpressionError:
        return None
    per = PER_SECONDS[figure.per]
    if per is None:
        return raw
    if not seconds or seconds <= 0:
        return None
    return raw * per / seconds


def score_per_minute(units: Mapping[str, Mapping[str, Any]], seconds: float | None) -> float | None:
    """Successful units per minute: the default headline, and the live line's figure."""
    return value(SCORE, names(units), seconds)


def tpm(units: Mapping[str, Mapping[str, Any]], seconds: float | None) -> float | None:
    """Transactions (committed or rolled back by design) per minute."""
    return value(Figure("TPM", "ok + rolled_back"), names(units), seconds)


def latency_ms(histograms: Sequence[str]) -> dict[str, float]:
    """p50, p95, p99 and max latency in ms of the merged ``histograms`` (serialized by the native
    core, whose HDR code summarises the whole run the same way); empty without a count."""
    if not histograms:
        return {}
    from fbbench import _core

    summary = _core.histogram_summary(list(histograms))
    if not summary.get("count"):
        return {}
    return {key: summary[f"{key}_us"] / 1000 for key in ("p50", "p95", "p99") if f"{key}_us" in summary} | {
        "max": summary.get("max_us", 0) / 1000}


def latency_per_interval(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[int, str], dict[str, float]]:
    """:func:`latency_ms` of each stored interval row (index, unit) that has a histogram."""
    return {(row["index"], row["unit"]): latency_ms([row["histogram"]]) for row in rows if row.get("histogram")}
