"""``fbbench run``: plan a run in the fbbench process, execute it in an engine child, report it.

The parent validates everything it can before touching an engine (settings, workload file,
firebird.conf keys), prepares the run's runtime root, records the run in the results store,
then hands over to :mod:`fbbench.runner.engine_side` in a child process prepared for the engine.
Reports are built from the store afterwards, so they show exactly what was recorded.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fbbench import paths
from fbbench.database import ownership
from fbbench.engines import EmbeddedEngine, ServerEngine, parse_engine, prepare_runtime, run_in_engine
from fbbench.engines.runtime import runtime_base
from fbbench.errors import FbbenchError, Interrupted
from fbbench.runner.host import host_facts
from fbbench.runner.settings import RunSettings
from fbbench.store import ResultsStore
from fbbench.workloads.spec import load_workload


@dataclass
class RunOutcome:
    run_id: str
    status: str
    failure: str | None
    results: Path
    hint: str | None = None

    @property
    def exit_code(self) -> int:
        return {"completed": 0, "interrupted": Interrupted.exit_code}.get(self.status, 1)


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def _run_database(workdir: Path, run_id: str) -> Path:
    """Where an embedded run's database copy lives."""
    return workdir / "databases" / f"{run_id}.fdb"


def remove_leftovers(store: ResultsStore, workdir: Path) -> list[str]:
    """Delete what runs killed before their clean-up left in ``workdir``: run database, runtime root.

    Only runs the results store knows, whose process is gone (status incomplete), and only the
    paths fbbench itself names after the run id inside its work directory. A database the run was
    asked to keep stays.
    """
    removed = []
    for run_id, kept in store.abandoned_runs():
        database, runtime_dir = _run_database(workdir, run_id), runtime_base(workdir, run_id)
        if not kept and database.exists():
            ownership.remove_run_copy(str(database), workdir)
            removed.append(str(database))
        if runtime_dir.exists():
            shutil.rmtree(paths.assert_inside(runtime_dir, workdir), ignore_errors=True)
            removed.append(str(runtime_dir))
    return removed


def execute(settings: RunSettings, password: str | None = None,
            on_leftovers: Callable[[list[str]], None] | None = None) -> RunOutcome:
    settings.validate()
    workload = load_workload(settings.workload, settings.scale)  # a broken workload fails before anything runs
    engine = parse_engine(settings.engine)
    if settings.seed is None:
        settings.seed = secrets.randbits(63)
    if isinstance(engine, ServerEngine) and password is None:
        raise FbbenchError(f"a password is needed for {engine.label}",
                           hint="give --password-file FILE or set ISC_PASSWORD")
    if settings.page_size is not None:
        from fbbench.database.manage import check_page_size

        check_page_size(settings.page_size, engine)
    unsupported = {u.isolation for u in workload.units} & {"read_consistency"}
    if unsupported and isinstance(engine, EmbeddedEngine) and engine.major == "3.0":
        raise FbbenchError("isolation read_consistency needs Firebird 4.0 or later",
                           hint=f"workload {workload.name} cannot run on Firebird 3.0 as written")

    workdir = Path(settings.workdir or paths.default_workdir()).expanduser().resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    results = Path(settings.results or paths.default_results()).expanduser().resolve()
    run_id = new_run_id()

    started, clock = time.time(), time.monotonic()
    runtime = prepare_runtime(engine, workdir, settings.conf, name=run_id, user=settings.user, password=password)
    runtime_seconds = time.monotonic() - clock

    store = ResultsStore(results)
    try:
        removed = remove_leftovers(store, workdir)
        if removed and on_leftovers is not None:
            on_leftovers(removed)
        store.begin_run(run_id, workload.name, settings.recorded(), host_facts(workdir, runtime.client_library))
        store.update_run(run_id, engine_label=engine.label)
        store.record_phase(run_id, "runtime", started, runtime_seconds,
                           {"root": str(runtime.root), "conf": runtime.conf, "client": runtime.client_version})
        plan = _plan(run_id, settings, workload.directory, engine, workdir, results)
        try:
            outcome: dict[str, Any] = run_in_engine(runtime, "fbbench.runner.engine_side:execute", plan)
        except Interrupted as error:  # Ctrl-C before the child's phases took over, or while it finished
            store.finish_run(run_id, "interrupted", error.message)
            outcome = {"status": "interrupted", "failure": error.message}
        except FbbenchError as error:  # the child died (crashed engine) or could not start
            store.finish_run(run_id, "failed", error.message)
            outcome = {"status": "failed", "failure": error.message, "hint": error.hint}
        return RunOutcome(run_id, outcome["status"], outcome["failure"], results, outcome.get("hint"))
    finally:
        store.close()
        runtime.remove(workdir)


def _plan(run_id: str, settings: RunSettings, workload_dir: Path, engine: Any, workdir: Path,
          results: Path) -> dict[str, Any]:
    if isinstance(engine, EmbeddedEngine):
        database = _run_database(workdir, run_id)
        database.parent.mkdir(parents=True, exist_ok=True)
        location, services_host, cache_dir = str(database), "", str(workdir / "dbcache")
        major = engine.major
    else:
        location = engine.dsn
        services_host = engine.host + (f"/{engine.port}" if engine.port else "")
        cache_dir, major = None, "server"
    return {
        "run_id": run_id,
        "parent_pid": os.getpid(),  # the child must not run on if this process is already gone
        "settings": {**settings.recorded(), "warmup": settings.warmup, "duration": settings.duration},
        "workload_dir": str(workload_dir),
        "workdir": str(workdir),
        "results": str(results),
        "database": {
            "location": location, "services_host": services_host, "cache_dir": cache_dir, "engine_major": major,
            "page_size": settings.page_size, "page_buffers": settings.page_buffers,
            # Population runs with forced writes off; the copy gets the engine's default (on) unless asked.
            "forced_writes": True if settings.forced_writes is None else settings.forced_writes,
            "sweep_interval": None, "fresh": settings.fresh,
            "load_connections": settings.load_connections,
        },
    }
