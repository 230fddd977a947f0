"""Functions the tests of a user's own application (restore, trace, replay) run inside an engine
child process."""

from __future__ import annotations

from typing import Any

from fbbench.database import driver, ownership


def make_foreign_backup(database: str, backup: str) -> int:
    """A database fbbench did not create (no mark, no registry entry), backed up with gbak through
    the services API; returns the number of rows it holds."""
    with driver.create_database(database) as connection:
        connection.execute_immediate("create table customer (id integer primary key, name varchar(40), "
                                     "balance numeric(18, 2))")
        connection.commit()
        with connection.cursor() as cursor:
            for number in range(1, 501):
                cursor.execute("insert into customer values (?, ?, ?)", (number, f"customer {number}", number * 10))
        connection.commit()
    with driver.server("") as server:
        server.database.backup(database=database, backup=backup)
        server.wait()
    return 500


def restored_facts(database: str) -> dict[str, Any]:
    """fbbench's mark inside a restored database, and what it holds."""
    with driver.connect(database) as connection:
        mark = ownership.read_mark(connection)
        with connection.cursor() as cursor:
            cursor.execute("select count(*), sum(balance) from customer")
            rows, total = cursor.fetchone()
            cursor.execute("select mon$ods_major from mon$database")
            ods = cursor.fetchone()[0]
        connection.commit()
    return {"mark": mark, "rows": rows, "balance": str(total), "ods_major": ods}
