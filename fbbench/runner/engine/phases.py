"""The phases of ``fbbench run`` inside the engine child process.

It executes the phases of one run (database, before, measure, after), writes each result to the
results store as soon as it exists, and turns Ctrl-C into status ``interrupted`` with whatever
was measured kept. The parent (:mod:`fbbench.runner.run`) prepared the runtime and the run row,
removes the run's files whatever happens here, and reports from the store afterwards.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from fbbench import signals
from fbbench.analysis import figures
from fbbench.analysis.audits import run_audits
from fbbench.database import driver
from fbbench.engines import current_runtime, own_process
from fbbench.engines import platform as host_os
from fbbench.engines.child import exit_at_once
from fbbench.errors import FbbenchError, Interrupted
from fbbench.observe import architecture, firebird_log, gstat, validation
from fbbench.observe import replication as replication_log
from fbbench.observe.firebird_log import LogWatch
from fbbench.paths import file_error
from fbbench.runner.cleanup import BUILDING
from fbbench.runner.engine import facts, measure, population, replication, workload_sql
from fbbench.runner.engine.core_config import core_config, replay_config
from fbbench.runner.engine.live import LiveDisplay
from fbbench.sizes import size_text
from fbbench.store import ResultsStore
from fbbench.store.model import RecordedSettings, RunPlan
from fbbench.store.results import RunFiles, StoreError
from fbbench.workloads.spec import load_workload

AUTO_VALIDATE_SECONDS = 60.0  # a load longer than this is validated unless --no-validate

if TYPE_CHECKING:
    from fbbench.loadcore import LoadResult


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


def execute(plan: RunPlan) -> dict[str, Any]:
    """Run every phase; returns {"status", "failure", "hint"} (the numbers are in the store)."""
    signals.die_with_parent(plan.get("parent_pid"))
    signals.make_interruptible()
    signals.keep_ours_after_attach()
    run_id = plan["run_id"]
    settings = plan["settings"]
    seed = settings.get("seed")
    if seed is None:
        raise RuntimeError("the runner draws a run's seed before its engine child starts")
    store = ResultsStore(Path(plan["results"]))
    store.claim_run(run_id)
    # Quiet when time-shared: two runs writing progress to one terminal would garble it (the
    # coordinator shows the pairs' progress instead).
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 120, quiet=bool(plan.get("quiet")))
    runtime = current_runtime()
    phases = _Phases(store, run_id, console)
    db_plan = population.DatabasePlan(**plan["database"])
    dsn = db_plan.location
    database_path = dsn if db_plan.cache_dir is not None else population._server_path(dsn)
    monitor = settings.get("monitor", True)
    status, failure, hint = "completed", None, None
    traced: list[dict[str, Any]] = []
    # What the engine logs from here on is this run's (the runtime's own file when embedded).
    log_file = runtime.firebird_log if runtime.embedded else None
    log = LogWatch(db_plan.services_host, log_file)
    replicating = plan.get("replication")
    replicated: dict[str, Any] | None = None  # what publish() did, then the journal's figures
    journal = replication.JournalWatch.of(replicating) if replicating else None
    loaded: float | None = None  # how long the load ran, once it has: then there is a database to validate
    profile_meta: dict[str, Any] | None = None  # --profile: what was profiled (its lines are in their table)
    abandoned = False

    def creating(path: Path) -> None:
        # Removed by the parent when the run ends, or by the next run if the parent is killed.
        store.record_files(run_id, RunFiles(plan["workdir_id"], plan["parent_pid"], {str(path): BUILDING}))

    try:
        if settings.get("profile") and not runtime.embedded:
            _check_profiler_server(db_plan.services_host, runtime)  # before anything touches a database
        replaying = None
        if settings.get("replay"):
            from fbbench.workloads.from_trace import replay_workload

            workload, replaying, _facts = replay_workload(str(settings["replay"]))
        else:
            workload = load_workload(plan["workload_dir"], settings["scale"])
        store.update_run(run_id, workload_files=workload.files)

        title = "database: restore" if db_plan.restore else "database: create, populate"
        with phases.phase("database", title) as detail:
            with LiveDisplay.population(console) as progress:
                target_size = settings.get("target_size")
                if target_size:
                    # The scale that gives the size asked is the run's scale: recorded as if given.
                    workload, sizing = population.scale_for_size(db_plan, workload, target_size, progress,
                                                                 creating)
                    settings = {**settings, "scale": {**settings["scale"], **sizing["scale"]}}
                    store.update_run(run_id, settings=settings)
                    detail["target_size"] = sizing
                    console.print(f"  --target-size: {sizing['text']}")
                load = population.prepare(db_plan, workload, progress, creating)
            detail.update(source=load["source"])
            store.update_run(run_id, load=load)
            _print_load(console, load)
            if replicating:
                replicated = replication.publish(dsn, replicating)
                detail["replication"] = replicated
                _print_replication(console, replicated)

        with phases.phase("before", "before: sweep, gstat, snapshot") as detail:
            # fbbench's own readings only: closed before the workload's SQL (its constants) and the
            # load, which find the database as they would without it.
            with _kept_open(settings, dsn):
                if settings["sweep"]:
                    detail["sweep_seconds"] = facts.sweep(db_plan.services_host, database_path)
                if monitor:
                    detail["gstat_seconds"] = _record_gstat(store, run_id, "before", db_plan.services_host,
                                                            database_path)
                engine = facts.engine_facts(dsn, runtime)
                if not runtime.embedded:  # over the network: the round trip is a condition of the run
                    engine["round_trip"] = facts.round_trip(dsn, db_plan.services_host.split("/")[0])
                before = facts.snapshot(dsn)
                store.update_run(run_id, engine=engine, engine_version=engine["server_version"],
                                 architecture=engine.get("server_mode") or engine["architecture"],
                                 database={"location": dsn, "before": before})
                workload_sql.prepare_all(dsn, workload)
                engine["plans"] = workload_sql.plans(dsn, workload)
                store.update_run(run_id, engine=engine)
                exceptions = workload_sql.exception_numbers(dsn, workload)
                tables = workload_sql.tables(dsn)
            constants = workload_sql.constants(dsn, workload, seed)  # the workload's SQL sees no attachment of ours
            detail["constants"] = constants
            if settings.get("drop_caches"):
                # Last before the load attaches: what it reads first, it reads from the disk.
                detail["drop_caches"] = host_os.drop_page_cache()
                held, left = (size_text(detail["drop_caches"][key], unit="MiB", digits=0)
                              for key in ("page_cache_before", "page_cache_after"))
                console.print(f"  OS page cache dropped: {held} → {left}")

        if replaying is not None:
            config = replay_config(replaying, settings, dsn, str(runtime.client_library), driver.credentials(), seed)
        else:
            config = core_config(workload, settings, dsn, str(runtime.client_library),
                                 driver.credentials(), seed, exceptions, constants)
        with phases.phase("measure", "warm-up and measure") as detail:
            # Embedded Classic: one process per attachment. A server's Classic forks its own.
            processes = settings.get("architecture") == "classic" and runtime.embedded
            lab = _lab_clients(settings) if settings.get("lab") else None
            load_started = time.monotonic()
            with _traced(settings.get("trace"), db_plan.services_host, database_path, runtime, console) as traced, \
                    _profiled(settings, dsn, run_id, runtime, console) as profiled, \
                    _gstat_cadence(settings, store, run_id, db_plan.services_host, database_path):
                measured = measure.run(config, workload, store, run_id, dsn, console, settings, monitor, tables,
                                       processes=processes, barrier=plan.get("barrier"), journal=journal, lab=lab,
                                       engine_processes=_engine_processes(runtime.embedded, plan.get("engine_pid")),
                                       profiler=profiled.thread)
            loaded = time.monotonic() - load_started
            if profiled.record is not None:
                store.record_profile(run_id, profiled.record["lines"])
                profile_meta = {k: v for k, v in profiled.record.items() if k != "lines"}
                detail["profile"] = profile_meta
            result = measured.result
            if traced:
                detail["trace"] = traced[0]
            detail.update(status=result["status"], measured_seconds=result.get("measured_seconds"),
                          sampler_errors=measured.sampler_errors[:20])
            engine = {**engine, "architecture_requested": settings.get("architecture"),
                      "architecture_verified": measured.architecture}
            if processes:
                engine["attachment_processes"] = result.get("worker_processes")
            if lab is not None:
                from fbbench.lab.clients import shares

                engine["load_clients"] = [{"host": host, "first_attachment": first, "attachments": count}
                                          for host, first, count in shares(settings["connections"], lab["hosts"])]
            store.update_run(run_id, engine=engine)
            mismatch = architecture.mismatch(settings.get("architecture"), measured.architecture)
            if mismatch and result["status"] == "completed":
                result["status"], result["failure"] = "failed", mismatch
        _store_result(store, run_id, result)
        if replaying is not None and result.get("replay"):
            store.record_replay(run_id, replaying, result["replay"])
        for name, metric in measured.metrics.items():
            store.record_metric(run_id, name, metric["start"], metric["end"], metric["value"], metric["per_minute"],
                                metric["description"], metric["window"])
        # What was measured is stored now too, completed below: a run whose process dies in the
        # after phase (OOM-killed during its checks in a machine shape) still shows its figures,
        # not "nothing was measured".
        store.update_run(run_id, summary=_summary(measured, settings, workload,
                                                  None if replicated is None
                                                  else {**replicated, **(measured.journal or {})}))
        if result.get("abandoned"):
            abandoned = True
            exit_at_once()  # a thread stuck inside the engine must not hold this process
        if result["status"] == "failed":
            status, failure = "failed", result.get("failure") or "the load core failed"
        elif result["status"] == "stopped":
            status, failure = "interrupted", result.get("failure")
        else:
            with phases.phase("after", "after: snapshot, gstat, checks, audits") as detail:
                after = facts.snapshot(dsn)
                store.update_run(run_id, database={"location": dsn, "before": before, "after": after})
                if monitor:
                    detail["gstat_seconds"] = _record_gstat(store, run_id, "after", db_plan.services_host,
                                                            database_path)
                checking = time.monotonic()
                outcomes, detail["check_seconds"] = workload_sql.run_checks(dsn, workload,
                                                                            store.check_seconds(workload.name))
                for check in outcomes:
                    store.record_check(run_id, "check", check["name"], check["passed"], check["value"],
                                       check["detail"])
                detail["checks_seconds"] = time.monotonic() - checking
                if replicated and replicated.get("replica"):
                    in_step, said = replication.replica_in_step(dsn, replicated["replica"]["path"])
                    store.record_check(run_id, "check", REPLICA_CHECK, in_step, None, said)
                metric_values = {name: metric["value"] for name, metric in measured.metrics.items()}
                for audit in run_audits(workload, result["units"], metric_values):
                    store.record_check(run_id, "audit", audit["name"], audit["passed"], audit["value"],
                                       audit["detail"], audit["low"], audit["high"], audit["n"])
        if replicated is not None:
            replicated = {**replicated, **(measured.journal or {})}
        store.update_run(run_id, summary={**_summary(measured, settings, workload, replicated),
                                          "trace": traced[0] if traced else None,
                                          "profile": profile_meta,
                                          "replay": _replay_summary(workload, replaying, result)})
    except (KeyboardInterrupt, Interrupted):
        status, failure = "interrupted", "interrupted by the user"
    except StoreError as error:  # nothing more can be recorded: say so, end cleanly
        status, failure, hint = "failed", error.message, error.hint
    except FbbenchError as error:
        if signals.interrupted():
            status, failure = "interrupted", "interrupted by the user"
        else:
            status, failure, hint = "failed", error.message, error.hint
    except OSError as error:  # a file of the run: the work directory full or read-only
        refusal = file_error(error, f"write {error.filename}" if error.filename else "go on",
                             elsewhere="give --workdir on another one")
        status, failure, hint = "failed", refusal.message, refusal.hint
    except Exception as error:
        if not signals.interrupted():
            status, failure = "failed", f"{type(error).__name__}: {error}"
            raise
        status, failure = "interrupted", "interrupted by the user"
    finally:
        run_log = log.added_or_reason()  # before a validation adds its own entries: the findings are the run's
        corrupt: str | None = None  # the failure a validation that found the database corrupt gives the run
        if loaded is not None and status != "interrupted":
            try:
                corrupt = _validate(phases, settings, loaded, abandoned, db_plan.services_host, database_path,
                                    log_file)
            except (KeyboardInterrupt, Interrupted):
                status, failure = "interrupted", "interrupted by the user (while validating the database)"
            except StoreError as error:
                status, failure = "failed", f"{failure}; and {error.message}" if failure else error.message
                hint = hint or error.hint
        try:
            if replicating:
                status, failure, hint = _replication_log(store, run_id, runtime.replication_log, status, failure, hint)
            status, failure, hint = _finish(store, run_id, run_log, log.added_or_reason(), status, failure, hint,
                                            corrupt)
        except StoreError as error:
            status, failure = "failed", f"{failure}; and {error.message}" if failure else error.message
            hint = hint or error.hint
        store.close()
    return {"status": status, "failure": failure, "hint": hint}


def _kept_open(settings: RecordedSettings, dsn: str) -> contextlib.AbstractContextManager[None]:
    """The database kept open while fbbench reads it through attachment after attachment
    (:func:`driver.kept_open`), where that saves something: under SuperServer (the embedded
    engine's default), whose attachments share one open database. Under SuperClassic and Classic
    every attachment opens the database for itself, and a held one only adds to the lock manager's
    work (embedded 5.0, 20 attachments one after another: about 14 ms of CPU each alone, 21 ms
    with one held)."""
    if settings.get("architecture") in (None, "super"):
        return driver.kept_open(dsn)
    return contextlib.nullcontext()


@contextmanager
def _traced(output: str | None, services_host: str, database: str, runtime: Any,
            console: Console) -> Iterator[list[dict[str, Any]]]:
    """--trace: a user trace session of the run's database streamed into ``output`` while the load
    runs (an embedded engine's through the in-process services manager); what it captured is the
    list's one item afterwards."""
    if not output:
        yield []
        return
    from fbbench.trace.capture import Capture

    capture = Capture(services_host, database, Path(output), {"engine": runtime.engine.label, "run": True})
    capture.start()
    captured: list[dict[str, Any]] = []
    try:
        yield captured
    finally:
        summary = capture.stop("the run's load ended")
        if capture.left_behind:
            exit_at_once()  # the session's stop or its reader still waits for an engine that stopped answering
        captured.append(summary)
        console.print(f"  trace: {summary['statements']:,} statement execution(s), {summary['committed']:,} "
                      f"commit(s) of {summary['attachments']} attachment(s) in {output}"
                      + (" — [bold red]the engine suspended the session: the trace is incomplete[/]"
                         if summary["suspended"] else ""))


class _Profiled:
    """--profile: the profiler's thread while the load runs, then what it recorded."""

    def __init__(self) -> None:
        self.thread: Any = None
        self.record: dict[str, Any] | None = None


@contextmanager
def _profiled(settings: RecordedSettings, dsn: str, run_id: str, runtime: Any, console: Console) -> Iterator[_Profiled]:
    """--profile: the profiler attached (and its tables made) before the load, its sessions
    driven by the measure phase, and the profile read once the load has ended
    (:mod:`fbbench.observe.profiler`). Nothing here fails the run: a profile that could not be
    made or read says why."""
    profiled = _Profiled()
    if not settings.get("profile"):
        yield profiled
        return
    from fbbench.observe.profiler import ProfilerThread

    thread = ProfilerThread(dsn, f"fbbench {run_id}", int(settings["connections"]),
                            local=runtime.embedded or runtime.managed)
    if thread.wait_ready(60):
        profiled.thread = thread
    try:
        yield profiled
    finally:
        profiled.record = thread.close(timeout=30)
        if thread.left_behind:
            exit_at_once()  # a command to the engine never returned: the client library's shutdown would wait
        record = profiled.record
        reason = escape(str(record["reason"] or ""))
        if record["status"] == "failed":
            console.print(f"  [bold yellow]profile: none — {reason}[/]", highlight=False, soft_wrap=True)
        else:
            said = f" — [yellow]{reason}[/]" if reason else ""
            console.print(f"  profile: {record['finished']} session(s) read{said}", highlight=False, soft_wrap=True)


def _check_profiler_server(services_host: str, runtime: Any) -> None:
    """--profile on a server: refused unless it runs Firebird 5.0 or later (its version through
    the services API; a local engine's version was checked before the run started)."""
    from fbbench.observe.profiler import server_refusal

    refusal = server_refusal(services_host, runtime.engine.label)
    if refusal:
        raise FbbenchError(refusal, hint="profile on Firebird 5.0: --engine 5.0, or a 5.0 server's DSN")


def _replay_summary(workload: Any, replaying: Any, result: LoadResult) -> dict[str, Any] | None:
    """A replay's own figures (the per-statement ones and the divergences are in their tables)."""
    measured: dict[str, Any] | None = result.get("replay")
    if replaying is None or not measured:
        return None
    import json

    facts = json.loads(workload.files["replay.json"])
    divergences = measured["divergences"]
    by_kind = dict(divergences["by_kind"])
    if replaying.skipped:
        by_kind["not replayable"] = len(replaying.skipped)
    return {**facts, "order": measured["order"], "speed": measured["speed"],
            "transactions": measured["transactions"], "statements": measured["statements"],
            "lag_ms": measured["lag"]["latency_ms"], "lag_max_ms": measured["lag"]["max_ms"],
            "divergences": sum(by_kind.values()), "divergences_by_kind": by_kind, "stalls": measured["stalls"],
            "notes": dict(replaying.notes)}


def _engine_processes(embedded: bool, server_pid: int | None) -> Callable[[], list[int]] | None:
    """The processes the engine runs in, asked at every reading (Classic's come and go): this one
    and its children when embedded, a managed server and its children; None for an external
    server, whose processes are elsewhere."""
    import psutil

    root = os.getpid() if embedded else server_pid
    if root is None:
        return None

    def processes() -> list[int]:
        try:
            return [root, *(child.pid for child in psutil.Process(root).children(recursive=True))]
        except psutil.Error:
            return [root]

    return processes


def _lab_clients(settings: RecordedSettings) -> dict[str, Any]:
    """The lab's hosts that drive this run's attachments: the first ``clients`` of its hosts, by name."""
    from fbbench.lab.client import connect

    tls = Path(str(settings["lab_tls"])) if settings.get("lab_tls") else None
    wanted = int(settings.get("clients") or 1)
    with connect(str(settings["lab"]), tls, bool(settings.get("lab_insecure"))) as lab:
        joined = sorted(lab.workers())
        address, insecure = lab.address, lab.insecure
    if len(joined) < wanted:
        raise FbbenchError(f"--clients {wanted}: the lab at {address} has {len(joined)} host(s) "
                           f"({', '.join(joined) or 'none'})",
                           hint="start more: fbbench lab worker ADDRESS --name NAME")
    return {"address": address, "tls": str(tls) if tls else None, "insecure": insecure, "hosts": joined[:wanted]}


@contextmanager
def _gstat_cadence(settings: RecordedSettings, store: ResultsStore, run_id: str, services_host: str,
                   database: str) -> Iterator[None]:
    """--gstat-every: gstat read at a cadence while the load runs, each reading stored as it comes
    (moment ``during N``, with the seconds since the load began)."""
    every = settings.get("gstat_every")
    if not every:
        yield
        return

    def record(index: int, offset: float, snapshot: gstat.GstatSnapshot) -> None:
        kept = {**snapshot.to_dict(), "offset_seconds": offset}
        # The cadence's own thread: an SQLite connection serves the thread that opened it.
        with contextlib.suppress(StoreError), ResultsStore(store.path) as own:
            own.record_gstat(run_id, f"during {index}", snapshot.taken_at, kept, snapshot.raw,
                             snapshot.error or snapshot.parse_error)

    with gstat.Cadence(services_host, database, float(every), record):
        yield


def _record_gstat(store: ResultsStore, run_id: str, moment: str, services_host: str, database: str) -> float:
    """gstat through the services API; a failure to collect or parse is recorded, never raised.
    Returns the seconds it took (what a run spends besides its load: benchmarks/sweep_overhead.py)."""
    started = time.monotonic()
    snapshot = gstat.collect(services_host, database)
    problem = snapshot.error or snapshot.parse_error
    store.record_gstat(run_id, moment, snapshot.taken_at, snapshot.to_dict(), snapshot.raw, problem)
    return time.monotonic() - started


def _validate(phases: _Phases, settings: RecordedSettings, loaded: float, abandoned: bool, services_host: str,
              database: str, log_file: Path | None) -> str | None:
    """Is the database still sound after the stress? Firebird's validation (observe/validation.py)
    when asked, or by default after a load longer than a minute. Records which was done, what it
    found, or why there was none; returns the run's failure when the database is corrupt."""
    asked = settings.get("validation")
    corrupt = None
    record: dict[str, Any] = {"requested": "auto" if asked is None else "on" if asked else "off", "done": False}
    if asked is False:
        record["reason"] = "not asked for (--no-validate)"
    elif asked is None and loaded <= AUTO_VALIDATE_SECONDS:
        record["reason"] = (f"the load ran {loaded:.0f} s: validation is automatic after loads longer than "
                            f"{AUTO_VALIDATE_SECONDS:.0f} s (--validate asks for it)")
    elif abandoned:
        record["reason"] = "an attachment did not come back: the database is not the validation's alone"
    else:
        try:
            with phases.phase("validate", "validate: is the database sound?") as detail:
                try:
                    found = validation.validate(services_host, database, LogWatch(services_host, log_file))
                except FbbenchError as error:
                    record["reason"] = f"the validation could not run: {error.message}"
                except Exception as error:  # a fault of fbbench's: said in the record, the run's end still recorded
                    record["reason"] = f"the validation failed: {type(error).__name__}: {error}"
                else:
                    record.update(found.to_dict(), done=True)
                    corrupt = None if found.sound else found.failure()
                detail.update(record)
        except (KeyboardInterrupt, Interrupted):
            record["reason"] = "interrupted by the user while it ran"
            phases.store.update_run(phases.run_id, validation=record)
            raise
    phases.store.update_run(phases.run_id, validation=record)
    return corrupt


def _finish(store: ResultsStore, run_id: str, added: str, kept: str, status: str, failure: str | None,
            hint: str | None, corrupt: str | None = None) -> tuple[str, str | None, str | None]:
    """firebird.log: what the run ``added``, its findings (``kept``: with the validation's entries,
    the text stored); an engine crash fails the run, and so does a database the validation found
    corrupt. Then the end."""
    found = firebird_log.findings(added)
    store.record_findings(run_id, "firebird.log", [
        {"kind": f.kind, "severity": f.severity, "count": f.count, "example": f.example,
         "first_at": f.first.isoformat() if f.first else None, "last_at": f.last.isoformat() if f.last else None,
         "detail": {"text": f.text, "values_vary": f.values_vary}
                   | ({"statement": f.statement, "attempts": f.attempts} if f.statement else {})}
        for f in found])
    store.update_run(run_id, firebird_log=kept[-200_000:])
    fatal = firebird_log.fatal(found)
    if fatal and status != "interrupted":
        tail = "\n".join(added.strip().splitlines()[-15:])
        status = "failed"
        failure = f"the engine reported a {fatal[0].kind.replace('_', ' ')} in firebird.log:\n{tail}"
        hint = hint or "the whole log of the run is in its report (fbbench results show RUN --report r.html)"
    if corrupt and status != "interrupted":
        failure = f"{failure}\n{corrupt}" if status == "failed" and failure else corrupt
        status = "failed"
        hint = hint or "Firebird's own report is in the run's firebird.log (fbbench results show RUN --report r.html)"
    store.finish_run(run_id, status, failure)
    return status, failure, hint


REPLICA_CHECK = "replica in step with the primary"


def _replication_log(store: ResultsStore, run_id: str, path: Path, status: str, failure: str | None,
                     hint: str | None) -> tuple[str, str | None, str | None]:
    """What the engine wrote to replication.log during the run, as findings; an error there fails
    the run: by default the engine stops replicating after one, so the rest measured none."""
    try:
        text = path.read_text(errors="replace") if path.exists() else ""
    except OSError as error:
        text = f"(replication.log could not be read: {error.strerror})"
    found = replication_log.log_findings(text)
    store.record_findings(run_id, "replication.log", found)
    errors = [f for f in found if f["severity"] == "error"]
    if errors and status == "completed":
        status = "failed"
        failure = f"the engine reported a replication error in replication.log: {errors[0]['example']}"
        hint = hint or "Firebird stops replicating after an error (disable_on_error), so the run measured none after it"
    return status, failure, hint


def _print_replication(console: Console, replicated: dict[str, Any]) -> None:
    from fbbench.analysis.run import replication_text

    console.print(f"  {replication_text(replicated)}", highlight=False, soft_wrap=True)


def _print_load(console: Console, load: dict[str, Any]) -> None:
    from fbbench.analysis.run import population_text

    text = population_text(load)
    if text:
        console.print(f"  {text}", highlight=False, soft_wrap=True)


def _store_result(store: ResultsStore, run_id: str, result: LoadResult) -> None:
    for interval in result.get("intervals", []):
        store.record_interval(run_id, interval)
    store.record_unit_totals(run_id, result.get("units", {}))


def _summary(measured: measure.Measured, settings: RecordedSettings, workload: Any,
             replicated: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the run concluded, computed once here (analysis.figures) and read by every report."""
    result, metrics = measured.result, measured.metrics
    units = result.get("units", {})
    seconds = result.get("measured_seconds") or 0.0
    metric_values = {name: m["value"] for name, m in metrics.items()}
    fixed_work = settings.get("transactions") is not None
    headline = workload.headline(fixed_work)
    available = figures.names(units, metric_values, seconds)
    return {
        "status": result["status"],
        "measured_seconds": seconds,
        "headline": {**headline.to_dict(), "result": figures.value(headline, available, seconds)},
        "figures": [{**figure.to_dict(), "result": figures.value(figure, available, seconds)}
                    for figure in workload.extra_figures(fixed_work)],
        "score_per_minute": figures.score_per_minute(units, seconds),
        "tpm": figures.tpm(units, seconds),
        "metrics": metric_values,
        "client_cpu_seconds": result.get("client_cpu_seconds"),
        "thread_cpu_seconds": result.get("thread_cpu_seconds"),
        "process_cpu_seconds": result.get("process_cpu_seconds"),
        "python_cpu_seconds": result.get("python_cpu_seconds"),
        "peak_rss_bytes": own_process.peak_rss_bytes(),  # its own: ru_maxrss would be the CLI's peak where larger
        "engine_process": "forked from its engine's template" if signals.forked_by_template() else "a new interpreter",
        "connections": settings["connections"],
        "failure": result.get("failure"),
        "attachments": result.get("attachments", []),
        "abandoned": result.get("abandoned", []),
        "sampling": measure.sampling_cost(measured.sample_seconds, settings["interval"]),
        "sampler_errors": len(measured.sampler_errors),
        "replication": replicated,
        # Time-shared fixed work: measured_seconds is the run's own turns (runner/timeshare.py).
        "timeshare": result.get("timeshare"),
    }
