"""Which Firebird engines fbbench knows, and how an engine is named on the command line.

An engine is either an official embedded runtime from PyPI (``5.0``, ``4``, ``3.0.14``) or an
external server given as a DSN (``host/port:/path/db.fdb``, ``host:/path/db.fdb``,
``inet://host:port//path/db.fdb``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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


Engine = EmbeddedEngine | ServerEngine


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
            "(name them 3.0, 4.0, 5.0 or by full version); an external server is given as "
            "a DSN such as localhost/3050:/data/bench.fdb",
        )
    for pattern in (_URL_DSN, _CLASSIC_DSN):
        match = pattern.match(text)
        if match and looks_like_dsn(text):
            path = match.group("path")
            if pattern is _URL_DSN and not path.startswith("/"):
                path = "/" + path
            return ServerEngine(text, match.group("host"), match.group("port"), path)
    raise FbbenchError(
        f"unknown engine '{text}'",
        hint="use an embedded version (3.0, 4.0, 5.0) or a server DSN such as "
        "localhost/3050:/data/bench.fdb",
    )


def engine_for_ods(major: int, minor: int) -> EmbeddedEngine | None:
    for engine_major, ods in ODS_OF_MAJOR.items():
        if ods == (major, minor):
            return EmbeddedEngine(next(v for v in known_versions() if v.startswith(engine_major + ".")))
    return None
