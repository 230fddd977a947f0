"""What the replication tests (tests/test_replication.py) read inside an engine child process."""

from __future__ import annotations

from typing import Any

from fbbench.database import driver


def publication(path: str) -> dict[str, Any]:
    """Whether the database publishes (RDB$PUBLICATIONS) and which tables (RDB$PUBLICATION_TABLES)."""
    with driver.connect(path) as connection, connection.cursor() as cursor:
        cursor.execute("select rdb$active_flag from rdb$publications where rdb$publication_name = 'RDB$DEFAULT'")
        row = cursor.fetchone()
        cursor.execute("select trim(rdb$table_name) from rdb$publication_tables order by 1")
        tables = [r[0] for r in cursor.fetchall()]
        cursor.execute("select mon$replica_mode from mon$database")
        replica_mode = cursor.fetchone()[0]
        connection.commit()
    return {"active": bool(row and row[0]), "tables": tables, "replica_mode": int(replica_mode)}
