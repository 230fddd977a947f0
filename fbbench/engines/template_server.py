"""The template process of :mod:`fbbench.engines.template`: it imports what a run's engine child
runs — or what a Classic run's attachment process runs (:mod:`fbbench.loadcore.classic`) — then
forks one child per request and reports each one's exit status."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import resource
import selectors
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from fbbench.engines.template_wire import (
    ATTACHMENT_NAME,
    ATTACHMENT_TEMPLATE_NAME,
    CHILD_NAME,
    MESSAGE_BYTES,
    TEMPLATE_NAME,
)

_STOPS = (signal.SIGINT, signal.SIGTERM)
# A child's function: in the forked process, with the request, the descriptors passed for it (its
# connection's excepted), the sockets and descriptors of the template's to close, and its selector.
Child = Callable[[dict[str, Any], list[int], list[socket.socket], list[int], selectors.BaseSelector], None]


def serve(socket_fd: int) -> None:
    """The template: imports what a run's child runs, says ready, then forks a child per request
    and reports each one's exit status on the request's own connection. Ends when the other end of
    its socket is closed (the process that started it ended, or was killed); the children still
    running are killed then. A host can hand it further processes to serve, each on a connection
    of its own: when one of them closes it, the children forked for that one are killed."""
    # What every child runs, and what a run's child imports; the client library itself is loaded
    # only in a child (firebird-driver loads it at the first attachment).
    import firebird.driver  # noqa: F401

    import fbbench.engines.child
    import fbbench.runner.engine.phases  # noqa: F401

    _serve(socket_fd, TEMPLATE_NAME, _child, passed=2)


def serve_attachments(socket_fd: int) -> None:
    """The template of a Classic run's attachment processes (:mod:`fbbench.loadcore.classic`),
    started by the run's engine child and ending with it: a process that has imported the worker,
    from which each attachment process is forked with its stdin, stdout and stderr. It stays in
    the engine child's process group, as its attachment processes do (a time-shared pair stops and
    continues that group, and counts its CPU); the group's stop signals are its children's, not its own."""
    import fbbench.loadcore.classic_worker  # noqa: F401

    for stop in _STOPS:
        signal.signal(stop, lambda _signum, _frame: None)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)  # blocked by the process that started it, until now
    _serve(socket_fd, ATTACHMENT_TEMPLATE_NAME, _attachment, passed=0, own_group=False)


def _serve(socket_fd: int, name: str, child: Child, *, passed: int, own_group: bool = True) -> None:
    """The template's life (:func:`serve`): ``passed`` descriptors besides stdio come with each
    request for ``child``; ``own_group``: each child leads a process group of its own."""
    _name(name)
    # What the imports made is never collected in a child: its collector would walk every object
    # and so write to, and copy, every page it shares with the template (gc.freeze, for forking servers).
    gc.collect()
    gc.freeze()
    control = socket.socket(fileno=socket_fd)
    wake_read, wake_write = woken_by_children()
    # Not SIG_IGN: a child inherits an ignored signal, and a stop sent to it before it installs
    # its own handler would be lost. The template is in a session of its own: no terminal's
    # Ctrl-C reaches it.
    signal.signal(signal.SIGINT, lambda _signum, _frame: None)
    try:
        control.send(b"ready")
    except OSError:  # the process that started it is gone (a Ctrl-C as it started): nothing to serve
        return
    # Each child: the connection it is reported on, its pidfd, and the connection it was asked on.
    waiting: dict[int, tuple[socket.socket, int, socket.socket]] = {}
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    clients = [control]
    while control in clients or waiting:
        for key, _ in selector.select(timeout=1.0):
            if key.fileobj is wake_read:
                drain(wake_read)
                continue
            asking = key.fileobj
            if not any(asking is client for client in clients):  # its end was seen this round
                continue
            assert isinstance(asking, socket.socket)
            try:
                said, fds, _, _ = socket.recv_fds(asking, MESSAGE_BYTES, 6)
            except OSError:
                said, fds = b"", []
            request = json.loads(said) if said else None
            if request is not None and request.get("client") and asking is control and len(fds) == 1:
                # A host (fbbench.engines.template_host) hands on a process of its own: served
                # until that process closes its end, as the host is.
                client = socket.socket(fileno=fds[0])
                clients.append(client)
                selector.register(client, selectors.EVENT_READ)
            elif request is not None:
                _fork(request, fds, asking, waiting, (wake_read, wake_write), clients, selector, child, passed,
                      own_group)
            else:  # that process is gone: nothing more is forked for it, and its children stop
                for fd in fds:
                    os.close(fd)
                ended = list(clients) if asking is control else [asking]  # the first one's end is everyone's
                for client in ended:
                    selector.unregister(client)
                    clients.remove(client)
                    if client is not control:
                        client.close()
                for pid, (_, _, asked_by) in waiting.items():
                    if any(asked_by is client for client in ended):
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
        for pid, code in ended_children() if waiting else ():
            connection, pidfd, _ = waiting.pop(pid, (None, -1, None))
            if connection is not None:
                with contextlib.suppress(OSError):
                    connection.send(json.dumps({"status": code}).encode())
                connection.close()
                os.close(pidfd)


def woken_by_children() -> tuple[int, int]:
    """A pipe that a child's end writes to (SIGCHLD, through ``signal.set_wakeup_fd``), so that a
    ``select`` on its read end wakes: (read end, write end), both non-blocking."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    os.set_blocking(wake_read, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    return wake_read, wake_write


def drain(wake_read: int) -> None:
    """Empty a signal wake-up pipe (``signal.set_wakeup_fd``'s, non-blocking)."""
    with contextlib.suppress(BlockingIOError):
        while os.read(wake_read, 4096):
            pass


def ended_children() -> Iterator[tuple[int, int]]:
    """Each child of this process that has ended, reaped: its pid and exit code (as
    ``subprocess.Popen.returncode`` gives it); none waits."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, os.waitstatus_to_exitcode(status)


def _fork(request: dict[str, Any], fds: list[int], asking: socket.socket,
          waiting: dict[int, tuple[socket.socket, int, socket.socket]], pipes: tuple[int, int],
          clients: list[socket.socket], selector: selectors.BaseSelector, child: Child, passed: int,
          own_group: bool) -> None:
    connection = socket.socket(fileno=fds[0])
    if len(fds) != 1 + passed + len(request["stdio"]):
        connection.close()
        for fd in fds[1:]:
            os.close(fd)
        return
    # The stop signals are blocked across the fork: one sent to the child before it has its
    # handlers waits for them (as a new interpreter's start does: fbbench.signals.child_command).
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    pid = os.fork()
    if pid == 0:
        child(request, fds[1:], [*clients, connection, *(c for c, _, _ in waiting.values())],
              [*pipes, *(p for _, p, _ in waiting.values())], selector)
    signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    if own_group:
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # as the child does first: whichever comes first, no signal finds it in ours
    for fd in fds[1:]:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    try:
        socket.send_fds(connection, [json.dumps({"pid": pid}).encode()], [pidfd])
    except OSError:  # the asking process is gone
        os.kill(pid, signal.SIGKILL)
    waiting[pid] = (connection, pidfd, asking)


def _child(request: dict[str, Any], fds: list[int], sockets: list[socket.socket], others: list[int],
           selector: selectors.BaseSelector) -> None:
    """In the forked process: become the engine child ``child_main`` would be in a new
    interpreter — and end with its exit status."""
    code = 1
    try:
        os.setpgid(0, 0)
        _leave_template(CHILD_NAME, sockets, others, selector)
        request_read, result_write, *stdio = fds
        _take_stdio(request["stdio"], stdio)
        for name, (soft, hard) in request["limits"].items():
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(int(name), (soft, hard))
        with contextlib.suppress(OSError):  # gone since: a new interpreter would have started in it all the same
            os.chdir(request["cwd"])
        # What a new interpreter would have inherited from the asking process (a host's template
        # was not started by it).
        os.umask(request["umask"])
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, request["cpus"])
        with contextlib.suppress(OSError):  # a lower niceness than the template's needs privilege
            os.setpriority(os.PRIO_PROCESS, 0, request["niceness"])
        os.environ.clear()
        os.environ.update(request["env"])
        environment_as_at_start()
        # Read once by the template, from an environment that is not the run's: read again.
        time.tzset()
        tempfile.tempdir = None
        from fbbench import signals
        from fbbench.engines.child import child_main

        signals.expect_parent(os.getppid())  # this template, which dies with the process that asked
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
        child_main(str(request_read), str(result_write))
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _attachment(request: dict[str, Any], fds: list[int], sockets: list[socket.socket], others: list[int],
                selector: selectors.BaseSelector) -> None:
    """In the forked process: a Classic run's attachment process, as
    ``classic_worker.worker_main`` is in a new interpreter (:func:`fbbench.signals.child_command`),
    with the descriptors passed as its stdin, stdout and stderr. It ends as a new interpreter
    does, through the interpreter's own exit (SystemExit up through the template's frames, which
    hold nothing of its), so that the client library's exit handlers run as they did."""
    code = 1
    try:
        _leave_template(ATTACHMENT_NAME, sockets, others, selector)
        _take_stdio(request["stdio"], fds)
        from fbbench import signals
        from fbbench.loadcore.classic_worker import worker_main

        signals.expect_parent(os.getppid())  # this template, which dies with the run's engine child
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
        code = worker_main()
    except KeyboardInterrupt:
        code = 130
    except SystemExit:
        raise
    except BaseException:
        import traceback

        traceback.print_exc()
    sys.exit(code)


def _leave_template(name: str, sockets: list[socket.socket], others: list[int],
                    selector: selectors.BaseSelector) -> None:
    """In a forked child: its own name, the default handlers, none of the template's sockets and descriptors."""
    _name(name)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    selector.close()
    for opened in sockets:
        opened.close()
    for fd in others:
        os.close(fd)


def _take_stdio(targets: list[int], passed: list[int]) -> None:
    """Descriptors 0, 1 and 2 become those passed for them (``targets``); the others are closed."""
    for target in (0, 1, 2):
        if target in targets:
            given = passed[targets.index(target)]
            os.dup2(given, target)
            os.close(given)
        else:
            with contextlib.suppress(OSError):
                os.close(target)

# The C environment array a forked child runs with (see environment_as_at_start); never freed.
_kept_environment: object = None


def environment_as_at_start() -> None:
    """Give this forked process's C environment the one property a new interpreter's has and a
    rewritten one lacks: no ``setenv`` ever frees the array it started with.

    Rewriting ``os.environ`` after the fork leaves ``environ`` in glibc's own heap array, which the
    next new variable reallocates, freeing the old one. Firebird 4.0 and 5.0's client sets
    ICU_TIMEZONE_FILES_DIR at its first attachment while the run's other attachment threads read
    the environment (getenv("ISC_USER") in isc_attach_database): those threads walked the freed
    array, and the child died of SIGSEGV (1 of 300 runs of 8 attachments on 5.0 here; 1 of 12
    rounds of test_core_params under stress-ng). A new interpreter's environment starts on its
    stack, which glibc copies but never frees: so does this one, with a copy that is never freed."""
    import ctypes

    global _kept_environment
    environ = ctypes.c_void_p.in_dll(ctypes.CDLL(None), "environ")
    if not environ.value:  # no array at all: the first setenv makes one and frees nothing
        return
    current = ctypes.cast(environ.value, ctypes.POINTER(ctypes.c_void_p))
    entries: list[int] = []
    while (entry := current[len(entries)]) is not None:
        entries.append(entry)  # glibc's setenv keeps each string it made for the process's life
    array = (ctypes.c_void_p * (len(entries) + 1))(*entries, None)
    _kept_environment = array
    environ.value = ctypes.addressof(array)


def _name(name: str) -> None:
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as comm:
        comm.write(name)
