"""Functions the orders SQL tests (tests/test_orders_sql.py) run inside an engine child process,
driving the built-in ``orders`` workload through firebird-driver (tests/workload_sql_child.py)."""

from __future__ import annotations

from typing import Any

from fbbench.database import driver
from tests import workload_sql_child as common

NAME = "orders"


def build(path: str, scale: dict[str, Any]) -> dict[str, float]:
    return common.build(NAME, path, scale, 1)


def run_checks(path: str, scale: dict[str, Any]) -> dict[str, Any]:
    return common.run_checks(NAME, path, scale)


def lines_drawn_twice(path: str, scale: dict[str, Any], customer: int, seed: int) -> list[list[list[int]]]:
    """The unit called twice with the same parameters, each time in a transaction that is
    rolled back after reading what it generated: (product, quantity) of every line, in order."""
    unit = common.workload(NAME, scale).units[0]
    draws = []
    with driver.connect(path) as connection:
        for _ in range(2):
            manager = connection.transaction_manager(default_tpb=common.tpb(unit))
            manager.begin()
            with manager.cursor() as cursor:
                values = [customer, scale.get("orders", 100), scale.get("rounds", 1), seed]
                cursor.execute(unit.statements[0].sql, values)
                cursor.fetchone()
                cursor.execute("select l.product_id, l.qty from order_lines l join orders o on o.id = l.order_id "
                               "where o.batch_id = (select max(batch_id) from orders) order by o.id, l.line_no")
                draws.append([list(row) for row in cursor.fetchall()])
            manager.rollback()
            manager.close()
    return draws


def call(path: str, scale: dict[str, Any], values: list) -> dict[str, Any]:
    with driver.connect(path) as connection:
        return common.execute(connection, common.workload(NAME, scale).units[0], values)


def counts(path: str) -> dict[str, int]:
    with driver.connect(path) as connection, connection.cursor() as cursor:
        result = {}
        for table in ("customers", "products", "inventory", "orders", "order_lines"):
            cursor.execute(f"select count(*) from {table}")
            result[table] = cursor.fetchone()[0]
        connection.commit()
    return result


execute_sql = common.execute_sql
