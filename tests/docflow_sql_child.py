"""Functions the docflow SQL tests (tests/test_docflow_sql.py) run inside an engine child process,
driving the built-in ``docflow`` workload through firebird-driver (tests/workload_sql_child.py)."""

from __future__ import annotations

import random
import threading
from collections import Counter
from typing import Any

from fbbench.database import driver
from fbbench.workloads import generators
from tests import workload_sql_child as common

NAME = "docflow"


def build(path: str, scale: dict[str, Any], connections: int = 2) -> dict[str, float]:
    return common.build(NAME, path, scale, connections)


def run_checks(path: str, scale: dict[str, Any]) -> dict[str, Any]:
    return common.run_checks(NAME, path, scale)


def documents(path: str) -> dict[str, int]:
    """Documents per 'optype/state'."""
    with driver.connect(path) as connection, connection.cursor() as cursor:
        cursor.execute("select optype_id, state_id, count(*) from doc_list group by 1, 2")
        counts = {f"{optype}/{state}": count for optype, state, count in cursor.fetchall()}
        connection.commit()
    return counts


def table_counts(path: str, tables: list[str]) -> dict[str, int]:
    with driver.connect(path) as connection, connection.cursor() as cursor:
        counts = {}
        for table in tables:
            cursor.execute(f"select count(*) from {table}")
            counts[table] = cursor.fetchone()[0]
        connection.commit()
    return counts


def run_calls(path: str, scale: dict[str, Any], calls: list[list]) -> list[dict[str, Any]]:
    """Unit calls ([name, values]) one after the other on one attachment; their outcomes."""
    spec = common.workload(NAME, scale)
    with driver.connect(path) as connection:
        return [{"unit": name, **common.execute(connection, spec.unit(name), values)} for name, values in calls]


def unit_sequence(scale: dict[str, Any], seed: int, count: int, worker: int = 1) -> list[list]:
    """``count`` calls drawn from the workload's mix with its own generators, as one attachment
    (``worker``) of fbbench's core would draw them for ``seed``."""
    spec = common.workload(NAME, scale)
    rng = random.Random(seed)
    names = [unit.name for unit in spec.units]
    weights = [unit.weight for unit in spec.units]
    calls = []
    for _ in range(count):
        unit = spec.unit(rng.choices(names, weights)[0])
        calls.append([unit.name, common.parameters(unit, rng, worker)])
    return calls


def run_mix(path: str, scale: dict[str, Any], transactions: int, seed: int, connections: int) -> dict[str, Any]:
    """The weighted mix, ``transactions`` units per connection on threads; outcomes by unit."""
    spec = common.workload(NAME, scale)
    names = [unit.name for unit in spec.units]
    weights = [unit.weight for unit in spec.units]
    outcomes: Counter[str] = Counter()
    errors: list[str] = []
    lock = threading.Lock()

    def attachment(index: int, connection) -> None:
        rng = random.Random(generators.derived_seed(seed, index))
        try:
            for _ in range(transactions):
                unit = spec.unit(rng.choices(names, weights)[0])
                result = common.execute(connection, unit, common.parameters(unit, rng, index))
                with lock:
                    outcomes[f"{unit.name}.{result['outcome']}"] += 1
                    if result["outcome"] == "error":
                        errors.append(f"{unit.name}: {result['message']}")
        except Exception as error:  # the attachment itself failed: the test must see it
            with lock:
                errors.append(f"attachment {index}: {error!r}")

    # Attached one after the other: firebird-driver's first attachments race when made on threads.
    attachments = [driver.connect(path) for _ in range(connections)]
    try:
        threads = [threading.Thread(target=attachment, args=(index, connection))
                   for index, connection in enumerate(attachments, start=1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for connection in attachments:
            connection.close()
    return {"outcomes": dict(outcomes), "errors": errors[:5]}


def service_while_busy(path: str, scale: dict[str, Any], name: str) -> dict[str, Any]:
    """Service unit ``name`` called while another attachment is inside the same unit (its
    transaction still open), then again after that one committed."""
    spec = common.workload(NAME, scale)
    unit = spec.unit(name)
    with driver.connect(path) as holder, driver.connect(path) as other:
        manager = holder.transaction_manager(default_tpb=common.tpb(unit))
        manager.begin()
        with manager.cursor() as cursor:
            cursor.execute(unit.statements[0].sql)
            cursor.fetchone()
        while_busy = common.execute(other, unit, [])
        manager.commit()
        manager.close()
        after = common.execute(other, unit, [])
    return {"while_busy": while_busy, "after": after}


def service_runs(path: str) -> list[dict[str, Any]]:
    with driver.connect(path) as connection, connection.cursor() as cursor:
        cursor.execute("select unit_name, attachment_id, started_ticket, finished_ticket from service_runs order by id")
        runs = [{"unit": unit.strip(), "attachment": attachment, "started": started, "finished": finished}
                for unit, attachment, started, finished in cursor.fetchall()]
        connection.commit()
    return runs


def query(path: str, sql: str) -> list[list[Any]]:
    with driver.connect(path) as connection, connection.cursor() as cursor:
        cursor.execute(sql)
        rows = [[common.plain(value) for value in row] for row in cursor.fetchall()]
        connection.commit()
    return rows


execute_sql = common.execute_sql
