"""Audits: the workload's bounds on what the client submitted and counted (e.g. TPC-C's 1 % of
New-Order rollbacks), judged on the measured period's unit totals, tallies and metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fbbench.analysis import figures
from fbbench.workloads.expressions import ExpressionError, evaluate
from fbbench.workloads.spec import Workload


def run_audits(workload: Workload, units: Mapping[str, Mapping[str, Any]],
               metrics: Mapping[str, float | None]) -> list[dict[str, Any]]:
    available = figures.names(units, metrics)
    results = []
    for audit in workload.audits:
        try:
            figure = float(evaluate(audit.value, available))
        except ExpressionError as error:
            results.append({"name": audit.name, "passed": None, "value": None, "detail": f"not evaluated: {error}"})
            continue
        bounds = []
        if audit.min is not None:
            bounds.append(f"≥ {audit.min:g}")
        if audit.max is not None:
            bounds.append(f"≤ {audit.max:g}")
        inside = (audit.min is None or figure >= audit.min) and (audit.max is None or figure <= audit.max)
        shown = f"{figure:.3f}{audit.unit}"
        results.append({"name": audit.name, "passed": inside if bounds else None, "value": figure,
                        "detail": shown + (f" (required {' and '.join(bounds)})" if bounds else "")})
    return results
