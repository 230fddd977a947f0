"""``fbbench`` processes for the tests, forked from one that has already imported the CLI.

The suite starts fbbench as a user would (``python -m fbbench …`` in a process of its own) about
700 times per run, and each of those processes spent most of its CPU starting Python and importing
typer, rich, numpy and fbbench's commands (0.3–0.5 s of a 2-core machine's time each: BSD process
accounting over one parallel phase). Here one server process per pytest process imports them once;
each command is then a process forked from it: its own pid, environment, working directory, argv,
stdout and stderr (files the test reads afterwards), signals and exit status, running
``fbbench.entry`` exactly as ``python -m fbbench`` does. What it does not repeat is the interpreter's
start and those imports — which every test that starts fbbench with ``subprocess.Popen`` (Ctrl-C,
kills, the start-up window) still does, as does the server itself.

Where the server cannot serve a command — a different ``PYTHON*`` environment (it decides how the
interpreter starts), ``FBBENCH_TEST_FORKSERVER=0``, a server that died — :func:`run` returns None and
the caller starts the process the ordinary way.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# What a command imports anyway, whichever it is: the CLI and its commands' modules, and what
# their work after a run needs (statistics, the lint, the report) — scipy.stats too, which the
# lint's steady-state trend and every paired ratio import on first use: 1.5 s of CPU in each
# command that did (py-spy over a parallel phase: 5 % of all its samples). Not the engine side
# (firebird-driver, the load core): only engine child processes load those.
PRELOAD = ["fbbench.entry", "fbbench.cli", "fbbench.cli.common", "fbbench.cli.run", "fbbench.cli.compare",
           "fbbench.cli.sweep", "fbbench.cli.results", "fbbench.cli.engines", "fbbench.cli.db", "fbbench.cli.trace",
           "fbbench.cli.workload", "fbbench.cli.replay", "fbbench.cli.track", "fbbench.cli.paired",
           "fbbench.runner.run", "fbbench.analysis.stats", "fbbench.analysis.lint", "fbbench.analysis.comparison",
           "fbbench.analysis.run", "fbbench.report.html", "fbbench.report.outputs", "fbbench.store", "numpy",
           "scipy.stats"]
_MESSAGE = 1 << 20

_lock = threading.Lock()
_server: tuple[subprocess.Popen[bytes], str] | None = None
_broken = False


def run(args: list[str], env: dict[str, str], cwd: Path | None,
        timeout: float) -> subprocess.CompletedProcess[str] | None:
    """``python -m fbbench *args`` with ``env`` in ``cwd``, as ``subprocess.run(…,
    capture_output=True, text=True, timeout=timeout)`` would return it; None where the server
    cannot run it (the caller then starts it itself)."""
    if os.environ.get("FBBENCH_TEST_FORKSERVER") == "0":
        return None
    if {k: v for k, v in env.items() if k.startswith("PYTHON")} != {k: v for k, v in os.environ.items()
                                                                     if k.startswith("PYTHON")}:
        return None
    address = _address()
    if address is None:
        return None
    command = [sys.executable, "-m", "fbbench", *args]
    request = json.dumps({"args": args, "env": env, "cwd": str(cwd or os.getcwd())}).encode()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as connection:
        try:
            connection.connect(address)
            socket.send_fds(connection, [request], [out.fileno(), err.fileno()])
            started = connection.recv(_MESSAGE)
        except OSError:
            started = b""
        if not started:  # the server is gone: nothing was started
            _forget()
            return None
        pid = json.loads(started)["pid"]
        connection.settimeout(timeout)
        try:
            ended = connection.recv(_MESSAGE)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            connection.settimeout(None)
            connection.recv(_MESSAGE)
            raise subprocess.TimeoutExpired(command, timeout, _text(out), _text(err)) from None
        if not ended:
            raise RuntimeError(f"the test fork server died while fbbench {' '.join(args)} (pid {pid}) ran")
        return subprocess.CompletedProcess(command, json.loads(ended)["status"], _text(out), _text(err))


def _text(file: Any) -> str:
    """As ``subprocess.run(text=True)`` decodes: the locale's encoding, universal newlines."""
    file.seek(0)
    data: bytes = file.read()
    return data.decode().replace("\r\n", "\n").replace("\r", "\n")


def _address() -> str | None:
    global _server, _broken
    with _lock:
        if _server is not None and _server[0].poll() is None:
            return _server[1]
        if _broken:
            return None
        address = f"\0fbbench-tests-{os.getpid()}-{uuid.uuid4().hex}"
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            listening.bind(address)
            listening.listen(64)
            ready_read, ready_write = os.pipe()
            process = subprocess.Popen(
                [sys.executable, "-c", "import sys; from tests.forkserver import serve; serve(*map(int, sys.argv[1:]))",
                 str(listening.fileno()), str(ready_write)],
                pass_fds=(listening.fileno(), ready_write), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                cwd=REPO)
        finally:
            listening.close()
        os.close(ready_write)
        with os.fdopen(ready_read, "rb") as ready:
            said = ready.read()
        if said != b"ready" or process.poll() is not None:
            _broken = True  # its imports failed: every command starts the ordinary way, and shows why
            with contextlib.suppress(Exception):
                process.kill()
            return None
        _server = (process, address)
        atexit.register(_stop, process)
        return address


def _forget() -> None:
    global _server
    with _lock:
        _server = None


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(Exception):
        process.kill()
        process.wait(5)


# ------------------------------------------------------------------------------------ the server


def serve(listening_fd: int, ready_fd: int) -> None:
    """The server: imports PRELOAD, says ready, then forks one process per request and reports
    each one's exit status. Ends when the pytest process that started it is gone."""
    import importlib

    from fbbench.engines.template_server import drain, ended_children, woken_by_children

    for module in PRELOAD:
        importlib.import_module(module)
    parent = os.getppid()
    listening = socket.socket(fileno=listening_fd)
    wake_read, wake_write = woken_by_children()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the test's process group's Ctrl-C is not ours
    os.write(ready_fd, b"ready")
    os.close(ready_fd)
    waiting: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    selector.register(listening, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    while os.getppid() == parent:
        for key, _ in selector.select(timeout=1.0):
            if key.fileobj is listening:
                connection, _ = listening.accept()
                try:
                    request, fds, _, _ = socket.recv_fds(connection, _MESSAGE, 2)
                except OSError:
                    connection.close()
                    continue
                if len(fds) != 2 or not request:
                    connection.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    _command(json.loads(request), fds, [listening, connection, *waiting.values()],
                             [wake_read, wake_write], selector)
                for fd in fds:
                    os.close(fd)
                with contextlib.suppress(OSError):
                    connection.send(json.dumps({"pid": pid}).encode())
                waiting[pid] = connection
            else:
                drain(wake_read)
        for pid, code in ended_children() if waiting else ():
            connection = waiting.pop(pid) if pid in waiting else None
            if connection is not None:
                with contextlib.suppress(OSError):
                    connection.send(json.dumps({"status": code}).encode())
                connection.close()
    for pid in waiting:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _command(request: dict[str, Any], fds: list[int], sockets: list[socket.socket], pipes: list[int],
             selector: selectors.BaseSelector) -> None:
    """In the forked process: become ``python -m fbbench ARGS`` and end with its exit status."""
    import runpy
    import traceback

    from fbbench.entry import _quit

    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, _quit)  # as fbbench.entry set it on import (the server ignores Ctrl-C)
        selector.close()
        for opened in sockets:
            opened.close()
        for fd in pipes:
            os.close(fd)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in fds:
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        from fbbench.engines.template_server import environment_as_at_start

        environment_as_at_start()  # as an engine template's child: no setenv frees the array threads read
        sys.path[0] = os.getcwd()  # as python -m puts it first (the server's was its own: "")
        sys.argv = [str(REPO / "fbbench" / "__main__.py"), *request["args"]]
        try:
            runpy.run_module("fbbench", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as leaving:
            if leaving.code is None or isinstance(leaving.code, int):
                code = leaving.code or 0
            else:
                print(leaving.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:  # as the interpreter ends on one: its traceback, then the signal
            traceback.print_exc()
            sys.stderr.flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        threading._shutdown()  # type: ignore[attr-defined]  # as the interpreter's exit: wait for its threads
        atexit._run_exitfuncs()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
