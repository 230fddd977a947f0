"""``fbbench engines add NAME PATH`` and ``engines remove NAME``: the builds a Firebird QA engineer
downloads or makes, registered under a name.

PATH is an official Linux tarball (unpacked into fbbench's home: :mod:`fbbench.engines.unpack`),
an installation directory (``/opt/firebird``), a build's output directory
(``gen/Release/firebird``), or Debian's ``/usr``. Each but Debian's runs embedded by default, from
its own client library and engine plugin (``--server``: its server, managed by fbbench, where it
has one); Debian's runs as a managed server only.

Before anything is registered, the build is read (:mod:`fbbench.engines.builds`: its pieces,
its CPU, the version compiled into its engine plugin) and verified with a real embedded attach:
a runtime made from its files creates a scratch database, reads ENGINE_VERSION, the server
version string and the on-disk structure (ODS) its engine writes, and drops it — a broken build
is refused with one line saying why. A managed server's binary is run once too (``firebird -z``:
:mod:`fbbench.engines.installation`). The registry entry keeps what was found, and the digest
of the build's binaries (:mod:`fbbench.engines.binaries`), against which its files are checked
before every run.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fbbench.engines.binaries import digest, engine_binaries, official_binaries
from fbbench.engines.builds import WHAT_A_BUILD_IS, inspect_build, kind_of
from fbbench.engines.catalog import (
    EmbeddedEngine,
    ManagedEngine,
    check_engine_name,
    engine_of_entry,
    managed_engine,
    registered_engines,
    save_registration,
    taken_by_another,
    unregister_engine,
)
from fbbench.engines.child import run_in_engine
from fbbench.engines.installation import not_an_installation
from fbbench.engines.runtime import prepare_runtime
from fbbench.engines.unpack import builds_dir, unpack
from fbbench.errors import FbbenchError, Interrupted
from fbbench.paths import assert_inside, not_found

WHAT_ADD_TAKES = WHAT_A_BUILD_IS + ", or /usr for Debian's firebird3.0-server"


@dataclass(frozen=True)
class Registration:
    name: str
    entry: dict[str, Any]
    engine: EmbeddedEngine | ManagedEngine  # as --engine NAME runs it


def probe(database: str) -> dict[str, Any]:
    """Runs in the engine child: create a scratch database, read what the engine says it is, drop it."""
    from fbbench.database import driver

    with driver.create_database(database, page_size=8192, forced_writes=False) as connection:
        with connection.cursor() as cursor:
            cursor.execute("select rdb$get_context('SYSTEM', 'ENGINE_VERSION'), mon$ods_major, mon$ods_minor "
                           "from mon$database")
            engine_version, ods_major, ods_minor = cursor.fetchone()
        lines = [line for line in str(connection.info.firebird_version).splitlines() if line.strip()]
    with driver.connect(database) as connection:
        connection.drop_database()
    return {"engine_version": str(engine_version), "server_version": lines[0] if lines else "",
            "ods": f"{ods_major}.{ods_minor}"}


def add(name: str, given: Path, server: bool, workdir: Path) -> Registration:
    """Register the build at ``given`` under ``name`` (see the module); ``workdir``: where the
    verifying attach makes its runtime and scratch database (removed after)."""
    check_engine_name(name)
    path = given.expanduser()
    if not path.exists():
        raise FbbenchError(not_found(path), hint=WHAT_ADD_TAKES)
    source = str(path.resolve())
    taken = taken_by_another(name, source)
    if taken is not None:
        raise FbbenchError(f"engine '{name}' is already registered for {taken}",
                           hint=f"fbbench engines remove {name} first, or choose another name")
    before = registered_engines().get(name)
    if path.is_dir() and _debian_or_not_a_build(path.resolve()):
        entry = _debian_entry(path.resolve())
    elif path.is_dir():
        root = path.resolve()
        entry = _build_entry(name, root, kind_of(root), source, str(path), server, workdir)
    else:
        unpacked = unpack(path.resolve())
        try:
            entry = _build_entry(name, unpacked.root, "tarball", source, str(path), server, workdir)
            entry["unpacked"] = str(unpacked.directory)
        except BaseException:
            _forget_copy(unpacked.directory)
            raise
    save_registration(name, entry)
    if before is not None and before.get("unpacked") and before.get("unpacked") != entry.get("unpacked"):
        _forget_copy(Path(before["unpacked"]))  # the tarball's content changed: its old copy goes
    return Registration(name, entry, engine_of_entry(name, entry))


def _debian_or_not_a_build(directory: Path) -> bool:
    """Debian's layout (sbin/firebird), or a directory only the installation's checks can explain
    (bin/, Debian's library directory): the managed server's inspection says what it is."""
    if (directory / "sbin" / "firebird").is_file():
        return True
    official = (directory / "bin" / "firebird").is_file() or any(directory.glob("plugins/libEngine*.so"))
    return not official and (any(directory.glob("lib/*/firebird/*/plugins"))
                             or (directory / "firebird").is_file() or (directory / "firebird.msg").is_file())


def _debian_entry(directory: Path) -> dict[str, Any]:
    engine = managed_engine(str(directory))  # explains what the directory is when it is not an installation
    if engine.layout != "debian":
        raise not_an_installation(directory)
    binaries = engine_binaries(engine)
    return {"directory": engine.directory, "mode": "server", "kind": "installation", "layout": "debian",
            "source": engine.directory, "version": engine.version, "build": engine.build,
            "binaries": binaries["sha256"] if binaries else None, "embedded": False, "server": True}


def _build_entry(name: str, root: Path, kind: str, source: str, where: str, server: bool,
                 workdir: Path) -> dict[str, Any]:
    files, mark = inspect_build(root, where, embedded=not server)
    if server and files.server is None:
        raise FbbenchError(f"{where} has no server (bin/firebird): fbbench can run it embedded only",
                           hint=f"leave out --server: fbbench engines add {name} {where}")
    found: dict[str, Any] = {"engine_version": mark.version, "server_version": mark.build, "ods": None}
    if files.embeddable:
        found = _verify_embedded(name, root, mark.version, where, workdir)
        if found["engine_version"] != mark.version or found["server_version"].split()[0] != mark.build.split()[0]:
            raise FbbenchError(f"{where}: its files say {mark.build} but its engine reports "
                               f"{found['server_version']} (ENGINE_VERSION {found['engine_version']})",
                               hint="the build mixes files of two versions: unpack, install or build it again")
    if server:
        managed_engine(str(root))  # runs `firebird -z`: a server that cannot start is refused now
    binaries = digest(root, official_binaries(root))
    return {"directory": str(root), "mode": "server" if server else "embedded", "kind": kind, "layout": "official",
            "source": source, "version": mark.version, "build": found["server_version"], "ods": found["ods"],
            "binaries": binaries["sha256"], "embedded": files.embeddable, "server": files.server is not None}


def _verify_embedded(name: str, root: Path, version: str, where: str, workdir: Path) -> dict[str, Any]:
    """The real attach (see the module), in a runtime made from the build's files."""
    engine = EmbeddedEngine(version, root=str(root), name=name)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        runtime = prepare_runtime(engine, workdir, install=False)
    except FbbenchError as error:
        raise FbbenchError(f"{where}: {error.message}", hint=error.hint) from None
    try:
        result: dict[str, Any] = run_in_engine(runtime, "fbbench.runner.builds:probe", str(runtime.base / "probe.fdb"))
        return result
    except Interrupted:
        raise  # Ctrl-C while the engine tried the build: the user's, not the build's
    except FbbenchError as error:
        first = error.message.splitlines()[0] if error.message else "no reason given"
        raise FbbenchError(f"{where}: the engine could not create a database: {first}",
                           hint=error.hint or "the build is broken or incomplete: unpack, install or build it again"
                           ) from None
    finally:
        runtime.remove(workdir)


def remove(name: str) -> str:
    """Forget ``name``; removes the copy fbbench unpacked for it (never the user's files) once no
    other name uses it. Returns what was removed, for the user."""
    entry = unregister_engine(name)
    where = entry.get("source") or entry["directory"]
    if entry.get("unpacked") and _forget_copy(Path(entry["unpacked"])):
        return f"removed {name} ({where}) and its unpacked copy {entry['unpacked']}"
    return f"removed {name} ({where})"


def _forget_copy(directory: Path) -> bool:
    """Remove an unpacked copy no registered name uses; whether it was removed."""
    users = [other for other, entry in registered_engines().items() if entry.get("unpacked") == str(directory)]
    if users or not directory.exists():
        return False
    try:
        inside = assert_inside(directory, builds_dir())
    except FbbenchError:
        return False  # where an older fbbench unpacked it: a cache other homes may share
    shutil.rmtree(inside, ignore_errors=True)
    return True

