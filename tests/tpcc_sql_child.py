"""Functions the TPC-C SQL tests run inside an engine child process.

They drive the built-in ``tpcc`` workload the way its workload.toml describes it — scripts, load
steps (with their ``for_each`` values and seeds), units with their parameter generators, checks —
but through firebird-driver, so the SQL can be tested without the native load core.
"""

from __future__ import annotations

import random
import shutil
import threading
import time
from collections import Counter
from datetime import date, datetime
from datetime import time as dtime
from pathlib import Path
from typing import Any

from fbbench.database import driver, scripts
from fbbench.workloads import generators
from fbbench.workloads.spec import Unit, Workload, load_workload

_CONFLICTS = {335544345, 335544336, 335544878, 335544451, 335544510}
_TABLES = ("warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock")
_MODULUS = 2147483647


# --- the PSQL generator, mirrored in Python (random.sql) -------------------------------------

def rand_init(seed: int, stream: int = 0) -> int:
    x = (abs(_fb_mod(seed, _MODULUS - 1)) + abs(_fb_mod(stream, _MODULUS - 1))) % (_MODULUS - 1) + 1
    for _ in range(4):
        x = x * 48271 % _MODULUS
    return x


def _fb_mod(a: int, b: int) -> int:
    """Firebird's MOD: the sign of the dividend (Python's % takes the divisor's)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def new_order_rolls_back(seed: int) -> bool:
    x = rand_init(seed) * 48271 % _MODULUS  # OL_CNT
    x = x * 48271 % _MODULUS  # the rollback draw
    return (x - 1) * 100 // (_MODULUS - 1) == 0


# --- building the database as the workload describes it -------------------------------------

def _workload(scale: dict[str, Any]) -> Workload:
    return load_workload("tpcc", {k: str(v) for k, v in scale.items()})


def _step_values(workload: Workload, step_index: int, iteration: tuple[int, ...], generators_: tuple) -> list:
    rng = random.Random(generators.derived_seed(workload.name, step_index, *iteration))
    return [*iteration, *(generators.value(g, rng, 1, {}) for g in generators_)]


def build(path: str, scale: dict[str, Any], connections: int = 1) -> dict[str, float]:
    """Create the database, run the scripts and every load step; seconds per step."""
    workload = _workload(scale)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    with driver.create_database(path, page_size=8192, forced_writes=False) as connection:
        mark = time.perf_counter()
        for script in workload.scripts:
            scripts.run_file(connection, script, workload.scale)
        timings["scripts"] = time.perf_counter() - mark
        pool = [connection] + [driver.connect(path) for _ in range(connections - 1)]
        try:
            for step in workload.load:
                mark = time.perf_counter()
                if step.script:
                    scripts.run_file(connection, step.script, workload.scale)
                else:
                    _run_parallel(pool, workload, step)
                timings[step.name] = time.perf_counter() - mark
        finally:
            for extra in pool[1:]:
                extra.close()
    timings["total"] = time.perf_counter() - started
    return {name: round(seconds, 3) for name, seconds in timings.items()}


def _run_parallel(pool: list, workload: Workload, step) -> None:
    """The step's iterations spread over the connections, one transaction per call."""
    pending = list(step.iterations())
    lock = threading.Lock()
    failures: list[BaseException] = []

    def worker(connection) -> None:
        try:
            with connection.cursor() as cursor:
                while True:
                    with lock:
                        if not pending or failures:
                            return
                        iteration = pending.pop(0)
                    cursor.execute(step.sql, _step_values(workload, step.index, iteration, step.params))
                    connection.commit()
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=worker, args=(connection,)) for connection in pool]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


def run_checks(path: str, scale: dict[str, Any]) -> dict[str, list]:
    """Each check: [violations, seconds]."""
    workload = _workload(scale)
    results: dict[str, list] = {}
    with driver.connect(path) as connection, connection.cursor() as cursor:
        for check in workload.checks:
            mark = time.perf_counter()
            cursor.execute(check.sql)
            results[check.name] = [cursor.fetchone()[0], round(time.perf_counter() - mark, 3)]
        connection.commit()
    return results


def copy_database(source: str, target: str) -> None:
    shutil.copyfile(source, target)


# --- running units ---------------------------------------------------------------------------

def _tpb(unit: Unit) -> bytes:
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


def _nurand_constants(path: str, workload: Workload, rng: random.Random) -> dict[int, int]:
    with driver.connect(path) as connection, connection.cursor() as cursor:
        cursor.execute(workload.nurand_sql)
        loaded = dict(cursor.fetchall())
        connection.commit()
    return {a: generators.choose_c_run(a, loaded.get(a), rng) for a in (255, 1023, 8191)}


def call_unit(path: str, scale: dict[str, Any], name: str, values: list) -> dict[str, Any]:
    """One unit with explicit parameter values, committed; its outcome and outputs."""
    workload = _workload(scale)
    unit = workload.unit(name)
    with driver.connect(path) as connection:
        outcome = _execute(connection, unit, values)
    return outcome


def _execute(connection, unit: Unit, values: list) -> dict[str, Any]:
    import firebird.driver as fdb

    manager = connection.transaction_manager(default_tpb=_tpb(unit))
    try:
        manager.begin()
        with manager.cursor() as cursor:
            cursor.execute(unit.statements[0].sql, values)
            row = cursor.fetchone()
            columns = [d[0] for d in cursor.description] if cursor.description else []
        manager.commit()
        return {"outcome": "ok", "row": {c: _plain(v) for c, v in zip(columns, row or (), strict=False)}}
    except fdb.DatabaseError as error:
        if manager.is_active():
            manager.rollback()
        codes = set(getattr(error, "gds_codes", ()) or ())
        text = str(error)
        if any(name.upper() in text.upper() for name in unit.rollback_on):
            return {"outcome": "rolled_back", "message": text}
        if codes & _CONFLICTS:
            return {"outcome": "conflict", "message": text}
        return {"outcome": "error", "message": f"{sorted(codes)} {text}"}
    finally:
        manager.close()


def _plain(value: Any) -> Any:
    return value if isinstance(value, int | float | str | type(None)) else str(value)


def run_mix(path: str, scale: dict[str, Any], transactions: int, seed: int, connections: int = 1,
            only: list[str] | None = None) -> dict[str, Any]:
    """The weighted mix (or only some of its units): ``transactions`` units per connection, each committed."""
    workload = _workload(scale)
    constants = _nurand_constants(path, workload, random.Random(seed))
    units = [unit for unit in workload.units if only is None or unit.name in only]
    names = [unit.name for unit in units]
    weights = [unit.weight for unit in units]
    outcomes: Counter[str] = Counter()
    tallies: Counter[str] = Counter()
    errors: list[str] = []
    lock = threading.Lock()

    def attachment(index: int) -> None:
        rng = random.Random(generators.derived_seed(seed, index))
        with driver.connect(path) as connection:
            for _ in range(transactions):
                unit = workload.unit(rng.choices(names, weights)[0])
                values = [generators.value(g, rng, index, constants) for g in unit.statements[0].params]
                result = _execute(connection, unit, values)
                with lock:
                    outcomes[f"{unit.name}.{result['outcome']}"] += 1
                    if result["outcome"] == "ok":
                        for column in unit.tally:
                            tallies[f"{unit.name}.{column}"] += result["row"][column]
                    elif result["outcome"] == "error":
                        errors.append(f"{unit.name}: {result['message']}")

    threads = [threading.Thread(target=attachment, args=(index,)) for index in range(1, connections + 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"outcomes": dict(outcomes), "tallies": dict(tallies), "errors": errors[:5]}


# --- comparing database contents -------------------------------------------------------------

def dump(path: str) -> dict[str, list]:
    """Every row of the nine tables, timestamps left out (they record when, not what)."""
    contents: dict[str, list] = {}
    with driver.connect(path) as connection, connection.cursor() as cursor:
        for table in _TABLES:
            cursor.execute(f"select * from {table}")
            rows = [tuple(None if isinstance(v, datetime | date | dtime) else _plain(v) for v in row)
                    for row in cursor.fetchall()]
            contents[table] = sorted(rows, key=repr)
        connection.commit()
    return contents


def changed_rows(before: dict[str, list], after: dict[str, list]) -> dict[str, int]:
    """Per table: rows that are new or gone (a changed row counts as both)."""
    result = {}
    for table in _TABLES:
        old, new = Counter(before[table]), Counter(after[table])
        difference = sum(((old - new) + (new - old)).values())
        if difference:
            result[table] = difference
    return result


def same_seed_same_effects(path: str, scale: dict[str, Any], calls: list[list]) -> dict[str, Any]:
    """Run the same calls on two copies of ``path``: the two results must be identical."""
    copies = [f"{path}.a", f"{path}.b"]
    original = dump(path)
    outputs = []
    for copy in copies:
        shutil.copyfile(path, copy)
        outputs.append([call_unit(copy, scale, name, values) for name, values in calls])
    dumps = [dump(copy) for copy in copies]
    return {
        "outputs_equal": outputs[0] == outputs[1],
        "outputs": outputs[0],
        "contents_equal": dumps[0] == dumps[1],
        "changed": changed_rows(original, dumps[0]),
    }


def rollback_changes_nothing(path: str, scale: dict[str, Any], values: list) -> dict[str, Any]:
    before = dump(path)
    result = call_unit(path, scale, "new_order", values)
    return {"result": result, "changed": changed_rows(before, dump(path))}


# --- full scale ------------------------------------------------------------------------------

def full_scale_timing(path: str, connections: int = 2) -> dict[str, Any]:
    """Population of one warehouse at the specification's scale, checks, and a short mix."""
    timings = build(path, {}, connections)
    size_mb = round(Path(path).stat().st_size / 1e6, 1)
    checks = run_checks(path, {})
    mark = time.perf_counter()
    mix = run_mix(path, {}, 500, seed=1, connections=1)
    mix_seconds = round(time.perf_counter() - mark, 2)
    checks_after = run_checks(path, {})
    return {"timings": timings, "size_mb": size_mb, "checks": checks, "mix": mix, "mix_seconds": mix_seconds,
            "checks_after": checks_after}
