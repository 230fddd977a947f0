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
  down every attachment of the process, on a thread of its own; :func:`keep_ours_after_attach`
  puts ours back after every firebird-driver attach (the native core does the same after its
  own attaches) and refuses that shutdown for a signal that comes before they are back;
- a main thread that waits for threads of its own while Ctrl-C may come waits on
  :class:`Thread`'s ``ended`` event, never on ``join()`` or ``is_alive()`` (see there), and a
  client-library call that may take long runs off the main thread (:func:`off_main`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, Protocol, TypeVar

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
T = TypeVar("T")


def child_command(target: str, *args: str, unblock: bool = False) -> list[str]:
    """The command that starts a fbbench child process (``python -c``) at ``target``
    ("package.module:function", called with ``args`` as strings; its return value is the exit
    code). A Ctrl-C before the target has taken over ends the child with 130, not a traceback.
    ``unblock``: the parent started it with the stop signals blocked
    (:func:`blocked_while_starting`), so that none kills it while its interpreter imports its
    site packages ("Fatal Python error: init_import_site"); the child unblocks them first thing.
    Not ``-m module``: that would run a second copy of a package module as ``__main__``."""
    module, function = target.split(":")
    entry = ("import signal, sys\n"
             "try:\n"
             + ("    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))\n" if unblock else "")
             + f"    from {module} import {function}\n"
             f"    sys.exit({function}(*sys.argv[1:]))\n"
             "except KeyboardInterrupt:\n"
             "    sys.exit(130)\n")
    return [sys.executable, "-c", entry, *args]

_received: list[int] = []


class Signalled(Protocol):
    """A child process signals can be sent to (a subprocess.Popen, or an engine child forked by a
    template: :class:`fbbench.engines.template.TemplateChild`)."""

    def send_signal(self, sig: int) -> None: ...


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
def forwarding_to(process: Signalled) -> Iterator[None]:
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

    def wait_ended(self) -> None:
        """Until the thread has ended; a Ctrl-C meanwhile is a KeyboardInterrupt at once (in
        short waits: the main thread handles signals between them), the thread left running."""
        while not self.ended.wait(0.1):
            pass


def off_main(call: Callable[[], T], name: str) -> T:
    """``call()`` on a thread of its own, waited for in a way a Ctrl-C interrupts.

    A client-library call holds its thread inside C until it returns, and Python runs a signal
    handler only between bytecodes of the main thread: an attach to a server that does not answer
    would hold a Ctrl-C for as long as the connect timeout. Here the main thread waits on an
    Event with a short timeout, so the Ctrl-C is a KeyboardInterrupt at once; the call is then
    left running on its (daemon) thread, and the process must not wait for the client library
    when it ends (:func:`fbbench.engines.child.exit_at_once`).
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:  # handed to the waiting thread
            outcome["error"] = error

    thread = Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.wait_ended()
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value


_SIGACTION_BYTES = 512  # more than struct sigaction takes on any Linux ABI; kept as opaque bytes
_hooked = False
_FB_SHUTRSN_SIGNAL = -5  # fb_shutdown's reason when libfbclient's own handler saw a signal
_FB_SHUT_CONFIRMATION = 1  # a callback of this kind may refuse a shutdown (non-zero)
_refusal: Any = None  # the ctypes callback, kept alive as long as the library may call it


def _refuse_signal_shutdown(api: Any) -> None:
    """libfbclient's answer to a signal: a thread of its own shuts the client library down while
    the process goes on — under the reader of a trace session, which loses what it had not read,
    and beside the shutdown of the process's own end, with which it deadlocks inside libfbclient
    (a trace record that never ended after Ctrl-C). A confirmation callback refuses it, as
    Firebird's own tools do (gstat, nbackup, qli); a shutdown for any other reason goes ahead."""
    global _refusal
    from firebird.driver import fbapi

    def confirm(reason: int, _mask: int, _arg: object) -> int:
        return 1 if reason == _FB_SHUTRSN_SIGNAL else 0

    _refusal = fbapi.FB_SHUTDOWN_CALLBACK(confirm)
    status = fbapi.ISC_STATUS_ARRAY()
    api.fb_shutdown_callback(status, _refusal, _FB_SHUT_CONFIRMATION, None)


def keep_ours_after_attach() -> None:
    """Put this process's SIGINT / SIGTERM handlers back after every firebird-driver attach, and
    refuse the client library's shutdown on a signal.

    Restored at the C level (sigaction), so that an attach on a loader thread restores them too.
    libfbclient installs its handler as the first attach begins: a signal that comes before
    ours are back reaches its handler (which passes it on to ours), and the shutdown that handler
    asks for is refused (:func:`_refuse_signal_shutdown`).
    """
    global _hooked
    if _hooked:
        return
    from firebird.driver import Connection, Server, fbapi
    from firebird.driver.hooks import APIHook, ConnectionHook, ServerHook, add_hook

    if fbapi.has_api():
        _refuse_signal_shutdown(fbapi.api)
    else:
        add_hook(APIHook.LOADED, fbapi.FirebirdAPI, _refuse_signal_shutdown)

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


_expected_parent: int | None = None


def expect_parent(pid: int) -> None:
    """This process was forked by ``pid`` on behalf of the process a request names as its parent
    (an engine template, :mod:`fbbench.engines.template`, which ends when that process does):
    :func:`die_with_parent` watches ``pid`` instead."""
    global _expected_parent
    _expected_parent = pid


def forked_by_template() -> bool:
    """Whether this process was forked by an engine template (:func:`expect_parent`)."""
    return _expected_parent is not None


def die_with_parent(parent_pid: int | None) -> None:
    """If fbbench itself is killed (even with SIGKILL), the engine child must not go on unobserved."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    # A parent killed while this process was still starting sent no death signal: we are an
    # orphan already, and must not start work nobody watches.
    expected = _expected_parent if _expected_parent is not None else parent_pid
    if expected is not None and os.getppid() != expected:
        os._exit(1)
