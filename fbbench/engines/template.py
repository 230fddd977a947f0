"""Engine children forked from a template process that has already imported what they run.

An engine child (:mod:`fbbench.engines.child`) started as a new interpreter spends 0.35–0.5 s of
CPU (2-core VM) starting Python and importing the run's phases and firebird-driver before it
touches the engine, more than a short run's own engine work; a command that makes several
children (``run --repeat``, a sweep, time-shared pairs, a track point, a bisection, a lab host's
runs) paid that for each. Such a command (:func:`several`) starts a *template* for each engine
with its first child: an interpreter with those imports done, from which every child of that
engine is forked for as long as the process lives. A command that makes one child starts it as a
new interpreter, as before: a template gains it nothing (one minimal run cost 0.08 s more CPU with
one, the median of 8 interleaved pairs, which ranged from -0.11 to +0.17 s) — unless a template
host keeps templates across commands (:mod:`fbbench.engines.template_host`, named by
``FBBENCH_ENGINE_TEMPLATES``): then every child is forked from the host's template for its
engine. A forked child is the same child: its
own process group, the run's environment (set after the fork), the same pipes, stdio, working
directory and limits, ``child_main``. It skips the interpreter's start and the imports: 0.12–0.20 s
of CPU against 0.49–0.73 s for one attach, query and drop on 3.0, 4.0 and 5.0.

The fork cannot give a child the dynamic loader's view of its environment: the loader reads
``LD_LIBRARY_PATH`` once, as a process starts. So the template starts with a library path that
holds for every run of its engine (:meth:`Runtime.template_env`): the engine's installed files,
which a run's root links, and the engine cache's compatibility links. The run's own environment,
its root included, is the forked child's ``os.environ``: what Firebird reads with ``getenv``, and
what the child's own processes inherit.

A template does nothing while a run measures: it waits in ``select``. It ends when the process
that started it closes its end of their socket, or dies; the children it forked then die too
(their parent death signal, and the template's SIGKILL). A machine shape's child is started in its
cgroup or namespace (a ``launcher``) as a new interpreter, never forked here. Where a template
cannot start, or dies, or cannot fork, the child starts as a new interpreter.

A run's peak resident memory (``peak_rss_bytes``, the child's VmHWM) depends on how its child
started, so the run records it (``engine_process``): a new interpreter's is about 7 MB higher,
63.8 against 56.8 MB on 5.0 and 54.7 against 47.9 MB on 3.0 with the client library loaded and
one attachment made: the transient peak of its imports and the pages of shared libraries that a
forked child has not touched. The runs of one series, sweep or pair series all start alike.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

from fbbench import signals
from fbbench.engines.runtime import Runtime
from fbbench.engines.template_wire import ATTACHMENT_NAME as ATTACHMENT_NAME
from fbbench.engines.template_wire import ATTACHMENT_TEMPLATE_NAME as ATTACHMENT_TEMPLATE_NAME
from fbbench.engines.template_wire import CHILD_NAME as CHILD_NAME
from fbbench.engines.template_wire import MESSAGE_BYTES
from fbbench.engines.template_wire import TEMPLATE_NAME as TEMPLATE_NAME
from fbbench.errors import FbbenchError

# A host keeping templates across commands (fbbench.engines.template_host): its socket's path.
HOST_VARIABLE = "FBBENCH_ENGINE_TEMPLATES"
STARTS_WITHIN = 120.0  # seconds for a template's imports; then children start as new interpreters
_LIMITS = [getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_")]


def _umask() -> int:
    """This process's file mode creation mask, read without changing it (another thread may be
    creating a file)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    raise OSError("/proc/self/status gives no Umask")


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


class TemplateChild:
    """An engine child forked by a template: what ``subprocess.Popen`` offers the callers of
    :func:`fbbench.engines.child.run_in_engine` (``pid``, ``wait``, ``poll``, ``send_signal``,
    ``kill``, ``returncode``). Its exit status comes from the template (its parent) over a
    connection of its own; signals go through a pidfd, never to a pid that a new process may reuse."""

    def __init__(self, pid: int, pidfd: int, connection: socket.socket, command: list[str]) -> None:
        self.pid = pid
        self.args = command
        self.returncode: int | None = None
        # As subprocess.Popen's: this process's ends of the child's stdin and stdout, where the
        # child was given pipes (a Classic attachment process, fbbench.loadcore.classic).
        self.stdin: IO[bytes] | None = None
        self.stdout: IO[bytes] | None = None
        self._pidfd = pidfd
        self._connection = connection
        self._lock = threading.Lock()

    def wait(self, timeout: float | None = None) -> int:
        with self._lock:
            if self.returncode is None:
                self._connection.settimeout(timeout)
                try:
                    said = self._connection.recv(MESSAGE_BYTES)
                except (TimeoutError, BlockingIOError):  # BlockingIOError: a timeout of 0
                    raise subprocess.TimeoutExpired(self.args, timeout or 0.0) from None
                finally:
                    with contextlib.suppress(OSError):
                        self._connection.settimeout(None)
                # No status: the template died; its children die with it (their parent death signal).
                self.returncode = int(json.loads(said)["status"]) if said else -signal.SIGKILL
                self._close()
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.wait(0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is not None:
            return
        try:
            signal.pidfd_send_signal(self._pidfd, sig)
        except OSError as error:  # it has ended (the template may not have said so yet)
            raise ProcessLookupError(error.errno, error.strerror) from None

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._pidfd)
        self._connection.close()

    def __del__(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(Exception):
                self._close()


class Template:
    """A template process for one engine (its key), serving this process: one it started
    (:meth:`start`), or one a host keeps for many processes (:meth:`from_host`)."""

    def __init__(self, connection: socket.socket, command: list[str],
                 process: subprocess.Popen[bytes] | None = None) -> None:
        self.socket = connection
        self.command = command
        self.process = process
        self._lock = threading.Lock()

    @classmethod
    def start(cls, env: dict[str, str], serving: str = "serve") -> Template:
        """A template of this process's own, with ``env`` as its environment: an engine's
        (``serve``), in a session of its own; or, with ``serving="serve_attachments"``, a Classic
        run's attachment processes' (:meth:`fork_stdio`), in this process's group."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = [sys.executable, "-c", f"import sys; from fbbench.engines.template_server import {serving}; "
                   f"{serving}(int(sys.argv[1]))", str(theirs.fileno())]
        # An attachment template, in this process's group, gets the group's stop signals: blocked
        # until its handlers are in place (it unblocks them), so that none ends it as it imports.
        starting = signals.blocked_while_starting() if serving != "serve" else contextlib.nullcontext()
        try:
            with starting:
                process = subprocess.Popen(
                    command, env=env, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    # An engine's: no Ctrl-C of the terminal's, the children get theirs from us.
                    start_new_session=serving == "serve")
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        template = cls(ours, command, process)
        try:
            ours.settimeout(STARTS_WITHIN)
            ready = ours.recv(MESSAGE_BYTES)
            ours.settimeout(None)
        except BaseException:
            template.close()
            raise
        if ready != b"ready":
            template.close()
            raise OSError("the engine template did not start")
        return template

    @classmethod
    def from_host(cls, address: str, env: dict[str, str]) -> Template:
        """The template a host (:mod:`fbbench.engines.template_host`) at ``address`` keeps for
        ``env``, serving this process until it closes its end."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as connection:
            connection.settimeout(STARTS_WITHIN)  # the host may start the template first
            connection.connect(address)
            connection.send(json.dumps({"env": env, "code": code_identity()}).encode())
            said, fds, _, _ = socket.recv_fds(connection, MESSAGE_BYTES, 1)
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise OSError(json.loads(said).get("error", "no template") if said else "the template host is gone")
        return cls(socket.socket(fileno=fds[0]), [sys.executable, "-m", "fbbench.engines.template_host", address])

    def fork(self, env: dict[str, str], request_read: int, result_write: int) -> TemplateChild:
        """A child forked with ``env`` as its environment, ``request_read`` and ``result_write``
        as the two pipes :func:`fbbench.engines.child.child_main` reads and writes."""
        limits = {str(limit): resource.getrlimit(limit) for limit in _LIMITS}
        stdio = [fd for fd in (0, 1, 2) if _is_open(fd)]  # a closed one stays closed in the child
        return self._forked({"env": env, "cwd": os.getcwd(), "limits": limits, "stdio": stdio, "umask": _umask(),
                             "cpus": sorted(os.sched_getaffinity(0)), "niceness": os.getpriority(os.PRIO_PROCESS, 0)},
                            [request_read, result_write, *stdio], "the engine template")

    def _forked(self, request: dict[str, object], fds: list[int], template: str) -> TemplateChild:
        """The child the template forks for ``request``, passing it ``fds``; its status comes on a
        connection of its own."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with self._lock:
                socket.send_fds(self.socket, [json.dumps(request).encode()], [theirs.fileno(), *fds])
            said, passed, _, _ = socket.recv_fds(ours, MESSAGE_BYTES, 1)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        if not said or len(passed) != 1:
            for fd in passed:
                os.close(fd)
            ours.close()
            raise OSError(f"{template} did not fork the child")
        return TemplateChild(int(json.loads(said)["pid"]), passed[0], ours, self.command)

    def fork_stdio(self, stdin: int, stdout: int, stderr: int) -> TemplateChild:
        """A child of an attachment template (``serve_attachments``) with these as its stdin,
        stdout and stderr; everything else is the template's, which this process started."""
        return self._forked({"stdio": [0, 1, 2]}, [stdin, stdout, stderr], "the attachment template")

    def alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        # A host's template says nothing unasked: anything to read is its end.
        poller = select.poll()
        poller.register(self.socket, select.POLLIN | select.POLLHUP)
        return not poller.poll(0)

    def close(self) -> None:
        """Its end for this process: the template sees the socket close and stops the children it
        still runs for it. One of this process's own then ends; a host's serves on."""
        with contextlib.suppress(OSError):
            self.socket.close()
        if self.process is None:
            return
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def code_identity() -> list[str]:
    """What a template's children run, as far as a process asking a host for one can tell: the
    interpreter and where fbbench's code is."""
    import fbbench

    return [sys.executable, str(Path(fbbench.__file__).resolve().parent)]


_templates: dict[str, Template | None] = {}  # by the template's environment; None: it failed here
_registry_lock = threading.Lock()
_several = False
_host: str | None = None


def several() -> None:
    """This process makes several engine children (a series, a sweep, pairs, a track point): from
    now on they are forked from templates, the first one included, so that its runs are alike."""
    global _several
    _several = True


def use_host(address: str | None) -> str | None:
    """This process's engine children are forked from the templates of the host at ``address``
    (None: as ``FBBENCH_ENGINE_TEMPLATES`` says), without passing the address on to the processes
    it starts: a harness that calls :func:`fbbench.engines.child.run_in_engine` itself. Returns
    the address used before."""
    global _host
    previous, _host = _host, address
    return previous


def for_runtime(runtime: Runtime) -> Template | None:
    """The template this process forks ``runtime``'s engine children from (started by the first
    one, or kept by a template host), or None: a process that makes one child starts it as a new
    interpreter, as does one where a template cannot be had."""
    host = _host or os.environ.get(HOST_VARIABLE)
    if not (_several or host):
        return None
    try:
        env = runtime.template_env()
    except (OSError, FbbenchError):  # the engine cache cannot hold its links, or its files are gone
        return None
    key = json.dumps([sys.executable, sys.path, sorted(env.items())])
    with _registry_lock:
        template = _templates.get(key)
        if template is not None and not template.alive():
            template = _templates[key] = None  # died: this process's children start the ordinary way
        if key in _templates:
            return template
        try:
            template = Template.from_host(host, env) if host else Template.start(env)
        except (OSError, ValueError):  # ValueError: a host that answered nonsense
            template = None
        else:
            atexit.register(template.close)
        _templates[key] = template
        return template


def forget(template: Template) -> None:
    """A template that failed to fork a child is not asked again. It is not closed here: closing
    it would stop the children it forked for other runs (a time-shared pair's other side); it ends
    with this process (atexit), once they have ended."""
    with _registry_lock:
        for key, known in list(_templates.items()):
            if known is template:
                _templates[key] = None
