"""Connections through firebird-driver, for orchestration inside an engine child process.

Only the child processes of :mod:`fbbench.engines.child` import this module: it loads the
client library named by ``FBBENCH_CLIENT_LIBRARY`` (the run's runtime root). Credentials are
the child's runtime's, handed over in its request (a pipe), so a password never travels through
files, command lines or environments. Nothing here is on the per-transaction path (that is the Rust
core); population steps and monitoring are not hot enough to matter.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from fbbench.errors import FbbenchError, FirebirdError

if TYPE_CHECKING:
    from firebird.driver import Connection, Server

# The process name fbbench's own attachments give the engine (MON$REMOTE_PROCESS, and the trace's
# process line): its monitoring, population and checks are told apart from the workload's
# attachments, which the native core makes under the process's own name.
OWN_PROCESS = "fbbench"
_LOGIN_FAILED = 335544472
_NETWORK_ERROR = 335544721
_IO_ERROR = 335544344
_WRITE_ERROR = 335544737
_configured = False


def _driver() -> ModuleType:
    global _configured
    import firebird.driver as driver

    if not _configured:
        library = os.environ.get("FBBENCH_CLIENT_LIBRARY")
        if not library:
            raise RuntimeError("fbbench.database.driver is used outside an engine child process")
        driver.driver_config.fb_client_library.value = library
        _configured = True
    return driver


def credentials() -> tuple[str, str | None]:
    from fbbench.engines.child import current_runtime

    runtime = current_runtime()
    return runtime.user or "SYSDBA", runtime.password


def explain(error: Exception, dsn: str) -> FirebirdError:
    """Turn a driver exception into a one-line error that says what to do."""
    codes = tuple(getattr(error, "gds_codes", ()) or ())
    text = " ".join(line.strip().lstrip("-") for line in str(error).strip().splitlines() if line.strip())
    if _LOGIN_FAILED in codes:
        return FirebirdError(f"login to {dsn} failed: {text}", codes,
                             hint="check --user and the password (--password-file FILE or ISC_PASSWORD)")
    if _NETWORK_ERROR in codes:
        return FirebirdError(f"cannot reach the server of {dsn}: {text}", codes,
                             hint="check that the Firebird server runs and listens on that host and port")
    if _IO_ERROR in codes:
        full = "No space left on device" in text
        return FirebirdError(f"cannot {'write' if _WRITE_ERROR in codes else 'open'} {dsn}: {text}", codes,
                             hint="the file system that holds it is full" if full else None)
    return FirebirdError(text, codes)


_naming = threading.Lock()


@contextlib.contextmanager
def _named_as_fbbench() -> Iterator[None]:
    """firebird-driver builds its DPB itself and takes no process name: for the duration of one
    attach (serialised) its DPB class is one that adds fbbench's own."""
    from firebird.driver import core
    from firebird.driver.types import DPBItem

    plain = core.DPB

    class Named(plain):  # type: ignore[misc, valid-type]
        def get_buffer(self, *, for_create: bool = False) -> bytes:
            name = OWN_PROCESS.encode()
            return bytes(super().get_buffer(for_create=for_create)) + bytes([DPBItem.PROCESS_NAME, len(name)]) + name

    with _naming:
        core.DPB = Named
        try:
            yield
        finally:
            core.DPB = plain


def cannot_write(error: FirebirdError) -> bool:
    """Whether the engine said the database cannot be written (disk full, an I/O error): a run
    then fails, as the load core fails it when a unit meets one of these codes."""
    from fbbench import _core

    return bool(set(error.gdscodes) & set(_core.CANNOT_WRITE_CODES))


def connect(dsn: str, *, charset: str = "UTF8", no_gc: bool = False) -> Connection:
    driver = _driver()
    user, password = credentials()
    try:
        with _named_as_fbbench():
            connection: Any = driver.connect(dsn, user=user, password=password, charset=charset, no_gc=no_gc or None)
        return connection
    except driver.DatabaseError as error:
        raise explain(error, dsn) from None


@contextlib.contextmanager
def kept_open(dsn: str) -> Iterator[None]:
    """The database kept open by one idle attachment while a phase attaches to it again and again
    (facts, statements prepared, plans): a SuperServer engine then keeps the database and
    its cache between them, and each of them finds it open instead of opening the file and
    closing it again. The attachment starts no transaction and reads nothing; it is fbbench's
    own (its process name), so a monitoring reading never counts it as the load's."""
    holder = connect(dsn, no_gc=True)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # its end changes nothing that was read through the others
            holder.close()


def create_database(dsn: str, *, page_size: int | None = None, forced_writes: bool | None = None,
                    page_buffers: int | None = None, sweep_interval: int | None = None,
                    charset: str = "UTF8") -> Connection:
    driver = _driver()
    user, password = credentials()
    defaults = driver.driver_config.db_defaults
    options = {defaults.page_size: page_size, defaults.forced_writes: forced_writes,
               defaults.db_cache_size: page_buffers, defaults.sweep_interval: sweep_interval,
               defaults.db_charset: charset}
    try:
        for option, value in options.items():
            option.value = value
        with _named_as_fbbench():
            connection: Any = driver.create_database(dsn, user=user, password=password, charset=charset)
        return connection
    except driver.DatabaseError as error:
        raise explain(error, dsn) from None
    finally:
        for option in options:
            option.clear()


def server(host: str = "", database: str | None = None) -> Server:
    """Services API; ``host`` "" means the embedded engine of this process, else "host[/port]".
    ``database``: the DSN the caller is about, named in errors instead of the bare host."""
    driver = _driver()
    user, password = credentials()
    if host and driver.driver_config.get_server(host) is None:
        # connect_server() only knows registered server names: any other name silently means the
        # local (embedded) service manager. Register the host under its own name first.
        config = driver.driver_config.register_server(host)
        name, _, port = host.partition("/")
        config.host.value = name
        config.port.value = port or None
    try:
        return driver.connect_server(host, user=user, password=password)
    except driver.DatabaseError as error:
        raise explain(error, database or host or "the embedded engine") from None


def version_tuple(connection: Connection) -> tuple[int, int]:
    major, minor = str(connection.info.engine_version).split(".")[:2]
    return int(major), int(minor)


def require(condition: bool, message: str, hint: str | None = None) -> None:
    if not condition:
        raise FbbenchError(message, hint)
