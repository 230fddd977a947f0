"""Run engine work in a child process prepared for one engine.

The dynamic loader reads ``LD_LIBRARY_PATH`` only when a process starts, and the client
libraries of Firebird 3, 4 and 5 cannot share a process. So the fbbench process never loads a
client library: every operation that talks to Firebird runs in a child started with the
runtime's environment (``FIREBIRD``, ``FIREBIRD_LOCK``, ``LD_LIBRARY_PATH``), and one command can
use several engines one after another.

The child (:func:`child_main`) reads its request — ``module:function``, JSON arguments, the
runtime and its credentials — from one pipe, calls the function, and writes the JSON return value (or the error) to
another pipe. Pipes, not files: the hand-over needs no disk, so a file system that filled up
during the run cannot lose its outcome (a result file then failed with ENOSPC, and the parent
fell over reading it), and nothing of a request outlives the child: a server's password is in
no file and in no environment (where any process of the user could read it, /proc/PID/environ,
and whatever the child starts would inherit it), only in the two processes' memory. It inherits the terminal, so
progress displays work. It runs in its own process group: the parent forwards Ctrl-C exactly
once (:func:`fbbench.signals.forwarding_to`), and the child stops its workers and keeps what was
measured.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from fbbench import signals
from fbbench.engines import own_process, platform
from fbbench.engines import template as templates
from fbbench.engines.runtime import Runtime
from fbbench.errors import FbbenchError, FirebirdError, Interrupted

# A child started here: a new interpreter (subprocess.Popen), or forked from the engine's template.
EngineProcess = subprocess.Popen[bytes] | templates.TemplateChild


def run_in_engine(runtime: Runtime, target: str, *args: Any,
                  on_start: Callable[[EngineProcess], None] | None = None,
                  launcher: Callable[[list[str]], list[str]] | None = None, **kwargs: Any) -> Any:
    """Call ``target`` ("package.module:function") in a child process using ``runtime``.

    ``on_start(process)``: called once the child is started (its process group is its pid), for
    a caller that controls it while it runs (time-shared runs: :mod:`fbbench.runner.timeshare`).
    ``launcher``: a prefix for the child's command that execs it in place (a machine shape's
    cgroup or network namespace: :mod:`fbbench.shape`), so the child is its process all the same.
    """
    request = json.dumps({
        "target": target, "args": args, "kwargs": kwargs,
        "runtime": runtime.to_json(), "sys_path": [p for p in sys.path if p],
        "credentials": {"user": runtime.user, "password": runtime.password},
    }).encode()
    template = templates.for_runtime(runtime) if launcher is None else None
    request_read, request_write = os.pipe()
    result_read, result_write = os.pipe()
    process: EngineProcess | None = None
    try:
        if template is not None:
            process = _forked(template, runtime, request_read, result_write)
        if process is None:
            command = signals.child_command("fbbench.engines.child:child_main", str(request_read), str(result_write),
                                            unblock=True)
            if launcher is not None:
                command = launcher(command)
            with signals.blocked_while_starting():
                process = subprocess.Popen(command, env=runtime.env(), pass_fds=(request_read, result_write),
                                           **platform.in_own_process_group())
    except BaseException:
        # A Ctrl-C held back while the child started is raised as the signals are unblocked: the
        # child is there but has no request. The request pipe closed, it ends at once (child_main).
        for fd in (request_read, request_write, result_read, result_write):
            os.close(fd)
        if process is not None:
            _reap(process)
        raise
    os.close(request_read)
    os.close(result_write)
    result = _Reader(result_read)
    with signals.forwarding_to(process):
        _send(request_write, request)
        if on_start is not None:
            on_start(process)
        returncode = process.wait()
    return _read_result(result.text(), returncode, runtime)


def _forked(template: templates.Template, runtime: Runtime, request_read: int,
            result_write: int) -> templates.TemplateChild | None:
    """The child forked from the engine's template; None where the template cannot (it is then
    not asked again, and the child starts the ordinary way)."""
    try:
        return template.fork(runtime.env(), request_read, result_write)
    except OSError:
        templates.forget(template)
        return None


def _reap(process: EngineProcess) -> None:
    """Waits for a child that got no request (it ends by itself at once); killed if it does not."""
    try:
        process.wait(timeout=10)
    except BaseException:
        process.kill()
        process.wait()
        raise


def _send(fd: int, data: bytes) -> None:
    """The whole request, then end of file; a child that died before reading it is the returncode's to tell."""
    try:
        with open(fd, "wb") as pipe:
            pipe.write(data)
    except BrokenPipeError:
        pass


class _Reader:
    """Reads the child's result pipe to its end on a thread of its own, so that a result larger
    than the pipe's buffer never blocks a child the parent is waiting for."""

    def __init__(self, fd: int) -> None:
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._read, args=(fd,), name="engine child result", daemon=True)
        self._thread.start()

    def _read(self, fd: int) -> None:
        with open(fd, "rb") as pipe:
            while chunk := pipe.read(65536):
                self._chunks.append(chunk)

    def text(self, timeout: float = 10.0) -> str:
        """What the child wrote; once it has ended, its end of the pipe is closed (a grandchild
        never inherits it), so end of file follows at once."""
        self._thread.join(timeout)
        return b"".join(self._chunks).decode("utf-8", "replace")


def _read_result(text: str, returncode: int, runtime: Runtime) -> Any:
    try:
        outcome = json.loads(text) if text else None
    except ValueError:  # cut short: the child died while writing it
        outcome = None
    if not isinstance(outcome, dict) or not ("value" in outcome or "error" in outcome):
        if returncode in (Interrupted.exit_code, -signal.SIGINT):
            raise Interrupted("interrupted by the user")
        tail = _log_tail(runtime.firebird_log)
        died = f"killed by signal {-returncode}" if returncode < 0 else f"exit code {returncode}"
        raise FbbenchError(
            f"the {runtime.engine.label} process ended without a result ({died})"
            + (f"; firebird.log ends with:\n{tail}" if tail else ""),
            hint=f"the engine's log is {runtime.firebird_log}",
        )
    if "value" in outcome:
        return outcome["value"]
    error = outcome["error"]
    if error["type"] == "FirebirdError":
        raise FirebirdError(error["message"], tuple(error.get("gdscodes", ())), hint=error.get("hint"))
    if error["type"] == "Interrupted":
        raise Interrupted(error["message"], hint=error.get("hint"))
    if "internal" not in error:  # an FbbenchError of any kind: the user's to act on
        raise FbbenchError(error["message"], hint=error.get("hint"))
    raise FbbenchError(f"internal error in the engine process: {error['message']}", hint=error["internal"])


def _log_tail(log: Path, lines: int = 20) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


_current_runtime: Runtime | None = None
_exit_at_once = False


def exit_at_once() -> None:
    """Ask the child to end without shutting the client library down once its result is written.

    Needed when the native core had to abandon an attachment thread stuck inside the engine:
    the client library's shutdown could wait for it.
    """
    global _exit_at_once
    _exit_at_once = True


def current_runtime() -> Runtime:
    """The runtime this child process was started for (only valid inside a child)."""
    if _current_runtime is None:
        raise RuntimeError("not inside an engine child process")
    return _current_runtime


def _shut_down_client_library() -> None:
    """firebird-driver shuts the client library down at exit and prints a traceback when the
    library refuses ("connection shutdown", after a Ctrl-C reached it), and so do the
    finalizers of its statements and cursors that the interpreter collects after it: done
    here, quietly — the result is already written — and the process then ends without its
    interpreter's clean-up (:func:`child_main`)."""
    driver = sys.modules.get("firebird.driver.core")
    shutdown = getattr(driver, "_api_shutdown", None)
    if shutdown is None:
        return
    atexit.unregister(shutdown)
    with contextlib.suppress(Exception):
        shutdown()


def _quiet_driver_finalizers(unraisable: Any) -> None:
    """``sys.unraisablehook``: firebird-driver objects freed after their connection was shut
    down raise in ``__del__`` ("connection shutdown": libfbclient answers a Ctrl-C that reaches
    it while it attaches by shutting every attachment of the process down), which Python prints
    as "Exception ignored …" with a traceback; and an object whose ``__init__`` a Ctrl-C cut short
    fails in its own ``__del__`` (``Statement.__del__``: no attribute ``_out_meta``). Nothing is
    lost — the run records the stop — so those are not shown; anything else is, as Python would."""
    if issubclass(unraisable.exc_type, KeyboardInterrupt):
        # A stop that landed in a callback (seen: importlib's module-lock weakref callback, 1 in
        # 200 stops) is neither printed nor lost: the main thread gets it again.
        signals.raise_again()
        return
    raised_by = (unraisable.exc_type, unraisable.object)
    if any(str(getattr(thing, "__module__", "")).startswith("firebird.driver") for thing in raised_by):
        return
    sys.__unraisablehook__(unraisable)


def child_main(request_fd: str, result_fd: str) -> NoReturn:
    global _current_runtime
    sys.unraisablehook = _quiet_driver_finalizers
    with open(int(request_fd), "rb") as pipe:
        sent = pipe.read()
    try:
        request = json.loads(sent)
    except ValueError:
        # No request, or part of one: the parent was stopped (a Ctrl-C as this process started)
        # or killed before it sent it all. Nothing was begun; nobody waits for a result.
        os._exit(Interrupted.exit_code)
    result = int(result_fd)
    os.set_inheritable(result, False)  # the parent reads until every writer is gone: only this process
    for entry in reversed(request["sys_path"]):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    _current_runtime = Runtime.from_json(request["runtime"])
    _current_runtime.user = request["credentials"]["user"]
    _current_runtime.password = request["credentials"]["password"]
    outcome: dict[str, Any]
    code = 0
    try:
        module_name, _, function_name = request["target"].partition(":")
        function = getattr(importlib.import_module(module_name), function_name)
        # The child's peak memory counts from here: an interpreter just started has the transient
        # peak of its imports in it, a child forked from a template (fbbench.engines.template) not.
        own_process.reset_peak_rss()
        outcome = {"value": function(*request["args"], **request["kwargs"])}
    except KeyboardInterrupt:
        outcome = {"error": {"type": "Interrupted", "message": "interrupted by the user"}}
        code = 130
    except FbbenchError as error:
        outcome = {"error": {"type": type(error).__name__, "message": error.message, "hint": error.hint,
                             "gdscodes": list(getattr(error, "gdscodes", ()))}}
        code = error.exit_code
    except Exception as error:
        if type(error).__module__.startswith("firebird.driver"):  # Firebird's own refusal
            outcome = {"error": {"type": "FirebirdError", "message": str(error).strip(),
                                 "gdscodes": list(getattr(error, "gds_codes", ()) or ())}}
            code = 2
        else:
            # A bug in fbbench: reported in one line, the traceback kept in a file for a bug report
            # (where the disk has room for it).
            trace = Path(tempfile.gettempdir()) / f"fbbench-error-{os.getpid()}.txt"
            try:
                trace.write_text(traceback.format_exc())
            except OSError as unwritten:
                trace_hint = f"its traceback could not be kept in {trace}: {unwritten.strerror}"
            else:
                trace_hint = f"details: {trace}"
            outcome = {"error": {"type": type(error).__name__, "message": f"{type(error).__name__}: {error}",
                                 "internal": trace_hint}}
            code = 1
    with contextlib.suppress(BrokenPipeError), open(result, "wb") as pipe:  # a parent gone has no use for it
        pipe.write(json.dumps(outcome, default=str).encode())
    if not _exit_at_once:  # else a thread stuck inside the engine could hold the shutdown too
        _shut_down_client_library()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

