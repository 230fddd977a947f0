"""Which databases fbbench created — the only ones it will populate, change or drop.

Decided without attaching (attaching alone rewrites a database's header page), in this order:

1. a registry in fbbench's home (``owned-databases.json``): location (absolute path, or the DSN
   as given) → a random token and the database's **identity** read from its header page when
   fbbench created or copied it: the database GUID (Firebird 4 on) and the creation time (to
   1/10000 s from a file, to the second through a server's ``gstat -h``). A location that is not
   registered, or where the header now shows another identity (a different file put at a path
   fbbench once used), is refused before anything attaches;
2. the table ``FBBENCH$DATABASE`` inside the database, holding the same token plus the fbbench
   version, creation time and settings: checked after attaching, before a drop, as a second line
   of defence.

Copies of one file share GUID and creation time (a run's database is a byte copy of the
populated cache). The registry is keyed by location, so a copy is told apart by where it is,
and by its own token inside (each run copy gets a new one). What the header alone cannot tell
apart: a copy of an fbbench database, changed by someone else and put back at a path fbbench
registered. The in-database token catches that when it differs (a copy of another fbbench
database), after attaching.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fbbench import __version__, paths
from fbbench.engines.catalog import looks_like_dsn
from fbbench.errors import FbbenchError, NotOwnedError

if TYPE_CHECKING:
    from firebird.driver import Connection

    from fbbench.database.header import FileHeader

MARK_TABLE = "FBBENCH$DATABASE"


def location_key(location: str) -> str:
    """Registry key: an absolute path for local files, the DSN as given for servers."""
    return location if looks_like_dsn(location) else str(Path(location).expanduser().resolve())


def read_registry(registry_file: Path | None = None) -> dict[str, Any]:
    """fbbench's record of the databases it made, checked to be one it wrote: a damaged one is
    one line (run.check reads it before anything runs, so a run never starts and then fails on it)."""
    registry_file = registry_file or paths.registry_file()

    def damaged(why: str) -> FbbenchError:
        return FbbenchError(f"cannot read fbbench's record of the databases it made, {registry_file}: {why}",
                            hint="fix that file, or delete it: fbbench then attaches read-write to none of the "
                                 "databases it made before (they are yours to delete)")

    try:
        data = json.loads(registry_file.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise damaged(str(error)) from None
    if not isinstance(data, dict) or not all(isinstance(entry, dict) and isinstance(entry.get("token"), str)
                                             for entry in data.values()):
        raise damaged("it is not what fbbench writes there")
    return data


@contextmanager
def _registry() -> Iterator[dict[str, Any]]:
    registry_file = paths.registry_file()
    registry_file.parent.mkdir(parents=True, exist_ok=True)
    with open(registry_file.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = read_registry(registry_file)
        before = json.dumps(data, sort_keys=True)
        yield data
        if json.dumps(data, sort_keys=True) != before:
            paths.write_whole(registry_file, json.dumps(data, indent=2, sort_keys=True))


def new_token() -> str:
    return secrets.token_hex(16)


def register(location: str, token: str, details: dict[str, Any],
             identity: dict[str, Any] | None = None) -> None:
    """Record ``location`` as fbbench's, with the identity its header shows now (read here when
    not given: from the file, or through the services API inside an engine child)."""
    if identity is None:
        identity = current_header(location).identity()
    with _registry() as data:
        data[location_key(location)] = {"token": token, "created_at": time.time(), "identity": identity,
                                        **details}


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


def current_header(location: str) -> FileHeader:
    """The header of the database at ``location``, without attaching. For a DSN this needs the
    services API, so only an engine child process can ask (the parent passes what a child read)."""
    if looks_like_dsn(location):
        from fbbench.database.header import server_header

        found = server_header(location)
        if found is None:
            raise FbbenchError(f"cannot open {location} on its server (no database there, or not readable)")
        return found
    from fbbench.database.header import read_header

    return read_header(Path(location_key(location)))


def same_identity(recorded: dict[str, Any], current: dict[str, Any]) -> bool:
    """GUIDs equal (both absent before Firebird 4) and creation times equal — to the second when
    one of them was read through gstat, which prints no fraction."""
    if recorded.get("guid") != current.get("guid") or not recorded.get("created") or not current.get("created"):
        return False
    first, second = (datetime.fromisoformat(recorded["created"]), datetime.fromisoformat(current["created"]))
    if first.microsecond == 0 or second.microsecond == 0:
        first, second = first.replace(microsecond=0), second.replace(microsecond=0)
    return first == second


def owned_entry(location: str, header: FileHeader) -> dict[str, Any] | None:
    """The registry entry of ``location`` if the database there is the one fbbench registered."""
    entry = lookup(location)
    if entry is None or "identity" not in entry or not same_identity(entry["identity"], header.identity()):
        return None
    return entry


def require_registered(location: str, action: str) -> dict[str, Any]:
    """The registry entry of ``location``, or refuse ``action`` (nothing read, nothing attached)."""
    entry = lookup(location)
    if entry is None:
        raise NotOwnedError(
            f"refusing to {action} {location}: fbbench did not create this database",
            hint="fbbench only changes or drops databases it created itself (fbbench db create, fbbench run)",
        )
    return entry


def require_owned(location: str, action: str, header: FileHeader | None = None) -> str:
    """The token of a database fbbench created, or refuse ``action`` without touching it.

    ``header`` is what the database's header page shows now (read from the file when not given).
    """
    entry = require_registered(location, action)
    if "identity" not in entry:
        raise NotOwnedError(
            f"refusing to {action} {location}: fbbench registered it before it recorded database identities, "
            "so it cannot tell without attaching whether the file there is still its own",
            hint="if it is fbbench's database, remove it with the tools you trust; fbbench will not touch it",
        )
    current = (header or current_header(location)).identity()
    if not same_identity(entry["identity"], current):
        raise NotOwnedError(
            f"refusing to {action} {location}: the database there is not the one fbbench created "
            f"(header: GUID {current['guid'] or 'none'}, created {current['created']}; fbbench recorded "
            f"GUID {entry['identity'].get('guid') or 'none'}, created {entry['identity'].get('created')})",
            hint="the file at this location was replaced since fbbench created it; fbbench leaves it untouched",
        )
    return str(entry["token"])


def refuse_unless_owned_or_absent(location: str, action: str) -> str | None:
    """For a location fbbench is about to build a database at: None when there is no database
    there (a stale registry entry is forgotten), its token when it is fbbench's own, otherwise
    a refusal. Decided from the header (services API for a DSN), before anything attaches."""
    if looks_like_dsn(location):
        from fbbench.database.header import server_header

        header = server_header(location)
    else:
        header = current_header(location) if Path(location_key(location)).exists() else None
    if header is None:
        unregister(location)
        return None
    return require_owned(location, action, header)


def write_mark(connection: Connection, token: str, settings: dict[str, Any]) -> None:
    """Mark a database fbbench just made. One restored from a backup of an fbbench database has
    the mark table already, with that database's row: it gets its own row instead."""
    with connection.cursor() as cursor:
        cursor.execute("select count(*) from rdb$relations where rdb$relation_name = ?", (MARK_TABLE,))
        present = cursor.fetchone()[0] > 0
    if present:
        connection.execute_immediate(f"delete from {MARK_TABLE}")
    else:
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
