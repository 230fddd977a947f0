"""What the SQL tests of the built-in workloads share, inside an engine child process: build a
database the way a workload.toml describes it (scripts, then load steps with the seeds fbbench's
population derives), run its checks, and call its units through firebird-driver, one transaction
each, with the unit's isolation and lock timeout — without the native load core.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from fbbench.database import driver, scripts
from fbbench.workloads import generators
from fbbench.workloads.spec import LoadStep, Workload, load_workload
from fbbench.workloads.units import Unit

CONFLICTS = {335544345, 335544336, 335544878, 335544451, 335544510}


def workload(name: str, scale: dict[str, Any]) -> Workload:
    return load_workload(name, {k: str(v) for k, v in scale.items()})


def build(name: str, path: str, scale: dict[str, Any], connections: int = 2) -> dict[str, float]:
    """Create the database, run the scripts and every load step; seconds per step."""
    spec = workload(name, scale)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    with driver.create_database(path, page_size=8192, forced_writes=False) as connection:
        for script in spec.scripts:
            scripts.run_file(connection, script, spec.scale)
        timings["scripts"] = time.perf_counter() - started
        pool = [connection] + [driver.connect(path) for _ in range(connections - 1)]
        try:
            for step in spec.load:
                mark = time.perf_counter()
                if step.script:
                    scripts.run_file(connection, step.script, spec.scale)
                else:
                    _run_parallel(pool, spec, step)
                timings[step.name] = time.perf_counter() - mark
        finally:
            for extra in pool[1:]:
                extra.close()
    timings["total"] = time.perf_counter() - started
    return {step: round(seconds, 3) for step, seconds in timings.items()}


def _run_parallel(pool: list, spec: Workload, step: LoadStep) -> None:
    """The step's iterations spread over the connections, one transaction per call."""
    pending = list(step.iterations())
    lock = threading.Lock()
    failures: list[BaseException] = []

    def worker(index: int, connection) -> None:
        try:
            with connection.cursor() as cursor:
                while True:
                    with lock:
                        if not pending or failures:
                            return
                        iteration = pending.pop(0)
                    rng = random.Random(generators.derived_seed(spec.name, step.index, *iteration))
                    values = [*iteration, *(generators.value(g, rng, index, {}) for g in step.params)]
                    cursor.execute(step.sql, values)
                    connection.commit()
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=worker, args=(index, connection))
               for index, connection in enumerate(pool, start=1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


def run_checks(name: str, path: str, scale: dict[str, Any]) -> dict[str, Any]:
    """Each condition of workload.toml: its column of its check's row (the number of violations)."""
    results: dict[str, Any] = {}
    with driver.connect(path) as connection, connection.cursor() as cursor:
        for check in workload(name, scale).checks:
            cursor.execute(check.sql)
            row = cursor.fetchone()
            for position, condition in enumerate(check.names):  # one column per named condition
                results[condition] = row[position]
        connection.commit()
    return results


def tpb(unit: Unit) -> bytes:
    import firebird.driver as fdb

    isolation = {
        "snapshot": fdb.Isolation.SNAPSHOT,
        "serializable": fdb.Isolation.SERIALIZABLE,
        "read_committed": fdb.Isolation.READ_COMMITTED_RECORD_VERSION,
        "read_consistency": fdb.Isolation.READ_COMMITTED_READ_CONSISTENCY,
    }[unit.isolation]
    access = fdb.TraAccessMode.READ if unit.read_only else fdb.TraAccessMode.WRITE
    timeout = -1 if unit.lock_timeout is None else unit.lock_timeout
    return fdb.tpb(isolation, lock_timeout=timeout, access_mode=access)


def execute(connection, unit: Unit, values: list, commit: bool = True) -> dict[str, Any]:
    """One unit, one transaction: ok (with its output row) / rolled_back / conflict / error.
    ``commit=False`` rolls the transaction back after a successful call (to look without changing)."""
    import firebird.driver as fdb

    manager = connection.transaction_manager(default_tpb=tpb(unit))
    try:
        manager.begin()
        with manager.cursor() as cursor:
            cursor.execute(unit.statements[0].sql, values)
            row = cursor.fetchone() if cursor.description else None
            columns = [d[0] for d in cursor.description] if cursor.description else []
        if commit:
            manager.commit()
        else:
            manager.rollback()
        return {"outcome": "ok", "row": {c: plain(v) for c, v in zip(columns, row or (), strict=False)}}
    except fdb.DatabaseError as error:
        if manager.is_active():
            manager.rollback()
        codes = set(getattr(error, "gds_codes", ()) or ())
        text = str(error)
        if any(name.upper() in text.upper() for name in unit.rollback_on):
            return {"outcome": "rolled_back", "message": text}
        if codes & CONFLICTS:
            return {"outcome": "conflict", "message": text}
        return {"outcome": "error", "message": f"{sorted(codes)} {text}"}
    finally:
        manager.close()


def plain(value: Any) -> Any:
    return value if isinstance(value, int | float | str | type(None)) else str(value)


def parameters(unit: Unit, rng: random.Random, attachment: int) -> list:
    return [generators.value(g, rng, attachment, {}) for g in unit.statements[0].params]


def execute_sql(path: str, statements: list[str]) -> None:
    """Statements committed together (the tests break an invariant on purpose)."""
    with driver.connect(path) as connection, connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
        connection.commit()
