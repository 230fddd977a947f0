"""Run engine work in a child process prepared for one engine.

The dynamic loader reads ``LD_LIBRARY_PATH`` only when a process starts, and the client
libraries of Firebird 3, 4 and 5 cannot share a process. So the fbbench process never loads a
client library: every operation that talks to Firebird runs in a child started with the
runtime's environment (``FIREBIRD``, ``FIREBIRD_LOCK``, ``LD_LIBRARY_PATH``), and one command can
use several engines one after another.

The child (:func:`child_main` with a REQUEST and a RESULT file) imports ``module:function``,
calls it with JSON arguments, and writes the JSON return value — or the error — to RESULT. It
inherits the terminal, so progress displays work. It runs in its own process group: the parent
forwards Ctrl-C exactly once (:func:`fbbench.signals.forwarding_to`), and the child stops its
workers and keeps what was measured. The REQUEST/RESULT directory lives in the runtime's own
directory, so whatever ends the parent, the next run's clean-up removes it with the runtime.
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
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from fbbench import signals
from fbbench.engines import platform
from fbbench.engines.runtime import Runtime
from fbbench.errors import FbbenchError, FirebirdError, Interrupted

# Not "-m fbbench.engines.child": that would run a second copy of this module as __main__.
# A Ctrl-C forwarded while the child is still starting ends it quietly with 130, not a traceback.
_CHILD_ENTRY = (
    "import sys\n"
    "try:\n"
    "    from fbbench.engines.child import child_main\n"
    "    sys.exit(child_main(*sys.argv[1:]))\n"
    "except KeyboardInterrupt:\n"
    "    sys.exit(130)\n"
)


def run_in_engine(runtime: Runtime, target: str, *args: Any,
                  on_start: Callable[[subprocess.Popen[bytes]], None] | None = None, **kwargs: Any) -> Any:
    """Call ``target`` ("package.module:function") in a child process using ``runtime``.

    ``on_start(process)``: called once the child is started (its process group is its pid), for
    a caller that controls it while it runs (time-shared runs: :mod:`fbbench.runner.timeshare`).
    """
    runtime.base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="child-", dir=runtime.base) as tmp:
        request, result = Path(tmp) / "request.json", Path(tmp) / "result.json"
        request.write_text(json.dumps({
            "target": target, "args": args, "kwargs": kwargs,
            "runtime": runtime.to_json(), "sys_path": [p for p in sys.path if p],
        }))
        command = [sys.executable, "-c", _CHILD_ENTRY, str(request), str(result)]
        process = subprocess.Popen(command, env=runtime.env(), **platform.in_own_process_group())
        with signals.forwarding_to(process):
            if on_start is not None:
                on_start(process)
            returncode = process.wait()
        return _read_result(result, returncode, runtime)


def _read_result(result: Path, returncode: int, runtime: Runtime) -> Any:
    if not result.exists():
        if returncode in (Interrupted.exit_code, -signal.SIGINT):
            raise Interrupted("interrupted by the user")
        tail = _log_tail(runtime.firebird_log)
        died = f"killed by signal {-returncode}" if returncode < 0 else f"exit code {returncode}"
        raise FbbenchError(
            f"the {runtime.engine.label} process ended without a result ({died})"
            + (f"; firebird.log ends with:\n{tail}" if tail else ""),
            hint=f"the engine's log is {runtime.firebird_log}",
        )
    outcome = json.loads(result.read_text())
    if "value" in outcome:
        return outcome["value"]
    error = outcome["error"]
    if error["type"] == "FirebirdError":
        raise FirebirdError(error["message"], tuple(error.get("gdscodes", ())), hint=error.get("hint"))
    if error["type"] == "Interrupted":
        raise Interrupted(error["message"], hint=error.get("hint"))
    if "traceback_file" not in error:  # an FbbenchError of any kind: the user's to act on
        raise FbbenchError(error["message"], hint=error.get("hint"))
    raise FbbenchError(f"internal error in the engine process: {error['message']}",
                       hint=f"details: {error['traceback_file']}")


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
    as "Exception ignored …" with a traceback. Nothing is lost — the run records the stop — so
    those are not shown; anything else is, as Python would."""
    if str(getattr(unraisable.exc_type, "__module__", "")).startswith("firebird.driver"):
        return
    sys.__unraisablehook__(unraisable)


def child_main(request_file: str, result_file: str) -> NoReturn:
    global _current_runtime
    sys.unraisablehook = _quiet_driver_finalizers
    request = json.loads(Path(request_file).read_text())
    for entry in reversed(request["sys_path"]):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    _current_runtime = Runtime.from_json(request["runtime"])
    outcome: dict[str, Any]
    code = 0
    try:
        module_name, _, function_name = request["target"].partition(":")
        function = getattr(importlib.import_module(module_name), function_name)
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
            # A bug in fbbench: reported in one line, the traceback kept in a file for a bug report.
            trace = Path(tempfile.gettempdir()) / f"fbbench-error-{os.getpid()}.txt"
            trace.write_text(traceback.format_exc())
            outcome = {"error": {"type": type(error).__name__, "message": f"{type(error).__name__}: {error}",
                                 "traceback_file": str(trace)}}
            code = 1
    Path(result_file).write_text(json.dumps(outcome, default=str))
    if not _exit_at_once:  # else a thread stuck inside the engine could hold the shutdown too
        _shut_down_client_library()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

