"""fbbench.signals without an engine: waiting for threads while a Ctrl-C may come."""

from __future__ import annotations

import linecache
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Callable

import pytest

from fbbench import signals

TraceFunction = Callable[[types.FrameType, str, object], object]


def _interrupting_acquire_in(function: str) -> TraceFunction:
    """A trace that raises KeyboardInterrupt where ``function`` (of threading.py) acquires a lock:
    what a Ctrl-C that lands inside that wait does."""

    def calls(frame: types.FrameType, event: str, _arg: object) -> TraceFunction | None:
        if event == "call" and frame.f_code.co_name == function and frame.f_code.co_filename == threading.__file__:
            return lines
        return None

    def lines(frame: types.FrameType, event: str, _arg: object) -> TraceFunction:
        if event == "line" and "acquire" in linecache.getline(frame.f_code.co_filename, frame.f_lineno):
            raise KeyboardInterrupt
        return lines

    return calls


def _interrupted(wait: Callable[[], object], function: str) -> None:
    sys.settrace(_interrupting_acquire_in(function))
    try:
        wait()
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)


def test_off_main_hands_over_the_outcome_and_a_ctrl_c_leaves_the_call_behind() -> None:
    # fbbench trace record attaches off the main thread: an attach to a server that does not
    # answer held the Ctrl-C in C (the recorder never ended); the wait must end at the signal.
    assert signals.off_main(lambda: 42, "answer") == 42
    with pytest.raises(ZeroDivisionError):
        signals.off_main(lambda: 1 // 0, "failing")

    def interrupt(_signum: int, _frame: types.FrameType | None) -> None:
        raise KeyboardInterrupt

    held = threading.Event()
    started = []
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    began = time.monotonic()
    with signals.handled_by(interrupt), pytest.raises(KeyboardInterrupt):
        signals.off_main(lambda: started.append(1) or held.wait(30), "held")
    assert time.monotonic() - began < 2 and started
    held.set()


def test_a_ctrl_c_while_waiting_for_a_thread_does_not_end_it() -> None:
    # CPython before 3.13 marks a thread as ended when a KeyboardInterrupt interrupts join() on
    # it (python/cpython#90882): compare --paired's coordinator then went on while a run was
    # still stopping. signals.Thread's end is an Event, which an interrupted wait leaves alone.
    release = threading.Event()
    plain = threading.Thread(target=release.wait, daemon=True)
    ours = signals.Thread(target=release.wait, daemon=True)
    plain.start()
    ours.start()
    try:
        _interrupted(lambda: plain.join(0.1), "_wait_for_tstate_lock")
        if sys.version_info < (3, 13):
            assert not plain.is_alive()  # the hazard: it still runs
        _interrupted(lambda: ours.ended.wait(0.1), "wait")
        assert not ours.ended.is_set()
    finally:
        release.set()
    assert ours.ended.wait(5)


def test_an_engine_child_does_not_print_driver_finalizers_failing_after_a_stop(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # After a Ctrl-C reached libfbclient, the statements it shut down raise in __del__; Python
    # printed "Exception ignored in: <function Statement.__del__>" with a traceback (2 in 200
    # stops of benchmarks/paired_interrupt.py). Other unraisable errors are still printed.
    from fbbench.engines.child import _quiet_driver_finalizers

    monkeypatch.setattr(sys, "unraisablehook", _quiet_driver_finalizers)

    def finalizer_raising_from(module: str) -> None:
        error = type("DatabaseError", (Exception,), {"__module__": module})

        class Statement:
            def __del__(self) -> None:
                raise error("connection shutdown")

        Statement()  # freed at once: its __del__ raises into the hook

    finalizer_raising_from("firebird.driver.types")
    assert capsys.readouterr().err == ""
    finalizer_raising_from("somewhere.else")
    assert "connection shutdown" in capsys.readouterr().err

    # A Statement whose __init__ a Ctrl-C cut short fails in its own __del__ with a builtin error
    # (AttributeError: no '_out_meta'; 1 in 120 stops): the finalizer is the driver's, so it is quiet.
    class HalfMade:
        def __del__(self) -> None:
            self._out_meta  # noqa: B018 - never set: __init__ was interrupted

    HalfMade.__del__.__module__ = "firebird.driver.core"
    HalfMade()
    assert capsys.readouterr().err == ""
