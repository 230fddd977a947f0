"""A private Debian Firebird 3.0 server on loopback, started and owned by a test.

Tests need the real client/server path (a Firebird 5 client library talking TCP to another
engine), so this runs Debian 12's ``firebird3.0-server`` as a throw-away instance through the
product's own :class:`fbbench.engines.managed.server.ManagedServer` — its docstring explains how the
Debian build is redirected (configuration root, lock, temp, message file; the log through a
mount namespace), why a start waits for the security database, why stop() kills after a timeout
(the 1-in-50 SIGTERM hang) and how a port taken by someone else is told apart.

Here only what tests want on top: an instance directory made under the test's directory, and
SRP logins with wire encryption spelled out, so the FB5 client negotiates exactly what it would
with a stock 3.0 in the field.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Mapping
from pathlib import Path

from fbbench.engines.catalog import ManagedEngine
from fbbench.engines.installation import inspect_installation
from fbbench.engines.managed.server import DEBIAN_LOG_DIR, ManagedServer
from fbbench.errors import FbbenchError

__all__ = ["DEBIAN_LOG_DIR", "LOG_NAME", "Fb3Server", "debian_fb3", "fb3_server_unavailable"]

DEBIAN_PREFIX = Path("/usr")
# Debian renames firebird.log so that 2.5/3.0/4.0 packages can share the directory.
LOG_NAME = "firebird3.0.log"
INSTALL_COMMAND = "apt-get install -y firebird3.0-server"
_STOCK_SECURITY = {"AuthServer": "Srp", "UserManager": "Srp", "WireCrypt": "Enabled"}


@functools.cache
def _inspect() -> ManagedEngine | str:
    try:
        engine = inspect_installation(DEBIAN_PREFIX)
    except FbbenchError as error:
        return f"Debian's Firebird 3.0 server cannot be run: {error.message} ({error.hint or INSTALL_COMMAND})"
    if engine.layout != "debian" or engine.major != "3.0":
        return f"{DEBIAN_PREFIX} holds {engine.label}, not Debian's Firebird 3.0; as root: {INSTALL_COMMAND}"
    return engine


def fb3_server_unavailable() -> str | None:
    """None when Debian's Firebird 3.0 server can be run here, otherwise why not and how to fix it."""
    found = _inspect()
    return found if isinstance(found, str) else None


def debian_fb3() -> ManagedEngine:
    found = _inspect()
    if isinstance(found, str):
        raise RuntimeError(found)
    return found


class Fb3Server(ManagedServer):
    """A :class:`ManagedServer` of Debian's 3.0 in a fresh directory under a test's ``workdir``."""

    workdir: Path

    @classmethod
    def start(cls, workdir: Path, *, config: Mapping[str, str] | None = None) -> Fb3Server:  # type: ignore[override]
        """Create a private instance under ``workdir`` and return it once it listens."""
        engine = debian_fb3()
        workdir = Path(workdir).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        home = Path(tempfile.mkdtemp(prefix="fb3server-", dir=workdir))
        server = super().start(engine, home, conf={**_STOCK_SECURITY, **(config or {})})
        assert isinstance(server, Fb3Server)
        server.workdir = workdir
        return server

    def __repr__(self) -> str:
        return "<Fb3Server " + super().__repr__().removeprefix("<ManagedServer ")
