"""The managed local server: a Firebird server fbbench starts, owns and stops for a run.

:mod:`~fbbench.engines.managed.server` starts and watches one server (its docstring tells how,
and why); this module gives a run its server together with the client runtime that reaches it,
and stops the servers whose owner died. The installations it starts them from are read by
:mod:`fbbench.engines.installation`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from fbbench.engines.installation import ManagedEngine
from fbbench.engines.managed.server import PID_FILE, ManagedServer, kill_instance
from fbbench.engines.platform import process_alive
from fbbench.engines.runtime import Runtime, prepare_runtime

__all__ = ["ManagedRun", "ManagedServer", "running", "server_home", "stop_abandoned_servers"]


@dataclass
class ManagedRun:
    """What a run needs from its managed server."""

    engine: ManagedEngine
    server: ManagedServer
    runtime: Runtime  # the Firebird 5 client that reaches the server, its user and password set
    # Where clients reach the server when not on its own loopback (a machine shape's link).
    reached_at: tuple[str, int] | None = None

    @property
    def data_dir(self) -> Path:
        """The server's own data directory (inside the run's runtime directory)."""
        return self.server.data_dir

    def dsn(self, path: Path | str) -> str:
        if self.reached_at is not None:
            return f"{self.reached_at[0]}/{self.reached_at[1]}:{Path(path).resolve()}"
        return self.server.dsn(path)

    @property
    def services_host(self) -> str:
        if self.reached_at is not None:
            return f"{self.reached_at[0]}/{self.reached_at[1]}"
        return self.server.services_host

    @property
    def user(self) -> str:
        return self.server.user

    @property
    def password(self) -> str:
        return self.server.password


def server_home(runtime_base: Path) -> Path:
    """Where a run's managed server lives: beside its client root, removed with it."""
    return runtime_base / "server"


@contextlib.contextmanager
def running(engine: ManagedEngine, workdir: Path, conf: Mapping[str, str] | None, name: str,
            launcher: Callable[[list[str]], list[str]] | None = None) -> Iterator[ManagedRun]:
    """A managed server for one run named ``name``, with the client runtime that reaches it.

    The client runtime (Firebird 5 client library, as for any server) is the run's runtime root
    ``workdir/runtimes/<name>``; the server lives in its ``server`` directory. The server is
    stopped when the block ends, whatever ends it; the files stay for the run's clean-up.
    ``launcher``: a machine shape's prefix for the server's command (its cgroup, its network namespace).
    """
    runtime = prepare_runtime(engine, workdir, dict(conf or {}), name=name)
    server = ManagedServer.start(engine, server_home(runtime.base), conf=runtime.conf, launcher=launcher)
    runtime.user, runtime.password = server.user, server.password
    try:
        yield ManagedRun(engine, server, runtime)
    finally:
        server.stop()


def stop_abandoned_servers(workdir: Path) -> list[str]:
    """Kill the managed servers in ``workdir`` whose owner is gone (fbbench killed with -9, a
    crash); returns what was stopped. Servers of live fbbench processes are left alone."""
    stopped = []
    for record_file in sorted(workdir.glob(f"runtimes/*/server/{PID_FILE}")):
        home = record_file.parent
        try:
            record = json.loads(record_file.read_text())
            # Records of fbbench versions before owner_create_time: the owner's pid alone.
            owner, owner_created = int(record["owner_pid"]), record.get("owner_create_time")
        except (OSError, ValueError, KeyError, TypeError):
            owner, owner_created, record = -1, None, {}
        if owner > 0 and process_alive(owner, owner_created):
            continue
        killed = kill_instance(record.get("home") or home)  # the marker holds the path the owner used
        if killed:
            stopped.append(f"{record.get('engine', 'managed server')} (pid {', '.join(map(str, killed))}) in {home}")
        with contextlib.suppress(OSError):
            record_file.unlink()
    return stopped
