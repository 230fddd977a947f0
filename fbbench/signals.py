"""Ctrl-C and SIGTERM, in one place.

fbbench runs as a CLI process (the parent) and one engine child process per engine. What a
signal means depends on where it lands:

- while the CLI still loads (imports, building its commands) nothing has started: Ctrl-C ends
  it quietly with 130 (:mod:`fbbench.entry`), not with a traceback from inside an import;
- once a command runs, Ctrl-C is a ``KeyboardInterrupt`` the command handles
  (:func:`commands_take_over`);
- while an engine child works, the parent forwards SIGINT / SIGTERM to it and waits
  (:func:`forwarding_to`): the child stops its work and keeps what was measured; time-shared
  runs (``compare --paired``) are waited for on threads, and their coordinator forwards
  (:mod:`fbbench.runner.paired`);
- in the engine child, SIGINT and SIGTERM become ``KeyboardInterrupt`` and are remembered
  (:func:`make_interruptible`, :func:`interrupted`), so an error that follows from the signal
  (a loader thread's "connection shutdown", say) is reported as an interruption, not a failure;
- libfbclient installs handlers of its own on its first attach and answers Ctrl-C by shutting
  down every attachment of the process; :func:`keep_ours_after_attach` puts ours back after
  every firebird-driver attach (the native core does the same after its own attaches);
- a main thread that waits for threads of its own while Ctrl-C may come waits on
  :class:`Thread`'s ``ended`` event, never on ``join()`` or ``is_alive()`` (see there).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_received: list[int] = []


# ------------------------------------------------------------------------------------ the CLI


def commands_take_over() -> None:
    """Called as a command starts: from here on Ctrl-C is a KeyboardInterrupt the command handles
    (until now it ended the process quietly: :mod:`fbbench.entry`). An ignored SIGINT stays ignored."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@contextlib.contextmanager
def handled_by(handler: Callable[[int, FrameType | None], Any]) -> Iterator[bool]:
    """For the duration, SIGINT and SIGTERM go to ``handler``; whoever handled them before gets
    them back afterwards. Only the main thread handles signals: elsewhere nothing is installed,
    and the context gives False."""
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield True
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before if before is not None else signal.SIG_DFL)


@contextlib.contextmanager
def blocked_while_starting() -> Iterator[None]:
    """For the duration (a child process being started), SIGINT and SIGTERM are blocked in this
    thread; the child inherits the mask, so a stop signal sent while its interpreter starts waits
    until the child unblocks them, its handlers in place. One that reaches this process meanwhile
    is delivered when the block ends, or handled by another thread as Python always does."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def forwarding_to(process: subprocess.Popen[bytes]) -> Iterator[None]:
    """While ``process`` (an engine child in its own process group) runs, our stop signals are its.

    The child gets each signal once and decides what it means; the parent just keeps waiting.
    Off the main thread (time-shared runs, each waited for on a thread of its own) signals cannot
    be handled: the main thread's coordinator forwards them (:mod:`fbbench.runner.paired`).
    """

    def forward(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signum)

    with handled_by(forward):
        yield


# ----------------------------------------------------------------------------- the engine child


def _raise(signum: int, _frame: FrameType | None) -> None:
    _received.append(signum)
    raise KeyboardInterrupt


def make_interruptible() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt in the main thread, and are remembered."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, _raise)


def raise_again() -> None:
    """Deliver the last stop signal again: its KeyboardInterrupt was raised where Python cannot
    let it propagate (a finalizer, a weakref callback — importlib's module locks have one), so
    the main thread never saw it. Sent a moment later from a timer's thread: sent here, the
    handler would run at once, still inside the callback."""
    again = threading.Timer(0.05, os.kill, (os.getpid(), _received[-1] if _received else signal.SIGINT))
    again.daemon = True
    again.start()


def interrupted() -> bool:
    """Whether a stop signal reached this process (errors after it are the user's stop)."""
    return bool(_received)


@contextlib.contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """For the duration: SIGINT and SIGTERM raise KeyboardInterrupt (main thread only).

    Used around the native core's run, which may be started outside an engine child (tests):
    whoever installed the handlers before gets them back afterwards.
    """
    with handled_by(_raise):
        yield


class Thread(threading.Thread):
    """A thread whose end the main thread can wait for while a Ctrl-C may come.

    CPython before 3.13 marks a thread as ended when a KeyboardInterrupt interrupts ``join()``
    or ``is_alive()`` on it while it still runs (python/cpython#90882): the main thread then
    goes on as if the thread were done — a coordinator returned while a time-shared run was
    still stopping, and the process exited under it. This thread's end is an Event, which an
    interrupted wait leaves intact: wait with ``ended.wait(timeout)``, ask ``ended.is_set()``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ended = threading.Event()

    def run(self) -> None:
        try:
            super().run()
        finally:
            self.ended.set()


_SIGACTION_BYTES = 512  # more than struct sigaction takes on any Linux ABI; kept as opaque bytes
_hooked = False


def keep_ours_after_attach() -> None:
    """Put this process's SIGINT / SIGTERM handlers back after every firebird-driver attach.

    Restored at the C level (sigaction), so that an attach on a loader thread restores them too.
    """
    global _hooked
    if _hooked:
        return
    from firebird.driver import Connection, Server
    from firebird.driver.hooks import ConnectionHook, ServerHook, add_hook

    libc = ctypes.CDLL(None, use_errno=True)
    saved = {}
    for sig in STOP_SIGNALS:
        action = ctypes.create_string_buffer(_SIGACTION_BYTES)
        if libc.sigaction(sig, None, action) == 0:
            saved[sig] = action

    def restore(_attachment: object) -> None:
        for sig, action in saved.items():
            libc.sigaction(sig, action, None)

    add_hook(ConnectionHook.ATTACHED, Connection, restore)
    add_hook(ServerHook.ATTACHED, Server, restore)
    _hooked = True


_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int | None) -> None:
    """If fbbench itself is killed (even with SIGKILL), the engine child must not go on unobserved."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    # A parent killed while this process was still starting sent no death signal: we are an
    # orphan already, and must not start work nobody watches.
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)
