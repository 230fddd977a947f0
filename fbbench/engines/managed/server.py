"""A local Firebird server that fbbench starts, owns and stops: ``--engine server:DIR``.

For each run fbbench starts its own server process from the Firebird installation in DIR, with
the run's firebird.conf, on a free port on 127.0.0.1, with its own lock, temp and log
directories and its own security database holding a random SYSDBA password. The run talks to it
over TCP with the Firebird 5 client library of the embedded runtime, as for any server. Nothing
of a system-wide Firebird service (Debian's postinst may start one on port 3050) is used or
touched, and the installation's own firebird.conf is not read: like an embedded run, a managed
run has the engine's defaults plus ``--set``, so the recorded conf is the whole story.

What "an installation" is — two layouts, told apart by where the server binary is:

* **official** (the tarball from firebirdsql.org / GitHub, installed under ``/opt/firebird``):
  ``DIR/bin/firebird``, ``DIR/bin/isql``, ``DIR/lib``, ``DIR/plugins``, ``DIR/intl``,
  ``DIR/firebird.conf`` (its documented keys), ``DIR/firebird.msg``. These builds find every
  directory relative to their root (``$FIREBIRD``), the log included (``$(root)/firebird.log``).
  So the instance's root is a mirror of DIR — hard links, or copies where links are refused,
  exactly as embedded runtime roots are built (Firebird 4+ refuses a plugin whose real path
  differs from the requested one, which rules out symlinks) — plus fbbench's own
  firebird.conf and databases.conf; the security database is the instance's (in its
  ``security`` directory, named by ``SecurityDatabase``). The server binary runs from the mirror,
  so its ``$ORIGIN/../lib`` and the plugins' are the mirror's too. Untested here: the official
  tarballs are not reachable from this project's machines; the layout comes from Firebird's own
  ``makeInstallImage.sh`` and ``configure.ac`` (every directory relative to the prefix).
* **debian** (``firebird3.0-server``; DIR=/usr): ``DIR/sbin/firebird``, ``DIR/bin/isql-fb``,
  libraries, plugins, intl and the message file in ``DIR/lib/<triplet>/firebird/<major>/``, the
  documented firebird.conf there too (a link into /etc). Debian compiles most directories in;
  found by experiment on 3.0.11.33637.ds4-2+deb12u1, only the configuration root
  (``FIREBIRD``: firebird.conf, databases.conf, plugins.conf), the message file
  (``FIREBIRD_MSG``), the lock directory (``FIREBIRD_LOCK``) and ``FIREBIRD_TMP`` follow the
  environment; the security database is then a firebird.conf setting (``SecurityDatabase``).
  Debian's fbintl.conf names ``$(root)/intl/fbintl``, so the root carries a link to Debian's
  intl directory. The log is compiled in as ``/var/log/firebird/firebird<major>.log`` and no
  setting moves it: the server runs in a private mount namespace where the instance's log
  directory is bind-mounted over ``/var/log/firebird`` (``unshare --mount`` as root,
  ``unshare --map-root-user --mount`` otherwise). Where namespaces are not allowed (an
  unprivileged container), the server writes Debian's shared log (if it may) and
  :meth:`ManagedServer.log_tail` shows only what was appended since this instance started.
* The same namespace gives the security database a short path: the instance's ``security``
  directory is bind-mounted over ``/var/lib/firebird`` (which the server does not otherwise use),
  so ``SecurityDatabase = /var/lib/firebird/security3.fdb``. Firebird 3.0 copies that path
  twice into a 255-byte field whenever a service starts (sweep, gstat, gfix), and fails every
  services call once the path is longer than 99 characters — easily reached under a work
  directory. Without a namespace the real path is used, and a path too long is refused before
  anything starts.

How the server is run and watched (Debian 3.0.11 behaviour measured; the official builds share
the code):

* ``firebird`` run directly (not through ``fbguard``) stays in the foreground, so the process
  fbbench starts is the server: SIGTERM shuts it down cleanly in about 0.1 s, and no guardian
  restarts it behind fbbench's back. It gets a session of its own, so a Ctrl-C on the terminal
  never reaches it (fbbench stops it once the run has kept what it measured), and
  ``ServerMode = Classic`` forks one server process per attachment into that process group.
* About 1 SIGTERM in 50 (3.0.11, at any time after start, with or without attachments) the
  server never finishes the shutdown: its main thread stays in the listener's poll (over 77 s
  seen) and neither a new connection nor another SIGTERM ends it. :meth:`ManagedServer.stop`
  therefore kills it after ``timeout`` (``returncode`` is then -9). A SIGTERM landing while the
  server attaches its security database right after it starts listening makes that hang far
  more likely (1 start in 30), so a start waits for that attachment's footprint first.
* If the port is taken, the 3.0 server does not exit: it retries ``bind`` for about a minute,
  while a "does the port accept connections" probe would happily talk to the other listener.
  Readiness is therefore "a LISTEN socket on our port held by our server process", read from
  the process's sockets (psutil) without connecting.

Kill safety — no server outlives its owner:

* every process of an instance carries ``FBBENCH_MANAGED_SERVER=<instance directory>`` in its
  environment (Classic's forked servers inherit it), so "the instance's processes" is read from
  /proc without trusting process ids or groups that may have been reused;
* the server dies with the process that started it, even on kill -9: a tiny wrapper sets
  PR_SET_PDEATHSIG(SIGKILL) right before exec'ing the server — after ``unshare``, since entering
  a user namespace clears it — and exits at once if its owner is already gone. Linux sends that
  signal when the *thread* that forked the server ends, so start servers from a thread that
  lives as long as the server (fbbench's main thread does);
* Classic's forked servers do not inherit that setting, and a server may be left by an owner
  killed before the wrapper ran: each instance writes ``server.json`` (owner pid and start time,
  server pid, port — never the password) and :func:`stop_abandoned_servers`, called by the next
  run's clean-up, kills the processes of every instance whose owner is gone.

The SYSDBA password is random, made when the instance is, and lives only in memory: isql gets
it on stdin to create the security database (which stores an SRP verifier, not the password),
engine children get it in their request (a pipe, like any server password: :mod:`fbbench.engines.child`),
and no file, log, environment, command line, results store or report ever holds it.
"""


from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import psutil

from fbbench import __version__
from fbbench.engines.installation import (
    MARKER,
    ManagedEngine,
    clean_environment,
    layout_of,
    official_library_path,
)
from fbbench.engines.platform import (
    dying_with_owner,
    in_own_session,
    kill_group,
    listening_ports,
    open_paths,
    private_mount_namespace,
    process_alive,
    with_bind_mounts,
)
from fbbench.engines.rootfs import link_file, link_tree
from fbbench.errors import FbbenchError

HOST = "127.0.0.1"
USER = "SYSDBA"
START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0
DEBIAN_LOG_DIR = Path("/var/log/firebird")
# Debian's data directory: only seen by the server, in its namespace, holding its security database.
DEBIAN_DATA_DIR = Path("/var/lib/firebird")
# Firebird 3.0 fails every services call ("attempt to store N bytes in a clumplet with maximum
# size 255 bytes", N = 2 x path + 57, measured on 3.0.11) once its security database's path is
# longer than 99 characters.
FB3_SECURITY_PATH_LIMIT = 99
PID_FILE = "server.json"
# The addresses whose LISTEN socket holds a port for 127.0.0.1: itself, any IPv4 address, or
# (dual-stack) any or the mapped loopback IPv6 address.
_HOLDS_LOOPBACK = {HOST, "0.0.0.0", "::", "::ffff:127.0.0.1"}
# Top-level entries of an official install that a server root does not need, or must not share:
# the installation's conf, log and security databases are replaced by the instance's own.
_OFFICIAL_SKIP = {"firebird.conf", "databases.conf", "firebird.log", "SYSDBA.password", "fb_guard", "bin", "doc",
                  "examples", "include", "misc", "help"}
_OFFICIAL_BINARIES = ("firebird", "isql")


# ------------------------------------------------------------------------------------ processes


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def _holds_port(connection: Any, port: int) -> bool:
    return (connection.status == psutil.CONN_LISTEN and connection.laddr.port == port
            and connection.laddr.ip in _HOLDS_LOOPBACK)


def _listens(pid: int, port: int) -> bool:
    """Whether the process ``pid`` has a LISTEN socket holding ``port`` for 127.0.0.1."""
    try:
        return any(_holds_port(connection, port) for connection in psutil.Process(pid).net_connections("tcp"))
    except psutil.Error:
        return False


def _port_held(port: int) -> bool:
    """Whether any process has a LISTEN socket holding ``port`` for 127.0.0.1."""
    try:
        return any(_holds_port(connection, port) for connection in psutil.net_connections("tcp"))
    except psutil.Error:
        return False


def instance_processes(home: Path | str) -> list[int]:
    """Live processes of the instance in ``home``: those whose environment carries its marker."""
    home = str(home)
    found = []
    for process in psutil.process_iter(["environ"]):
        environ = process.info["environ"]  # None: another user's, or gone
        if environ and environ.get(MARKER) == home and process_alive(process.pid):
            found.append(process.pid)
    return sorted(found)


def kill_instance(home: Path | str, timeout: float = 5.0) -> list[int]:
    """SIGKILL every process of the instance until none is left; returns the pids signalled."""
    signalled: list[int] = []
    deadline = time.monotonic() + timeout
    while True:
        remaining = instance_processes(home)
        if not remaining or time.monotonic() > deadline:
            return signalled
        for pid in remaining:
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()
            if pid not in signalled:
                signalled.append(pid)
        time.sleep(0.02)


# ---------------------------------------------------------------------------------- the server


class ManagedServer:
    """One private Firebird server on 127.0.0.1, owned by this process; see the module docstring.

    ``ManagedServer.start(engine, home)`` builds the instance in the directory ``home`` and
    returns it once it serves; use it as a context manager, or call :meth:`stop` / :meth:`kill`.
    """

    host = HOST
    user = USER

    def __init__(self, engine: ManagedEngine, home: Path, *, conf: Mapping[str, str] | None = None,
                 port: int | None = None, launcher: Callable[[list[str]], list[str]] | None = None) -> None:
        self.engine = engine
        # A machine shape's (fbbench.shape): the server started inside its cgroup and network
        # namespace, where it listens on that namespace's loopback.
        self.launcher = launcher
        self.layout = layout_of(engine)
        self.home = Path(home).absolute()
        self.root = self.home / "root"
        self.lock_dir = self.home / "lock"
        self.tmp_dir = self.home / "tmp"
        self.log_dir = self.home / "log"
        self.data_dir = self.home / "data"
        self.security_dir = self.home / "security"
        self.security_db = self.security_dir / self.layout.security_name  # as fbbench sees it
        self.conf = dict(conf or {})
        self.port = port or 0
        self._fixed_port = port is not None
        self.__password = secrets.token_hex(16)
        self._process: subprocess.Popen[bytes] | None = None
        self._namespace = private_mount_namespace(DEBIAN_LOG_DIR, DEBIAN_DATA_DIR) if self.layout.debian else None
        # As the server sees it: short inside its namespace (see the module docstring).
        self._security_path = DEBIAN_DATA_DIR / self.layout.security_name if self._namespace else self.security_db
        if not self.layout.debian:
            self.log_path = self.root / "firebird.log"
        elif self._namespace:
            self.log_path = self.log_dir / self.layout.log_name
        else:  # Debian's shared log: remember where this instance's part begins
            self.log_path = DEBIAN_LOG_DIR / self.layout.log_name
        self._log_offset = 0

    @property
    def password(self) -> str:
        """SYSDBA's password: random, made with the instance, never written anywhere."""
        return self.__password

    # -- lifecycle ------------------------------------------------------------------------------

    @classmethod
    def start(cls, engine: ManagedEngine, home: Path, *, conf: Mapping[str, str] | None = None,
              port: int | None = None, launcher: Callable[[list[str]], list[str]] | None = None) -> ManagedServer:
        """Build the instance in ``home`` and start its server; returns once it serves.

        ``port`` None takes a free one; a given port that is taken is an error.
        """
        server = cls(engine, home, conf=conf, port=port, launcher=launcher)
        try:
            server._prepare()
            server._launch()
        except BaseException:  # a failed or interrupted start leaves nothing running
            server._kill_all()
            raise
        return server

    def restart(self) -> None:
        """Start the same instance again (same root, databases, port and password) after stop/kill."""
        if self.is_running():
            raise FbbenchError("the managed server is still running; stop it first")
        try:
            self._launch(keep_port=True)
        except BaseException:
            self._kill_all()
            raise

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Shut down gracefully (SIGTERM: the server closes its databases), killing whatever is
        left after ``timeout`` — the hung shutdown, Classic's per-attachment servers."""
        process = self._process
        if process is None:
            return
        try:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout)
        finally:  # also when a second Ctrl-C interrupts the wait
            self._kill_all()

    def kill(self) -> None:
        """SIGKILL every process of the server: a crash, as "the server died mid-run" needs."""
        if self._process is not None:
            self._kill_all()

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def processes(self) -> list[int]:
        """Every live process of this instance (the server; Classic's per-attachment servers)."""
        return instance_processes(self.home)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def returncode(self) -> int | None:
        """The exit status of the last server process (negative: killed by that signal)."""
        return self._process.poll() if self._process else None

    def __enter__(self) -> ManagedServer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- use ------------------------------------------------------------------------------------

    def dsn(self, path: Path | str) -> str:
        """Classic ``host/port:path`` form, understood by every client library version."""
        return f"{self.host}/{self.port}:{Path(path).resolve()}"

    @property
    def services_host(self) -> str:
        """What the services API connects to ("host/port")."""
        return f"{self.host}/{self.port}"

    def log_text(self, max_chars: int = 200_000) -> str:
        """What this instance wrote to its firebird.log (the last ``max_chars`` characters)."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_offset)
                text = log.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""
        except OSError as error:
            return f"({self.log_path} is not readable: {error.strerror})"
        return text[-max_chars:]

    def log_tail(self, n: int = 40) -> str:
        """The last ``n`` lines this instance wrote to its firebird.log."""
        return "\n".join(self.log_text().splitlines()[-n:])

    # -- internals ------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = clean_environment()
        env.update(FIREBIRD=str(self.root), FIREBIRD_LOCK=str(self.lock_dir), FIREBIRD_TMP=str(self.tmp_dir))
        env[MARKER] = str(self.home)
        if self.layout.debian:
            env["FIREBIRD_MSG"] = str(self.layout.libdir)
        else:
            env["LD_LIBRARY_PATH"] = official_library_path(self.layout.directory, self.home / "lib")
        return env

    def _binary(self, name: str) -> Path:
        if self.layout.debian:
            return self.layout.server if name == "firebird" else self.layout.isql
        return self.root / "bin" / name  # the mirror's: its $ORIGIN/../lib is the mirror's lib

    def _command(self, *argv: str) -> list[str]:
        if self._namespace is None:
            return list(argv)
        return with_bind_mounts(self._namespace, [(self.log_dir, DEBIAN_LOG_DIR), (self.security_dir, DEBIAN_DATA_DIR)],
                                argv)

    def _scrub(self, text: str) -> str:
        return text.replace(self.__password, "********")

    def _write_config(self) -> None:
        settings = {
            **self.conf,
            "RemoteServicePort": str(self.port),
            "RemoteBindAddress": self.host,
            "SecurityDatabase": str(self._security_path),
        }
        lines = [f"# Generated by fbbench {__version__} for {self.engine.label}.",
                 "# Settings not listed here have the engine's defaults.", ""]
        lines += [f"{key} = {value}" for key, value in settings.items()]
        (self.root / "firebird.conf").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def _build_root(self) -> None:
        if self.layout.debian:
            # Debian's plugins are found by a compiled-in path; intl is found through the root.
            for name in ("intl", "UDF", "plugins.conf", "fbtrace.conf"):
                if (self.layout.libdir / name).exists():
                    (self.root / name).symlink_to(self.layout.libdir / name)
            return
        source = self.layout.directory
        skip = _OFFICIAL_SKIP | {item.name for item in source.iterdir() if item.name.endswith(".fdb")}
        try:
            link_tree(source, self.root, skip)
            (self.root / "bin").mkdir()
            for name in _OFFICIAL_BINARIES:
                link_file(source / "bin" / name, self.root / "bin" / name)
        except OSError as error:
            raise FbbenchError(f"cannot mirror {source} into the server's root {self.root}: {error}",
                               hint="check that every file of the installation is readable") from None

    def _prepare(self) -> None:
        if self.home.exists() and any(self.home.iterdir()):
            raise FbbenchError(f"the managed server's directory {self.home} is not empty")
        if not self.layout.debian or not self._namespace:
            with contextlib.suppress(OSError):
                self._log_offset = self.log_path.stat().st_size
        if self.engine.major == "3.0" and len(str(self._security_path)) > FB3_SECURITY_PATH_LIMIT:
            raise FbbenchError(f"the managed server's security database path {self._security_path} is too long for "
                               f"Firebird 3.0's services ({len(str(self._security_path))} characters, at most "
                               f"{FB3_SECURITY_PATH_LIMIT})", hint="give a shorter --workdir")
        for directory in (self.home, self.root, self.lock_dir, self.tmp_dir, self.log_dir, self.data_dir,
                          self.security_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self._build_root()
        (self.root / "databases.conf").write_text(f"security.db = {self._security_path}\n", encoding="utf-8")
        if self._fixed_port:
            if not _port_is_free(self.port):
                raise FbbenchError(f"port {self.port} on {self.host} is taken by another process",
                                   hint="choose another port, or let fbbench pick a free one")
        else:
            self.port = _free_port()
        self._write_config()
        self._create_security_database()

    def _create_security_database(self) -> None:
        # A fresh security database instead of a copy of the installation's: Debian's is readable
        # only by root and the firebird group, and SRP creates its tables on first use. The
        # server's own isql works on it embedded (no server involved); the password goes on stdin.
        sql = (f"create database '{self._security_path}';\n"
               f"create user {self.user} password '{self.__password}' using plugin Srp;\n"
               "commit;\n")
        try:
            done = subprocess.run(self._command(str(self._binary("isql")), "-q", "-b", "-user", self.user),
                                  input=sql, capture_output=True, text=True, env=self._env(), timeout=60,
                                  cwd=self.home)
        except subprocess.TimeoutExpired:
            kill_instance(self.home)
            raise FbbenchError(f"creating the security database {self.security_db} took over 60 s",
                               hint=f"see {self.log_path}") from None
        except OSError as error:
            raise FbbenchError(f"cannot run {self._binary('isql')}: {error.strerror}") from None
        if done.returncode != 0 or not self.security_db.exists():
            output = self._scrub(done.stdout + done.stderr).strip().splitlines()
            detail = next((line.strip() for line in reversed(output) if line.strip()), "")
            if done.returncode < 0:  # e.g. SIGBUS: Firebird maps its lock files, and a full disk faults
                detail = f"isql was killed by {signal.Signals(-done.returncode).name}" + (f" ({detail})" if detail
                                                                                          else "")
            hint = f"see {self.log_path}"
            with contextlib.suppress(OSError):
                if shutil.disk_usage(self.home).free < 8 << 20:
                    hint = f"the file system of {self.home} is full"
            raise FbbenchError(f"could not create the security database {self.security_db}: "
                               f"{detail or f'isql ended with status {done.returncode}'}", hint=hint)

    def _launch(self, keep_port: bool = False) -> None:
        for attempt in range(3):
            if attempt:
                # Someone else took the port between choosing and binding it: try another one.
                if keep_port or self._fixed_port:
                    break
                self.port = _free_port()
                self._write_config()
            launched_mtime = self.security_db.stat().st_mtime_ns
            self._process = self._spawn()
            _running.add(self)
            if self._wait_listening():
                self._settle(launched_mtime)
                return
            self._kill_all()
        raise FbbenchError(f"port {self.port} on {self.host} is taken by another process",
                           hint="another program listens on it; fbbench picks a free port unless one is given")

    def _spawn(self) -> subprocess.Popen[bytes]:
        argv = dying_with_owner([str(self._binary("firebird"))])
        # Its own session: a Ctrl-C on the terminal is fbbench's to handle, and the process group
        # holds Classic's per-attachment servers. Output goes to the instance directory.
        command = self._command(*argv)
        if self.launcher is not None:
            command = self.launcher(command)
        with open(self.home / "server.out", "ab") as out:
            process = subprocess.Popen(command, env=self._env(), cwd=self.home,
                                       stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                       **in_own_session())
        record = {"owner_pid": os.getpid(), "owner_create_time": psutil.Process().create_time(), "pid": process.pid,
                  "port": self.port, "engine": self.engine.label, "home": str(self.home), "started_at": time.time()}
        (self.home / PID_FILE).write_text(json.dumps(record, indent=2) + "\n")
        return process

    def _wait_listening(self) -> bool:
        """True once our server listens on the port; False if another process holds it."""
        assert self._process is not None
        started = time.monotonic()
        deadline = started + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise FbbenchError(f"the {self.engine.label} exited with status {self._process.returncode} while "
                                   f"starting{self._last_log_line()}", hint=f"its log: {self.log_path}")
            if self.launcher is not None:  # in a namespace of its own, where no one else listens
                if self.port in listening_ports(self._process.pid):
                    return True
            elif _listens(self._process.pid, self.port):
                return True
            if self.launcher is None and time.monotonic() - started > 1.0 and _port_held(self.port):
                return False
            time.sleep(0.02)
        raise FbbenchError(f"the {self.engine.label} did not listen on {self.host}:{self.port} within "
                           f"{START_TIMEOUT:.0f} s{self._last_log_line()}", hint=f"its log: {self.log_path}")

    def _last_log_line(self) -> str:
        line = next((text for text in reversed(self.log_tail(5).splitlines()) if text.strip()), "")
        return f"; its log ends with: {line.strip()}" if line else ""

    def _settle(self, launched_mtime: int) -> None:
        # Listening is not ready yet: the main thread then attaches the security database once,
        # before it enters its accept loop, and a SIGTERM during that attachment hangs the
        # shutdown (see the module docstring). Its footprint: the header is written (mtime
        # changes) and the file is closed again (under either name: /proc shows the server's).
        assert self._process is not None
        names = {str(self.security_db), str(self._security_path)}
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and self._process.poll() is None:
            if self.security_db.stat().st_mtime_ns != launched_mtime and not names & open_paths(self._process.pid):
                return
            time.sleep(0.005)

    def _kill_all(self) -> None:
        process = self._process
        if process is not None and process.returncode is None:
            # While the server is not reaped its pid still names our process group.
            kill_group(process.pid)
            with contextlib.suppress(ChildProcessError):
                process.wait()
        kill_instance(self.home)
        _running.discard(self)
        with contextlib.suppress(OSError):
            (self.home / PID_FILE).unlink()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"<ManagedServer {self.engine.label} {self.host}:{self.port} {state} home={self.home}>"


# Strong references on purpose: a server its owner forgot to stop is still stopped at exit.
_running: set[ManagedServer] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_running):
        server.stop(timeout=3)
