"""Functions tests/test_validation.py runs inside an engine child process."""

from __future__ import annotations

from typing import Any

from fbbench.database import driver
from fbbench.observe.firebird_log import LogWatch
from fbbench.observe.validation import validate


def create_with_table(path: str) -> None:
    with driver.create_database(path) as connection:
        connection.execute_immediate("create table ballast (id integer primary key, filler varchar(200))")
        connection.commit()
        with connection.cursor() as cursor:
            cursor.executemany("insert into ballast values (?, ?)", [(i, f"row {i}" * 20) for i in range(500)])
        connection.commit()


def pointer_page(dsn: str, table: str) -> int:
    """The first pointer page of ``table`` (RDB$PAGES, type 4): overwriting it damages the table."""
    with driver.connect(dsn) as connection, connection.cursor() as cursor:
        cursor.execute("select p.rdb$page_number from rdb$pages p join rdb$relations r "
                       "on r.rdb$relation_id = p.rdb$relation_id "
                       "where r.rdb$relation_name = ? and p.rdb$page_type = 4 and p.rdb$page_sequence = 0",
                       (table.upper(),))
        return int(cursor.fetchone()[0])


def validated(path: str, attached: bool = False, writing: str | None = None) -> dict[str, Any]:
    """The validation of ``path``; ``attached``: while this process holds an attachment to it,
    ``writing``: and that attachment has updated this table (uncommitted, holding its lock)."""
    held = driver.connect(path) if attached or writing else None
    try:
        if held is not None and writing:
            held.begin()
            with held.cursor() as cursor:
                cursor.execute(f"update {writing} set id = id")
        return validate("", path, LogWatch()).to_dict()
    finally:
        if held is not None:
            held.close()


def validation_refusal(path: str) -> str:
    """What validating ``path`` raises, by type: fbbench's own one-line error, not the driver's."""
    try:
        validate("", path, LogWatch())
    except Exception as error:
        return f"{type(error).__module__}.{type(error).__name__}: {error}"
    return "nothing"
