"""Which databases fbbench created — the only ones it will populate, change or drop.

Two marks, checked in this order:

1. a registry in fbbench's home (``owned-databases.json``): location → random token. It is read
   *before* attaching, so a database fbbench did not create is never even opened by a command
   that would change it (attaching alone rewrites a database's header page);
2. the table ``FBBENCH$DATABASE`` inside the database, holding the same token plus the fbbench
   version, creation time and settings. A different file later put at a registered path has no
   or another token and is refused too.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fbbench import __version__, paths
from fbbench.engines.catalog import looks_like_dsn
from fbbench.errors import NotOwnedError

if TYPE_CHECKING:
    from firebird.driver import Connection

MARK_TABLE = "FBBENCH$DATABASE"


def location_key(location: str) -> str:
    """Registry key: an absolute path for local files, the DSN as given for servers."""
    return location if looks_like_dsn(location) else str(Path(location).expanduser().resolve())


@contextmanager
def _registry() -> Iterator[dict[str, Any]]:
    registry_file = paths.registry_file()
    registry_file.parent.mkdir(parents=True, exist_ok=True)
    with open(registry_file.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(registry_file.read_text()) if registry_file.exists() else {}
        before = json.dumps(data, sort_keys=True)
        yield data
        if json.dumps(data, sort_keys=True) != before:
            temporary = registry_file.with_suffix(".tmp")
            temporary.write_text(json.dumps(data, indent=2, sort_keys=True))
            os.replace(temporary, registry_file)


def new_token() -> str:
    return secrets.token_hex(16)


def register(location: str, token: str, details: dict[str, Any]) -> None:
    with _registry() as data:
        data[location_key(location)] = {"token": token, "created_at": time.time(), **details}


def unregister(location: str) -> None:
    with _registry() as data:
        data.pop(location_key(location), None)


def remove_run_copy(location: str, workdir: Path) -> None:
    """Delete a run's database copy (inside the work directory only) and forget it."""
    path = paths.assert_inside(Path(location), workdir)
    unregister(location)
    if path.exists():
        os.unlink(path)


def lookup(location: str) -> dict[str, Any] | None:
    with _registry() as data:
        return data.get(location_key(location))


def require_owned(location: str, action: str) -> str:
    """The token of a database fbbench created, or refuse ``action`` without touching it."""
    entry = lookup(location)
    if entry is None:
        raise NotOwnedError(
            f"refusing to {action} {location}: fbbench did not create this database",
            hint="fbbench only changes or drops databases it created itself (fbbench db create, fbbench run)",
        )
    return str(entry["token"])


def write_mark(connection: Connection, token: str, settings: dict[str, Any]) -> None:
    connection.execute_immediate(
        f"create table {MARK_TABLE} (token varchar(64) not null, fbbench_version varchar(32), "
        "created_at timestamp, settings blob sub_type text)"
    )
    connection.commit()
    with connection.cursor() as cursor:
        cursor.execute(
            f"insert into {MARK_TABLE} (token, fbbench_version, created_at, settings) "
            "values (?, ?, localtimestamp, ?)",
            (token, __version__, json.dumps(settings, sort_keys=True)),
        )
    connection.commit()


def read_mark(connection: Connection) -> dict[str, Any] | None:
    with connection.cursor() as cursor:
        cursor.execute("select count(*) from rdb$relations where rdb$relation_name = ?", (MARK_TABLE,))
        if cursor.fetchone()[0] == 0:
            return None
        cursor.execute(f"select token, fbbench_version, created_at, settings from {MARK_TABLE}")
        row = cursor.fetchone()
    if row is None:
        return None
    settings = row[3].read() if hasattr(row[3], "read") else row[3]
    return {"token": row[0], "fbbench_version": row[1], "created_at": str(row[2]),
            "settings": json.loads(settings or "{}")}


def verify_mark(connection: Connection, token: str, location: str, action: str) -> None:
    mark = read_mark(connection)
    if mark is None or mark["token"] != token:
        raise NotOwnedError(
            f"refusing to {action} {location}: its fbbench mark is missing or belongs to another database",
            hint="the file at this location was not created by fbbench (or was replaced since)",
        )
