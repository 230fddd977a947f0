"""Functions tests/test_micro_workloads.py runs inside an engine child process."""

from __future__ import annotations

from typing import Any

from fbbench.database import driver


def validate(database: str) -> list[str]:
    """Online validation of every table and index (services API): the lines it printed."""
    lines: list[str] = []
    with driver.server("") as server:
        server.database.validate(database=database, callback=lines.append)
    return lines


def query(database: str, sql: str) -> list[list[Any]]:
    with driver.connect(database) as connection, connection.cursor() as cursor:
        cursor.execute(sql)
        rows = [list(row) for row in cursor.fetchall()]
        connection.commit()
        return rows
