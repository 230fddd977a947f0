"""Functions the foundation tests run inside an engine child process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fbbench.database import driver, lifecycle, scripts


def create_foreign_database(path: str, page_size: int = 8192) -> None:
    """A database fbbench did not create: no registry entry, no mark."""
    with driver.create_database(path, page_size=page_size) as connection:
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


_MON_COLUMNS = ("mon$page_size", "mon$ods_major", "mon$ods_minor", "mon$oldest_transaction", "mon$oldest_active",
                "mon$oldest_snapshot", "mon$next_transaction", "mon$page_buffers", "mon$sql_dialect",
                "mon$sweep_interval", "mon$read_only", "mon$forced_writes", "mon$reserve_space",
                "mon$creation_date", "mon$shutdown_mode", "mon$backup_state", "mon$pages")
_MON_COLUMNS_4 = ("mon$guid", "mon$next_attachment", "mon$replica_mode")


def mon_database(path: str) -> dict[str, Any]:
    """MON$DATABASE of one attachment that runs one transaction (no other one starts after it)."""
    with driver.connect(path) as connection:
        columns = _MON_COLUMNS + (_MON_COLUMNS_4 if driver.version_tuple(connection) >= (4, 0) else ())
        with connection.cursor() as cursor:
            cursor.execute(f"select {', '.join(columns)} from mon$database")
            row = cursor.fetchone()
        connection.commit()
    return {name.removeprefix("mon$"): value if isinstance(value, int) else str(value)
            for name, value in zip(columns, row, strict=True)}


def header_states(path: str, replica: bool) -> list[dict[str, Any]]:
    """Put the database in each header state in turn (through the embedded services API, and
    ALTER DATABASE for nbackup); for each: the header page bytes, gstat -h, and MON$DATABASE
    where an attachment is allowed."""
    from firebird.driver import (
        DbAccessMode,
        DbSpaceReservation,
        DbWriteMode,
        ReplicaMode,
        ShutdownMethod,
        ShutdownMode,
        SrvStatFlag,
    )

    states: list[dict[str, Any]] = []

    def services(action: str, **kwargs: Any) -> None:
        with driver.server("") as server:
            getattr(server.database, action)(database=path, **kwargs)

    def record(label: str, attach: bool = True) -> None:
        with driver.server("") as server:
            server.database.get_statistics(database=path, flags=SrvStatFlag.HDR_PAGES)
            gstat = server.readlines()
        states.append({"label": label, "page": Path(path).read_bytes()[:1024].hex(), "gstat": gstat,
                       "mon": mon_database(path) if attach else None})

    record("as created")
    services("set_write_mode", mode=DbWriteMode.SYNC)
    record("forced writes on")
    services("set_space_reservation", mode=DbSpaceReservation.USE_FULL)
    record("no reserve")
    services("set_access_mode", mode=DbAccessMode.READ_ONLY)
    record("read only")
    services("set_access_mode", mode=DbAccessMode.READ_WRITE)
    for mode in (ShutdownMode.MULTI, ShutdownMode.SINGLE, ShutdownMode.FULL):
        services("shutdown", mode=mode, method=ShutdownMethod.FORCED, timeout=0)
        record(f"shutdown {mode.name.lower()}", attach=False)
        services("bring_online")
    with driver.connect(path) as connection:
        connection.execute_immediate("alter database begin backup")
        connection.commit()
    record("backup lock")
    with driver.connect(path) as connection:
        connection.execute_immediate("alter database end backup")
        connection.commit()
    if replica:
        for replica_mode in (ReplicaMode.READ_ONLY, ReplicaMode.READ_WRITE):
            services("set_replica_mode", mode=replica_mode)
            record(f"replica {replica_mode.name.lower()}")
        services("set_replica_mode", mode=ReplicaMode.NONE)
    return states


def gstat_header(path: str) -> list[str]:
    """gstat -h of a file through the embedded services API (reads the page, attaches nothing)."""
    from firebird.driver import SrvStatFlag

    with driver.server("") as server:
        server.database.get_statistics(database=path, flags=SrvStatFlag.HDR_PAGES)
        return server.readlines()


def environment_array_after_a_new_variable() -> dict[str, Any]:
    """What happens to this process's C environment array when a library sets a variable it lacks
    (Firebird 4.0/5.0's client sets ICU_TIMEZONE_FILES_DIR while other threads read the
    environment): whether ``environ`` moved to a new array, whether the old one still holds what it
    held — a thread walking it is safe only then — and the name of this process's parent."""
    import ctypes
    import os

    libc = ctypes.CDLL(None)
    environ = ctypes.c_void_p.in_dll(libc, "environ")
    address = environ.value
    array = ctypes.cast(address, ctypes.POINTER(ctypes.c_void_p))
    count = 0
    while array[count] is not None:
        count += 1
    before = [array[index] for index in range(count + 1)]
    libc.setenv(b"FBBENCH_TEST_NEW_VARIABLE", b"1", 1)
    return {"moved": environ.value != address, "intact": [array[index] for index in range(count + 1)] == before,
            "entries": count, "parent": Path(f"/proc/{os.getppid()}/comm").read_text().strip()}
