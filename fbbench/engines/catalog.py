"""Which Firebird engines fbbench knows, and how an engine is named on the command line.

An engine is one of:

- an official embedded runtime from PyPI (``5.0``, ``4``, ``3.0.14``);
- a managed local server (``server:DIR``, or a name registered with ``fbbench engines add NAME
  DIR``): fbbench starts its own server process from the Firebird installation in DIR for each
  run (:mod:`fbbench.engines.managed`);
- an external server given as a DSN (``host/port:/path/db.fdb``, ``host:/path/db.fdb``,
  ``inet://host:port//path/db.fdb``), which fbbench only connects to.

``server:`` always means a managed server, so a DSN on a host literally named "server" is written
``server/3050:/path/db.fdb`` or ``inet://server/path/db.fdb``.
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
    """An official embedded runtime, identified by its full Firebird version."""

    version: str  # "5.0.4"

    @property
    def major(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def package_version(self) -> str:
        return EMBEDDED_PACKAGES[self.version]

    @property
    def label(self) -> str:
        return f"Firebird {self.version} embedded"


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
_ENGINE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,39}$")


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
        return managed_engine(text[len(MANAGED_PREFIX):])
    version = _VERSION.match(text)
    if version:
        major, minor, patch = version.groups()
        wanted = [major, minor or "0"] + ([patch] if patch else [])
        prefix = ".".join(wanted)
        matches = [v for v in known_versions() if v == prefix or v.startswith(prefix + ".")]
        if len(matches) == 1:
            return EmbeddedEngine(matches[0])
        raise FbbenchError(
            f"unknown engine version '{text}'",
            hint=f"fbbench installs the embedded engines {', '.join(known_versions())} "
            "(name them 3.0, 4.0, 5.0 or by full version); a local installation whose server fbbench "
            "starts is server:DIR; an external server is a DSN such as localhost/3050:/data/bench.fdb",
        )
    # A name has no ':' or '/', so it can never be a DSN: the registry is read only for names.
    registered = registered_engines() if _ENGINE_NAME.match(text) else {}
    if text in registered:
        return managed_engine(registered[text]["directory"], name=text)
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
        names = f" or a registered server ({', '.join(sorted(registered))})" if registered else ""
        hint = (f"use an embedded version (3.0, 4.0, 5.0){names}, server:DIR for a local Firebird "
                "installation fbbench starts itself, or a server DSN such as localhost/3050:/data/bench.fdb")
    raise FbbenchError(f"unknown engine '{text}'", hint=hint)


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


# ------------------------------------------------------------------ registered managed servers
# A small JSON file in fbbench's home: name -> installation directory. Only the directory is
# kept: the version is read from the installation each time, so an upgraded package is seen.


def engines_registry_file() -> Path:
    return paths.home_dir() / "engines.json"


@contextmanager
def _engines_registry(write: bool) -> Iterator[dict[str, dict[str, Any]]]:
    registry = engines_registry_file()
    if not write:
        # Reading never creates fbbench's home (read-only commands leave no trace).
        try:
            yield json.loads(registry.read_text()).get("engines", {})
        except FileNotFoundError:
            yield {}
        except (OSError, ValueError) as error:
            raise FbbenchError(f"cannot read the engine registry {registry}: {error}",
                               hint="fix or delete that file, then register the engines again") from None
        return
    registry.parent.mkdir(parents=True, exist_ok=True)
    with open(registry.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(registry.read_text()) if registry.exists() else {}
        engines = data.setdefault("engines", {})
        yield engines
        paths.write_whole(registry, json.dumps(data, indent=2, sort_keys=True) + "\n")


def registered_engines() -> dict[str, dict[str, Any]]:
    """Registered managed servers: name -> {"directory", "added_at"}."""
    with _engines_registry(write=False) as engines:
        return dict(engines)


def register_engine(name: str, directory: str) -> ManagedEngine:
    """Remember ``directory`` under ``name`` once it is a Firebird installation fbbench can run."""
    if not _ENGINE_NAME.match(name) or name.lower() == "server":
        raise FbbenchError(f"invalid engine name '{name}'",
                           hint="a name starts with a letter and has letters, digits, '.', '_' or '-' "
                           "(at most 40), e.g. fb3-debian")
    engine = managed_engine(directory)
    with _engines_registry(write=True) as engines:
        known = engines.get(name)
        if known is not None and known["directory"] != engine.directory:
            raise FbbenchError(f"engine '{name}' is already registered for {known['directory']}",
                               hint=f"fbbench engines remove {name} first, or choose another name")
        engines[name] = {"directory": engine.directory, "added_at": time.time()}
    return engine


def unregister_engine(name: str) -> str:
    """Forget a registered name; returns the directory it named (the installation is untouched)."""
    with _engines_registry(write=True) as engines:
        if name not in engines:
            known = ", ".join(sorted(engines)) or "none"
            raise FbbenchError(f"no registered engine named '{name}'", hint=f"registered: {known}")
        return str(engines.pop(name)["directory"])


def engine_for_ods(major: int, minor: int) -> EmbeddedEngine | None:
    for engine_major, ods in ODS_OF_MAJOR.items():
        if ods == (major, minor):
            return EmbeddedEngine(next(v for v in known_versions() if v.startswith(engine_major + ".")))
    return None
