"""Functions the foundation tests run inside an engine child process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fbbench.database import driver, lifecycle, scripts


def create_foreign_database(path: str) -> None:
    """A database fbbench did not create: no registry entry, no mark."""
    with driver.create_database(path, page_size=8192) as connection:
        connection.execute_immediate("create table customer_data (id integer primary key, name varchar(20))")
        connection.commit()
        with connection.cursor() as cursor:
            cursor.execute("insert into customer_data values (1, 'precious')")
        connection.commit()


def config_values(path: str, names: list[str]) -> dict[str, Any]:
    rows = lifecycle.effective_config(path)
    return {row["name"]: row["value"] for row in rows if row["name"] in names}


def run_script_and_query(path: str, script: str, query: str) -> list[list[Any]]:
    with driver.connect(path) as connection:
        scripts.run_file(connection, Path(script))
        with connection.cursor() as cursor:
            cursor.execute(query)
            return [list(row) for row in cursor.fetchall()]
