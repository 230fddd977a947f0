"""The phases of ``fbbench run`` inside the engine child process.

It executes the phases of one run (database, before, measure, after), writes each result to the
results store as soon as it exists, and turns Ctrl-C into status ``interrupted`` with whatever
was measured kept. The parent (:mod:`fbbench.runner.run`) prepared the runtime and the run row,
removes the run's files whatever happens here, and reports from the store afterwards.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from rich.console import Console

from fbbench import signals
from fbbench.analysis import figures
from fbbench.analysis.audits import run_audits
from fbbench.database import driver
from fbbench.engines import current_runtime
from fbbench.engines.child import exit_at_once
from fbbench.errors import FbbenchError, Interrupted
from fbbench.runner.engine import facts, population, workload_sql
from fbbench.runner.engine.core_config import core_config
from fbbench.runner.engine.live import LiveDisplay
from fbbench.store import ResultsStore
from fbbench.store.results import StoreError
from fbbench.workloads.spec import load_workload


class _Phases:
    def __init__(self, store: ResultsStore, run_id: str, console: Console) -> None:
        self.store, self.run_id, self.console = store, run_id, console

    @contextmanager
    def phase(self, name: str, title: str) -> Iterator[dict[str, Any]]:
        detail: dict[str, Any] = {}
        started, clock = time.time(), time.monotonic()
        self.console.print(f"[bold]▶ {title}[/]")
        self.store.record_phase(self.run_id, name, started, None, detail)
        try:
            yield detail
        finally:
            seconds = time.monotonic() - clock
            self.store.record_phase(self.run_id, name, started, seconds, detail)
            self.console.print(f"  {title}: {seconds:.1f} s")


def execute(plan: dict[str, Any]) -> dict[str, Any]:
    """Run every phase; returns {"status", "failure", "hint"} (the numbers are in the store)."""
    signals.die_with_parent(plan.get("parent_pid"))
    signals.make_interruptible()
    signals.keep_ours_after_attach()
    run_id = plan["run_id"]
    settings = plan["settings"]
    store = ResultsStore(Path(plan["results"]))
    store.claim_run(run_id)
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
    runtime = current_runtime()
    phases = _Phases(store, run_id, console)
    db_plan = population.DatabasePlan(**plan["database"])
    dsn = db_plan.location
    status, failure, hint = "completed", None, None
    try:
        workload = load_workload(plan["workload_dir"], settings["scale"])
        store.update_run(run_id, workload_files=workload.files)

        with phases.phase("database", "database: create, populate") as detail:
            with LiveDisplay.population(console) as progress:
                load = population.prepare(db_plan, workload, progress)
            detail.update(source=load["source"])
            store.update_run(run_id, load=load)
            _print_load(console, load)

        with phases.phase("before", "before: sweep, snapshot, metrics") as detail:
            if settings["sweep"]:
                database = dsn if db_plan.cache_dir is not None else population._server_path(dsn)
                detail["sweep_seconds"] = facts.sweep(db_plan.services_host, database)
            engine = facts.engine_facts(dsn, runtime)
            before = facts.snapshot(dsn)
            store.update_run(run_id, engine=engine, engine_version=engine["server_version"],
                             architecture=engine.get("server_mode") or engine["architecture"],
                             database={"location": dsn, "before": before})
            workload_sql.prepare_all(dsn, workload)
            exceptions = workload_sql.exception_numbers(dsn, workload)
            nurand = workload_sql.nurand_constants(dsn, workload, settings["seed"])
            detail["nurand"] = {str(a): c for a, c in nurand.items()}

        config = core_config(workload, settings, dsn, str(runtime.client_library),
                                     driver.credentials(), settings["seed"], exceptions, nurand)
        with phases.phase("measure", "warm-up and measure") as detail:
            result, metric_start, metric_end = _measure(config, workload, store, run_id, dsn, console, settings)
            detail.update(status=result["status"], measured_seconds=result.get("measured_seconds"))
        _store_result(store, run_id, result)
        measured = bool(result.get("measured_seconds"))  # a run stopped in warm-up measured nothing
        metrics = (workload_sql.metric_results(workload, metric_start, metric_end)
                   if measured and metric_start and metric_end else {})
        for name, metric in metrics.items():
            store.record_metric(run_id, name, metric["start"], metric["end"], metric["value"], metric["per_minute"],
                                metric["description"])
        if result.get("abandoned"):
            exit_at_once()  # a thread stuck inside the engine must not hold this process
        if result["status"] == "failed":
            status, failure = "failed", result.get("failure") or "the load core failed"
        elif result["status"] == "stopped":
            status, failure = "interrupted", result.get("failure")
        else:
            with phases.phase("after", "after: snapshot, checks, audits") as detail:
                after = facts.snapshot(dsn)
                store.update_run(run_id, database={"location": dsn, "before": before, "after": after})
                for check in workload_sql.run_checks(dsn, workload):
                    store.record_check(run_id, "check", check["name"], check["passed"], check["value"], check["detail"])
                metric_values = {name: metric["value"] for name, metric in metrics.items()}
                for audit in run_audits(workload, result["units"], metric_values):
                    store.record_check(run_id, "audit", audit["name"], audit["passed"], audit["value"], audit["detail"])
        store.update_run(run_id, summary=_summary(result, metrics, settings, workload))
    except (KeyboardInterrupt, Interrupted):
        status, failure = "interrupted", "interrupted by the user"
    except StoreError as error:  # nothing more can be recorded: say so, end cleanly
        status, failure, hint = "failed", error.message, error.hint
    except FbbenchError as error:
        if signals.interrupted():
            status, failure = "interrupted", "interrupted by the user"
        else:
            status, failure, hint = "failed", error.message, error.hint
    except Exception as error:
        if not signals.interrupted():
            status, failure = "failed", f"{type(error).__name__}: {error}"
            raise
        status, failure = "interrupted", "interrupted by the user"
    finally:
        try:
            _finish(store, run_id, runtime, status, failure)
        except StoreError as error:
            status, failure = "failed", f"{failure}; and {error.message}" if failure else error.message
            hint = hint or error.hint
        store.close()
    return {"status": status, "failure": failure, "hint": hint}


def _finish(store: ResultsStore, run_id: str, runtime: Any, status: str, failure: str | None) -> None:
    log = ""
    if runtime.embedded:
        with suppress(OSError):
            log = runtime.firebird_log.read_text(errors="replace")[-200_000:]
    store.update_run(run_id, firebird_log=log)
    store.finish_run(run_id, status, failure)


def _print_load(console: Console, load: dict[str, Any]) -> None:
    if load.get("mb_per_second") is None:
        return
    console.print(
        f"  population ({load['source']}): {load['total_rows']:,} rows, {load['grown_bytes'] / 1e6:,.1f} MB in "
        f"{load['load_seconds']:.1f} s — {load['mb_per_second']:.2f} MB/s, {load['rows_per_second']:,.0f} rows/s "
        f"with {load['load_connections']} load attachment(s)"
    )


def _measure(config: dict[str, Any], workload: Any, store: ResultsStore, run_id: str, dsn: str, console: Console,
             settings: dict[str, Any]) -> tuple[dict[str, Any], Any, Any]:
    """Run the native core; read DB-side metrics when the measured period starts and ends."""
    from fbbench import core as native

    monitor = driver.connect(dsn)
    readings: dict[str, Any] = {"start": None}
    stored_intervals = [0]
    measuring_from_start = config["warmup_seconds"] == 0
    if measuring_from_start:
        readings["start"] = workload_sql.read_metrics(monitor, workload)

    def on_progress(live: dict[str, Any], display: LiveDisplay) -> None:
        if readings["start"] is None and live.get("phase") in ("measure", "stopping", "done"):
            readings["start"] = workload_sql.read_metrics(monitor, workload)
        completed = live.get("intervals_completed", 0)
        last = live.get("last_interval")
        if last and completed > stored_intervals[0]:
            store.record_interval(run_id, last)
            stored_intervals[0] = completed
        display.update(live)

    # CPU of the whole process (engine included when embedded) and of this Python thread
    # (polling, metrics), to show how much of the machine fbbench itself used.
    process_before, python_before = _process_cpu(), time.thread_time()
    try:
        with LiveDisplay.measurement(console, workload, settings) as display:
            result = native.run_load(config, on_progress=lambda live: on_progress(live, display)).to_dict()
        end = workload_sql.read_metrics(monitor, workload) if readings["start"] is not None else None
    finally:
        monitor.close()
    result["process_cpu_seconds"] = _process_cpu() - process_before
    result["python_cpu_seconds"] = time.thread_time() - python_before
    return result, readings["start"], end


def _process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _store_result(store: ResultsStore, run_id: str, result: dict[str, Any]) -> None:
    for interval in result.get("intervals", []):
        store.record_interval(run_id, interval)
    store.record_unit_totals(run_id, result.get("units", {}))


def _summary(result: dict[str, Any], metrics: dict[str, Any], settings: dict[str, Any],
             workload: Any) -> dict[str, Any]:
    """What the run concluded, computed once here (analysis.figures) and read by every report."""
    units = result.get("units", {})
    seconds = result.get("measured_seconds") or 0.0
    metric_values = {name: m["value"] for name, m in metrics.items()}
    headline = workload.headline
    available = figures.names(units, metric_values, seconds)
    return {
        "status": result["status"],
        "measured_seconds": seconds,
        "headline": {**headline.to_dict(), "result": figures.value(headline, available, seconds)},
        "score_per_minute": figures.score_per_minute(units, seconds),
        "tpm": figures.tpm(units, seconds),
        "metrics": metric_values,
        "metric_windows": {name: m.get("window_seconds") for name, m in metrics.items()},
        "client_cpu_seconds": result.get("client_cpu_seconds"),
        "thread_cpu_seconds": result.get("thread_cpu_seconds"),
        "process_cpu_seconds": result.get("process_cpu_seconds"),
        "python_cpu_seconds": result.get("python_cpu_seconds"),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "connections": settings["connections"],
        "failure": result.get("failure"),
        "attachments": result.get("attachments", []),
        "abandoned": result.get("abandoned", []),
    }
