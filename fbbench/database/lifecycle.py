"""Create, describe and drop a benchmark database — the part that runs inside an engine child.

The parent-side commands (which engine, which runtime, ownership registry) are in
:mod:`fbbench.database.manage`; these functions are the targets it runs through
:func:`fbbench.engines.run_in_engine`.
"""

from __future__ import annotations

from typing import Any

from fbbench.database import driver, ownership
from fbbench.database.header import server_header
from fbbench.engines.catalog import ServerEngine, looks_like_dsn, parse_engine
from fbbench.errors import FbbenchError

_MON_DATABASE = """
select mon$page_size, mon$ods_major, mon$ods_minor, mon$oldest_transaction, mon$oldest_active,
       mon$oldest_snapshot, mon$next_transaction, mon$page_buffers, mon$sql_dialect,
       mon$sweep_interval, mon$read_only, mon$forced_writes, mon$pages, mon$creation_date
from mon$database
"""


def create(dsn: str, token: str, page_size: int | None, forced_writes: bool | None,
           page_buffers: int | None, sweep_interval: int | None, settings: dict[str, Any]) -> dict[str, Any]:
    """Create and mark the database; returns what MON$DATABASE shows and the header's identity."""
    if looks_like_dsn(dsn) and server_header(dsn) is not None:
        raise FbbenchError(f"{dsn} already exists", hint="fbbench never overwrites a database; choose a new path")
    with driver.create_database(dsn, page_size=page_size, forced_writes=forced_writes,
                                page_buffers=page_buffers, sweep_interval=sweep_interval) as connection:
        ownership.write_mark(connection, token, settings)
        details = describe(connection)
    return {**details, "identity": ownership.current_header(dsn).identity()}


def describe(connection: Any) -> dict[str, Any]:
    """What an expert asks about a database first, read through MON$DATABASE."""
    with connection.cursor() as cursor:
        cursor.execute(_MON_DATABASE)
        row = cursor.fetchone()
        cursor.execute("select rdb$get_context('SYSTEM', 'ENGINE_VERSION') from rdb$database")
        engine_version = cursor.fetchone()[0]
    (page_size, ods_major, ods_minor, oit, oat, ost, next_tx, buffers, dialect, sweep, read_only,
     forced_writes, pages, created) = row
    mark = ownership.read_mark(connection)
    # Over TCP the answer has one line per hop (server engine, its listener, this client): the
    # first line is the engine that runs the database.
    version_lines = [line for line in str(connection.info.firebird_version).splitlines() if line.strip()]
    return {
        "engine_version": engine_version,
        "server_version": version_lines[0] if version_lines else "",
        "version_lines": version_lines,
        "architecture": connection.info.db_class.name.replace("_", " ").title(),
        "ods": f"{ods_major}.{ods_minor}",
        "page_size": page_size,
        "page_buffers": buffers,
        "forced_writes": bool(forced_writes),
        "sweep_interval": sweep,
        "dialect": dialect,
        "read_only": bool(read_only),
        "pages": pages,
        "size_bytes": pages * page_size,
        "created_at": str(created),
        "oldest_transaction": oit,
        "oldest_active": oat,
        "oldest_snapshot": ost,
        "next_transaction": next_tx,
        "fbbench_mark": None if mark is None else {k: v for k, v in mark.items() if k != "token"},
        "mark_token": None if mark is None else mark["token"],
    }


def info(dsn: str) -> dict[str, Any]:
    """What only an attachment shows; for fbbench's own databases (the caller checked)."""
    with driver.connect(dsn) as connection:
        return describe(connection)


def server_header_json(dsn: str) -> dict[str, Any] | None:
    """:func:`server_header` for the parent process (JSON)."""
    header = server_header(dsn)
    return None if header is None else header.to_json()


def server_facts(dsn: str) -> dict[str, Any]:
    """For ``fbbench db info`` on a server, without attaching to the database: its header page
    (gstat -h) and the server's version (service manager)."""
    from firebird.driver import SrvInfoCode

    engine = parse_engine(dsn)
    assert isinstance(engine, ServerEngine)
    header = server_header(dsn)
    if header is None:
        raise FbbenchError(f"database {dsn} does not exist (or the server cannot open it)")
    with driver.server(engine.host + (f"/{engine.port}" if engine.port else ""), dsn) as server:
        version = str(server.info.version)
        version_line = str(server.info.get_info(SrvInfoCode.SERVER_VERSION))
    return {"header": header.to_json(), "engine_version": ".".join(version.split(".")[:3]),
            "server_version": version_line}


def drop(dsn: str, token: str) -> None:
    connection = driver.connect(dsn)
    try:
        ownership.verify_mark(connection, token, dsn, "drop")
    except Exception:
        connection.close()
        raise
    connection.drop_database()


def effective_config(dsn: str) -> list[dict[str, Any]]:
    """RDB$CONFIG (Firebird 4+): every setting's effective value and whether it was set."""
    with driver.connect(dsn) as connection:
        if driver.version_tuple(connection) < (4, 0):
            return []
        with connection.cursor() as cursor:
            cursor.execute("select rdb$config_name, rdb$config_value, rdb$config_default, rdb$config_is_set, "
                           "rdb$config_source from rdb$config order by rdb$config_id")
            return [{"name": n, "value": v, "default": d, "is_set": bool(s), "source": src}
                    for n, v, d, s, src in cursor.fetchall()]
