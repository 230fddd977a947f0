"""One attachment of an embedded Classic run, in a process of its own: the worker side of
:mod:`fbbench.loadcore.classic` (its docstring says how the two talk).

Kept apart from the coordinator so that each attachment process imports only what it needs.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

from fbbench import _core, signals
from fbbench.engines import own_process

STREAM_SECONDS = 0.25  # how often a worker sends its live counters (and closed intervals)


def _process_cpu() -> float:
    times = os.times()
    return times.user + times.system


def worker_main() -> int:
    """One attachment of a Classic run, in a process of its own (see the module's docstring)."""
    import faulthandler

    # A crash inside the engine leaves its traceback in the stderr tail the parent reports.
    faulthandler.enable()
    first = json.loads(sys.stdin.readline())
    for entry in reversed(first.get("sys_path", [])):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    signals.die_with_parent(first.get("parent_pid"))
    run = _core.LoadRun(json.dumps(first["config"]))
    # Installed before start(): the core restores these after its attach, so Ctrl-C reaching
    # this process (its group was signalled) stops the run instead of libfbclient's shutdown.
    with signals.handled_by(lambda _signum, _frame: run.stop()):
        return _work(run, first)


def _work(run: Any, first: dict[str, Any]) -> int:
    out = sys.stdout.buffer

    def emit(message: dict[str, Any]) -> None:
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()

    def commands() -> None:
        for line in sys.stdin:
            word, _, argument = line.strip().partition(" ")
            if word == "go":
                run.go(float(argument))
            elif word == "stop":
                run.stop()
            elif word == "close":
                run.open_closing()
        run.stop()  # the parent is gone (EOF): nobody would take this run's figures

    run.start()
    emit({"started": os.getpid()})
    threading.Thread(target=commands, name="fbbench-commands", daemon=True).start()
    sent = 0
    peak_pss = threads = 0
    seen = 0
    next_live = time.monotonic()
    while True:
        # Wakes at each boundary, so that a closed interval goes out at once.
        seen, done, _at = run.wait_boundary(seen, max(next_live - time.monotonic(), 0.0))
        for interval in json.loads(run.intervals(sent)):
            emit({"interval": interval})
            sent += 1
            peak_pss = max(peak_pss, own_process.proportional_set_bytes() or 0)  # once per interval, while attached
            threads = max(threads, own_process.thread_count() or 0)
        if done or time.monotonic() >= next_live:
            live = json.loads(run.poll())
            live.pop("last_interval", None)
            emit({"live": live})
            next_live = time.monotonic() + STREAM_SECONDS
        if done:
            break
    result = json.loads(run.result())
    if os.environ.get("FBBENCH_TEST_HOLD_RESULT") == str(first["config"]["attachment_index"]):
        # Test seam: a process stuck at its end (exit handlers waiting on a thread inside the
        # engine, say), which only the parent's watchdog ends. Its attachment is detached.
        while True:
            time.sleep(60)
    emit({"result": result, "process": {"pid": os.getpid(), "peak_rss_bytes": own_process.peak_rss_bytes(),
                                        "peak_pss_bytes": peak_pss or None, "threads": threads or None,
                                        "cpu_seconds": _process_cpu()}})
    sys.stderr.flush()
    if result.get("abandoned"):
        os._exit(0)  # its thread is still inside the engine: exit handlers could wait for it
    return 0
