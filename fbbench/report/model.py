"""The run result document (DESIGN.md "Run result contract"), built from the results store only.

The JSON file, the console summary and the HTML report all start from this one document, so the
three never disagree.
"""

from __future__ import annotations

import tomllib
from typing import Any


def _workload_description(run: dict[str, Any]) -> str:
    text = (run.get("workload_files") or {}).get("workload.toml")
    if not text:
        return ""
    try:
        return str(tomllib.loads(text).get("description", ""))
    except tomllib.TOMLDecodeError:
        return ""


def _latency_of_intervals(intervals: list[dict[str, Any]]) -> dict[tuple[int, str], dict[str, float]]:
    """Percentiles of each interval's histogram (via the native core's HDR code)."""
    try:
        from fbbench import _core
    except ImportError:
        return {}
    summaries = {}
    for row in intervals:
        if row.get("histogram"):
            summary = _core.histogram_summary([row["histogram"]])
            summaries[(row["index"], row["unit"])] = {
                key: summary[f"{key}_us"] / 1000 for key in ("p50", "p95", "p99") if f"{key}_us" in summary
            } | {"max": summary.get("max_us", 0) / 1000}
    return summaries


def _headline(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The workload's headline as the run stored it: its value and what it means."""
    stored = summary.get("headline")
    if not stored:
        return None
    return {"name": stored["name"], "value": stored.get("result"), "unit": stored.get("unit", ""),
            "better": stored.get("better", "higher"), "per": stored.get("per"),
            "definition": stored.get("value"), "description": stored.get("description", "")}


def result_document(run: dict[str, Any]) -> dict[str, Any]:
    settings = run.get("settings") or {}
    summary = run.get("summary") or {}
    engine = run.get("engine") or {}
    database = run.get("database") or {}
    before = database.get("before") or {}
    after = database.get("after") or before
    conf: Any
    if engine.get("firebird_conf"):
        conf = {row["name"]: row["value"] for row in engine["firebird_conf"]}
        conf_set = {row["name"]: row["value"] for row in engine["firebird_conf"] if row.get("is_set")}
    else:
        conf = engine.get("firebird_conf_text", "")
        conf_set = (settings.get("conf") or {})
    interval_latency = _latency_of_intervals(run.get("intervals", []))
    intervals = []
    for row in run.get("intervals", []):
        seconds = row["seconds"] or 0
        item = {key: row[key] for key in ("index", "phase", "unit", "start_offset", "seconds", "ok", "rolled_back",
                                          "conflicts", "errors")}
        item["ok_per_minute"] = row["ok"] * 60 / seconds if seconds else None
        item["latency_ms"] = interval_latency.get((row["index"], row["unit"]))
        intervals.append(item)
    units = {}
    for name, totals in (run.get("units") or {}).items():
        units[name] = {
            "ok": totals["ok"], "rolled_back": totals["rolled_back"], "conflicts": totals["conflicts"],
            "errors": totals["errors"],
            "errors_by_gdscode": {str(e["gdscode"]): {"count": e["count"], "message": e["message"]}
                                  for e in totals.get("errors_by_code", [])},
            "conflicts_by_gdscode": {str(e["gdscode"]): e["count"] for e in totals.get("conflicts_by_code", [])},
            "latency_ms": totals.get("latency_ms", {}),
            "tally": totals.get("tally", {}),
        }
    metrics = {name: metric["value"] for name, metric in (run.get("metrics") or {}).items()}
    load = run.get("load") or {}
    document = {
        "run_id": run["run_id"],
        "status": run["status"],
        "failure": run.get("failure"),
        "started_at": run.get("started_at"),
        "ended_at": run.get("ended_at"),
        "workload": run["workload"],
        "workload_description": _workload_description(run),
        "scale": settings.get("scale"),
        "seed": settings.get("seed"),
        "tags": settings.get("tags", []),
        "engine": {
            "label": run.get("engine_label"),
            "version": run.get("engine_version"),
            "engine_version": engine.get("engine_version"),
            "mode": engine.get("server_mode") or run.get("architecture"),
            "firebird_conf": conf,
            "firebird_conf_set": conf_set,
            "firebird_conf_source": engine.get("firebird_conf_source"),
        },
        "database": {
            "path": database.get("location"),
            "page_size": before.get("page_size"),
            "page_buffers": before.get("page_buffers"),
            "forced_writes": before.get("forced_writes"),
            "sweep_interval": before.get("sweep_interval"),
            "ods": before.get("ods"),
            "size_bytes": after.get("size_bytes"),
            "size_bytes_before": before.get("size_bytes"),
            "header_before": {k: before.get(k) for k in ("oldest_transaction", "oldest_active", "oldest_snapshot",
                                                          "next_transaction")},
            "header_after": {k: after.get(k) for k in ("oldest_transaction", "oldest_active", "oldest_snapshot",
                                                        "next_transaction")},
        },
        "population": {k: load.get(k) for k in ("source", "load_seconds", "load_connections", "total_rows",
                                                 "grown_bytes", "mb_per_second", "rows_per_second", "rows")},
        "connections": settings.get("connections"),
        "warmup_seconds": settings.get("warmup") if settings.get("transactions") is None else 0,
        "measure_seconds": summary.get("measured_seconds"),
        "transactions_per_attachment": settings.get("transactions"),
        "headline": _headline(summary),
        "score_per_minute": summary.get("score_per_minute"),
        "tpm": summary.get("tpm"),
        "metrics": metrics,
        "metric_windows": summary.get("metric_windows") or {},
        "units": units,
        "checks": [{"name": c["name"], "passed": c["passed"], "detail": c["detail"], "value": c["value"]}
                   for c in run.get("checks", []) if c["kind"] == "check"],
        "audits": [{"name": c["name"], "passed": c["passed"], "detail": c["detail"], "value": c["value"]}
                   for c in run.get("checks", []) if c["kind"] == "audit"],
        "client_cpu_seconds": summary.get("client_cpu_seconds"),
        "thread_cpu_seconds": summary.get("thread_cpu_seconds"),
        "process_cpu_seconds": summary.get("process_cpu_seconds"),
        "python_cpu_seconds": summary.get("python_cpu_seconds"),
        "peak_rss_bytes": summary.get("peak_rss_bytes"),
        "phases": [{"name": p["name"], "seconds": p["seconds"]} for p in run.get("phases", [])],
        "host": run.get("host") or {},
        "settings": settings,
        "intervals": intervals,
    }
    return document
