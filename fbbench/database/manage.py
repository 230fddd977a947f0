"""Database commands as the user sees them: which engine opens a file, ownership, cleanup.

This side never loads a client library; the work itself runs in an engine child process
(:mod:`fbbench.database.lifecycle`). A database fbbench does not own is never attached: what
``info`` shows about it comes from its header page (the file, or a server's ``gstat -h``), and
``drop`` refuses it before anything attaches (:mod:`fbbench.database.ownership`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fbbench.database import ownership
from fbbench.database.header import FileHeader, read_header
from fbbench.engines import (
    EmbeddedEngine,
    Engine,
    ManagedEngine,
    Runtime,
    ServerEngine,
    parse_engine,
    prepare_runtime,
    run_in_engine,
)
from fbbench.engines.catalog import engine_for_ods, looks_like_dsn
from fbbench.errors import FbbenchError
from fbbench.paths import not_found

PAGE_SIZES = (4096, 8192, 16384, 32768)
DEFAULT_ENGINE = "5.0"


@dataclass(frozen=True)
class Credentials:
    user: str | None = None
    password: str | None = None


@dataclass(frozen=True)
class Target:
    """A database location and the engine that opens it."""

    location: str  # absolute path, or the DSN as given
    engine: Engine
    dsn: str  # what the client attaches to


def resolve(location: str, engine: str | None = None, must_exist: bool = False) -> Target:
    """Pick the engine for ``location``: a DSN names its server; an existing file's ODS names the
    embedded engine that opens it without upgrading it; otherwise ``--engine`` or 5.0."""
    if looks_like_dsn(location):
        server = parse_engine(location)
        if engine is not None and not isinstance(parse_engine(engine), ServerEngine):
            raise FbbenchError(f"{location} is on a server; --engine {engine} does not apply to it")
        return Target(location, server, location)
    path = Path(location).expanduser().resolve()
    chosen = parse_engine(engine) if engine else None
    if isinstance(chosen, ManagedEngine):
        raise FbbenchError(f"--engine {engine} starts a server for fbbench run only",
                           hint=f"a database file is opened by an embedded engine, e.g. --engine {chosen.major}")
    if isinstance(chosen, ServerEngine):
        raise FbbenchError(f"--engine {engine} is a server DSN; give the DSN as the database instead")
    if path.exists():
        header = read_header(path)
        fitting = engine_for_ods(header.ods_major, header.ods_minor)
        if chosen is None:
            if fitting is None:
                raise FbbenchError(f"{path} has ODS {header.ods}, which no known engine opens as is")
            chosen = fitting
        elif fitting is not None and fitting.major != chosen.major:
            raise FbbenchError(
                f"{path} has ODS {header.ods} (Firebird {fitting.major}); opening it with "
                f"Firebird {chosen.major} would fail or upgrade it",
                hint=f"use --engine {fitting.major}",
            )
    elif must_exist:
        raise FbbenchError(f"database {not_found(Path(path))}")
    return Target(str(path), chosen or parse_engine(DEFAULT_ENGINE), str(path))


@contextmanager
def engine_runtime(engine: Engine, workdir: Path, credentials: Credentials = Credentials(),
                   conf: dict[str, str] | None = None, name: str | None = None) -> Iterator[Runtime]:
    """A throw-away runtime root for one command (``name``: its directory's name, when the
    command recorded it before; otherwise a fresh one)."""
    runtime = prepare_runtime(engine, workdir, conf, name=name, user=credentials.user, password=credentials.password)
    try:
        yield runtime
    finally:
        runtime.remove(workdir)


def check_page_size(page_size: int | None, engine: Engine) -> None:
    if page_size is None:
        return
    if page_size not in PAGE_SIZES:
        raise FbbenchError(f"invalid page size {page_size}",
                           hint="use one of " + ", ".join(str(size) for size in PAGE_SIZES))
    if page_size > 16384 and isinstance(engine, EmbeddedEngine | ManagedEngine) and engine.major == "3.0":
        raise FbbenchError(f"page size {page_size} needs Firebird 4.0 or later",
                           hint="Firebird 3.0 supports 4096, 8192 and 16384")


def create(location: str, engine: str | None, workdir: Path, credentials: Credentials = Credentials(), *,
           page_size: int | None = None, forced_writes: bool | None = None, page_buffers: int | None = None,
           sweep_interval: int | None = None, purpose: str = "fbbench db create") -> dict[str, Any]:
    if not looks_like_dsn(location) and Path(location).expanduser().exists():
        raise FbbenchError(f"{location} already exists", hint="fbbench never overwrites a file; choose a new path")
    target = resolve(location, engine)
    check_page_size(page_size, target.engine)
    if page_buffers is not None and page_buffers < 0:
        raise FbbenchError("page buffers cannot be negative")
    settings = {"page_size": page_size, "forced_writes": forced_writes, "page_buffers": page_buffers,
                "sweep_interval": sweep_interval, "purpose": purpose}
    token = ownership.new_token()
    with engine_runtime(target.engine, workdir, credentials) as runtime:
        info = run_in_engine(runtime, "fbbench.database.lifecycle:create", target.dsn, token, page_size,
                             forced_writes, page_buffers, sweep_interval, settings)
    identity = info.pop("identity")
    ownership.register(target.location, token, {"engine": info["engine_version"], "purpose": purpose}, identity)
    return _public(info, target, owned=True)


def info(location: str, engine: str | None, workdir: Path, credentials: Credentials = Credentials()) -> dict[str, Any]:
    """Header facts for any database, read without attaching; what only an attachment shows
    (exact server version, architecture, fbbench's mark) only for fbbench's own databases."""
    target = resolve(location, engine, must_exist=True)
    details: dict[str, Any] = {"engine_version": None, "server_version": None, "version_lines": [],
                               "architecture": None, "pages": None, "size_bytes": None, "fbbench_mark": None}
    with _lazy_runtime(target.engine, workdir, credentials) as runtime:
        if isinstance(target.engine, ServerEngine):
            facts = run_in_engine(runtime(), "fbbench.database.lifecycle:server_facts", target.dsn)
            header = FileHeader.from_json(facts["header"])
            details.update(engine_version=facts["engine_version"], server_version=facts["server_version"],
                           version_lines=[facts["server_version"]])
        else:
            path = Path(target.location)
            header = read_header(path)
            size = path.stat().st_size
            details.update(engine_version=target.engine.version, pages=size // header.page_size, size_bytes=size)
        details.update(header.facts())
        entry = ownership.owned_entry(target.location, header)
        owned = False
        if entry is not None:  # fbbench's own (registry and header agree): attaching is allowed
            attached = run_in_engine(runtime(), "fbbench.database.lifecycle:info", target.dsn)
            owned = attached.get("mark_token") == entry["token"]
            if owned:
                details.update({key: attached[key] for key in ("engine_version", "server_version", "version_lines",
                                                               "architecture", "fbbench_mark")})
                if details["pages"] is None:
                    details.update(pages=attached["pages"], size_bytes=attached["size_bytes"])
    return _public(details, target, owned)


def drop(location: str, engine: str | None, workdir: Path, credentials: Credentials = Credentials()) -> None:
    target = resolve(location, engine)
    ownership.require_registered(target.location, "drop")  # not even read unless fbbench registered it
    is_file = not looks_like_dsn(target.location)
    if is_file and not Path(target.location).exists():
        ownership.unregister(target.location)
        raise FbbenchError(f"database {target.location} does not exist (forgotten by fbbench now)")
    with engine_runtime(target.engine, workdir, credentials) as runtime:
        if is_file:
            header = read_header(Path(target.location))
        else:
            found = run_in_engine(runtime, "fbbench.database.lifecycle:server_header_json", target.dsn)
            if found is None:
                raise FbbenchError(f"cannot open {target.location} on its server (no database there, or not "
                                   "readable by the server); fbbench keeps it registered")
            header = FileHeader.from_json(found)
        # Identity from the header before anything attaches; the mark inside is checked after.
        token = ownership.require_owned(target.location, "drop", header)
        run_in_engine(runtime, "fbbench.database.lifecycle:drop", target.dsn, token)
    ownership.unregister(target.location)


@contextmanager
def _lazy_runtime(engine: Engine, workdir: Path, credentials: Credentials) -> Iterator[Callable[[], Runtime]]:
    """A runtime prepared only if something needs an engine (a foreign file needs none)."""
    prepared: list[Runtime] = []

    def get() -> Runtime:
        if not prepared:
            prepared.append(prepare_runtime(engine, workdir, user=credentials.user, password=credentials.password))
        return prepared[0]

    try:
        yield get
    finally:
        for runtime in prepared:
            runtime.remove(workdir)


def _public(details: dict[str, Any], target: Target, owned: bool) -> dict[str, Any]:
    public = {k: v for k, v in details.items() if k not in ("mark_token", "identity")}
    public.update(location=target.location, engine=target.engine.label, owned_by_fbbench=owned)
    return public
