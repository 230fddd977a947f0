"""Functions tests/test_core_watchdog.py runs inside an engine child process.

Two ways an attachment goes wrong for real:

- the database file cannot grow (a full disk, or RLIMIT_FSIZE on this process);
- a statement the engine cannot cancel: ``EXECUTE STATEMENT ... ON EXTERNAL DATA SOURCE`` to a
  TCP listener (run here, on a thread of this process) that accepts and never answers. The
  engine's remote client then waits in recv() for the connect reply, which fb_cancel_operation
  does not break (a PSQL loop swallowing the cancel in ``WHEN ANY`` does not work: on 5.0 the
  cancel ends the loop at once). Closing the listener's sockets lets that attachment come back.

A stuck engine thread would also hold the client library's shutdown at exit, as it would hold
the runner's engine process: these functions ask the child to skip it once its result is written,
as the runner does (:func:`fbbench.engines.child.exit_at_once`).
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

from fbbench.database import driver
from fbbench.engines.child import exit_at_once
from fbbench.loadcore import LoadResult, run_load
from tests.workloads_core.child import core_config

# Attachment 1 hangs on its `after`-th call; other attachments never touch the remote source.
HANG_PROCEDURE = """
create or alter procedure maybe_hang (port integer, after integer) returns (n integer)
as
declare calls integer;
begin
  calls = coalesce(cast(rdb$get_context('USER_SESSION', 'CALLS') as integer), 0) + 1;
  rdb$set_context('USER_SESSION', 'CALLS', calls);
  n = calls;
  if (port > 0 and calls >= after) then
    execute statement 'select 1 from rdb$database'
      on external data source '127.0.0.1/' || port || ':/nowhere.fdb'
      as user 'SYSDBA' password 'masterkey'
      into :n;
  suspend;
end
"""


def create_fat(dsn: str) -> int:
    """A database with one table of fat rows; returns its size in bytes."""
    with driver.create_database(dsn, page_size=8192, forced_writes=False) as connection:
        with connection.cursor() as cursor:
            cursor.execute("create table fat (id bigint not null primary key, pad varchar(7000))")
            connection.commit()
            cursor.execute("create sequence fat_seq")
        connection.commit()
    return Path(dsn).stat().st_size


def _timed_run(config: dict[str, Any], interrupt_after: float | None = None) -> dict[str, Any]:
    """run_load with the times the test needs: in all, after the end of counting (the end of
    the period, the stop or the failure: the result's ``ended_at``), after the interrupt
    (SIGINT to this process, as Ctrl-C)."""
    marks: dict[str, float] = {}

    def interrupt() -> None:
        marks["interrupt"] = time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(interrupt_after, interrupt) if interrupt_after is not None else None
    started = time.monotonic()
    if timer:
        timer.start()
    try:
        result: LoadResult = run_load(config, poll_seconds=0.1)
    finally:
        if timer:
            timer.cancel()
    returned, returned_wall = time.monotonic(), time.time()
    document = dict(result)
    document["_test"] = {
        "seconds": returned - started,
        "after_end": returned_wall - result["ended_at"],
        "after_interrupt": returned - marks["interrupt"] if "interrupt" in marks else None,
        "typed_abandoned": list(result["abandoned"]),
    }
    return document


def fill_until_full(dsn: str, settings: dict[str, Any], file_size_limit: int | None) -> dict[str, Any]:
    """Inserts fat rows until the database file cannot grow. With ``file_size_limit``, the
    limit is RLIMIT_FSIZE on this process (Python ignores SIGXFSZ, so writes fail with EFBIG)."""
    exit_at_once()
    if file_size_limit is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, resource.RLIM_INFINITY))
    return _timed_run(core_config(dsn, **settings))


class SilentServer:
    """A TCP listener that accepts connections and never answers."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.accepted.append(connection)

    def close(self) -> None:
        self.listener.close()
        for connection in self.accepted:
            connection.close()


def _other_attachments(dsn: str) -> int:
    with driver.connect(dsn) as connection, connection.cursor() as cursor:
        cursor.execute("select count(*) from mon$attachments "
                       "where mon$system_flag = 0 and mon$attachment_id <> current_connection")
        (count,) = cursor.fetchone()
        connection.commit()
        return int(count)


def stuck_attachment(dsn: str, settings: dict[str, Any], after_calls: int,
                     interrupt_after: float | None = None) -> dict[str, Any]:
    """A load in which attachment 1 gets stuck in the engine on its ``after_calls``-th unit.

    After run_load has returned (and dropped its LoadRun with the thread still stuck), the
    listener lets the stuck call fail; the function then checks that the late attachment
    detached, and that a second, normal run in the same process is unaffected.
    """
    exit_at_once()
    with driver.connect(dsn) as connection, connection.cursor() as cursor:
        cursor.execute(HANG_PROCEDURE)
        connection.commit()
    server = SilentServer()

    def unit(port: int) -> dict[str, Any]:
        return {"name": "maybe_hang", "statements": [{
            "sql": "select n from maybe_hang(iif(cast(? as integer) = 1, cast(? as integer), 0), ?)",
            "params": [{"kind": "attachment", "args": []}, {"kind": "const", "args": [port]},
                       {"kind": "const", "args": [after_calls]}]}]}

    document = _timed_run(core_config(dsn, **settings, units=[unit(server.port)]), interrupt_after)
    stuck_after_return = _other_attachments(dsn)

    server.close()
    deadline = time.monotonic() + 10.0
    while (left := _other_attachments(dsn)) and time.monotonic() < deadline:
        time.sleep(0.1)
    document["_test"]["attachments_left_after_return"] = stuck_after_return
    document["_test"]["attachments_left_after_release"] = left

    normal = _timed_run(core_config(dsn, **{**settings, "warmup_seconds": 0.0, "measure_seconds": 1.0},
                                    units=[unit(0)]))
    document["_test"]["second_run"] = {key: normal[key] for key in ("status", "failure", "abandoned", "units")}
    return document
