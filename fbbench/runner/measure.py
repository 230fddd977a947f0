"""Phases 3–5 of a run, inside the engine child: before, measure, after.

- before: sweep, header snapshot (OIT/OAT/OST/Next, size), DB-side metrics, effective config;
- measure: the native core drives the attachments; Python only polls its counters;
- after: header snapshot, DB-side metrics, the workload's consistency checks and audits.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fbbench.database import driver, lifecycle
from fbbench.errors import FbbenchError
from fbbench.workloads.expressions import ExpressionError, evaluate
from fbbench.workloads.generators import choose_c_run
from fbbench.workloads.spec import Workload

if TYPE_CHECKING:
    from fbbench.engines.runtime import Runtime


@dataclass
class MetricReading:
    values: dict[str, float | None]
    at: float  # time.time() of the reading


def snapshot(dsn: str) -> dict[str, Any]:
    """Header and size: what an expert compares before and after a run."""
    info = lifecycle.info(dsn)
    keys = ("oldest_transaction", "oldest_active", "oldest_snapshot", "next_transaction", "pages", "size_bytes",
            "page_size", "page_buffers", "forced_writes", "sweep_interval", "ods")
    return {key: info[key] for key in keys} | {"taken_at": time.time()}


def engine_facts(dsn: str, runtime: Runtime) -> dict[str, Any]:
    """Version strings, architecture, and the effective firebird.conf (RDB$CONFIG on 4.0+)."""
    info = lifecycle.info(dsn)
    rows = lifecycle.effective_config(dsn)
    facts: dict[str, Any] = {
        "engine_version": info["engine_version"],
        "server_version": info["server_version"],
        "version_lines": info["version_lines"],
        "architecture": info["architecture"],
        "ods": info["ods"],
    }
    if rows:
        facts["firebird_conf_source"] = "RDB$CONFIG"
        facts["firebird_conf"] = rows
        mode = next((row["value"] for row in rows if row["name"] == "ServerMode"), None)
        if mode:
            facts["server_mode"] = mode
    elif runtime.embedded:
        # Firebird 3 has no RDB$CONFIG: the generated file is what the embedded engine read.
        facts["firebird_conf_source"] = "generated firebird.conf (engine defaults for everything else)"
        facts["firebird_conf_text"] = runtime.conf_file.read_text()
        facts["server_mode"] = runtime.conf.get("ServerMode", "Super")
    else:
        # A Firebird 3 server shows neither its firebird.conf nor its ServerMode to a client.
        facts["firebird_conf_source"] = "not visible: a Firebird 3 server has no RDB$CONFIG"
        facts["firebird_conf_text"] = ""
        facts["server_mode"] = "unknown (not visible from a Firebird 3 client)"
    return facts


def sweep(services_host: str, database: str) -> float:
    started = time.monotonic()
    with driver.server(services_host) as server:
        server.database.sweep(database=database)
    return time.monotonic() - started


def read_metrics(connection: Any, workload: Workload) -> MetricReading:
    values: dict[str, float | None] = {}
    with connection.cursor() as cursor:
        for metric in workload.metrics:
            cursor.execute(metric.sql)
            row = cursor.fetchone()
            values[metric.name] = None if row is None or row[0] is None else float(row[0])
    connection.commit()
    return MetricReading(values, time.time())


def metric_results(workload: Workload, start: MetricReading, end: MetricReading) -> dict[str, dict[str, Any]]:
    minutes = (end.at - start.at) / 60
    results = {}
    for metric in workload.metrics:
        first, last = start.values.get(metric.name), end.values.get(metric.name)
        delta = None if first is None or last is None else last - first
        if metric.per_minute and delta is not None:
            delta = delta / minutes if minutes > 0 else None
        results[metric.name] = {"start": first, "end": last, "value": delta, "per_minute": metric.per_minute,
                                "description": metric.description, "window_seconds": end.at - start.at}
    return results


def exception_numbers(dsn: str, workload: Workload) -> dict[str, int]:
    names = sorted({name.upper() for unit in workload.units for name in unit.rollback_on})
    if not names:
        return {}
    with driver.connect(dsn) as connection, connection.cursor() as cursor:
        cursor.execute("select trim(rdb$exception_name), rdb$exception_number from rdb$exceptions")
        known = {name: number for name, number in cursor.fetchall()}
    missing = [name for name in names if name not in known]
    if missing:
        raise FbbenchError(f"workload {workload.name}: rollback_on names unknown exception(s) {', '.join(missing)}",
                           hint=f"define them in the workload's scripts; see {workload.source}")
    return {name: known[name] for name in names}


def nurand_constants(dsn: str, workload: Workload, seed: int) -> dict[int, dict[str, int | None]]:
    """C-Run per A (TPC-C 2.1.6), from the population's C-Load when the workload stores it."""
    wanted = sorted({int(g.args[0]) for unit in workload.units for statement in unit.statements
                     for g in statement.params if g.kind == "nurand"})
    loads: dict[int, int] = {}
    if workload.nurand_sql:
        with driver.connect(dsn) as connection, connection.cursor() as cursor:
            cursor.execute(workload.nurand_sql)
            loads = {int(a): int(c) for a, c in cursor.fetchall()}
    rng = random.Random(seed ^ 0x5EED_C0DE)
    return {a: {"c_load": loads.get(a), "c_run": choose_c_run(a, loads.get(a), rng)} for a in wanted}


def core_config(workload: Workload, settings: Mapping[str, Any], dsn: str, client_library: str,
                credentials: tuple[str, str | None], seed: int, exceptions: Mapping[str, int],
                nurand: Mapping[int, Mapping[str, int | None]]) -> dict[str, Any]:
    """The native core's config (docs/core-api.md) for this run."""

    def params(generators: Any) -> list[dict[str, Any]]:
        out = []
        for generator in generators:
            spec = generator.to_core()
            if generator.kind == "nurand":
                spec["args"] = [*spec["args"], nurand[int(generator.args[0])]["c_run"]]
            out.append(spec)
        return out

    fixed_work = settings["transactions"] is not None
    return {
        "client_library": client_library,
        "database": dsn,
        "user": credentials[0],
        "password": credentials[1],
        "role": None,
        "charset": "UTF8",
        "connections": settings["connections"],
        "connect_rate": settings["connect_rate"],
        "warmup_seconds": 0.0 if fixed_work else settings["warmup"],
        "measure_seconds": None if fixed_work else settings["duration"],
        "transactions": settings["transactions"],
        "interval_seconds": settings["interval"],
        "seed": seed,
        "target_rate": settings["target_rate"],
        "units": [
            {
                "name": unit.name,
                "weight": unit.weight,
                "isolation": unit.isolation,
                "read_only": unit.read_only,
                "lock_timeout": unit.lock_timeout,
                "keying_seconds": unit.keying_time,
                "think_seconds": unit.think_time,
                "rollback_on": [exceptions[name.upper()] for name in unit.rollback_on],
                "tally": list(unit.tally),
                "statements": [{"sql": s.sql, "repeat": s.repeat, "params": params(s.params)}
                               for s in unit.statements],
            }
            for unit in workload.units
        ],
    }


def run_checks(dsn: str, workload: Workload) -> list[dict[str, Any]]:
    results = []
    with driver.connect(dsn) as connection, connection.cursor() as cursor:
        for check in workload.checks:
            try:
                cursor.execute(check.sql)
                row = cursor.fetchone()
                violations = int(row[0] or 0) if row else 0
                extra = [str(v) for v in (row[1:] if row else ())]
                detail = f"{violations} violation(s)" + (f"; {', '.join(extra)}" if extra else "")
                results.append({"name": check.name, "passed": violations == 0, "value": violations,
                                "detail": detail})
            except Exception as error:
                results.append({"name": check.name, "passed": False, "value": None,
                                "detail": f"could not run: {driver.explain(error, dsn).message}"})
    return results


def audit_names(units: Mapping[str, Mapping[str, Any]], metrics: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    names: dict[str, float] = {}
    for unit, totals in units.items():
        for key in ("ok", "rolled_back", "conflicts", "errors"):
            names[f"{unit}.{key}"] = totals[key]
        names[f"{unit}.total"] = sum(totals[key] for key in ("ok", "rolled_back", "conflicts", "errors"))
        for column, total in (totals.get("tally") or {}).items():
            names[f"{unit}.tally.{column}"] = total
    for name, metric in metrics.items():
        if metric.get("value") is not None:
            names[f"metrics.{name}"] = metric["value"]
    return names


def run_audits(workload: Workload, units: Mapping[str, Mapping[str, Any]],
               metrics: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    names = audit_names(units, metrics)
    results = []
    for audit in workload.audits:
        try:
            figure = float(evaluate(audit.value, names))
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
