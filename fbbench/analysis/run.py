"""The run result document (docs/run-result.md), built from the stored run only.

The JSON file, the console summary and the HTML report (:mod:`fbbench.report.console`,
:mod:`fbbench.report.html`) all start from this one document, so the three never disagree.
"""

from __future__ import annotations

import time
import tomllib
from collections.abc import Mapping
from typing import Any

from fbbench.analysis import figures
from fbbench.analysis.finite import finite
from fbbench.analysis.profile import profile_document
from fbbench.analysis.shape import shape_document
from fbbench.engines.firebird_conf import parse_conf_text
from fbbench.errors import FbbenchError
from fbbench.sizes import size_text
from fbbench.store.model import MetricRow, StoredFigure, StoredRun
from fbbench.workloads.spec import stored_workload

# population.source of a run that started from a copy of the cached population: its load figures
# are the cache's build, not this run's (docs/run-result.md).
COPIED_POPULATION = "copy of cached population"

SCHEMA_VERSION = 1  # of the run result document: docs/run-result.md


def _storage(run: StoredRun) -> dict[str, Any]:
    """What the database's I/O went to, beside the settings that decide whether it waits for it:
    the storage under the database and the engine's temp files (the host record's; a server's
    database is not visible from here), forced writes, the OS file cache and whether it was
    dropped before the measured period."""
    from fbbench.analysis import conditions

    host = run.get("host") or {}
    record = conditions.record(run)
    phases = {phase.get("name"): phase.get("detail") or {} for phase in run.get("phases") or []}
    before = (run.get("database") or {}).get("before") or {}
    return {
        "database": host.get("database_disk") or host.get("workdir_disk"),
        "temp": host.get("temp_disk"),
        "forced_writes": before.get("forced_writes"),
        "file_cache": record.get("database.file_cache"),
        "caches_dropped": phases.get("before", {}).get("drop_caches"),
    }


def _workload_description(run: StoredRun) -> str:
    """The workload's description at the run's scale (``${rows}`` replaced as the run had it)."""
    files = run.get("workload_files") or {}
    text = files.get("workload.toml")
    if not text:
        return ""
    try:
        return stored_workload(files, (run.get("settings") or {}).get("scale") or {}).description
    except FbbenchError:
        pass  # a stored workload this fbbench no longer reads: its description as written
    try:
        return str(tomllib.loads(text).get("description", ""))
    except tomllib.TOMLDecodeError:
        return ""


def _headline(stored: StoredFigure | None) -> dict[str, Any] | None:
    """A figure (the headline, or one of the others) as the run stored it: its value and meaning."""
    if not stored:
        return None
    return {"name": stored["name"], "value": stored.get("result"), "unit": stored.get("unit", ""),
            "better": stored.get("better", "higher"), "per": stored.get("per"),
            "definition": stored.get("value"), "description": stored.get("description", "")}


def _validation(stored: dict[str, Any] | None) -> dict[str, Any] | None:
    """The database's validation after the run, every key present (null where it was not done);
    None for a run that ended before its load ran (nothing to validate)."""
    if not stored:
        return None
    return {"requested": stored.get("requested"), "done": bool(stored.get("done")), "reason": stored.get("reason"),
            **{key: stored.get(key) for key in ("method", "seconds", "sound", "errors", "warnings", "refused")},
            "by_kind": stored.get("by_kind") or {}, "output": stored.get("output") or [],
            "unchecked": stored.get("unchecked") or []}


def population_text(load: Mapping[str, Any]) -> str | None:
    """What the run's population took, in words (from the engine child's load facts, or the stored
    ones): a copy of the cached population took its copy; the build's speed is the cache's, said
    with its date, never as this run's; a restored backup (``--database-from``) is named with its
    checksum and the restore's time. None when nothing was loaded."""
    copy = load.get("copy_seconds")
    took = "" if copy is None else f" in {copy:.1f} s" if copy >= 1 else f" in {copy * 1000:.0f} ms"
    built_at = load.get("cache_built_at")
    when = f" on {time.strftime('%Y-%m-%d %H:%M', time.localtime(built_at))}" if built_at else ""
    backup = load.get("restored_from")
    if backup:
        restore = load.get("restore_seconds")
        speed = f" — {load['mb_per_second']:.2f} MB/s of backup" if load.get("mb_per_second") else ""
        made = (f"; {size_text(load['size_bytes'], unit='MB')}, page size {load.get('page_size')}, "
                f"ODS {load.get('ods')}"
                if load.get("size_bytes") is not None else "")
        return (f"database: {load.get('source')}: {backup['backup']} (sha256 {backup['sha256'][:16]}…, "
                f"{size_text(backup['backup_bytes'], unit='MB')}), restored"
                + ("" if restore is None else f" in {restore:.1f} s") + (when if copy is not None else "")
                + speed + made + ("" if copy is None else f"; copied{took}"))
    if not load.get("total_rows"):
        return None
    rows = f"{_count(load['total_rows'])} rows"
    build = (f"{size_text(load.get('grown_bytes') or 0, unit='MB')} in {load['load_seconds']:.1f} s — "
             f"{load['mb_per_second']:.2f} MB/s, {_count(load.get('rows_per_second'))} rows/s with "
             f"{load.get('load_connections')} load attachment(s)"
             if load.get("mb_per_second") is not None and load.get("load_seconds") is not None else "")
    if load.get("source") != COPIED_POPULATION:
        return f"population {load.get('source')}: {rows}" + (f", {build}" if build else "")
    return f"population: copied from the cache{took} ({rows})" + (f"; the cache was built{when}: {build}"
                                                                   if build else "")


# What consumes an embedded run's archive: nothing (an async replica is applied by a server's
# replication, which an embedded engine does not run). Said wherever the archive's figures are.
ARCHIVE_CONSUMED = "nothing consumes the archive (an embedded engine applies no journal)"
JOURNAL_SOURCE = "replication"  # the engine samples' source of the journal's figures per interval


def _bytes(value: float | None) -> str:
    if value is None:
        return "–"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= size:
            return f"{value / size:,.1f} {unit}"
    return f"{value:,.0f} B"


def replication_document(run: StoredRun) -> dict[str, Any]:
    """The run's replication (docs/run-result.md, ``replication``): the mode and settings, the
    replication.conf the engine read, the tables published, and for async the journal's and the
    archive's bytes over the measured period and per measured second (null where they do not apply)."""
    settings = run.get("settings") or {}
    mode = settings.get("replication") or "off"
    stored = ((run.get("summary") or {}).get("replication") or {}) if mode != "off" else {}
    samples = run.get("engine_samples") or {}
    figures = ("journal_bytes", "archive_bytes", "segments_archived", "journal_bytes_per_second",
               "archive_bytes_per_second", "window_seconds", "journal_bytes_total", "segments_archived_total")
    document: dict[str, Any] = {
        "mode": mode,
        "settings": settings.get("replication_conf") or {},
        "conf_text": (run.get("engine") or {}).get("replication_conf_text"),
        "publication_active": stored.get("publication_active"),
        "published_tables": stored.get("published_tables"),
        "replica": stored.get("replica"),
        **{name: stored.get(name) for name in figures},
        "archive_consumed_by": ARCHIVE_CONSUMED if mode == "async" else None,
        # Per interval, as the engine child stored them beside the sampler's readings.
        "intervals": [{"index": index, **{name: (samples[index].get(JOURNAL_SOURCE) or {}).get(name)
                                          for name in ("journal_bytes", "archive_bytes", "segments_archived")}}
                      for index in sorted(samples) if index >= 0 and samples[index].get(JOURNAL_SOURCE)],
    }
    document["text"] = replication_text(document) if mode != "off" else None
    return finite(document)


def replication_text(replication: Mapping[str, Any]) -> str:
    """A run's replication in words, with its figures when it has them: the live line after
    publication, the summary, the report."""
    mode = replication.get("mode")
    tables = replication.get("published_tables")
    published = f"publication on for {len(tables)} table(s)" if tables is not None else "publication on"
    if mode == "sync":
        replica = replication.get("replica") or {}
        return (f"replication sync: {published}; every commit also commits on a replica fbbench made "
                f"({_bytes(replica.get('size_bytes'))}, replica mode read-only) in the run's work directory")
    text = f"replication async: {published}; journal and archive in the run's work directory"
    if replication.get("journal_bytes") is not None:
        seconds = replication.get("window_seconds")
        over = f" over the measured {seconds:.1f} s" if seconds else ""
        text = (f"replication async: journal {_bytes(replication['journal_bytes'])} "
                f"({_bytes(replication.get('journal_bytes_per_second'))}/s), archived "
                f"{_bytes(replication.get('archive_bytes'))} in {replication.get('segments_archived')} segment(s) "
                f"({_bytes(replication.get('archive_bytes_per_second'))}/s){over}; {published}")
    return f"{text}; {ARCHIVE_CONSUMED}"


def _count(value: Any) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _window_seconds(metric: MetricRow) -> float | None:
    """How long the metric's window lasted (its readings' times), when both are known."""
    start, end = metric.get("window_start"), metric.get("window_end")
    return end - start if start and end else None


def result_document(run: StoredRun) -> dict[str, Any]:
    settings = run.get("settings") or {}
    summary = run.get("summary") or {}
    engine = run.get("engine") or {}
    database = run.get("database") or {}
    before = database.get("before") or {}
    after = database.get("after") or before
    if engine.get("firebird_conf"):
        conf = {row["name"]: row["value"] for row in engine["firebird_conf"]}
        conf_set = {row["name"]: row["value"] for row in engine["firebird_conf"] if row.get("is_set")}
    else:
        # Firebird 3 shows no RDB$CONFIG: what the generated file set (the rest are the engine's
        # defaults), or nothing at all for a server, as firebird_conf_source says.
        conf = parse_conf_text(engine.get("firebird_conf_text", ""))
        conf_set = dict(conf) or (settings.get("conf") or {})
    interval_latency = figures.latency_per_interval(run.get("intervals", []))
    intervals = []
    by_interval: dict[int, dict[str, Any]] = {}
    for row in run.get("intervals", []):
        by_interval.setdefault(row["index"], {"seconds": row["seconds"], "units": {}})["units"][row["unit"]] = row
        seconds = row["seconds"] or 0
        item: dict[str, Any] = {key: row[key] for key in ("index", "phase", "unit", "start_offset", "seconds", "ok",
                                                          "rolled_back", "conflicts", "errors")}
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
        "format": "fbbench-run",
        "schema_version": SCHEMA_VERSION,
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
            "binaries": engine.get("binaries"),
            "mode": engine.get("server_mode") or run.get("architecture"),
            "architecture": {
                "requested": engine.get("architecture_requested") or settings.get("architecture"),
                "verified": (engine.get("architecture_verified") or {}).get("architecture"),
                "evidence": engine.get("architecture_verified"),
                "processes": engine.get("attachment_processes"),
            },
            "firebird_conf": conf,
            "firebird_conf_set": conf_set,
            "firebird_conf_source": engine.get("firebird_conf_source"),
            "round_trip": engine.get("round_trip"),
            "load_clients": engine.get("load_clients"),
            "plans": engine.get("plans"),
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
        "storage": _storage(run),
        "machine_shape": shape_document((run.get("host") or {}).get("shape")),
        "population": {k: load.get(k) for k in ("source", "load_seconds", "load_connections", "total_rows",
                                                 "grown_bytes", "mb_per_second", "rows_per_second", "rows",
                                                 "copy_seconds", "cache_built_at", "restored_from",
                                                 "restore_seconds")} | {"text": population_text(load)},
        "replication": replication_document(run),
        "connections": settings.get("connections"),
        "warmup_seconds": settings.get("warmup") if settings.get("transactions") is None else 0,
        "measure_seconds": summary.get("measured_seconds"),
        "measured_turns": summary.get("timeshare"),
        "transactions_per_attachment": settings.get("transactions"),
        "headline": _headline(summary.get("headline")),
        "figures": [_headline(figure) for figure in summary.get("figures") or []],
        "score_per_minute": summary.get("score_per_minute"),
        "tpm": summary.get("tpm"),
        "metrics": metrics,
        "metric_units": {name: figures.metric_unit(bool(metric.get("per_minute")))
                         for name, metric in (run.get("metrics") or {}).items()},
        "metric_windows": {name: {"start_at": m.get("window_start"), "end_at": m.get("window_end"),
                                  "seconds": _window_seconds(m)}
                           for name, m in (run.get("metrics") or {}).items()},
        "units": units,
        "checks": [{"name": c["name"], "passed": c["passed"], "detail": c["detail"], "value": c["value"]}
                   for c in run.get("checks", []) if c["kind"] == "check"],
        "audits": [{"name": c["name"], "passed": c["passed"], "detail": c["detail"], "value": c["value"],
                    "low": c.get("low"), "high": c.get("high"), "n": c.get("n")}
                   for c in run.get("checks", []) if c["kind"] == "audit"],
        "validation": _validation(run.get("validation")),
        "client_cpu_seconds": summary.get("client_cpu_seconds"),
        "thread_cpu_seconds": summary.get("thread_cpu_seconds"),
        "process_cpu_seconds": summary.get("process_cpu_seconds"),
        "python_cpu_seconds": summary.get("python_cpu_seconds"),
        "peak_rss_bytes": summary.get("peak_rss_bytes"),
        "engine_process": summary.get("engine_process"),
        "sampling": summary.get("sampling"),
        "sampler_errors": summary.get("sampler_errors", 0),
        "trace": summary.get("trace"),
        "replay": replay_document(run),
        "profile": profile_document(run),
        "phases": [{"name": p["name"], "seconds": p["seconds"]} for p in run.get("phases", [])],
        "host": run.get("host") or {},
        "settings": settings,
        "intervals": intervals,
        # The score of each interval, all units together: the report draws it, never adds it up.
        "interval_scores": [{"index": index, "score_per_minute": figures.score_per_minute(item["units"],
                                                                                          item["seconds"])}
                            for index, item in sorted(by_interval.items())],
    }
    document.update(_observation(run))
    document.update(credibility(run))
    return document


KEPT_DIVERGENCES = 200  # listed in the document; all are in the store, and counted by kind


def replay_document(run: StoredRun) -> dict[str, Any] | None:
    """A replay's own figures: what it replayed of its trace, the lag behind the traced schedule,
    each statement's latency against the traced one, and the divergences from the trace."""
    replay = (run.get("summary") or {}).get("replay")
    if not replay:
        return None
    statements = []
    for row in run.get("replay_statements") or []:
        replayed, traced = row["latency_ms"], row["traced"]
        p50 = traced.get("p50")
        statements.append({
            "template": row["template"], "sql": row["sql"], "executions": row["executions"], "errors": row["errors"],
            "latency_ms": replayed, "traced_ms": traced,
            # The trace times a statement to the millisecond: a ratio to a traced median below 1 ms
            # would compare with a rounding.
            "p50_ratio": replayed.get("p50", 0) / p50 if p50 and p50 >= 1 and replayed.get("p50") else None,
        })
    divergences = run.get("divergences") or []
    return finite({**replay, "statement_latency": statements,
                   "divergence_list": [dict(d) for d in divergences[:KEPT_DIVERGENCES]],
                   "divergences_listed": min(len(divergences), KEPT_DIVERGENCES)})


def steady_document(run: StoredRun) -> dict[str, Any] | None:
    """The run's steady state and trend (:mod:`fbbench.analysis.steady`) as the document holds it;
    None without measured intervals."""
    from dataclasses import asdict

    from fbbench.analysis import steady

    series = steady.interval_series(run)
    if series is None or not any(series.measured):
        return None
    state = steady.steady_state(series)
    fields = asdict(state)
    fields.pop("line_intercept")
    fields.pop("line_slope")
    return finite({
        "figure": series.figure, "unit": series.unit, "note": series.note, **fields,
        # The figure per interval (x = the interval's middle, as the report's charts place it).
        "values": [{"at": start + seconds / 2, "value": value, "measured": measured} for value, seconds, start, measured
                   in zip(series.values, series.seconds, series.starts, series.measured, strict=True)],
        "trend_line": [{"at": at, "value": value} for at, value in state.trend_line(series)],
    })


def credibility(run: StoredRun) -> dict[str, Any]:
    """The run's own credibility lint (:func:`fbbench.analysis.lint.lint_run`) and steady state."""
    from fbbench.analysis import lint

    return {"lint": [finite(finding.to_dict()) for finding in lint.lint_run(run)], "steady": steady_document(run)}


def _gstat_series(stored: Mapping[str, Any]) -> list[dict[str, Any]]:
    """--gstat-every: each reading taken while the load ran, in order — when (seconds since the load
    began), what it cost (gstat's own seconds), and each table's records and versions."""
    readings = []
    for moment, item in stored.items():
        if not moment.startswith("during "):
            continue
        kept = item.get("snapshot") or {}
        readings.append({
            "reading": int(moment.split()[1]), "taken_at": item.get("taken_at"),
            "offset_seconds": kept.get("offset_seconds"), "seconds": kept.get("seconds"),
            "problem": item.get("parse_error") or kept.get("error"),
            "tables": {name: {key: table.get(key) for key in ("records", "versions", "max_versions")}
                       for name, table in (kept.get("tables") or {}).items()}})
    return sorted(readings, key=lambda reading: reading["reading"])


def _observation(run: StoredRun) -> dict[str, Any]:
    """What the engine did: samples per interval, per-table activity and gstat, firebird.log findings."""
    from fbbench.analysis import engine
    from fbbench.analysis.gstat import delta, flags
    from fbbench.observe.gstat import GstatSnapshot

    samples = run.get("engine_samples") or {}
    intervals = engine.interval_table(run.get("intervals", []))
    per_interval = []
    for index in sorted(i for i in samples if i >= 0):
        figures = samples[index]
        entry: dict[str, Any] = {"index": index, "phase": intervals.get(index, ("?", 0.0))[0],
                                 "seconds": engine.covered_seconds(index, samples, intervals)}
        entry["tables"] = {source.split(":", 1)[1]: values for source, values in figures.items()
                           if source.startswith("table:")}
        entry.update({source: values for source, values in figures.items()
                      if not source.startswith("table:") and source != JOURNAL_SOURCE})
        per_interval.append(entry)

    every = run.get("gstat") or {}
    stored = {moment: item for moment, item in every.items() if not moment.startswith("during ")}
    snapshots = {moment: GstatSnapshot.from_dict(kept) if (kept := item.get("snapshot")) else None
                 for moment, item in stored.items()}
    before, after = snapshots.get("before"), snapshots.get("after")
    tables: dict[str, Any] = {}
    for row in engine.busiest_tables(samples, run.get("intervals", []), top=1000):
        tables.setdefault(row["table"], {})["activity"] = {k: v for k, v in row.items() if k != "table"}
    changes = delta(before, after) if before and after and before.usable and after.usable else {}
    for moment, snapshot in (("before", before), ("after", after)):
        if snapshot is None or not snapshot.usable:
            continue
        for name, table in snapshot.tables.items():
            entry = tables.setdefault(name, {})
            entry[f"gstat_{moment}"] = {k: v for k, v in vars(table).items() if k not in ("name", "indices")}
            entry["indices"] = sorted(set(entry.get("indices", [])) | set(table.indices))
    for key, change in changes.items():
        if key.startswith("table:") and key[6:] in tables:
            tables[key[6:]]["gstat_delta"] = change
    indices: dict[str, dict[str, Any]] = {}
    for moment, snapshot in (("before", before), ("after", after)):
        if snapshot is None or not snapshot.usable:
            continue
        for name, index_stats in snapshot.indices.items():
            item = indices.setdefault(name, {"table": index_stats.table})
            item[moment] = {k: v for k, v in vars(index_stats).items() if k not in ("name", "table")}
    return {
        "engine_samples": per_interval,
        "engine_activity": engine.activity(samples, run.get("intervals", [])),
        "os_cache": engine.os_cache(samples, run.get("intervals", []),
                                    ((run.get("database") or {}).get("before") or {}).get("page_size")),
        "tables": tables,
        "indices": indices,
        "gstat": {
            # The raw text only when it could not be read: the report offers it in place of the figures.
            moment: {"taken_at": item.get("taken_at"), "problem": item.get("parse_error"),
                     "raw": item.get("raw") if item.get("parse_error") else None,
                     "header": (item.get("snapshot") or {}).get("header"),
                     "skipped_lines": len((item.get("snapshot") or {}).get("skipped") or [])}
            for moment, item in stored.items()
        },
        "gstat_flags": [vars(flag) for flag in flags(before, after)] if after is not None else [],
        "gstat_series": _gstat_series(every),
        "log_findings": run.get("findings") or [],
    }
