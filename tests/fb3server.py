"""A private Debian Firebird 3.0 server on loopback, started and owned by a test.

Tests need the real client/server path (a Firebird 5 client library talking TCP to another
engine), so this module runs Debian 12's ``firebird3.0-server`` binaries as a throw-away
instance: own configuration root, own security database and SYSDBA password, own lock and temp
directories, own firebird.log, a free port on 127.0.0.1. Nothing of a system-wide Firebird
service (which the package's postinst may start on port 3050) is used or touched.

How the Debian build can be redirected (found by experiment on 3.0.11.33637.ds4-2+deb12u1):

* Debian compiles most directories in (plugins, intl, log, security db, lock); of those, only the
  configuration root, the message file and the lock directory follow the environment:
  ``FIREBIRD`` (where firebird.conf, databases.conf, plugins.conf are read), ``FIREBIRD_MSG``,
  ``FIREBIRD_LOCK`` and ``FIREBIRD_TMP``. The security database is then a firebird.conf setting
  (``SecurityDatabase``). Debian's fbintl.conf names ``$(root)/intl/fbintl``, which now points
  into our root, so the root carries a symlink to Debian's intl directory.
* The log file is compiled in as ``/var/log/firebird/firebird3.0.log`` and no setting moves it.
  To give each instance its own log, the server runs in a private mount namespace where its
  own directory is bind-mounted over ``/var/log/firebird`` (``unshare --mount`` as root,
  ``unshare --map-root-user --mount`` otherwise). Where namespaces are not allowed (an
  unprivileged container), the instance falls back to the shared file and ``log_tail`` shows
  only what was appended since this instance started.
* ``/usr/sbin/firebird`` run directly (not through ``fbguard``) stays in the foreground, so
  the process we start is the server: SIGTERM shuts it down cleanly in about 0.1 s, SIGKILL
  simulates a crash, and no guardian restarts it behind the test's back. About 1 SIGTERM in 50
  (3.0.11, at any time after start, with or without attachments) the server never finishes that
  shutdown: its main thread stays in the listener's poll, over 77 s were seen, and neither a new
  connection nor SIGINT, SIGTERM again ends it; only SIGHUP or SIGKILL do. stop() therefore
  kills it after ``timeout``, and ``returncode`` then says -9.
* If the port is already taken, the 3.0 server does not exit: it silently retries ``bind`` for
  about a minute, while a plain "does the port accept connections" probe would happily talk to
  the other listener. Readiness is therefore "a LISTEN socket on our port whose inode is one of
  our process's file descriptors", read from /proc without connecting to the server.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

SERVER_BINARY = Path("/usr/sbin/firebird")
ISQL_BINARY = Path("/usr/bin/isql-fb")
DEBIAN_LIBDIR = Path("/usr/lib/x86_64-linux-gnu/firebird/3.0")
DEBIAN_LOG_DIR = Path("/var/log/firebird")
# Debian renames firebird.log so that 2.5/3.0/4.0 packages can share the directory.
LOG_NAME = "firebird3.0.log"
INSTALL_COMMAND = "apt-get install -y firebird3.0-server"
REINSTALL_COMMAND = "apt-get install --reinstall -y firebird3.0-server"
START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0

_LISTEN = "0A"  # TCP_LISTEN as printed in /proc/net/tcp


@functools.cache
def fb3_server_unavailable() -> str | None:
    """None when Debian's Firebird 3.0 server can be run here, otherwise why not and how to fix it."""
    for needed in (SERVER_BINARY, ISQL_BINARY, DEBIAN_LIBDIR / "firebird.msg", DEBIAN_LIBDIR / "intl"):
        if not needed.exists():
            return (f"Debian's Firebird 3.0 server is not installed ({needed} is missing); "
                    f"as root: {INSTALL_COMMAND}")
    try:
        probe = subprocess.run([str(SERVER_BINARY), "-z"], capture_output=True, text=True, timeout=20,
                               env=_clean_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{SERVER_BINARY} cannot be run ({exc}); as root: {REINSTALL_COMMAND}"
    if probe.returncode != 0 or "V3.0" not in probe.stdout:
        detail = (probe.stdout + probe.stderr).strip().replace("\n", " ")[:200]
        return f"{SERVER_BINARY} -z failed ({detail}); as root: {REINSTALL_COMMAND}"
    return None


def _clean_env() -> dict[str, str]:
    # The test session may carry another engine's setup (a Firebird 5 runtime on
    # LD_LIBRARY_PATH, FIREBIRD=its root): the Debian server would then load the wrong
    # libfbclient.so.2 or read the wrong firebird.conf.
    return {key: value for key, value in os.environ.items()
            if not key.startswith(("FIREBIRD", "ISC_")) and key not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}


@functools.cache
def _namespace_prefix() -> tuple[str, ...] | None:
    """The ``unshare`` prefix that gives a child its own mount namespace here, or None."""
    if shutil.which("unshare") is None or not DEBIAN_LOG_DIR.is_dir():
        return None
    prefix: tuple[str, ...] = ("unshare", "--mount", "--propagation", "private")
    if os.geteuid() != 0:
        # A user namespace makes the bind mount legal without privileges (where the kernel allows it).
        prefix = ("unshare", "--map-root-user", "--mount", "--propagation", "private")
    with tempfile.TemporaryDirectory(prefix="fb3-probe-") as scratch:
        probe = subprocess.run([*prefix, "--", "sh", "-c", 'mount --bind "$1" "$2"', "sh", scratch,
                                str(DEBIAN_LOG_DIR)], capture_output=True, timeout=20)
    return prefix if probe.returncode == 0 else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listen_inodes(port: int) -> set[str]:
    """Inodes of the IPv4 LISTEN sockets bound to 127.0.0.1:port (or to any address on that port)."""
    wanted = {f"0100007F:{port:04X}", f"00000000:{port:04X}"}
    inodes: set[str] = set()
    with open("/proc/net/tcp", encoding="ascii") as table:
        next(table)
        for line in table:
            fields = line.split()
            if fields[1] in wanted and fields[3] == _LISTEN:
                inodes.add(fields[9])
    return inodes


def _open_files(pid: int) -> set[str]:
    """What the process's file descriptors point to: paths, or ``socket:[inode]``."""
    targets: set[str] = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                targets.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return targets


class Fb3Server:
    """One private Firebird 3.0 SuperServer on 127.0.0.1; see the module docstring for how.

    ``Fb3Server.start(workdir)`` creates a fresh instance directory under ``workdir`` and
    returns a running server; use it as a context manager, or call ``stop()``/``kill()``.
    """

    host = "127.0.0.1"
    user = "SYSDBA"

    def __init__(self, workdir: Path, *, config: Mapping[str, str] | None = None) -> None:
        self.workdir = Path(workdir).resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.home = Path(tempfile.mkdtemp(prefix="fb3server-", dir=self.workdir))
        self.root = self.home / "root"
        self.lock_dir = self.home / "lock"
        self.tmp_dir = self.home / "tmp"
        self.log_dir = self.home / "log"
        self.security_db = self.root / "security3.fdb"
        self.password = secrets.token_hex(8)
        self.port = 0
        self.config = dict(config or {})
        self._process: subprocess.Popen[bytes] | None = None
        self._namespace = _namespace_prefix()
        # Without a namespace the log is Debian's shared file; remember where ours begins.
        self.log_path = self.log_dir / LOG_NAME if self._namespace else DEBIAN_LOG_DIR / LOG_NAME
        self._log_offset = 0

    # -- lifecycle ------------------------------------------------------------------------------

    @classmethod
    def start(cls, workdir: Path, *, config: Mapping[str, str] | None = None) -> Fb3Server:
        """Create a private instance under ``workdir`` and return it once it listens."""
        reason = fb3_server_unavailable()
        if reason:
            raise RuntimeError(reason)
        server = cls(workdir, config=config)
        server._prepare()
        server._launch()
        return server

    def restart(self) -> None:
        """Start the same instance again (same root, databases and password) after stop/kill."""
        if self.is_running():
            raise RuntimeError("the server is still running; stop() or kill() it first")
        self._launch(keep_port=True)

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Shut down gracefully (SIGTERM: the server detaches and closes its databases)."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                process.wait()
        # ServerMode=Classic forks one server per attachment into our process group.
        self._signal_group(signal.SIGKILL)
        _running.discard(self)

    def kill(self) -> None:
        """SIGKILL the server process(es): a crash, as a test of "the server died mid-run" needs."""
        process = self._process
        if process is None:
            return
        self._signal_group(signal.SIGKILL)
        process.wait()
        _running.discard(self)

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def returncode(self) -> int | None:
        """The exit status of the last server process (negative: killed by that signal)."""
        return self._process.poll() if self._process else None

    def __enter__(self) -> Fb3Server:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- use ------------------------------------------------------------------------------------

    def dsn(self, path: Path) -> str:
        """Classic ``host/port:path`` form, understood by every client library version."""
        return f"{self.host}/{self.port}:{Path(path).resolve()}"

    def log_tail(self, n: int = 40) -> str:
        """The last ``n`` lines this instance wrote to its firebird.log."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_offset)
                text = log.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""
        except OSError as exc:
            return f"({self.log_path} is not readable: {exc})"
        return "\n".join(text.splitlines()[-n:])

    # -- internals ------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = _clean_env()
        env.update(FIREBIRD=str(self.root), FIREBIRD_LOCK=str(self.lock_dir), FIREBIRD_TMP=str(self.tmp_dir),
                   FIREBIRD_MSG=str(DEBIAN_LIBDIR))
        return env

    def _command(self, *argv: str) -> list[str]:
        if self._namespace is None:
            return list(argv)
        script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
        return [*self._namespace, "--", "sh", "-c", script, "sh", str(self.log_dir), str(DEBIAN_LOG_DIR),
                *argv]

    def _write_config(self) -> None:
        settings = {
            "ServerMode": "Super",
            "RemoteServicePort": str(self.port),
            "RemoteBindAddress": self.host,
            "SecurityDatabase": str(self.security_db),
            # Spelled out because the tests rely on them: SRP logins and wire encryption as a
            # stock 3.0 has them, so the FB5 client negotiates exactly what it would in the field.
            "AuthServer": "Srp",
            "UserManager": "Srp",
            "WireCrypt": "Enabled",
            **self.config,
        }
        lines = [f"{key} = {value}" for key, value in settings.items()]
        (self.root / "firebird.conf").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def _prepare(self) -> None:
        if not self._namespace and self.log_path.exists():
            self._log_offset = self.log_path.stat().st_size
        for directory in (self.root, self.lock_dir, self.tmp_dir, self.log_dir):
            directory.mkdir()
        for name in ("intl", "UDF"):
            (self.root / name).symlink_to(DEBIAN_LIBDIR / name)
        (self.root / "databases.conf").write_text(f"security.db = {self.security_db}\n", encoding="utf-8")
        self.port = _free_port()
        self._write_config()
        # A fresh security database instead of a copy of Debian's template: the template is
        # readable only by root and the firebird group, while SRP creates its own tables on
        # first use. Embedded isql (no server involved) works on it directly.
        sql = (f"create database '{self.security_db}';\n"
               f"create user {self.user} password '{self.password}' using plugin Srp;\n"
               "commit;\n")
        done = subprocess.run(self._command(str(ISQL_BINARY), "-q", "-b", "-user", self.user),
                              input=sql, capture_output=True, text=True, env=self._env(), timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"could not create the security database {self.security_db}: "
                               f"{(done.stdout + done.stderr).strip()}\n{self.log_tail()}")

    def _launch(self, keep_port: bool = False) -> None:
        for attempt in range(3):
            if attempt:
                # Someone else took the port between choosing and binding it: try another one.
                if keep_port:
                    break
                self.port = _free_port()
                self._write_config()
            launched_mtime = self.security_db.stat().st_mtime_ns
            self._process = self._spawn()
            _running.add(self)
            if self._wait_listening():
                self._settle(launched_mtime)
                return
            self.kill()
        raise RuntimeError(f"port {self.port} on {self.host} is taken by another process")

    def _spawn(self) -> subprocess.Popen[bytes]:
        argv = [str(SERVER_BINARY)]
        if shutil.which("setpriv"):
            # Die with the test process even when it is SIGKILLed and atexit never runs. Set as the
            # last step before exec: entering a user namespace would clear an earlier setting.
            argv = ["setpriv", "--pdeathsig", "KILL", *argv]
        # Its own session, so kill() reaches every process of the server and nothing else;
        # stdout/stderr go to the instance directory, the server has nothing to say there.
        with open(self.home / "server.out", "ab") as out:
            return subprocess.Popen(self._command(*argv), env=self._env(), cwd=self.home,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)

    def _wait_listening(self) -> bool:
        """True once our process listens on the port; False if another process holds it."""
        assert self._process is not None
        started = time.monotonic()
        deadline = started + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"Firebird 3.0 server exited with status {self._process.returncode} "
                                   f"while starting; firebird.log:\n{self.log_tail()}")
            listening = _listen_inodes(self.port)
            if listening:
                if {f"socket:[{inode}]" for inode in listening} & _open_files(self._process.pid):
                    return True
                if time.monotonic() - started > 1.0:
                    return False
            time.sleep(0.02)
        self.kill()
        raise RuntimeError(f"Firebird 3.0 server did not listen on {self.host}:{self.port} within "
                           f"{START_TIMEOUT:.0f} s; firebird.log:\n{self.log_tail()}")

    def _settle(self, launched_mtime: int) -> None:
        # Listening is not ready yet: the main thread then attaches security3.fdb once, before
        # it enters its accept loop. A SIGTERM landing during that attachment cuts it
        # ("connection shutdown" in firebird.log) and the server then sits in its 60 s poll
        # instead of exiting (about 1 start in 30 here; a second SIGTERM does not help). That
        # attachment's footprint is visible from outside: the file's header is written
        # (mtime changes) and the file is closed again.
        assert self._process is not None
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and self._process.poll() is None:
            if (self.security_db.stat().st_mtime_ns != launched_mtime
                    and str(self.security_db) not in _open_files(self._process.pid)):
                return
            time.sleep(0.005)

    def _signal_group(self, signum: signal.Signals) -> None:
        if self._process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signum)

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"<Fb3Server {self.host}:{self.port} {state} root={self.root}>"


# Strong references on purpose: an instance a test forgot to stop must still be stopped at exit.
_running: set[Fb3Server] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_running):
        server.stop(timeout=3)
