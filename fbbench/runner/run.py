"""``fbbench run``: plan a run in the fbbench process, execute it in an engine child, clean up.

The parent validates everything it can before touching an engine (settings, workload files,
firebird.conf keys and values, output paths, whether the attachments fit in memory), opens the
results store and records the run, prepares the run's runtime root, then hands over to
:mod:`fbbench.runner.engine.phases` in a child process prepared for the engine. Whatever way the
child ends, the run's files are removed here (:func:`fbbench.runner.cleanup.clean_run`). Reports
are built from the store afterwards, so they show exactly what was recorded.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fbbench import paths
from fbbench.database import ownership
from fbbench.engines import EmbeddedEngine, ManagedEngine, ServerEngine, parse_engine, prepare_runtime, run_in_engine
from fbbench.engines import managed as managed_servers
from fbbench.engines import template as engine_templates
from fbbench.engines.firebird_conf import key_of
from fbbench.engines.runtime import (
    Runtime,
    check_conf,
    check_replication,
    check_replication_path,
    write_replication_conf,
)
from fbbench.errors import FbbenchError, Interrupted
from fbbench.runner import cleanup, limits, population_cache, presence, room, shaped
from fbbench.runner.host import host_facts
from fbbench.runner.outputs import check_outputs
from fbbench.runner.settings import RunSettings
from fbbench.store import ResultsStore
from fbbench.store.model import RunPlan
from fbbench.workloads.spec import load_workload


@dataclass(frozen=True)
class Notices:
    """What a run tells the user as it starts, besides its progress: the command prints them."""

    leftovers: Callable[[list[str]], None] | None = None  # what killed runs (or commands) left behind, now removed
    others: Callable[[list[str]], None] | None = None  # other runs at work on this machine now


UNTOLD = Notices()  # for callers that print nothing


@dataclass
class RunOutcome:
    run_id: str
    status: str
    failure: str | None
    results: Path
    hint: str | None = None
    repeat_index: int | None = None  # position in its series (--repeat), None for a single run

    @property
    def exit_code(self) -> int:
        return {"completed": 0, "interrupted": Interrupted.exit_code}.get(self.status, 1)


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def run_workload(settings: RunSettings) -> Any:
    """The workload a run runs: the one it names, or a replay's, made from its trace
    (:func:`fbbench.workloads.from_trace.replay_workload`)."""
    if settings.replay:
        from fbbench.workloads.from_trace import replay_workload

        return replay_workload(settings.replay)[0]
    return load_workload(settings.workload, settings.scale)


def static_findings(settings: RunSettings) -> list[Any]:
    """The credibility lint's static rules on what the run is about to do (before anything runs):
    rand()/gen_uuid() reached under read consistency, a tiny page cache, Classic with a large one.
    A list of :class:`fbbench.analysis.lint_rules.Finding`; an unknown engine version counts as 4.0+."""
    from fbbench.analysis.lint import lint_workload

    workload = run_workload(settings)
    engine = parse_engine(settings.engine)
    major = engine.major if isinstance(engine, EmbeddedEngine | ManagedEngine) else None
    # The conf with --architecture's ServerMode: the architecture the run asks for, whether fbbench
    # configures the engine or (an external server) only verifies it.
    return lint_workload(workload, major, settings.engine_conf(local=True), page_buffers=settings.page_buffers,
                         connections=settings.connections, page_size=settings.page_size)


def _replay_settings(settings: RunSettings, workload: Any, engine: Any) -> None:
    """A replay's load is its trace's: one attachment per traced session, no warm-up, as long
    as the trace at its speed."""

    facts = json.loads(workload.files["replay.json"])
    if settings.architecture == "classic" and isinstance(engine, EmbeddedEngine):
        raise FbbenchError("a replay runs its attachments as threads of one process; embedded Classic needs one "
                           "process per attachment", hint="replay on super or superclassic, or on a Classic server")
    settings.connections = facts["sessions"]
    settings.warmup, settings.transactions = 0.0, None
    settings.duration = max(facts["seconds"] / settings.speed, 0.001)


def new_series_id() -> str:
    return "s" + new_run_id()


def execute_series(settings: RunSettings, password: str | None = None,
                   notices: Notices = UNTOLD,
                   on_run: Callable[[RunOutcome], None] | None = None) -> tuple[str | None, list[RunOutcome]]:
    """``--repeat N``: the same conditions N times, each from a fresh copy of the populated database.

    A seed given by the user is a condition and every repeat uses it; otherwise each repeat draws
    its own, so the series samples the workload's randomness as well as the machine's. The series
    stops at the first interrupted repeat.
    """
    if settings.repeat == 1:
        outcome = execute(settings, password, notices)
        if on_run is not None:
            on_run(outcome)
        return None, [outcome]
    engine_templates.several()
    series_id = new_series_id()
    outcomes: list[RunOutcome] = []
    fixed_seed = settings.seed
    for index in range(1, settings.repeat + 1):
        repeat = replace(settings, seed=fixed_seed, fresh=settings.fresh and index == 1, origins=settings.origins)
        outcome = replace(execute(repeat, password, notices, series=(series_id, index)), repeat_index=index)
        outcomes.append(outcome)
        if on_run is not None:
            on_run(outcome)
        if outcome.status == "interrupted":
            break
    return series_id, outcomes


@dataclass(frozen=True)
class Checked:
    """What :func:`check` found a run's settings to mean, before anything runs."""

    workload: Any
    engine: Any
    conf: dict[str, str]
    workdir: paths.WorkDir
    results: Path
    replication_conf: dict[str, str] = field(default_factory=dict)  # replication.conf but its paths
    backup: dict[str, Any] | None = None  # --database-from: the backup's facts (runner/backup.py)
    shape: Any = None  # --machine: the fbbench.shape.Shape to run under (runner/shaped.py)


def check(settings: RunSettings, password: str | None = None) -> Checked:
    """Everything that can be checked before a run touches an engine; raises FbbenchError with one
    line saying what is wrong. Fills in the architecture a local engine defaults to."""
    settings.validate()
    workload = run_workload(settings)  # a broken workload (or trace) fails before anything runs
    engine = parse_engine(settings.engine)
    if settings.replay:
        _replay_settings(settings, workload, engine)
    if isinstance(engine, ServerEngine) and password is None:
        raise FbbenchError(f"a password is needed for {engine.label}",
                           hint="give --password-file FILE or set ISC_PASSWORD")
    _apply_workload_defaults(settings, workload)
    if settings.page_size is not None:
        from fbbench.database.manage import check_page_size

        check_page_size(settings.page_size, engine)
    # Engines on this machine whose version is known before they run: embedded and managed ones.
    local_major = engine.major if isinstance(engine, EmbeddedEngine | ManagedEngine) else None
    unsupported = {u.isolation for u in workload.units} & {"read_consistency"}
    if unsupported and local_major == "3.0":
        raise FbbenchError("isolation read_consistency needs Firebird 4.0 or later",
                           hint=f"workload {workload.name} cannot run on Firebird 3.0 as written")
    if settings.profile:
        _check_profile(settings, workload, engine, local_major)
    if settings.lab is not None:
        if not isinstance(engine, ServerEngine):
            raise FbbenchError(f"--lab drives a server from the lab's hosts: {engine.label} runs on this machine only",
                               hint="give the server's DSN, e.g. --engine db1/3050:/data/bench.fdb")
        from fbbench.lab import security

        address = security.address(settings.lab, Path(settings.lab_tls) if settings.lab_tls else None)
        security.check_exposure(security.host_of(address), Path(settings.lab_tls) if settings.lab_tls else None,
                                settings.lab_insecure, "a lab")
    local = isinstance(engine, EmbeddedEngine | ManagedEngine)
    if settings.architecture is None and local:
        settings.architecture = "super"  # Firebird's default ServerMode, made explicit in the record
    results = Path(settings.results or paths.default_results()).expanduser().resolve()
    check_outputs(settings, results)
    from fbbench.database.ownership import read_registry

    read_registry()  # damaged, it would fail the run after its database was made
    workdir = paths.check_workdir(settings.workdir)  # before an engine is installed to read its conf keys
    conf = settings.engine_conf(local)
    _check_disk_settings(settings, workload, engine, local_major, conf)
    conf = check_conf(engine, conf)
    replication_conf = check_replication(engine, settings.replication, settings.replication_conf,
                                         settings.where("replication_conf"), settings.where("replication"))
    if settings.replication != "off":
        check_replication_path(workdir)
    limits.check(settings.connections, engine.label, local_major, settings.architecture, conf, settings.page_size,
                 settings.page_buffers)
    # The population's attachments are threads of the engine process, each with its own page
    # cache unless the engine shares one.
    loading = "super" if settings.architecture in (None, "super") else "superclassic"
    limits.check(settings.load_connections, engine.label, local_major, loading, conf, settings.page_size,
                 settings.page_buffers, flag="--load-connections")
    backup = None
    if settings.database_from is not None:
        from fbbench.runner.backup import backup_facts, for_engine

        backup = for_engine(backup_facts(settings.database_from, settings.where("database_from")), engine)
    # Before the work directory is made: a refused run leaves nothing behind.
    room.check_room_and_time(settings, workload, engine, workdir, backup)
    machine = shaped.checked(settings, engine, workdir, conf) if settings.machine else None
    return Checked(workload, engine, conf, paths.own_workdir(settings.workdir), results, replication_conf, backup,
                   machine)


def _check_profile(settings: RunSettings, workload: Any, engine: Any, local_major: str | None) -> None:
    """--profile: Firebird 5.0 or later (an engine on this machine is known now; a server's version
    is asked in the engine child before anything touches a database), and a timed run — the
    engine drops a session's data when its attachment detaches, and fixed work detaches each
    attachment as soon as its own work is done (fbbench.observe.profiler)."""
    from fbbench.observe.profiler import PLUGIN, SINCE, version_major_minor

    found = version_major_minor(local_major) if local_major is not None else None
    if found is not None and found < SINCE:
        raise FbbenchError(f"{settings.where('profile')} needs Firebird 5.0 or later (the RDB$PROFILER package and its "
                           f"{PLUGIN} plugin came with Firebird 5.0): {engine.label} has no profiler",
                           hint="profile on Firebird 5.0: --engine 5.0")
    if settings.transactions is not None:
        fixed = (f"workload {workload.name} fixes its own work (its units' counts)" if workload.counted is not None
                 else f"{settings.where('transactions')} asks for fixed work")
        raise FbbenchError(f"{settings.where('profile')} profiles a timed run's measured period, and {fixed}: each "
                           "attachment detaches when its work is done, and the engine drops its profile with it",
                           hint="give --duration instead" if workload.counted is None else None)


def _check_disk_settings(settings: RunSettings, workload: Any, engine: Any, local_major: str | None,
                         conf: dict[str, str]) -> None:
    """--file-cache (written into ``conf`` as the key the engine version reads), --drop-caches
    (root, and a database on this machine) and --target-size (a workload that says what grows)."""
    from fbbench.engines.firebird_conf import boolean, file_cache_setting, integer, key_of

    if settings.file_cache is not None:
        if local_major is None:
            raise FbbenchError(f"{settings.where('file_cache')}: fbbench does not write the firebird.conf of "
                               f"{engine.label}",
                               hint="set UseFileSystemCache (4.0+) or FileSystemCacheThreshold (3.0) in the server's "
                                    "own firebird.conf; the run records what the engine reports")
        key, value = file_cache_setting(local_major, settings.file_cache)
        given = key_of(conf, key)
        if given is not None:
            if key == "UseFileSystemCache":
                same = boolean(conf[given]) == settings.file_cache
            else:
                threshold, buffers = integer(conf[given]), settings.page_buffers or 2048
                same = threshold is not None and (buffers < threshold) == settings.file_cache
            if not same:
                state = "on" if settings.file_cache else "off"
                raise FbbenchError(f"{settings.where('file_cache')} {state} contradicts "
                                   f"{settings.origins.get('conf', '--set')} {given}={conf[given]}")
        else:
            conf[key] = value
    if settings.drop_caches:
        from fbbench.engines import platform as host_os

        if local_major is None:
            raise FbbenchError(f"{settings.where('drop_caches')} drops this machine's page cache, and the database of "
                               f"{engine.label} is on its server",
                               hint="drop the cache on the server itself, or use an engine on this machine")
        refusal = host_os.page_cache_drop_refusal()
        if refusal:
            raise FbbenchError(f"{settings.where('drop_caches')}: {refusal}",
                               hint="run as root (sudo), or leave it out: the lint then says what the OS cache held")
    if settings.target_size is not None:
        if workload.size_scale is None:
            raise FbbenchError(f"{settings.where('target_size')}: workload {workload.name} does not say which scale "
                               "its database grows with (size_scale in workload.toml)",
                               hint="choose its scale with --scale instead")
        if workload.size_scale in settings.scale:
            raise FbbenchError(f"{settings.where('target_size')} chooses {workload.size_scale} itself; "
                               f"--scale {workload.size_scale}={settings.scale[workload.size_scale]} contradicts it",
                               hint=f"give one of --target-size or --scale {workload.size_scale}=…")
        if not isinstance(engine, EmbeddedEngine):
            raise FbbenchError(f"{settings.where('target_size')} measures the size per unit of scale on a cached "
                               f"population, which only embedded engines keep",
                               hint=f"choose --scale {workload.size_scale}=… for {engine.label}")


def _apply_workload_defaults(settings: RunSettings, workload: Any) -> None:
    """What the workload decides unless the run says otherwise: its page size; and, for units
    with a ``count``, the fixed work itself (units per attachment = the sum of the counts)."""
    if settings.page_size is None and workload.page_size is not None:
        settings.page_size = workload.page_size
    counted = workload.counted
    if counted is None:
        return
    if settings.transactions not in (None, counted):
        raise FbbenchError(f"{settings.where('transactions')}: workload {workload.name} fixes its own work "
                           f"(its units' counts: {counted:,} per attachment)",
                           hint="change it through its scale, e.g. --scale " + ", ".join(
                               f"{name}=…" for name in sorted(workload.scale) if name not in workload.scale_choices))
    settings.transactions = counted


def execute(settings: RunSettings, password: str | None = None,
            notices: Notices = UNTOLD,
            series: tuple[str, int] | None = None, sweep: tuple[str, int] | None = None, *,
            drawn_seed: int | None = None, on_engine: Callable[[Any], None] | None = None,
            barrier: dict[str, str] | None = None, run_id: str | None = None) -> RunOutcome:
    """One run, start to end. ``drawn_seed``: the seed to use when the user gave none (runs of a
    pair share one, so that both do the same units; it stays a drawn seed, not a condition).
    ``on_engine(process)``: called with the engine child once it runs; ``barrier``: the run is
    time-shared and meets its partner there (both: :mod:`fbbench.runner.paired`). ``run_id``: the
    id to record the run under, given by a lab's coordinator, which knows it before the run starts
    on its host (default: a new one)."""
    settings.seed_fixed = settings.seed is not None  # given by the user: a condition of the run
    if settings.seed is None:
        settings.seed = drawn_seed if drawn_seed is not None else secrets.randbits(63)
    checked = check(settings, password)
    workload, engine, conf, results = checked.workload, checked.engine, checked.conf, checked.results
    workdir = checked.workdir.path
    run_id = run_id or new_run_id()
    # Its database copy is the clean-up's unless kept, or on an external server (not in the work directory).
    made = cleanup.run_files(checked.workdir, run_id,
                             database=not settings.keep_database and not isinstance(engine, ServerEngine),
                             replication=settings.replication != "off")
    # A machine shape's cgroups and namespaces are recorded with the run's files, before they exist.
    shaping = shaped.for_run(checked.shape, settings, engine, workdir, conf, run_id) if checked.shape else None
    if shaping is not None:
        made.paths.update(shaping.kernel_objects())

    with ResultsStore(results) as store:
        removed = cleanup.remove_leftovers(store, checked.workdir)
        if removed and notices.leftovers is not None:
            notices.leftovers(removed)
        started, clock = time.time(), time.monotonic()
        store.begin_run(run_id, workload.name, settings.recorded(), host_facts(workdir, host_name=settings.host_name),
                        *(series or (None, None)), *(sweep or (None, None)), files=made)
        store.update_run(run_id, engine_label=engine.label)
        try:
            with contextlib.ExitStack() as stack:
                managed = None
                if shaping is not None:  # removed when this block ends, however it ends, after the engine
                    stack.enter_context(shaping)
                launcher = shaping.engine_launcher if shaping is not None else None
                if isinstance(engine, ManagedEngine):
                    # Stopped when this block ends, however it ends, before clean_run removes its files.
                    managed = stack.enter_context(managed_servers.running(engine, workdir, conf, run_id, launcher))
                    runtime = managed.runtime
                    if shaping is not None:
                        launcher = shaping.client_launcher  # the load runs on the client's side of the link
                        if shaping.link is not None:
                            managed.reached_at = shaping.serve(managed.server.port)
                else:
                    runtime = prepare_runtime(engine, workdir, conf, name=run_id, user=settings.user,
                                              password=password)
                host = _host(settings, engine, runtime, workdir, run_id)
                if shaping is not None:
                    host["shape"] = shaping.record()
                store.update_run(run_id, host=host)
                pair = (settings.timeshare or {}).get("pair")
                stack.enter_context(presence.holding(runtime.base, run_id, results, pair))
                # Found once this run's own lock and row are there: of two runs starting at once,
                # the later one to look sees the other.
                others = presence.others(store, workdir, run_id, pair)
                if others and notices.others is not None:
                    notices.others(others)
                detail = {"root": str(runtime.root), "conf": runtime.conf, "client": runtime.client_version}
                if others:
                    detail["others_running"] = others
                if managed is not None:
                    detail["server"] = {"engine": engine.label, "build": managed.engine.build,
                                        "port": managed.server.port, "home": str(managed.server.home)}
                store.record_phase(run_id, "runtime", started, time.monotonic() - clock, detail)
                plan = _plan(run_id, settings, workload.directory, engine, checked.workdir, results, managed,
                             checked.backup)
                if settings.replication != "off":
                    plan["replication"] = _replication_plan(runtime, settings.replication, checked.replication_conf,
                                                            cleanup.run_paths(workdir, run_id))
                if managed is not None and managed.server.pid is not None:
                    plan["engine_pid"] = managed.server.pid
                if barrier is not None:
                    plan |= {"barrier": barrier, "quiet": True}
                if shaping is not None:
                    shaping.start_watching()
                try:
                    outcome: dict[str, Any] = run_in_engine(runtime, "fbbench.runner.engine.phases:execute", plan,
                                                            on_start=on_engine, launcher=launcher)
                except FbbenchError as error:
                    raise error if shaping is None else shaped.explained(shaping, error) from None
                finally:
                    if managed is not None:
                        _own_by_path(managed, plan["database"]["location"], cleanup.run_paths(workdir, run_id).database)
                if shaping is not None:
                    host, unshaped = shaped.verified(shaping, host, outcome)
                    store.update_run(run_id, host=host)
                    if unshaped is not None:
                        store.finish_run(run_id, "failed", unshaped)
                        outcome = {"status": "failed", "failure": unshaped,
                                   "hint": "the run's figures are kept, but they are not the shape's"}
        except (KeyboardInterrupt, Interrupted) as error:  # before the child's phases took over, or as it ended
            message = getattr(error, "message", "interrupted by the user")
            store.finish_run(run_id, "interrupted", message)
            outcome = {"status": "interrupted", "failure": message}
        except FbbenchError as error:  # the runtime could not be prepared, the child died (crashed engine)
            store.finish_run(run_id, "failed", error.message)
            outcome = {"status": "failed", "failure": error.message, "hint": error.hint}
        except OSError as error:  # this process's own files of the run (a full or read-only work directory)
            refusal = paths.file_error(error, f"write {error.filename}" if error.filename else "prepare the run",
                                       workdir, "give --workdir on another one")
            store.finish_run(run_id, "failed", refusal.message)
            outcome = {"status": "failed", "failure": refusal.message, "hint": refusal.hint}
        except BaseException as error:  # a bug: its traceback follows, but the run's record says it ended
            store.finish_run(run_id, "failed", f"internal error: {type(error).__name__}: {error}")
            raise
        finally:
            cleanup.clean_run(store, checked.workdir, run_id, made)
    return RunOutcome(run_id, outcome["status"], outcome["failure"], results, outcome.get("hint"))


def _replication_plan(runtime: Runtime, mode: str, conf: dict[str, str], files: cleanup.RunPaths) -> dict[str, Any]:
    """The run's replication.conf in its runtime root, and the directories it names (inside the
    work directory, with the database: removed with it, or kept by --keep-database)."""
    chosen: dict[str, Path] = {}
    if mode == "async":
        chosen = {"journal_directory": files.journal, "journal_archive_directory": files.archive}
    else:
        chosen = {"sync_replica": files.replica}
    files.replication.mkdir(parents=True, exist_ok=True)
    for key in ("journal_directory", "journal_archive_directory"):
        if key in chosen:
            chosen[key].mkdir(exist_ok=True)
    write_replication_conf(runtime, files.database, chosen, conf)
    return {"mode": mode, "settings": conf, "directory": str(files.replication),
            **{key: str(path) for key, path in chosen.items()}}


def _host(settings: RunSettings, engine: Any, runtime: Any, workdir: Path, run_id: str) -> dict[str, Any]:
    """The machine's facts, with the storage under the run's database and the engine's temp
    directory (its first TempDirectories, else the runtime's FIREBIRD_TMP) when they are on this
    machine: an external server's are not visible from here."""
    if isinstance(engine, ServerEngine):
        return host_facts(workdir, runtime.client_library, host_name=settings.host_name)
    temp = key_of(runtime.conf, "TempDirectories")
    first = runtime.conf[temp].split(";")[0].strip() if temp else ""
    return host_facts(workdir, runtime.client_library, host_name=settings.host_name,
                      database_dir=cleanup.run_paths(workdir, run_id).database.parent,
                      temp_dir=Path(first) if first else runtime.tmp_dir)


def _own_by_path(managed: managed_servers.ManagedRun, dsn: str, database: Path) -> None:
    """Own a managed run's database by its path: the port in its DSN dies with the server, and
    clean_run (or --keep-database) deals in paths. (Its firebird.log is read through the
    services API by the engine side, as for any server: inside its namespace that is its own.)"""
    entry = ownership.lookup(dsn)
    if entry is not None:
        ownership.unregister(dsn)
        details = {key: value for key, value in entry.items() if key not in ("token", "created_at")}
        ownership.register(str(database), entry["token"], {**details, "engine": managed.engine.label})


def _plan(run_id: str, settings: RunSettings, workload_dir: Path, engine: Any, workdir: paths.WorkDir,
          results: Path, managed: managed_servers.ManagedRun | None = None,
          backup: dict[str, Any] | None = None) -> RunPlan:
    if isinstance(engine, EmbeddedEngine):
        database = cleanup.run_paths(workdir.path, run_id).database
        database.parent.mkdir(parents=True, exist_ok=True)
        location, services_host, cache_dir = str(database), "", str(population_cache.cache_dir(workdir.path))
        major = engine.cache_engine
    elif managed is not None:
        # Where an embedded run's copy would be, so --keep-database and clean_run work alike. Built
        # in place: the population cache is made by embedded engines, whose ODS may differ.
        database = cleanup.run_paths(workdir.path, run_id).database
        database.parent.mkdir(parents=True, exist_ok=True)
        location, services_host, cache_dir = managed.dsn(database), managed.services_host, None
        major = engine.major
    else:
        location = engine.dsn
        services_host = engine.host + (f"/{engine.port}" if engine.port else "")
        cache_dir, major = None, "server"
    recorded = settings.recorded()
    if settings.trace:  # the engine child writes it wherever it runs
        recorded["trace"] = str(Path(settings.trace).expanduser().absolute())
    return {
        "run_id": run_id,
        "parent_pid": os.getpid(),  # the child must not run on if this process is already gone
        "settings": recorded,
        "workload_dir": str(workload_dir),
        "workdir": str(workdir.path),
        "workdir_id": workdir.ident,  # what the child records with the files it creates there
        "results": str(results),
        "database": {
            "location": location, "services_host": services_host, "cache_dir": cache_dir, "engine_major": major,
            "page_size": settings.page_size, "page_buffers": settings.page_buffers,
            # Population runs with forced writes off; the copy gets the engine's default (on) unless asked.
            "forced_writes": True if settings.forced_writes is None else settings.forced_writes,
            "sweep_interval": None, "fresh": settings.fresh, "grow": settings.grow,
            "load_connections": settings.load_connections, "restore": backup,
            "local_file": str(database) if managed is not None else None,
            "time_limit": None if settings.yes else limits.PLANNED_LIMIT_SECONDS,
        },
    }
