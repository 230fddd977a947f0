"""The part of ``fbbench run`` that runs inside the engine child process.

It executes the phases of one run (database, before, measure, after), writes each result to the
results store as soon as it exists, and turns Ctrl-C into status ``interrupted`` with whatever
was measured kept. The parent (:mod:`fbbench.runner.run`) prepared the runtime and the run row,
and reports from the store afterwards.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from rich.console import Console

from fbbench.database import driver, ownership
from fbbench.engines import current_runtime
from fbbench.errors import FbbenchError, Interrupted
from fbbench.runner import measure, population
from fbbench.runner.live import LiveDisplay
from fbbench.store import ResultsStore
from fbbench.workloads.spec import load_workload

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int | None) -> None:
    """If fbbench itself is killed (even with SIGKILL), the run must not go on unobserved."""
    with suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    # A parent killed while this process was still starting up sent no death signal: we are
    # an orphan already, and must not start a run nobody watches.
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


_signalled: list[int] = []


def _on_signal(signum: int, _frame: object) -> None:
    _signalled.append(signum)
    raise KeyboardInterrupt


def _catch_interruptions() -> None:
    """Ctrl-C (forwarded by the parent) and SIGTERM become KeyboardInterrupt, and are remembered.

    Whatever fails after such a signal was interrupted by the user, not a failure of the run:
    e.g. a Firebird error ("connection shutdown") if libfbclient's own handler saw the signal
    (see :func:`_keep_our_signal_handlers`), or a loader thread's error raised before the
    KeyboardInterrupt reached the main thread.
    """
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _on_signal)


_SIGACTION_BYTES = 512  # more than struct sigaction takes on any Linux ABI; kept as opaque bytes


def _keep_our_signal_handlers() -> None:
    """Put this process's SIGINT / SIGTERM handlers back after every attach.

    libfbclient installs its own handlers on the first attach and answers Ctrl-C by shutting
    down every attachment of the process: a population would break with "connection shutdown"
    errors (and noisy tracebacks from the driver's finalizers) instead of unwinding. The native
    core does the same for its own attaches. Restored at the C level, so loader threads can too.
    """
    from firebird.driver import Connection, Server
    from firebird.driver.hooks import ConnectionHook, ServerHook, add_hook

    libc = ctypes.CDLL(None, use_errno=True)
    saved = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        action = ctypes.create_string_buffer(_SIGACTION_BYTES)
        if libc.sigaction(sig, None, action) == 0:
            saved[sig] = action

    def restore(_attachment: object) -> None:
        for sig, action in saved.items():
            libc.sigaction(sig, action, None)

    add_hook(ConnectionHook.ATTACHED, Connection, restore)
    add_hook(ServerHook.ATTACHED, Server, restore)


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
    _die_with_parent(plan.get("parent_pid"))
    _catch_interruptions()
    _keep_our_signal_handlers()
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
    created_database = False
    try:
        workload = load_workload(plan["workload_dir"], settings["scale"])
        store.update_run(run_id, workload_files=workload.files)

        with phases.phase("database", "database: create, populate") as detail:
            with LiveDisplay.population(console) as progress:
                load = population.prepare(db_plan, workload, progress)
            created_database = True
            detail.update(source=load["source"])
            store.update_run(run_id, load=load)
            _print_load(console, load)

        with phases.phase("before", "before: sweep, snapshot, metrics") as detail:
            if settings["sweep"]:
                database = dsn if db_plan.cache_dir is not None else population._server_path(dsn)
                detail["sweep_seconds"] = measure.sweep(db_plan.services_host, database)
            engine = measure.engine_facts(dsn, runtime)
            before = measure.snapshot(dsn)
            store.update_run(run_id, engine=engine, engine_version=engine["server_version"],
                             architecture=engine.get("server_mode") or engine["architecture"],
                             database={"location": dsn, "before": before})
            exceptions = measure.exception_numbers(dsn, workload)
            nurand = measure.nurand_constants(dsn, workload, settings["seed"])
            detail["nurand"] = {str(a): c for a, c in nurand.items()}

        config = measure.core_config(workload, settings, dsn, str(runtime.client_library),
                                     driver.credentials(), settings["seed"], exceptions, nurand)
        with phases.phase("measure", "warm-up and measure") as detail:
            result, metric_start, metric_end = _measure(config, workload, store, run_id, dsn, console, settings)
            detail.update(status=result["status"], measured_seconds=result.get("measured_seconds"))
        _store_result(store, run_id, result)
        metrics = measure.metric_results(workload, metric_start, metric_end) if metric_start and metric_end else {}
        for name, metric in metrics.items():
            store.record_metric(run_id, name, metric["start"], metric["end"], metric["value"], metric["per_minute"],
                                metric["description"])
        if result["status"] == "failed":
            status, failure = "failed", result.get("failure") or "the load core failed"
        elif result["status"] == "stopped":
            status = "interrupted"
        else:
            with phases.phase("after", "after: snapshot, checks, audits") as detail:
                after = measure.snapshot(dsn)
                store.update_run(run_id, database={"location": dsn, "before": before, "after": after})
                for check in measure.run_checks(dsn, workload):
                    store.record_check(run_id, "check", check["name"], check["passed"], check["value"], check["detail"])
                for audit in measure.run_audits(workload, result["units"], metrics):
                    store.record_check(run_id, "audit", audit["name"], audit["passed"], audit["value"], audit["detail"])
        store.update_run(run_id, summary=_summary(result, metrics, settings))
    except (KeyboardInterrupt, Interrupted):
        status, failure = "interrupted", "interrupted by the user"
    except FbbenchError as error:
        if _signalled:
            status, failure = "interrupted", "interrupted by the user"
        else:
            status, failure, hint = "failed", error.message, error.hint
    except Exception as error:
        if not _signalled:
            status, failure = "failed", f"{type(error).__name__}: {error}"
            raise
        status, failure = "interrupted", "interrupted by the user"
    finally:
        _finish(store, run_id, runtime, status, failure)
        if created_database and db_plan.cache_dir is not None and not settings["keep_database"]:
            ownership.remove_run_copy(dsn, Path(plan["workdir"]))
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
        readings["start"] = measure.read_metrics(monitor, workload)

    def on_progress(live: dict[str, Any], display: LiveDisplay) -> None:
        if readings["start"] is None and live.get("phase") in ("measure", "stopping", "done"):
            readings["start"] = measure.read_metrics(monitor, workload)
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
        end = measure.read_metrics(monitor, workload) if readings["start"] is not None else None
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


def _summary(result: dict[str, Any], metrics: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    units = result.get("units", {})
    seconds = result.get("measured_seconds") or 0.0
    minutes = seconds / 60
    ok = sum(u["ok"] for u in units.values())
    transactions = sum(u["ok"] + u["rolled_back"] for u in units.values())
    return {
        "status": result["status"],
        "measured_seconds": seconds,
        "score_per_minute": ok / minutes if minutes > 0 else None,
        "tpm": transactions / minutes if minutes > 0 else None,
        "metrics": {name: m["value"] for name, m in metrics.items()},
        "client_cpu_seconds": result.get("client_cpu_seconds"),
        "thread_cpu_seconds": result.get("thread_cpu_seconds"),
        "process_cpu_seconds": result.get("process_cpu_seconds"),
        "python_cpu_seconds": result.get("python_cpu_seconds"),
        "connections": settings["connections"],
        "failure": result.get("failure"),
        "attachments": result.get("attachments", []),
    }
