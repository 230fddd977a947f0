"""``fbbench db readspeed`` and ``db backupspeed``: the quick estimates of a disk's speed for a
database that the field uses before any benchmark.

- **readspeed** (the rebuttal's estimate): the time of a full sequential read of the database
  file, page by page as the engine reads it, and MB/s = its size / that time. The file is only
  opened for reading (without touching its access time where the system allows), so any
  database, foreign ones included, stays byte for byte as it was. gstat through the services API
  does not: its data and index analysis attaches, and 3.0 to 5.0 then rewrite the header page
  and a TIP page (seen in tests/test_db_speed.py), so it serves only fbbench's own databases on
  a server, whose files fbbench cannot read itself. ``drop_caches`` makes it a cold read;
  ``direct`` reads around the OS cache (O_DIRECT), as the engine does with the file cache off.
- **backupspeed** (IBSurgeon's estimate): a ``gbak -b -g`` to /dev/null through the services API,
  MB/s = size / time. A backup starts a transaction, which changes the database's header: only
  fbbench's own databases are backed up as they are; any other only as a copy in the work
  directory, which the command (``fbbench.cli.db``) checks room for, records and removes
  (``fbbench.runner.cleanup.command_files``).

The parent side (here) picks the engine and prepares its runtime; the reads run in an engine
child (:func:`gstat_read`, :func:`null_backup`).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fbbench.database import ownership
from fbbench.database.header import read_header
from fbbench.database.manage import Credentials, Target, engine_runtime, resolve
from fbbench.engines import ServerEngine, run_in_engine
from fbbench.engines import platform as host_os
from fbbench.engines.catalog import looks_like_dsn
from fbbench.errors import FbbenchError

# What gstat -d -i says it read: pointer and data pages of each table, the leaf level of each index.
_PAGES = re.compile(r"\b(?:Pointer pages|Data pages|[Ll]eaf buckets):\s*(\d+)")


def _cache_state(drop_caches: bool) -> dict[str, Any]:
    """Drop the OS page cache (root only, refused otherwise with the reason), or say what it holds."""
    if drop_caches:
        refusal = host_os.page_cache_drop_refusal()
        if refusal:
            raise FbbenchError(f"--drop-caches: {refusal}", hint="run as root (sudo), or leave --drop-caches out")
        return {"dropped": True, **host_os.drop_page_cache()}
    return {"dropped": False, "page_cache": host_os.meminfo().get("page_cache")}


def read_speed(location: str, engine: str | None, workdir: Path, credentials: Credentials | None = None,
               drop_caches: bool = False, direct: bool = False) -> dict[str, Any]:
    """A full sequential read of the database, page by page; MB/s = size / time."""
    credentials = credentials or Credentials()
    target = resolve(location, engine, must_exist=True)
    if isinstance(target.engine, ServerEngine):
        return _server_read_speed(target, workdir, credentials, drop_caches, direct)
    path = Path(target.location)
    page_size = read_header(path).page_size  # also refuses a file that is no Firebird database
    cache = _cache_state(drop_caches)
    size, seconds = read_file(path, page_size, direct)
    return {
        "location": target.location, "engine": target.engine.label, "size_bytes": size, "seconds": seconds,
        "mb_per_second": size / 1e6 / seconds if seconds > 0 else None, "page_size": page_size,
        "direct": direct, "os_cache": cache,
        "method": f"the file read in {page_size}-byte pages, in order" + (" with O_DIRECT" if direct else ""),
    }


def read_file(path: Path, block: int, direct: bool = False) -> tuple[int, float]:
    """Read ``path`` from start to end in ``block``-byte reads; (bytes read, seconds). Opened
    read-only, without updating its access time where the system allows (O_NOATIME needs the
    file's owner or root); ``direct``: O_DIRECT, around the OS page cache."""
    flags = os.O_RDONLY | (os.O_DIRECT if direct else 0)
    try:
        descriptor = os.open(path, flags | os.O_NOATIME)
    except PermissionError:
        descriptor = os.open(path, flags)
    except OSError as error:
        if direct and error.errno == 22:  # EINVAL: the filesystem cannot read around its cache (tmpfs)
            raise FbbenchError(f"{path}: its filesystem does not allow direct I/O (O_DIRECT)",
                               hint="leave --direct out: the read then goes through the OS cache") from None
        raise FbbenchError(f"cannot read {path}: {error.strerror}") from None
    # O_DIRECT wants a buffer aligned to the device's blocks: an anonymous map is page-aligned.
    buffer = mmap.mmap(-1, block)
    total = 0
    try:
        started = time.perf_counter()
        while True:
            count = os.readv(descriptor, [buffer])
            if count <= 0:
                break
            total += count
        seconds = time.perf_counter() - started
    except OSError as error:
        raise FbbenchError(f"reading {path} failed after {total:,} bytes: {error.strerror}") from None
    finally:
        os.close(descriptor)
        with contextlib.suppress(BufferError):
            buffer.close()
    return total, seconds


def _server_read_speed(target: Target, workdir: Path, credentials: Credentials, drop_caches: bool,
                       direct: bool) -> dict[str, Any]:
    """A server's database, whose file fbbench cannot read: gstat -d -i through the services API,
    which attaches — so only for a database fbbench created."""
    if drop_caches or direct:
        raise FbbenchError("--drop-caches and --direct are about this machine's cache; the database is on its server",
                           hint="run fbbench db readspeed on the server's machine, on the file")
    with engine_runtime(target.engine, workdir, credentials) as runtime:
        services_host, path = _services_of(target)
        found = run_in_engine(runtime, "fbbench.database.lifecycle:server_header_json", target.location)
        if found is None:
            raise FbbenchError(f"cannot open {target.location} on its server")
        from fbbench.database.header import FileHeader

        ownership.require_owned(target.location, "read through gstat (it attaches and writes the header)",
                                FileHeader.from_json(found))
        read = run_in_engine(runtime, "fbbench.database.speed:gstat_read", services_host, path)
    page_size, seconds = read["page_size"], read["seconds"]
    pages_bytes = read["pages"] * page_size if page_size else None
    return {
        "location": target.location, "engine": target.engine.label, "size_bytes": pages_bytes, "seconds": seconds,
        "mb_per_second": pages_bytes / 1e6 / seconds if pages_bytes and seconds > 0 else None,
        "page_size": page_size, "pages_read": read["pages"], "direct": False, "os_cache": {"dropped": False},
        "method": "gstat -d -i through the services API (pointer, data and index leaf pages it reports)",
    }


@dataclass(frozen=True)
class BackupSource:
    """A database file ``db backupspeed`` backs up: itself when fbbench made it, else a copy."""

    target: Target
    path: Path
    owned: bool
    size: int


def backup_source(location: str, engine: str | None, copy: bool) -> BackupSource:
    """The database to back up, refused unless it is a file on this machine that fbbench created
    or ``copy`` is given (a backup starts a transaction, which changes the header)."""
    target = resolve(location, engine, must_exist=True)
    if isinstance(target.engine, ServerEngine):
        raise FbbenchError("backupspeed reads a database file on this machine; a server's database is backed up "
                           "where the server is", hint="run fbbench db backupspeed on the server's machine")
    path = Path(target.location)
    owned = ownership.owned_entry(target.location, read_header(path)) is not None
    if not owned and not copy:
        raise FbbenchError(f"refusing to back up {path}: a backup starts a transaction, which changes the header of "
                           "a database fbbench did not create",
                           hint="add --copy to back up a copy in the work directory (removed afterwards), or use "
                                "fbbench db readspeed, which changes nothing")
    return BackupSource(target, path, owned, path.stat().st_size)


def copy_database(source: Path, copy: Path) -> float:
    """Copy ``source`` to ``copy`` (a new file, which the caller recorded and removes); the seconds
    it took."""
    started = time.monotonic()
    try:
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.touch(exist_ok=False)  # a new file, never one that was there
        shutil.copyfile(source, copy)
    except OSError as error:
        raise FbbenchError(f"cannot copy {source} to {copy}: {error.strerror or error}",
                           hint="free some space, or give --workdir on a larger disk") from None
    return time.monotonic() - started


def backup_speed(source: BackupSource, database: Path, workdir: Path, credentials: Credentials | None = None,
                 drop_caches: bool = False, runtime_name: str | None = None) -> dict[str, Any]:
    """gbak -b -g of ``database`` (``source`` itself or its copy) to /dev/null through the
    services API; MB/s = size / time. ``runtime_name``: the runtime root's name under the work
    directory, when the caller recorded it."""
    copied = database != source.path
    with engine_runtime(source.target.engine, workdir, credentials or Credentials(), name=runtime_name) as runtime:
        cache = _cache_state(drop_caches)
        seconds = run_in_engine(runtime, "fbbench.database.speed:null_backup", str(database))
    return {"location": source.target.location, "engine": source.target.engine.label, "size_bytes": source.size,
            "copied": copied, "os_cache": cache, "seconds": seconds,
            "mb_per_second": source.size / 1e6 / seconds if seconds > 0 else None,
            "method": "gbak -b -g to /dev/null through the services API"
                      + (" (of a copy in the work directory)" if copied else "")}


def _services_of(target: Target) -> tuple[str, str]:
    """The services host ("" embedded) and the database path as the engine sees it."""
    if looks_like_dsn(target.location):
        engine = target.engine
        assert isinstance(engine, ServerEngine)
        return engine.host + (f"/{engine.port}" if engine.port else ""), engine.path
    return "", target.location


# ------------------------------------------------------------------------- in the engine child


def gstat_read(services_host: str, database: str) -> dict[str, Any]:
    """gstat -d -i of the database through the services API: the seconds it took, the pages it
    read (pointer, data and index leaf pages, as it reports them) and the page size."""
    from firebird.driver import DatabaseError, SrvStatFlag

    from fbbench.database import driver

    try:
        with driver.server(services_host, database) as server:
            started = time.perf_counter()
            server.database.get_statistics(database=database, flags=SrvStatFlag.DATA_PAGES | SrvStatFlag.IDX_PAGES
                                           | SrvStatFlag.SYS_RELATIONS)
            text = "".join(server.readlines())
            seconds = time.perf_counter() - started
    except DatabaseError as error:
        raise FbbenchError(f"cannot read {database}: {' '.join(str(error).split())}") from None
    page_size = re.search(r"Page size\s+(\d+)", text)
    return {"seconds": seconds, "pages": sum(int(n) for n in _PAGES.findall(text)),
            "page_size": int(page_size.group(1)) if page_size else None}


def null_backup(database: str) -> float:
    """gbak -b -g (no garbage collection) of the database to /dev/null; the seconds it took."""
    from firebird.driver import DatabaseError, SrvBackupFlag

    from fbbench.database import driver

    try:
        with driver.server("", database) as server:
            started = time.perf_counter()
            server.database.backup(database=database, backup="/dev/null", flags=SrvBackupFlag.NO_GARBAGE_COLLECT)
            server.wait()
            return time.perf_counter() - started
    except DatabaseError as error:
        raise FbbenchError(f"cannot back up {database}: {' '.join(str(error).split())}") from None
