"""Functions tests/test_core.py runs inside an engine child process (fbbench.engines.run_in_engine).

Each returns plain JSON-able values. The load core gets the child's own client library, so the
same functions serve embedded 3.0/4.0/5.0 and the loopback server.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from fbbench.database import driver, scripts
from fbbench.engines import current_runtime
from fbbench.engines.platform import process_alive
from fbbench.engines.template import ATTACHMENT_NAME
from fbbench.loadcore import run_load

HERE = Path(__file__).resolve().parent


def create(dsn: str) -> dict[str, Any]:
    """A fresh database with tests/workloads_core/schema.sql; forced writes off, as benchmarks use."""
    with driver.create_database(dsn, page_size=8192, forced_writes=False) as connection:
        scripts.run_file(connection, HERE / "schema.sql")
        with connection.cursor() as cursor:
            cursor.execute("select trim(rdb$exception_name), rdb$exception_number from rdb$exceptions")
            exceptions = {name: number for name, number in cursor.fetchall()}
            cursor.execute("select rdb$get_context('SYSTEM', 'ENGINE_VERSION') from rdb$database")
            version = cursor.fetchone()[0]
        connection.commit()
    return {"exceptions": exceptions, "engine_version": version}


def core_config(dsn: str, **settings: Any) -> dict[str, Any]:
    user, password = driver.credentials()
    return {"client_library": str(current_runtime().client_library), "database": dsn, "user": user,
            "password": password, **settings}


def run(dsn: str, settings: dict[str, Any], interrupt_after: float | None = None,
        processes: bool = False, open_closing: bool = False) -> dict[str, Any]:
    """One load run; with ``interrupt_after``, Ctrl-C arrives (SIGINT to this process) after that many seconds.
    ``processes``: Classic's one process per attachment (the runtime must be ServerMode Classic).
    ``open_closing``: the boundary callback opens the closing statements (closing_sql) at the
    measured period's planned end, as the runner does once it has read it; the seconds since the
    run's zero when it did are ``_test.opened_at``."""
    from fbbench import _core

    config = core_config(dsn, **settings)
    timeline = _core.Timeline(json.dumps(config))
    opened: list[float] = []

    def on_boundary(boundary: int, at: float, last: bool) -> bool:
        end = boundary > 0 and timeline.end is not None and timeline.boundary_offset(boundary + 1) is None
        if end and open_closing:
            opened.append(time.time())
        return end and open_closing

    signalled: list[float] = []

    def interrupt() -> None:
        signalled.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(interrupt_after, interrupt) if interrupt_after is not None else None
    polls: list[str] = []
    started = time.monotonic()
    if timer:
        timer.start()
    try:
        result = run_load(config, on_progress=lambda live: polls.append(live["phase"]),
                          poll_seconds=0.2, processes=processes, on_boundary=on_boundary)
    finally:
        if timer:
            timer.cancel()
    returned = time.monotonic()
    document = dict(result)
    document["_test"] = {
        "seconds": returned - started,
        "after_interrupt": returned - signalled[0] if signalled else None,
        "phases_seen": sorted(set(polls)),
        # measure_started_at: the wall-clock time of the zero plus the warm-up.
        "opened_at": (opened[0] - result["measure_started_at"] + float(config.get("warmup_seconds") or 0.0)
                      if opened and result.get("measure_started_at") else None),
    }
    return document


def run_while_row_locked(dsn: str, lock_sql: str, settings: dict[str, Any], interrupt_after: float) -> dict[str, Any]:
    """Runs the load while another transaction holds a row lock (some units then wait for ever)."""
    with driver.connect(dsn) as blocker:
        with blocker.cursor() as cursor:
            cursor.execute(lock_sql)
        try:
            return run(dsn, settings, interrupt_after)
        finally:
            blocker.rollback()


def query(dsn: str, sql: str) -> list[list[Any]]:
    with driver.connect(dsn) as connection, connection.cursor() as cursor:
        cursor.execute(sql)
        rows = [list(row) for row in cursor.fetchall()]
        connection.commit()
        return rows


def worker_processes() -> list[int]:
    """This process's Classic attachment processes (fbbench.loadcore.classic workers): forked by
    its attachment template (by their name), or its own new interpreters (by their command)."""
    found = []
    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if process.name() == ATTACHMENT_NAME or "classic_worker" in " ".join(process.cmdline()):
                found.append(process.pid)
    return sorted(found)


def run_signalling_a_worker(dsn: str, settings: dict[str, Any], after: float, signum: int) -> dict[str, Any]:
    """A Classic run (processes) during which one attachment process gets ``signum`` after ``after`` s."""
    signalled: list[int] = []

    def send() -> None:
        workers = worker_processes()
        if workers:
            signalled.append(workers[-1])
            os.kill(workers[-1], signum)

    document = _classic_run_with(dsn, settings, after, send)
    document["_test"]["signalled"] = signalled
    document["_test"]["left"] = worker_processes()
    return document


def run_noting_its_processes(dsn: str, settings: dict[str, Any], after: float, template: bool) -> dict[str, Any]:
    """A Classic run (processes) that notes, ``after`` s in, each process below this one: its name,
    parent, process group and command. ``template`` False: the run's attachment template cannot
    start (its start refused as an exec failure would be), so its workers must start without one."""
    from fbbench.engines import template as templates

    noted: list[dict[str, Any]] = []

    def note() -> None:
        for process in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error, OSError):
                noted.append({"pid": process.pid, "parent": process.ppid(), "pgid": os.getpgid(process.pid),
                              "name": process.name(), "command": " ".join(process.cmdline())})

    def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise OSError("refused by the test")

    if not template:
        templates.Template.start = refused  # type: ignore[method-assign,assignment]
    document = _classic_run_with(dsn, settings, after, note)
    document["_test"] |= {"processes": noted, "pid": os.getpid(), "pgid": os.getpgid(0),
                          "left": [p["pid"] for p in noted if process_alive(p["pid"])]}
    return document


def _classic_run_with(dsn: str, settings: dict[str, Any], after: float, action: Any) -> dict[str, Any]:
    """A Classic run (processes) during which ``action()`` is called once, ``after`` s in."""
    timer = threading.Timer(after, action)
    timer.start()
    try:
        return run(dsn, settings, processes=True)
    finally:
        timer.cancel()
