"""Functions the TPC-C SQL tests (tests/test_tpcc_sql.py) run inside an engine child process.

They drive the built-in ``tpcc`` workload the way its workload.toml describes it — scripts, load
steps (with their ``for_each`` values and seeds, as fbbench's population derives them), units,
checks — but through firebird-driver, so the SQL is tested without the native load core.
"""

from __future__ import annotations

import random
import shutil
import threading
from collections import Counter
from datetime import date, datetime
from datetime import time as dtime
from typing import Any

from fbbench.database import driver
from fbbench.workloads import generators
from fbbench.workloads.spec import Workload
from tests import workload_sql_child as common

_TABLES = ("warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock")
_MODULUS = 2147483647


# --- the PSQL generator of random.sql, mirrored in Python (runs in the test process too) ------

def _fb_mod(a: int, b: int) -> int:
    """Firebird's MOD: the sign of the dividend (Python's % takes the divisor's)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def rand_init(seed: int, stream: int = 0) -> int:
    """tpcc_rand_init."""
    x = (abs(_fb_mod(seed, _MODULUS - 1)) + abs(_fb_mod(stream, _MODULUS - 1))) % (_MODULUS - 1) + 1
    for _ in range(4):
        x = x * 48271 % _MODULUS
    return x


def new_order_line_count(seed: int) -> int:
    """OL_CNT that tpcc_new_order draws from its seed (5 .. 15)."""
    return Draws(rand_init(seed)).pick(5, 11)


def new_order_rolls_back(seed: int) -> bool:
    """Whether tpcc_new_order draws its 1 % by-design rollback from this seed."""
    draws = Draws(rand_init(seed))
    draws.next()  # OL_CNT
    return draws.pick(0, 100) == 0


def load_seed(scale: dict[str, Any], step_name: str, *iteration: int) -> int:
    """The seed fbbench's population passes to the call of load step ``step_name`` for ``iteration``."""
    workload = _workload(scale)
    step = next(step for step in workload.load if step.name == step_name)
    rng = random.Random(generators.derived_seed(workload.name, step.index, *iteration))
    return int(generators.value(step.params[0], rng, 1, {}))


class Draws:
    """The population's generator drawing one number at a time, as random.sql describes it (what
    load.sql's loaders, which jump ahead, must give in the same order)."""

    def __init__(self, state: int) -> None:
        self.x = state

    def next(self) -> int:
        self.x = self.x * 48271 % _MODULUS
        return self.x

    def pick(self, low: int, count: int) -> int:
        """low .. low + count - 1 from the next state."""
        return low + (self.next() - 1) * count // (_MODULUS - 1)


def alnum_pool(state: int) -> str:
    """tpcc_alnum_pool."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    draws = Draws(state)
    return "".join(alphabet[draws.pick(0, 62)] for _ in range(2048))


def cut(pool: str, draws: Draws, length: int) -> str:
    """A random a-string of ``length`` characters cut from the pool at the next draw's offset."""
    start = (draws.next() - 1) * (2049 - length) // (_MODULUS - 1)
    return pool[start:start + length]


def query(path: str, sql: str) -> list[list[Any]]:
    with driver.connect(path) as connection, connection.cursor() as cursor:
        cursor.execute(sql)
        return [[common.plain(value) for value in row] for row in cursor.fetchall()]


# --- building the database as the workload describes it -------------------------------------

def _workload(scale: dict[str, Any]) -> Workload:
    return common.workload("tpcc", scale)


def build(path: str, scale: dict[str, Any], connections: int = 2) -> dict[str, float]:
    """Create the database, run the scripts and every load step; seconds per step."""
    return common.build("tpcc", path, scale, connections)


def run_checks(path: str, scale: dict[str, Any]) -> dict[str, int]:
    """Each condition of workload.toml: its number of violations."""
    return common.run_checks("tpcc", path, scale)


def checks_after(path: str, scale: dict[str, Any], statements: list[str]) -> dict[str, Any]:
    """fbbench's own check runner on the database after ``statements``: each condition's number
    of violations, and the check queries it timed."""
    from fbbench.runner.engine import workload_sql

    with driver.connect(path) as connection, connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)
        connection.commit()
    outcomes, seconds = workload_sql.run_checks(path, _workload(scale))
    return {"values": {outcome["name"]: outcome["value"] for outcome in outcomes}, "timed": sorted(seconds)}


def row_counts(path: str) -> dict[str, int]:
    with driver.connect(path) as connection, connection.cursor() as cursor:
        counts = {}
        for table in _TABLES:
            cursor.execute(f"select count(*) from {table}")
            counts[table] = cursor.fetchone()[0]
        connection.commit()
    return counts


# --- running units ---------------------------------------------------------------------------

def run_constants(path: str, scale: dict[str, Any], seed: int) -> dict[str, int]:
    """The workload's [constants], read as fbbench reads them before a run (seed bound to the ?)."""
    with driver.connect(path) as connection, connection.cursor() as cursor:
        values = {}
        for name, sql in _workload(scale).constants.items():
            cursor.execute(sql, (seed,))
            values[name] = cursor.fetchone()[0]
        connection.commit()
    return values


def c_runs(path: str, seeds: list[int]) -> dict[str, Any]:
    """C-Load of the population and tpcc_c_run(A, seed) for many seeds (the C-Delta rule)."""
    with driver.connect(path) as connection, connection.cursor() as cursor:
        cursor.execute("select c_load from tpcc_nurand where nurand_a = 255")
        c_load = cursor.fetchone()[0]
        runs = {}
        for a in (255, 1023, 8191):
            runs[a] = []
            for seed in seeds:
                cursor.execute("select c from tpcc_c_run(?, ?)", (a, seed))
                runs[a].append(cursor.fetchone()[0])
        connection.commit()
    return {"c_load": c_load, "runs": runs}


def call_unit(path: str, scale: dict[str, Any], name: str, values: list) -> dict[str, Any]:
    """One unit with explicit parameter values: its outcome and outputs."""
    unit = _workload(scale).unit(name)
    with driver.connect(path) as connection:
        return common.execute(connection, unit, values)


def run_mix(path: str, scale: dict[str, Any], transactions: int, seed: int, connections: int) -> dict[str, Any]:
    """The weighted mix, ``transactions`` units per connection on threads; outcomes and tallies."""
    workload = _workload(scale)
    constants = run_constants(path, scale, seed)
    names = [unit.name for unit in workload.units]
    weights = [unit.weight for unit in workload.units]
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
                result = common.execute(connection, unit, values)
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
            rows = [tuple(None if isinstance(v, datetime | date | dtime) else common.plain(v) for v in row)
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


def same_calls_on_two_copies(path: str, scale: dict[str, Any], calls: list[list]) -> dict[str, Any]:
    """Run the same unit calls ([name, values]) on two copies of ``path``; ``path`` stays as it is."""
    original = dump(path)
    outputs, dumps = [], []
    for suffix in ("a", "b"):
        copy = f"{path}.{suffix}"
        shutil.copyfile(path, copy)
        outputs.append([call_unit(copy, scale, name, values) for name, values in calls])
        dumps.append(dump(copy))
    return {
        "outputs": outputs,
        "contents_equal": dumps[0] == dumps[1],
        "changed": [changed_rows(original, contents) for contents in dumps],
    }


def call_and_compare(path: str, scale: dict[str, Any], name: str, values: list) -> dict[str, Any]:
    """One unit call on ``path``: its result and the rows it changed."""
    before = dump(path)
    result = call_unit(path, scale, name, values)
    return {"result": result, "changed": changed_rows(before, dump(path))}


def delivery_after_a_concurrent_claim(path: str, scale: dict[str, Any]) -> dict[str, Any]:
    """Delivery of warehouse 1 while "another Delivery" claims district 1's oldest order.

    A test-only trigger on ORDERS plays the other Delivery: when this Delivery updates that order,
    an autonomous transaction deletes the order's NEW_ORDER row and commits, as a concurrent
    Delivery that got there first would. Returns Delivery's outcome and what became of the order.
    """
    def order_state(cursor: Any, o_id: int) -> dict[str, Any]:
        cursor.execute("select o_carrier_id, o_c_id from orders where o_w_id = 1 and o_d_id = 1 and o_id = ?",
                       [o_id])
        carrier, c_id = cursor.fetchone()
        cursor.execute("select count(*) from order_line where ol_w_id = 1 and ol_d_id = 1 and ol_o_id = ?"
                       " and ol_delivery_d is not null", [o_id])
        lines_delivered = cursor.fetchone()[0]
        cursor.execute("select c_balance, c_delivery_cnt from customer where c_w_id = 1 and c_d_id = 1"
                       " and c_id = ?", [c_id])
        balance, deliveries = cursor.fetchone()
        return {"carrier": carrier, "customer": c_id, "lines_delivered": lines_delivered,
                "balance": str(balance), "deliveries": deliveries}

    with driver.connect(path) as connection, connection.cursor() as cursor:
        cursor.execute("select first 2 no_o_id from new_order where no_w_id = 1 and no_d_id = 1 order by no_o_id")
        taken, next_one = (row[0] for row in cursor.fetchall())
        before = {"taken": order_state(cursor, taken), "next": order_state(cursor, next_one)}
        cursor.execute(f"""
            create trigger test_concurrent_claim for orders after update as
            begin
              if (old.o_w_id = 1 and old.o_d_id = 1 and old.o_id = {taken}) then
                in autonomous transaction do
                  delete from new_order where no_w_id = 1 and no_d_id = 1 and no_o_id = {taken};
            end""")
        connection.commit()
    result = call_unit(path, scale, "delivery", [1, 12345])
    with driver.connect(path) as connection, connection.cursor() as cursor:
        after = {"taken": order_state(cursor, taken), "next": order_state(cursor, next_one)}
        cursor.execute("select count(*) from new_order where no_w_id = 1 and no_d_id = 1 and no_o_id = ?",
                       [taken])
        taken_still_new = cursor.fetchone()[0]
        connection.commit()
    return {"result": result, "before": before, "after": after, "taken_still_new": taken_still_new}
