"""Which Firebird engines fbbench knows, and how an engine is named on the command line.

An engine is one of:

- an official embedded runtime from PyPI (``5.0``, ``4``, ``3.0.14``);
- a build the user registered with ``fbbench engines add NAME PATH`` (an official tarball, an
  installation directory, a build's output directory: :mod:`fbbench.runner.builds`), run
  embedded from its own files (an :class:`EmbeddedEngine` with ``root`` and ``name``) or, where
  it has a server, as a managed server;
- a managed local server (``server:DIR``, ``server:NAME``, or a name registered with ``--server``
  or for Debian's /usr): fbbench starts its own server process from the Firebird installation in
  DIR for each run (:mod:`fbbench.engines.managed`);
- an external server given as a DSN (``host/port:/path/db.fdb``, ``host:/path/db.fdb``,
  ``inet://host:port//path/db.fdb``), which fbbench only connects to.

A registered name runs the way its registration chose (embedded, unless ``--server`` or Debian's
layout; names registered before builds existed are managed servers); ``server:NAME`` and
``embedded:NAME`` choose per run. ``server:`` always means a managed server, so a DSN on a host
literally named "server" is written ``server/3050:/path/db.fdb`` or ``inet://server/path/db.fdb``.
"""

from __future__ import annotations

import difflib
import fcntl
import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fbbench import paths
from fbbench.engines.installation import ManagedEngine, inspect_installation
from fbbench.errors import FbbenchError

# Firebird version → the firebird-embedded distribution that carries it (the fourth number is
# the wheel's packaging revision).
EMBEDDED_PACKAGES: dict[str, str] = {
    "3.0.14": "3.0.14.4",
    "4.0.7": "4.0.7.4",
    "5.0.4": "5.0.4.4",
}

# On-disk structure version each engine creates; used to pick the engine that opens a file
# without upgrading it (Firebird 5 silently raises an ODS 13.0 database to 13.1).
ODS_OF_MAJOR: dict[str, tuple[int, int]] = {"3.0": (12, 0), "4.0": (13, 0), "5.0": (13, 1)}

# The client library used to reach external servers: the newest embedded runtime's fbclient.
SERVER_CLIENT_VERSION = "5.0.4"

_VERSION = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?$")
_CLASSIC_DSN = re.compile(r"^(?P<host>[^:/\\]+)(?:/(?P<port>[^:]+))?:(?P<path>.+)$")
_URL_DSN = re.compile(r"^inet[46]?://(?P<host>[^:/]+)(?::(?P<port>[^/]+))?/(?P<path>.+)$")


@dataclass(frozen=True)
class EmbeddedEngine:
    """An embedded engine: an official runtime from PyPI, identified by its full Firebird version
    (``EmbeddedEngine("5.0.4")``), or a registered build run from its own files (``root``).

    A build's fields are what ``fbbench engines add`` verified: its version (read from its
    engine plugin and confirmed by an attach), the on-disk structure its engine creates and the
    digest of its binaries then (:mod:`fbbench.engines.binaries`). They are plain strings, so a
    runtime passes the engine to its child as JSON.
    """

    version: str  # "5.0.4"
    root: str | None = None  # a build's files (the official layout); None: the PyPI runtime
    name: str | None = None  # the name the build was registered under (a label, never a condition)
    ods: str | None = None  # "13.1": what the build's engine creates
    binaries: str | None = None  # sha256 of its binaries when it was registered

    @property
    def major(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def is_build(self) -> bool:
        return self.root is not None

    @property
    def package_version(self) -> str:
        if self.is_build:
            raise FbbenchError(f"{self.label} is a registered build, not a package from PyPI")
        return EMBEDDED_PACKAGES[self.version]

    @property
    def label(self) -> str:
        return f"Firebird {self.version} embedded" + (f" ({self.name})" if self.is_build else "")

    @property
    def cache_engine(self) -> str:
        """What the population cache keys this engine's databases by: its major version, whose
        databases every build of it opens as they are (the same on-disk structure), unless a
        build creates another structure than the official releases of its major (a development
        snapshot): then the structure too, so no build opens a database of another ODS."""
        if self.ods is None or ODS_OF_MAJOR.get(self.major) == tuple(int(part) for part in self.ods.split(".")):
            return self.major
        return f"{self.major} ODS {self.ods}"


@dataclass(frozen=True)
class ServerEngine:
    """An external Firebird server; the DSN names the server and the database on it."""

    dsn: str
    host: str
    port: str | None
    path: str

    @property
    def label(self) -> str:
        return f"server {self.host}{'/' + self.port if self.port else ''}"

    def database_dsn(self, path: str | None = None) -> str:
        """The classic connection string for ``path`` (default: the DSN's own database)."""
        where = self.host + (f"/{self.port}" if self.port else "")
        return f"{where}:{path or self.path}"


Engine = EmbeddedEngine | ServerEngine | ManagedEngine

MANAGED_PREFIX = "server:"
EMBEDDED_PREFIX = "embedded:"
_ENGINE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,39}$")
_RESERVED_NAMES = {"server", "embedded"}
MODES = ("embedded", "server")


def known_versions() -> list[str]:
    return sorted(EMBEDDED_PACKAGES, key=lambda v: tuple(int(p) for p in v.split(".")))


def looks_like_dsn(text: str) -> bool:
    if _URL_DSN.match(text):
        return True
    match = _CLASSIC_DSN.match(text)
    # "C:/x" style drive letters do not exist on Linux; a one-letter host is still a host.
    return bool(match) and not text.startswith("/")


def parse_engine(text: str) -> Engine:
    """Turn ``--engine`` text into an engine, or explain what is accepted."""
    text = text.strip()
    if text.startswith(MANAGED_PREFIX):
        rest = text[len(MANAGED_PREFIX):]
        # A registered name (it has no '/') before a directory of that name in the current one.
        entry = registered_engines().get(rest) if _ENGINE_NAME.match(rest) else None
        return engine_of_entry(rest, entry, "server") if entry is not None else managed_engine(rest)
    if text.startswith(EMBEDDED_PREFIX):
        rest = text[len(EMBEDDED_PREFIX):]
        if _VERSION.match(rest):
            return _embedded_version(rest)
        entry = registered_engines().get(rest) if _ENGINE_NAME.match(rest) else None
        if entry is None:
            raise FbbenchError(f"unknown embedded engine '{rest}'",
                               hint="embedded: takes an embedded version (5.0) or a name registered with "
                               "fbbench engines add NAME PATH (fbbench engines list shows them)")
        return engine_of_entry(rest, entry, "embedded")
    if _VERSION.match(text):
        return _embedded_version(text)
    # A name has no ':' or '/', so it can never be a DSN: the registry is read only for names.
    registered = registered_engines() if _ENGINE_NAME.match(text) else {}
    if text in registered:
        return engine_of_entry(text, registered[text])
    for pattern in (_URL_DSN, _CLASSIC_DSN):
        match = pattern.match(text)
        if match and looks_like_dsn(text):
            path = match.group("path")
            if pattern is _URL_DSN and not path.startswith("/"):
                path = "/" + path
            return ServerEngine(text, match.group("host"), match.group("port"), path)
    registered = registered or registered_engines()
    close = difflib.get_close_matches(text, list(registered), n=1, cutoff=0.6)
    if close:
        hint = f"did you mean {close[0]}?"
    else:
        names = f", a registered engine ({', '.join(sorted(registered))})" if registered else ""
        hint = (f"use an embedded version (3.0, 4.0, 5.0){names}, server:DIR for a local Firebird "
                "installation fbbench starts itself, or a server DSN such as localhost/3050:/data/bench.fdb")
    raise FbbenchError(f"unknown engine '{text}'", hint=hint)


def _embedded_version(text: str) -> EmbeddedEngine:
    version = _VERSION.match(text)
    assert version is not None
    major, minor, patch = version.groups()
    wanted = [major, minor or "0"] + ([patch] if patch else [])
    prefix = ".".join(wanted)
    matches = [v for v in known_versions() if v == prefix or v.startswith(prefix + ".")]
    if len(matches) == 1:
        return EmbeddedEngine(matches[0])
    raise FbbenchError(
        f"unknown engine version '{text}'",
        hint=f"fbbench installs the embedded engines {', '.join(known_versions())} "
        "(name them 3.0, 4.0, 5.0 or by full version); another build is registered with fbbench engines add "
        "NAME PATH; a local installation whose server fbbench starts is server:DIR; an external server is a DSN "
        "such as localhost/3050:/data/bench.fdb",
    )


def engine_of_entry(name: str, entry: dict[str, Any], mode: str | None = None) -> EmbeddedEngine | ManagedEngine:
    """The engine a registered name stands for, run the way ``mode`` says (None: as registered;
    an entry from before builds existed has no mode and is a managed server)."""
    mode = mode or entry.get("mode") or "server"
    where = entry.get("source") or entry["directory"]
    if mode == "server":
        if entry.get("server") is False:
            raise FbbenchError(f"registered engine '{name}' has no server: {where} holds no bin/firebird",
                               hint=f"run it embedded: --engine {name} (or embedded:{name})")
        return managed_engine(entry["directory"], name=name)
    if not entry.get("embedded"):
        if "version" not in entry:
            raise FbbenchError(f"registered engine '{name}' ({where}) was registered as a server by an older fbbench",
                               hint=f"to run it embedded, register it again: fbbench engines remove {name} && "
                               f"fbbench engines add {name} {where}")
        reason = ("Debian's Firebird package, whose libraries only its server runs" if entry.get("layout") == "debian"
                  else "a server without an engine plugin (plugins/libEngine*.so)")
        raise FbbenchError(f"registered engine '{name}' ({where}) cannot run embedded: it is {reason}",
                           hint=f"run its server: --engine server:{name}")
    return EmbeddedEngine(entry["version"], root=entry["directory"], name=name, ods=entry.get("ods"),
                          binaries=entry.get("binaries"))


def managed_engine(directory: str, name: str | None = None) -> ManagedEngine:
    """The managed server of the installation in ``directory`` (checked: see installation.py)."""
    if not directory.strip():
        raise FbbenchError("server: needs the directory of a Firebird installation",
                           hint="e.g. --engine server:/usr (Debian's firebird3.0-server) or "
                           "--engine server:/opt/firebird (an official install)")
    try:
        return inspect_installation(directory)
    except FbbenchError as error:
        if name is None:
            raise
        raise FbbenchError(f"registered engine '{name}': {error.message}", hint=error.hint) from None


# ------------------------------------------------------------------------- registered engines
# A small JSON file in fbbench's home: name -> entry. An entry has the directory of the engine's
# files (the user's, or the copy fbbench unpacked from a tarball) and, since builds, what
# `fbbench engines add` found and verified there (runner/builds.py writes it): mode, kind,
# source, version, build, ods, binaries, embedded, server. A managed server's version is read
# from the installation each time, so an upgraded package is seen; an embedded build's files are
# checked against the binaries registered before each run (engines/runtime.py).


def engines_registry_file() -> Path:
    return paths.home_dir() / "engines.json"


def _read_registry(registry: Path) -> dict[str, Any]:
    """The registry file's document, checked to be one fbbench wrote: a damaged one is one line."""
    def damaged(why: str) -> FbbenchError:
        return FbbenchError(f"cannot read the engine registry {registry}: {why}",
                            hint="fix or delete that file, then register the engines again")

    try:
        data = json.loads(registry.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise damaged(str(error)) from None
    engines = data.get("engines", {}) if isinstance(data, dict) else None
    if not isinstance(engines, dict):
        raise damaged("it is not an object with the registered engines")
    for name, entry in engines.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("directory"), str) or \
                (entry.get("embedded") and not isinstance(entry.get("version"), str)):
            raise damaged(f"engine '{name}' is not an object with its directory and version")
    return data


@contextmanager
def _engines_registry(write: bool) -> Iterator[dict[str, dict[str, Any]]]:
    registry = engines_registry_file()
    if not write:
        # Reading never creates fbbench's home (read-only commands leave no trace).
        yield _read_registry(registry).get("engines", {})
        return
    registry.parent.mkdir(parents=True, exist_ok=True)
    with open(registry.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = _read_registry(registry)
        engines = data.setdefault("engines", {})
        yield engines
        paths.write_whole(registry, json.dumps(data, indent=2, sort_keys=True) + "\n")


def registered_engines() -> dict[str, dict[str, Any]]:
    """Registered engines: name -> entry (see above)."""
    with _engines_registry(write=False) as engines:
        return dict(engines)


def check_engine_name(name: str) -> None:
    """Refuse a name ``--engine`` could not tell from something else."""
    if _VERSION.match(name):
        raise FbbenchError(f"'{name}' names an embedded engine version, not a registered one",
                           hint="choose a name that starts with a letter, e.g. fb5-snapshot")
    if not _ENGINE_NAME.match(name) or name.lower() in _RESERVED_NAMES:
        raise FbbenchError(f"invalid engine name '{name}'",
                           hint="a name starts with a letter and has letters, digits, '.', '_' or '-' "
                           "(at most 40), e.g. fb3-debian; server and embedded are taken")


def source_of(entry: dict[str, Any]) -> str:
    """What the user registered: the tarball, or the directory."""
    return str(entry.get("source") or entry["directory"])


def taken_by_another(name: str, source: str) -> str | None:
    """The path ``name`` is registered for when that is not ``source``."""
    known = registered_engines().get(name)
    return source_of(known) if known is not None and source_of(known) != source else None


def save_registration(name: str, entry: dict[str, Any]) -> None:
    """Register ``entry`` under ``name`` (again, for the same path: its facts are renewed)."""
    with _engines_registry(write=True) as engines:
        known = engines.get(name)
        if known is not None and source_of(known) != source_of(entry):
            raise FbbenchError(f"engine '{name}' is already registered for {source_of(known)}",
                               hint=f"fbbench engines remove {name} first, or choose another name")
        engines[name] = {**entry, "added_at": time.time()}


def unregister_engine(name: str) -> dict[str, Any]:
    """Forget a registered name; returns its entry (the files it named are the caller's to judge)."""
    with _engines_registry(write=True) as engines:
        if name not in engines:
            known = ", ".join(sorted(engines)) or "none"
            raise FbbenchError(f"no registered engine named '{name}'", hint=f"registered: {known}")
        return dict(engines.pop(name))


def engine_for_ods(major: int, minor: int) -> EmbeddedEngine | None:
    for engine_major, ods in ODS_OF_MAJOR.items():
        if ods == (major, minor):
            return EmbeddedEngine(next(v for v in known_versions() if v.startswith(engine_major + ".")))
    return None
