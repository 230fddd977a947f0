"""The SQL a workload defines besides its units, run inside the engine child: DB-side metrics,
exception numbers, run constants, consistency checks — and preparing all of it before measuring,
so that a mistake in a check or a metric stops the run before it starts, not after — and the plan
the engine chose for each of the units' statements (what ``fbbench track`` follows across builds)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

from fbbench import signals
from fbbench.database import driver
from fbbench.engines.child import exit_at_once
from fbbench.errors import FbbenchError
from fbbench.runner import limits
from fbbench.workloads.spec import Check, Workload


def prepare_all(dsn: str, workload: Workload) -> None:
    """Prepare every check and metric against the populated schema; refuse the run on the first error."""
    statements = [(f"check '{c.label}'", c.sql, c.where) for c in workload.checks]
    statements += [(f"metric '{m.name}'", m.sql, m.where) for m in workload.metrics]
    statements += [(f"constant {name}", sql, str(workload.source)) for name, sql in workload.constants.items()]
    if not statements:
        return
    with driver.connect(dsn) as connection:
        for what, sql, where in statements:
            try:
                with connection.cursor() as cursor, cursor.prepare(sql):
                    pass  # prepared, then freed while the attachment is still there
            except Exception as error:
                reason = driver.explain(error, dsn).message
                raise FbbenchError(f"{where}: the SQL of {what} does not prepare: {reason}",
                                   hint="fix the workload file; nothing was measured") from None


MAX_PLANNED_STATEMENTS = 500  # a workload made from a long trace may have thousands: the first are planned
_ROUTINE_TYPES = {2: "trigger", 5: "procedure", 15: "function", 0: "relation"}  # RDB$OBJECT_TYPE numbers


def plans(dsn: str, workload: Workload) -> dict[str, Any]:
    """The plan of every statement of the workload's units as the engine prepares it on the
    populated database — the legacy form and the explained one (Firebird 3.0+) — and, on
    Firebird 5.0+, the explained plans of the PSQL routines those statements compile
    (MON$COMPILED_STATEMENTS): a statement that only calls a procedure has no plan of its own.
    A statement that does not prepare alone (it needs an earlier statement of its unit) is
    listed with the engine's reason, never a failure of the run."""
    statements: list[dict[str, Any]] = []
    routines: list[dict[str, Any]] = []
    seen: set[str] = set()
    with driver.connect(dsn) as connection:
        with connection.cursor() as cursor:
            for unit in workload.units:
                for number, statement in enumerate(unit.statements, 1):
                    if len(statements) >= MAX_PLANNED_STATEMENTS or statement.sql in seen:
                        continue
                    seen.add(statement.sql)
                    entry: dict[str, Any] = {"unit": unit.name, "statement": number, "sql": statement.sql}
                    try:
                        prepared = cursor.prepare(statement.sql)
                        try:
                            entry.update(plan=prepared.plan, explained=prepared.detailed_plan)
                        finally:
                            prepared.free()
                    except Exception as error:
                        entry["error"] = driver.explain(error, dsn).message
                    statements.append(entry)
            try:
                cursor.execute("select trim(mon$object_name), mon$object_type, trim(mon$package_name), "
                               "mon$explained_plan from mon$compiled_statements where mon$object_name is not null")
                for name, kind, package, explained in cursor.fetchall():
                    routines.append({"name": name, "type": _ROUTINE_TYPES.get(kind, str(kind)),
                                     "package": package or None, "explained": explained})
            except Exception:
                pass  # before Firebird 5.0 there is no MON$COMPILED_STATEMENTS: statements' plans only
    routines.sort(key=lambda r: (r["package"] or "", r["name"], r["type"]))
    return {"statements": statements, "routines": routines}


def tables(dsn: str) -> list[str]:
    """The workload's tables (the database's own, without fbbench's mark): what the sampler follows."""
    from fbbench.database.ownership import MARK_TABLE
    from fbbench.observe.sampler import user_tables

    with driver.connect(dsn) as connection:
        return [name for name in user_tables(connection) if name != MARK_TABLE]


def exception_numbers(dsn: str, workload: Workload) -> dict[str, int]:
    names = sorted({name.upper() for unit in workload.units for name in unit.rollback_on})
    if not names:
        return {}
    with driver.connect(dsn) as connection, connection.cursor() as cursor:
        cursor.execute("select trim(rdb$exception_name), rdb$exception_number from rdb$exceptions")
        known = {name: number for name, number in cursor.fetchall()}
    missing = [name for name in names if name not in known]
    if missing:
        raise FbbenchError(f"workload {workload.name}: rollback_on names unknown exception(s) {', '.join(missing)}",
                           hint=f"define them in the workload's scripts; see {workload.source}")
    return {name: known[name] for name in names}


def constants(dsn: str, workload: Workload, seed: int) -> dict[str, float]:
    """The run constants of ``[constants]``, read from the populated database with the seed bound."""
    values: dict[str, float] = {}
    if not workload.constants:
        return values
    with driver.connect(dsn) as connection, connection.cursor() as cursor:
        for name, sql in workload.constants.items():
            try:
                cursor.execute(sql, (seed,) if "?" in sql else ())
                row = cursor.fetchone()
            except Exception as error:
                raise FbbenchError(f"{workload.source}: constant {name} cannot be read: "
                                   f"{driver.explain(error, dsn).message}") from None
            if row is None or not isinstance(row[0], int | float) or isinstance(row[0], bool):
                raise FbbenchError(f"{workload.source}: constant {name} must read one number, got "
                                   f"{'no row' if row is None else repr(row[0])}")
            values[name] = row[0]
        connection.commit()
    return values


CHECK_ATTACHMENTS = 4  # at most: more attachments than cores only make the checks wait for each other
# The memory each further attachment needs room for: a check's sort (TempCacheLimit is 64 MB by
# default on SuperServer) and the attachment's own pools. Side by side, checks that sort add up:
# TPC-C's two at once went over a 96 MiB machine shape that their one at a time fits in.
CHECK_ATTACHMENT_MEMORY = 128 << 20


def check_attachments(checks: int) -> int:
    """How many attachments run a workload's checks side by side: one per core this process may
    use (the engine's, embedded; a server's are at least as many as a load client's in practice),
    at most :data:`CHECK_ATTACHMENTS`, never more than there are checks, and beyond the first only
    as many as the memory this process may still use has room for (the machine's available memory,
    a memory cgroup's — a machine shape's — or the container's limit, ulimit -v)."""
    room, _what = limits.available_memory()
    by_memory = 1 + int(room // CHECK_ATTACHMENT_MEMORY)
    return max(1, min(checks, len(os.sched_getaffinity(0)), CHECK_ATTACHMENTS, by_memory))


def run_checks(dsn: str, workload: Workload,
               took: Mapping[str, float] | None = None) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Every condition's outcome, in the workload's order, and the seconds each check query took
    (by :attr:`Check.label`).

    The checks run on several attachments at once (:func:`check_attachments`): after the load the
    database no longer changes, so each attachment's snapshot is the same one, and a run's checks
    (TPC-C's scan ORDER_LINE, ORDERS and CUSTOMER several times) take about the longer of their
    shares instead of their sum. Each attachment takes the next check not yet taken, the longest
    first by ``took`` (what each took in the workload's previous run; those it does not know before
    all others, in the workload's order): a long check taken last runs alone while the other
    attachments wait (TPC-C's 3.3.2.10 + 3.3.2.12 is a third of their CPU). A Ctrl-C interrupts
    the wait at once; checks already inside the engine are left to the process's end
    (:func:`fbbench.engines.child.exit_at_once`).
    """
    checks = list(workload.checks)
    if not checks:
        return [], {}
    order = take_order([check.label for check in checks], took or {})
    outcomes: list[list[dict[str, Any]] | None] = [None] * len(checks)
    seconds: dict[str, float] = {}
    taken = iter(order)
    taking = threading.Lock()
    stop = threading.Event()
    failures: list[BaseException] = []

    def next_check() -> int | None:
        with taking:
            return None if stop.is_set() else next(taken, None)

    def attachment() -> None:
        try:
            index = next_check()
            if index is None:  # the others took every check before this one began
                return
            # The load's garbage is left to the engine: collected by the checks' scans it only
            # made them slower (TPC-C's after 20 s at 32 connections: 1.69 s against 1.81 s, medians of
            # 4 interleaved pairs).
            connection = driver.connect(dsn, no_gc=True)
            try:
                cursor = connection.cursor()
                while index is not None:
                    started = time.monotonic()
                    outcomes[index] = _run_check(cursor, checks[index], dsn)
                    seconds[checks[index].label] = time.monotonic() - started
                    index = next_check()
            except BaseException:
                # A write that failed can leave the engine unable to close anything ("can't continue
                # after bugcheck": its undo of the failed statement met the same full disk): the
                # failure to tell is the check's, not the close's.
                with contextlib.suppress(Exception):
                    connection.close()
                raise
            connection.close()
        except BaseException as error:  # handed to the waiting thread
            failures.append(error)
            stop.set()

    threads = [signals.Thread(target=attachment, name=f"check attachment {n + 1}", daemon=True)
               for n in range(check_attachments(len(checks)))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.wait_ended()
    except BaseException:
        stop.set()
        if not all(thread.ended.is_set() for thread in threads):
            exit_at_once()  # a check still inside the engine: the client library's shutdown would wait for it
        raise
    if failures:
        # A check that met a database that cannot be written first: the others' failures (an
        # engine stopped by the bugcheck that followed) are what it caused.
        raise next((failure for failure in failures if isinstance(failure, FbbenchError)), failures[0])
    return [outcome for found in outcomes if found is not None for outcome in found], seconds


def take_order(labels: list[str], took: Mapping[str, float]) -> list[int]:
    """The order the checks are taken in (indices into ``labels``): those ``took`` does not know
    first, in the workload's order, then the others longest first."""
    return sorted(range(len(labels)), key=lambda index: (labels[index] in took, -took.get(labels[index], 0.0), index))


def _run_check(cursor: Any, check: Check, dsn: str) -> list[dict[str, Any]]:
    """The outcome of each of the check's conditions: its column's number of violations."""
    count = len(check.names)
    try:
        cursor.execute(check.sql)
        row = cursor.fetchone()
    except Exception as error:
        explained = driver.explain(error, dsn)
        if driver.cannot_write(explained):
            raise FbbenchError(f"the database cannot be written (check '{check.label}'): {explained.message}",
                               hint=explained.hint) from None
        return _not_run(check, explained.message)
    if row is not None and len(row) < count:
        return _not_run(check, f"it returns {len(row)} column(s) for {count} named condition(s)")
    extra = [str(v) for v in (row[count:] if row else ())]
    outcomes = []
    for position, name in enumerate(check.names):
        violations = int(row[position] or 0) if row else 0
        detail = f"{violations} violation(s)" + (f"; {', '.join(extra)}" if extra else "")
        outcomes.append({"name": name, "passed": violations == 0, "value": violations, "detail": detail})
    return outcomes


def _not_run(check: Check, reason: str) -> list[dict[str, Any]]:
    return [{"name": name, "passed": False, "value": None, "detail": f"could not run: {reason}"}
            for name in check.names]
