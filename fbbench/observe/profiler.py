"""Firebird 5's profiler over a run's measured period (``fbbench run --profile``).

What the engine does, as found on embedded 5.0.4 (its wheel ships plugins/libDefault_Profiler.so;
firebird.conf's ``DefaultProfilerPlugin`` defaults to ``Default_Profiler``):

- ``RDB$PROFILER.START_SESSION(DESCRIPTION, FLUSH_INTERVAL, ATTACHMENT_ID, PLUGIN_NAME,
  PLUGIN_OPTIONS)`` called by one attachment for another ("remote") waits until that attachment
  is idle — between two of its calls: a few milliseconds in a busy load — and returns the
  session's id; ``FINISH_SESSION(FLUSH, ATTACHMENT_ID)`` likewise. The same user's attachments
  need no privilege (another user's would need PROFILE_ANY_ATTACHMENT). A session profiles its
  own attachment only: every load attachment gets one, started from the profiler's attachment.
- A session's data stays in its attachment's memory until a flush writes it into the
  ``PLG$PROF_*`` tables of the profiled database (the run's own copy: fbbench never runs on a
  user's file), and an attachment that detaches with its session unfinished takes the data with
  it. Two ways of finishing hung on 5.0.4. A *remote* ``FINISH_SESSION(TRUE, ATTACHMENT_ID)``
  runs the flush on the target through its listener thread, which takes the attachment while it
  is idle — and one inside a lock wait counts as idle: under TPC-C's lock waits such a finish
  never returned in 2 of 3 suite runs, its target stuck inside the engine (cause not shown). A
  local finish whose flush ran beside a MON$ snapshot (the sampler's reading of the end of the
  measured period) hung in 3 of 3 runs of a load that had dropped one of the profiler's views,
  and in none of 3 with the snapshot out of the way. So each load attachment finishes its own session with
  no request of it running, and only after the end of the measured period has been read: the
  core runs :data:`CLOSING_SQL` on it once its load has ended as planned and the runner has
  read the end (the core's ``closing_sql`` and ``open_closing``). The profile covers the measured
  period from the sessions' start to the load's end. A run that ends otherwise (Ctrl-C, a
  failure) runs no closing statement and loses its sessions with its attachments, and says so.
- The first session ever creates the ``PLG$PROF_*`` tables, views and sequence in the database
  (the plugin's own DDL): done here before the load starts, through a session of the profiler's
  own attachment that is cancelled at once, so that no DDL falls into the measured period.
- Without the ``DETAILED_REQUESTS`` plugin option (never used here: it writes a row for every
  execution) a statement's requests are one row without an elapsed time. The time a profile
  shows is per PSQL line (``PLG$PROF_PSQL_STATS``: executions, min, max and total nanoseconds)
  and per record source of a cursor (``PLG$PROF_RECORD_SOURCE_STATS``: opens and fetches with
  their time); a statement's time here is its PSQL lines' or, for a statement without PSQL (a
  DSQL query), its cursors' top record sources' — never a measured total.
- A remote command cancelled with fb_cancel_operation once left its target attachment unable to
  detach (the detach waited for ever, seen here on 5.0.4): the profiler's commands are never
  cancelled. A thread still inside one when the run ends is left behind (:attr:`left_behind`:
  the engine child then ends without shutting the client library down).
- The profiler's cost depends on the clock source the engine reads (Firebird's README.profiler:
  it "may be very high" on some systems; ``tsc`` is the fast one on Linux): recorded with the
  profile when the engine runs on this machine.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fbbench.database import driver
from fbbench.observe.architecture import process_name

if TYPE_CHECKING:
    from firebird.driver import Connection

PLUGIN = "Default_Profiler"
SINCE = (5, 0)
TOP = 50  # lines, statements and record sources kept per run, by time
# Each load attachment's last statement before it detaches (the core's closing_sql): its own
# session finished, and flushed into the PLG$PROF tables, by the attachment itself.
CLOSING_SQL = "execute procedure rdb$profiler.finish_session(true)"
CLOCK_SOURCE = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")
SQL_KEPT = 2000  # characters of a statement's SQL text kept


def clock_source() -> str | None:
    """The kernel's clock source on this machine (``tsc``, ``kvm-clock``, ``hpet`` …), or None."""
    try:
        return CLOCK_SOURCE.read_text().strip() or None
    except OSError:
        return None


def version_major_minor(version: str) -> tuple[int, int] | None:
    """``5.0.4.1234``, ``WI-V5.0.4.1234 Firebird 5.0``, ``LI-V3.0.11.33703`` → (5, 0); None if unreadable."""
    import re

    match = re.search(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def server_refusal(services_host: str, label: str) -> str | None:
    """Why ``--profile`` cannot run on the server at ``services_host`` (its version, through the
    services API, before anything touches a database), or None when it can."""
    with driver.server(services_host) as server:
        version = str(server.info.version)
    found = version_major_minor(version)
    if found is not None and found >= SINCE:
        return None
    return (f"--profile needs Firebird 5.0 or later (the RDB$PROFILER package and its {PLUGIN} plugin came with "
            f"Firebird 5.0): {label} runs Firebird {version}")


@dataclass
class Session:
    """The profiler's session on one load attachment."""

    attachment_id: int
    profile_id: int | None = None
    started: float | None = None  # time.monotonic() once START_SESSION returned
    finished: bool = False  # its attachment finished it, flushed (PLG$PROF_SESSIONS.FINISH_TIMESTAMP)
    seconds: float | None = None  # the engine's FINISH_TIMESTAMP - START_TIMESTAMP
    error: str | None = None


@dataclass
class _Plan:
    start: threading.Event = field(default_factory=threading.Event)
    started: threading.Event = field(default_factory=threading.Event)
    measure_start: float | None = None  # time.monotonic()


@dataclass
class LoadEnd:
    """How the load ended, from the core's result: its status, and each attachment's closing
    statement (:data:`CLOSING_SQL`) — ``None`` where it did not run."""

    status: str
    closings: list[tuple[int, dict[str, Any] | None]]  # (the core's attachment index, its closing)
    end_delay_seconds: float | None  # the last closing's end after the planned end of the measured period

    @classmethod
    def of(cls, result: Mapping[str, Any], planned_end: float | None) -> LoadEnd:
        """``planned_end``: seconds from the run's zero to the measured period's planned end
        (None for fixed work)."""
        closings = [(int(a.get("index") or 0), a.get("closing")) for a in result.get("attachments") or []]
        ends = [float(c["at_seconds"]) for _, c in closings if c and c.get("at_seconds") is not None]
        delay = max(ends) - planned_end if ends and planned_end is not None else None
        return cls(str(result.get("status")), closings, delay)


def _error(error: BaseException) -> str:
    text = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return text or type(error).__name__


class ProfilerThread:
    """The profiler's attachment and thread: it attaches and prepares the profiler's tables when
    made; :meth:`start` starts a session on every load attachment; each load attachment finishes
    its own (the core's closing statement); :meth:`close`, after :meth:`load_ended`, reads the
    profile of the sessions that were finished.

    Nothing here raises into the run: what went wrong is the profile's ``status`` and ``reason``.
    """

    def __init__(self, dsn: str, label: str, connections: int, local: bool) -> None:
        self.dsn, self.label, self.connections = dsn, label, connections
        self.clock_source = clock_source() if local else None
        self.sessions: list[Session] = []
        self.attachment_id: int | None = None
        self.failure: str | None = None  # why there is no profile (or only part of one)
        self.profile: dict[str, Any] | None = None  # what :meth:`close` returns
        self._plan = _Plan()
        self._ended: LoadEnd | None = None
        self._wake = threading.Condition()
        self._closing = False
        self._reading = False
        self._ready = threading.Event()
        self._connection: Connection | None = None
        self._thread = threading.Thread(target=self._run, name="fbbench-profiler", daemon=True)
        self._thread.start()

    # -- driven by the run -------------------------------------------------------------------------

    def wait_ready(self, timeout: float) -> bool:
        """True once attached and the profiler's tables exist; False if that failed or took longer."""
        self._ready.wait(timeout)
        return self._connection is not None and self.failure is None

    def start(self, wait: float | None = None) -> None:
        """Start a session on every load attachment now. ``wait``: seconds to wait for them (a
        load held at its start: every session runs before its first unit)."""
        with self._wake:
            self._plan.start.set()
            self._wake.notify_all()
        if wait is not None:
            self._plan.started.wait(wait)

    def plan(self, measure_start: float) -> None:
        """Where the measured period starts (time.monotonic())."""
        with self._wake:
            self._plan.measure_start = measure_start
            self._wake.notify_all()

    def load_ended(self, ended: LoadEnd) -> None:
        """The load has ended (its attachments detached): how, and what their closing statements did."""
        self._ended = ended

    def close(self, timeout: float = 30.0, stuck: float = 5.0) -> dict[str, Any]:
        """After the load ended: read the profile, detach; the profile's record (see :meth:`_record`).
        Waits ``timeout`` seconds for a read under way, ``stuck`` for a command to the engine (a
        stopped run must end within seconds)."""
        with self._wake:
            self._closing = True
            self._wake.notify_all()
        self._thread.join(stuck)
        if self._thread.is_alive() and self._reading:
            self._thread.join(max(0.0, timeout - stuck))
        if self._thread.is_alive():
            doing = "reading the profile" if self._reading else "a command to the engine had not returned"
            return self._record(f"the profiler gave up {timeout if self._reading else stuck:.0f} s after the run's "
                                f"load ended ({doing}); no profile was read", {})
        return self.profile or self._record(self.failure or "no profile was read", {})

    @property
    def left_behind(self) -> bool:
        """The profiler's thread is still inside the engine after :meth:`close` gave up on it."""
        return self._thread.is_alive()

    # -- the thread ---------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._attach()
        except Exception as error:
            self.failure = f"the profiler could not attach or create its tables: {_error(error)}"
        finally:
            self._ready.set()
        if self._connection is None:
            return
        try:
            self._wait(lambda: self._plan.start.is_set())
            if self._plan.start.is_set():
                self._start_sessions()
            else:
                self.failure = "the run's load ended before its measured period began: nothing was profiled"
            self._plan.started.set()
            self._wait(lambda: False)  # the read waits for the load's end: never inside the measured period
            self._reading = True
            self.profile = self._read()
        except Exception as error:
            self.failure = self.failure or f"the profiler failed: {_error(error)}"
            self.profile = self._record(self.failure, {})
        finally:
            self._plan.started.set()
            connection, self._connection = self._connection, None
            if connection is not None:
                with contextlib.suppress(Exception):
                    connection.close()

    def _wait(self, done: Any) -> None:
        """Until ``done()`` or the run's end."""
        with self._wake:
            while not self._closing and not done():
                self._wake.wait()

    def _attach(self) -> None:
        from fbbench.database.ownership import read_mark

        connection = driver.connect(self.dsn)
        try:
            # The plugin writes its tables into the profiled database: only ever into one fbbench
            # made (the run's own copy; the runner refused any other before it attached).
            if read_mark(connection) is None:
                raise RuntimeError("the database has no fbbench mark: the profiler writes its tables only into a "
                                   "database fbbench made")
            connection.commit()
            with connection.cursor() as cursor:
                cursor.execute("select current_connection from rdb$database")
                self.attachment_id = int(cursor.fetchone()[0])
                # The plugin creates its tables, views and sequence with the first session: now,
                # not at the start of the measured period. A session of this attachment, cancelled.
                cursor.execute("select rdb$profiler.start_session('fbbench: the profiler''s tables') "
                               "from rdb$database")
                cursor.fetchone()
                cursor.execute("execute procedure rdb$profiler.cancel_session")
            connection.commit()
            with connection.cursor() as cursor:
                cursor.execute("select count(*) from rdb$relations where rdb$relation_name = 'PLG$PROF_SESSIONS'")
                if not cursor.fetchone()[0]:
                    raise RuntimeError(f"{PLUGIN} created no PLG$PROF_SESSIONS table")
            connection.commit()
        except BaseException:
            with contextlib.suppress(Exception):
                connection.close()
            raise
        self._connection = connection

    def _load_attachments(self) -> list[int]:
        """The load's attachments: every user attachment but the profiler's and fbbench's own
        (the sampler's, the architecture check's: process name ``fbbench``)."""
        assert self._connection is not None
        with self._connection.cursor() as cursor:
            cursor.execute("select mon$attachment_id, mon$remote_process from mon$attachments "
                           "where coalesce(mon$system_flag, 0) = 0 and mon$attachment_id <> current_connection "
                           "order by mon$attachment_id")
            rows = cursor.fetchall()
        self._connection.commit()
        return [int(a) for a, process in rows if process_name(process) != driver.OWN_PROCESS]

    def _start_sessions(self) -> None:
        assert self._connection is not None
        try:
            found = self._load_attachments()
        except Exception as error:
            self.failure = f"the load's attachments could not be listed (MON$ATTACHMENTS): {_error(error)}"
            return
        for attachment in found:
            session = Session(attachment)
            self.sessions.append(session)
            try:
                with self._connection.cursor() as cursor:
                    cursor.execute("select rdb$profiler.start_session(?, null, ?, ?, null) from rdb$database",
                                   (f"{self.label} attachment {attachment}", attachment, PLUGIN))
                    session.profile_id = int(cursor.fetchone()[0])
                self._connection.commit()
                session.started = time.monotonic()
            except Exception as error:
                session.error = f"not started: {_error(error)}"
                with contextlib.suppress(Exception):
                    self._connection.rollback()
        if not found:
            self.failure = "no load attachment was there to profile when the measured period began"

    def _finished_by_attachments(self, started: list[Session]) -> None:
        """Which of the sessions their attachments finished (and flushed): the engine's record."""
        assert self._connection is not None
        by_id = {s.profile_id: s for s in started}
        with self._connection.cursor() as cursor:
            for ids in _chunks([s.profile_id for s in started if s.profile_id is not None]):
                cursor.execute("select profile_id, start_timestamp, finish_timestamp from plg$prof_sessions "
                               f"where profile_id in ({ids})")
                for profile_id, began, ended in cursor.fetchall():
                    session = by_id.get(int(profile_id))
                    if session is not None and ended is not None:
                        session.finished = True
                        session.seconds = (ended - began).total_seconds() if began is not None else None
        self._connection.commit()

    # -- reading --------------------------------------------------------------------------------------

    def _read(self) -> dict[str, Any]:
        started = [s for s in self.sessions if s.profile_id is not None]
        if not started:
            errors = [s.error for s in self.sessions if s.error]
            return self._record(self.failure or (f"none of the {len(self.sessions)} session(s) could be started"
                                                 + (f" — {errors[0]}" if errors else "")), {})
        ended = self._ended
        if ended is None or ended.status != "completed":
            for session in started:
                session.error = session.error or "not finished: the load did not end as planned"
            self.failure = self.failure or (
                f"the run's load ended before the profiler finished its {len(started)} session(s): the engine drops "
                "a session's data when its attachment detaches, and each load attachment finishes its own session "
                "only once the load has ended as planned (a run stopped or failed has no profile)")
            return self._record(self.failure, {})
        assert self._connection is not None
        try:
            self._finished_by_attachments(started)
        except Exception as error:
            with contextlib.suppress(Exception):
                self._connection.rollback()
            return self._record(f"the profiler's sessions could not be read from PLG$PROF_SESSIONS: {_error(error)}",
                                {})
        closing_errors = [f"attachment {index}: {closing['error']}" for index, closing in ended.closings
                          if closing and closing.get("error")]
        not_run = [index for index, closing in ended.closings if closing is None]
        why_not = ("; ".join(closing_errors[:3]) if closing_errors
                   else f"attachment(s) {', '.join(map(str, not_run[:10]))} ran no closing statement" if not_run
                   else "")
        for session in started:
            if not session.finished:
                session.error = session.error or ("not finished by its attachment"
                                                  + (f" ({why_not})" if why_not else ""))
        finished = [s.profile_id for s in started if s.finished and s.profile_id is not None]
        if not finished:
            return self._record(self.failure or (f"none of the {len(started)} session(s) was finished by its attachment"
                                                 + (f" — {why_not}" if why_not else "")), {})
        try:
            found = read_profile(self._connection, finished)
        except Exception as error:
            with contextlib.suppress(Exception):
                self._connection.rollback()
            return self._record(f"the profile could not be read from the PLG$PROF tables: {_error(error)}", {})
        lost = [s for s in started if not s.finished]
        reason = self.failure
        if lost and not reason:
            reason = (f"{len(lost)} of {len(self.sessions)} session(s) were not finished: their data is not in the "
                      "profile" + (f" — {why_not}" if why_not else ""))
        if len(self.sessions) < self.connections and not reason:
            reason = (f"{len(self.sessions)} of {self.connections} attachment(s) were there to profile when the "
                      "measured period began")
        return self._record(reason, found, complete=True)

    def _record(self, reason: str | None, found: dict[str, Any], complete: bool = False) -> dict[str, Any]:
        """The profile's record: what was profiled, over which part of the measured period, and
        what was found (``lines``: psql, statement and record_source rows, each kind by time)."""
        windows = [s.seconds for s in self.sessions if s.finished and s.seconds is not None]
        started = [s.started for s in self.sessions if s.started is not None]
        plan = self._plan
        status = "failed" if not complete else "partial" if reason else "complete"
        return {
            "status": status,
            "reason": reason,
            "plugin": PLUGIN,
            "clock_source": self.clock_source,
            "attachments": self.connections,
            "sessions": sum(1 for s in self.sessions if s.profile_id is not None),
            "finished": sum(1 for s in self.sessions if s.finished),
            "lost": [{"attachment_id": s.attachment_id, "why": s.error} for s in self.sessions if s.error][:50],
            "window_seconds": statistics.median(windows) if windows else None,
            "start_delay_seconds": (max(started) - plan.measure_start) if started and plan.measure_start else None,
            "end_delay_seconds": self._ended.end_delay_seconds if self._ended and windows else None,
            "totals": found.get("totals") or {},
            "lines": found.get("lines") or [],
        }


# ------------------------------------------------------------------------------------- the tables

_PSQL = """
    select v.statement_type, v.package_name, v.routine_name, v.sql_text, v.line_num, v.column_num,
           v.counter, v.min_elapsed_time, v.max_elapsed_time, v.total_elapsed_time
    from plg$prof_psql_stats_view v
    where v.profile_id in ({ids})"""
_RECORD_SOURCES = """
    select v.statement_type, v.package_name, v.routine_name, v.sql_text, v.cursor_id, v.cursor_name,
           v.record_source_id, v.parent_record_source_id, v.level, v.access_path,
           v.open_counter, v.open_total_elapsed_time, v.fetch_counter, v.fetch_total_elapsed_time
    from plg$prof_record_source_stats_view v
    where v.profile_id in ({ids})"""


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if hasattr(value, "read"):
        try:
            value = value.read()
        finally:
            with contextlib.suppress(Exception):
                value.close()
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value).strip()


def _name(value: Any) -> str | None:
    text = _text(value)
    return text or None


def _chunks(ids: Sequence[int], size: int = 500) -> Iterable[str]:
    for start in range(0, len(ids), size):
        yield ", ".join(str(int(i)) for i in ids[start:start + size])


def _statement_key(kind: str | None, package: str | None, routine: str | None,
                   sql: str | None) -> tuple[str | None, str | None, str | None, str | None]:
    """One statement across the sessions: a routine by its name, anything else by its SQL text."""
    return kind, package, routine, None if routine else (sql or "")[:SQL_KEPT]


def read_profile(connection: Connection, profile_ids: Sequence[int], top: int = TOP) -> dict[str, Any]:
    """The profile of ``profile_ids`` (their flushed data), summed over the sessions: every PSQL
    line, statement and record source, each kind by its time (a record source by its own time:
    its opens and fetches less those of the sources it reads from), the first ``top`` of each kept."""
    from firebird.driver import Isolation, TraAccessMode, tpb

    transaction = connection.transaction_manager(tpb(Isolation.READ_COMMITTED_RECORD_VERSION,
                                                     access_mode=TraAccessMode.READ))
    lines: dict[tuple[Any, ...], dict[str, Any]] = {}
    sources: dict[tuple[Any, ...], dict[str, Any]] = {}
    try:
        transaction.begin()
        with transaction.cursor() as cursor:
            for ids in _chunks(profile_ids):
                cursor.execute(_PSQL.format(ids=ids))
                for kind, package, routine, sql, line, column, count, low, high, total in cursor.fetchall():
                    package, routine = _name(package), _name(routine)
                    statement = _statement_key(_name(kind), package, routine, _text(sql))
                    row = lines.setdefault((*statement, line, column), {
                        "statement_type": statement[0], "package": package, "routine": routine, "sql": statement[3],
                        "line": line, "column": column, "count": 0, "total_ns": 0, "min_ns": None, "max_ns": None})
                    row["count"] += int(count or 0)
                    row["total_ns"] += int(total or 0)
                    if low is not None:
                        row["min_ns"] = int(low) if row["min_ns"] is None else min(row["min_ns"], int(low))
                    if high is not None:
                        row["max_ns"] = int(high) if row["max_ns"] is None else max(row["max_ns"], int(high))
                cursor.execute(_RECORD_SOURCES.format(ids=ids))
                for (kind, package, routine, sql, cursor_id, cursor_name, source, parent, level, path,
                     opens, open_ns, fetches, fetch_ns) in cursor.fetchall():
                    package, routine = _name(package), _name(routine)
                    statement = _statement_key(_name(kind), package, routine, _text(sql))
                    access = _text(path)
                    row = sources.setdefault((*statement, cursor_id, source, access), {
                        "statement_type": statement[0], "package": package, "routine": routine, "sql": statement[3],
                        "cursor_id": cursor_id, "cursor_name": _name(cursor_name), "record_source_id": source,
                        "parent_record_source_id": parent, "level": level, "access_path": access,
                        "opens": 0, "open_ns": 0, "fetches": 0, "fetch_ns": 0})
                    row["opens"] += int(opens or 0)
                    row["open_ns"] += int(open_ns or 0)
                    row["fetches"] += int(fetches or 0)
                    row["fetch_ns"] += int(fetch_ns or 0)
        transaction.commit()
    finally:
        with contextlib.suppress(Exception):
            if transaction.is_active():
                transaction.rollback()
        with contextlib.suppress(Exception):
            transaction.close()
    children: dict[tuple[Any, ...], int] = {}
    for key, row in sources.items():
        row["total_ns"] = row["open_ns"] + row["fetch_ns"]
        if row["parent_record_source_id"] is not None:
            parent = (*key[:4], row["cursor_id"], row["parent_record_source_id"])
            children[parent] = children.get(parent, 0) + row["total_ns"]
    for key, row in sources.items():
        # A record source's time includes the sources it reads from: its own is what is left.
        row["own_ns"] = max(0, row["total_ns"] - children.get((*key[:4], row["cursor_id"], row["record_source_id"]), 0))
    statements: dict[tuple[Any, ...], dict[str, Any]] = {}

    def statement_of(row: dict[str, Any]) -> dict[str, Any]:
        return statements.setdefault((row["statement_type"], row["package"], row["routine"], row["sql"]), {
            "statement_type": row["statement_type"], "package": row["package"], "routine": row["routine"],
            "sql": row["sql"], "psql_ns": 0, "cursor_ns": 0, "lines": 0, "cursors": 0})

    for row in lines.values():
        item = statement_of(row)
        item["psql_ns"] += row["total_ns"]
        item["lines"] += 1
    for row in sources.values():
        if row["parent_record_source_id"] is None:  # a cursor's top record source: the whole cursor
            item = statement_of(row)
            item["cursor_ns"] += row["total_ns"]
            item["cursors"] += 1
    for item in statements.values():
        item["total_ns"] = item["psql_ns"] if item["lines"] else item["cursor_ns"]
    ranked = {"psql": sorted(lines.values(), key=lambda r: -r["total_ns"]),
              "statement": sorted(statements.values(), key=lambda r: -r["total_ns"]),
              "record_source": sorted(sources.values(), key=lambda r: -r["own_ns"])}
    return {
        "totals": {"psql_ns": sum(r["total_ns"] for r in lines.values()),
                   "cursor_ns": sum(r["total_ns"] for r in sources.values() if r["parent_record_source_id"] is None),
                   "psql_lines": len(lines), "statements": len(statements), "record_sources": len(sources)},
        "lines": [{"kind": kind, "rank": rank, **row}
                  for kind, rows in ranked.items() for rank, row in enumerate(rows[:top], 1)],
    }
