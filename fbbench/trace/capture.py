"""A user trace session streamed into a file (inside an engine child process).

The session is started through the services API with fbbench's replay-grade config
(:mod:`fbbench.trace.config`) and read on a thread of its own as the engine hands the output over
(at least every second: a query for output otherwise waits for a full 64 KiB buffer), straight
into the file, flushed whenever the server has nothing more for the moment: a capture that is
killed leaves a file whose every complete event can be read, but for what the last burst left
in the write buffer (8 KiB at most). Stopping a session drops what its reader has not read yet,
and a reader can lag a busy server by seconds: a stop first reads on until it reaches the moment
of the stop (or the output goes quiet). The engine buffers a user session's output up to
``MaxUserTraceLogSize`` and *suspends* the session when its reader falls behind (it says so in
the output): that is detected and reported, since what follows it is missing.

A trace session attaches no database: recording never changes the traced database.

A Ctrl-C stops a recording as its end does (read on, stop the session, close the file); a
second one stops it at once, leaving unread what the engine still held. The client library is
never asked to act on the signal itself (:func:`fbbench.signals.keep_ours_after_attach`): its
own answer cut the reader's connection, losing the unread output, and its shutdown thread
deadlocked with the process's own shutdown at its end. A server that goes away ends the
recording: a broken connection at once, one that shuts down (it ends its sessions' output) once
it no longer takes connections (:meth:`Capture.ended_why`), one that stops answering after
:data:`SILENT` seconds (a query for output comes back every second when it is there).

The file begins and ends with fbbench's own lines (``# fbbench: key = JSON``, which
:mod:`fbbench.trace.parser` reads): what was traced with which limits, when and why it stopped,
whether the session was suspended, and the attachments that were fbbench's own (a run's engine
sampler), which a workload or a replay leaves out.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from fbbench import __version__, signals
from fbbench.database import driver
from fbbench.database.driver import OWN_PROCESS
from fbbench.trace.config import LIMITS, session_config
from fbbench.trace.parser import HEADER, SUSPENDED

_ATTACHMENT = re.compile(r"^\t.* \(ATT_(\d+), ([^,]*), ")
_PROCESS = re.compile(r"^\t([^\t].*):\d+$")
_SESSION_ERROR = re.compile(r"^(Error creating trace session|error while parsing trace configuration|\tline \d+: )")
SILENT = 30.0  # seconds without an answer to the reader's queries: the server is gone
PROBE = 2.0  # seconds of asking whether a server whose session's output ended still answers
INTERRUPTED = "interrupted (Ctrl-C)"
_COUNTED = {"ATTACH_DATABASE": "attached", "START_TRANSACTION": "started", "COMMIT_TRANSACTION": "committed",
            "ROLLBACK_TRANSACTION": "rolled_back", "COMMIT_RETAINING": "committed",
            "ROLLBACK_RETAINING": "rolled_back", "EXECUTE_STATEMENT_FINISH": "statements"}


class _Tally:
    """What the stream holds, counted as it passes: per attachment, so that fbbench's own
    attachments can be taken out at the end."""

    def __init__(self) -> None:
        self.per_attachment: dict[int, dict[str, int]] = {}
        self.fbbench: set[int] = set()  # attachments under fbbench's own process name
        self._attachment: int | None = None
        self.first: str | None = None
        self.last: str | None = None
        self.suspended: list[str] = []
        self.session_errors: list[str] = []
        self._event: str | None = None
        self._blank = True
        self.read_at = time.monotonic()  # when the last line came

    def line(self, text: str) -> None:
        self.read_at = time.monotonic()
        if self._blank and (header := HEADER.match(text)):
            self._event = header.group(5) if header.group(4) is None else None  # a FAILED one is not counted
            self.first = self.first or header.group(1)
            self.last = header.group(1)
        elif self._event is not None and (attachment := _ATTACHMENT.match(text)):
            if ":" in attachment.group(2):  # USER:ROLE; a system attachment has none
                self._attachment = int(attachment.group(1))
                counts = self.per_attachment.setdefault(self._attachment, {})
                key = _COUNTED.get(self._event)
                if key is not None:
                    counts[key] = counts.get(key, 0) + 1
            self._event = None
        elif self._attachment is not None:
            process = _PROCESS.match(text)
            if process is not None and process.group(1) == OWN_PROCESS:
                self.fbbench.add(self._attachment)
            self._attachment = None
        elif self._blank and SUSPENDED.match(text):
            self.suspended.append(text.strip())
        elif _SESSION_ERROR.match(text):
            self.session_errors.append(text.strip())
        self._blank = not text.strip()

    def summary(self, own: set[int]) -> dict[str, Any]:
        totals: dict[str, int] = {}
        for attachment, counts in self.per_attachment.items():
            if attachment not in own:
                for key, value in counts.items():
                    totals[key] = totals.get(key, 0) + value
        span = None
        if self.first and self.last:
            from datetime import datetime

            span = (datetime.fromisoformat(self.last) - datetime.fromisoformat(self.first)).total_seconds()
        return {"attachments": len(set(self.per_attachment) - own), "transactions": totals.get("started", 0),
                "committed": totals.get("committed", 0), "rolled_back": totals.get("rolled_back", 0),
                "statements": totals.get("statements", 0), "first_event": self.first, "last_event": self.last,
                "seconds": span, "suspended": self.suspended, "session_errors": self.session_errors}


class Capture:
    """One trace session into ``output`` (a new file), from :meth:`start` to :meth:`stop`."""

    def __init__(self, services_host: str, database: str | None, output: Path, facts: dict[str, Any]) -> None:
        self.services_host, self.database, self.output, self.facts = services_host, database, output, facts
        self.own: dict[int, str] = {}  # besides the attachments under fbbench's process name
        self.tally = _Tally()
        self.session_id: int | None = None
        self.failure: str | None = None  # why the reader stopped on its own (the server went away)
        self._file: IO[bytes] | None = None
        self._thread: signals.Thread | None = None
        self._server: Any = None
        self._lock = threading.Lock()
        self._closed = False  # the file is closed: a start still under way must not begin reading
        self.heard_at = time.monotonic()  # when a query for output last came back
        self.left_behind = False  # a client-library call still runs on a thread the stop gave up on
        self.attaching = False  # attach() is under way (on a thread a Ctrl-C may have left behind)

    def start(self) -> None:
        self.open()
        try:
            self.attach()
        except Exception:
            self.discard()
            raise

    def open(self) -> None:
        """The file, with fbbench's opening lines (nothing that talks to the server)."""
        self._file = open(self.output, "xb")  # noqa: SIM115 - written by the reader, closed by stop()
        self._directives({"recorded_by": f"fbbench {__version__}", "database": self.database or "(every database)",
                          "started_at": time.strftime("%Y-%m-%dT%H:%M:%S"), **self.facts, **LIMITS})

    def discard(self) -> None:
        """The session could not be started: the file, which holds only fbbench's opening lines,
        is removed (a retry with the same name would otherwise be refused: fbbench never
        overwrites a file)."""
        with self._lock:
            self._closed = True
            if self._file is not None:
                self._file.close()
                self._file = None
                self.output.unlink(missing_ok=True)

    def attach(self) -> None:
        """The session, and its reader (a thread) from then on."""
        self.attaching = True
        try:
            self._attach()
        finally:
            self.attaching = False

    def _attach(self) -> None:
        server = driver.server(self.services_host)
        # Raw bytes through: a value in another character set is written as it came.
        server.encoding, server.encoding_errors = "utf-8", "surrogateescape"
        # Without a timeout a query for output waits for a full buffer (64 KiB): a server's quiet
        # tail would sit there, and a stop then drops it. With one, what is there comes each second.
        server.query_timeout = 1
        self.session_id = server.trace.start(config=session_config(self.database),
                                             name=f"fbbench {self.output.name}"[:60])
        self._server = server
        with self._lock:
            if self._closed:  # stopped while this attach was under way (off the main thread)
                return
            self.heard_at = time.monotonic()
            self._thread = signals.Thread(target=self._read, name="fbbench-trace", daemon=True)
            self._thread.start()

    def exclude(self, attachment: int, why: str) -> None:
        """An attachment of fbbench's own, not of the workload (a run's engine sampler)."""
        self.own[attachment] = why

    def _read(self) -> None:
        assert self._file is not None
        try:
            while (line := self._server.readline()) is not None:
                self.heard_at = time.monotonic()
                if not isinstance(line, str):  # a timeout marker: nothing more for now
                    with self._lock:
                        if self._file is not None:
                            self._file.flush()  # what came is in the file while the server is quiet
                    continue
                with self._lock:
                    if self._file is None:  # stopped at once: what comes now has no file
                        return
                    self._file.write(line.encode("utf-8", "surrogateescape"))
                for part in line.splitlines():
                    self.tally.line(part)
        except Exception as error:  # the server went away, or the session was killed
            self.failure = " ".join(str(error).split())

    def running(self) -> bool:
        return self._thread is not None and not self._thread.ended.is_set()

    def silent(self) -> float:
        """Seconds since the reader's last query came back (0 while no reader runs)."""
        return time.monotonic() - self.heard_at if self.running() else 0.0

    def _drain(self, quiet: float = 2.0, longest: float = 600.0) -> float:
        """Stopping a session drops what the engine logged that its reader has not read yet, and a
        reader can be seconds behind a busy server: before the stop, read on until an event logged
        after this moment arrives (a server's clock may differ from ours: then) or nothing came for
        ``quiet`` seconds, ``longest`` at most. How long that took."""
        from datetime import datetime

        now = datetime.now()
        started = time.monotonic()
        while self.running() and time.monotonic() - started < longest:
            last = self.tally.last
            if (last is not None and datetime.fromisoformat(last) >= now) or \
                    time.monotonic() - self.tally.read_at >= quiet:
                break
            time.sleep(0.05)
        return time.monotonic() - started

    def stop(self, reason: str, *, waits: float = 15.0) -> dict[str, Any]:
        """Stop the session (from a second service connection: the first one is reading), once the
        reader took what was still buffered; close the file; what was captured.

        Every wait here is one a Ctrl-C interrupts (the main thread never sits in a client-library
        call that a server can hold): the session's stop, on a thread of its own, and the reader's
        end are waited for ``waits`` seconds each at most and only while the server answers, and
        what is still running then is left behind (:attr:`left_behind`)."""
        caught_up = self._drain()
        if self.session_id is not None and self.running():
            stopper = signals.Thread(target=self._stop_session, name="fbbench-trace-stop", daemon=True)
            stopper.start()
            if not self._wait(stopper.ended, waits):
                self.left_behind = True
        if self._thread is not None and not self._wait(self._thread.ended, waits):
            self.left_behind = True
        return self._close(reason, caught_up)

    def _wait(self, event: threading.Event, longest: float, patience: float = 5.0) -> bool:
        """Wait for ``event`` ``longest`` seconds at most, and only while the server answers the
        reader (for ``patience`` seconds without an answer it is taken for gone)."""
        deadline = time.monotonic() + longest
        while not event.wait(0.1):
            if time.monotonic() >= deadline or self.silent() > patience:
                return False
        return True

    def stop_at_once(self, reason: str) -> dict[str, Any]:
        """Close the file with what it holds, without reading on or stopping the session (the
        server ends it with the process's connection): a second Ctrl-C, or a server gone silent."""
        if self.running():
            self.left_behind = True
        return self._close(reason, 0.0)

    def ended_why(self) -> str:
        """Why the reader ended on its own. A broken connection: the server went away. Output that
        simply ended: a server shutting down ends its sessions' output a moment before it stops
        taking connections, and a session stopped from elsewhere (fbtracemgr, another tool) ends
        alike while the server runs on: which one, new service connections tell (asked for
        ``PROBE`` seconds; one that gets no answer counts as gone)."""
        if self.failure is not None:
            return "the server went away"
        if self.tally.session_errors:
            return "the server refused the session"
        answers = [True]

        def probe() -> None:
            deadline = time.monotonic() + PROBE
            while time.monotonic() < deadline:
                try:
                    with driver.server(self.services_host):
                        pass
                except Exception:
                    answers[0] = False
                    return
                time.sleep(0.25)

        prober = signals.Thread(target=probe, name="fbbench-trace-probe", daemon=True)
        prober.start()
        self.left_behind = True  # until the probe ended (a Ctrl-C may come while it runs)
        if not self._wait(prober.ended, PROBE + 5):
            return "the server went away (it stopped answering)"
        self.left_behind = False
        if answers[0]:
            return "the session was stopped from elsewhere (the server still answers)"
        return "the server went away"

    def _stop_session(self) -> None:
        with contextlib.suppress(Exception), driver.server(self.services_host) as other:
            other.trace.stop(session_id=self.session_id)

    def _close(self, reason: str, caught_up: float) -> dict[str, Any]:
        own = {**{a: "fbbench's own process" for a in self.tally.fbbench}, **self.own}
        with self._lock:
            self._closed = True
            if self._file is not None:
                self._directives({"own_attachments": sorted(own), "stopped": reason,
                                  "stopped_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                  "suspended": bool(self.tally.suspended)})
                self._file.close()
                self._file = None
        if self._server is not None and not self.running() and not self.left_behind:
            with contextlib.suppress(Exception):
                self._server.close()
        return {**self.tally.summary(set(own)), "stopped": reason, "file": str(self.output),
                "bytes": self.output.stat().st_size, "reader_error": self.failure, "drain_seconds": caught_up,
                "own_attachments": {str(k): v for k, v in sorted(own.items())}}

    def _directives(self, values: dict[str, Any]) -> None:
        assert self._file is not None
        text = "\n" + "".join(f"# fbbench: {key} = {json.dumps(value)}\n" for key, value in values.items()) + "\n"
        self._file.write(text.encode())


def record(services_host: str, database: str | None, output: str, seconds: float | None,
           facts: dict[str, Any], on_progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """``fbbench trace record``: a session for ``seconds`` (None: until Ctrl-C or the server
    goes away); what it captured.

    The main thread only waits here (on events, in sleeps), so that a Ctrl-C is handled at once
    whatever the moment: the attach runs off it (:func:`fbbench.signals.off_main`), and a stop's
    waits are interruptible. A first Ctrl-C stops in order (the reader catches up first); a
    second one during that stop stops at once.
    """
    from fbbench.engines.child import exit_at_once

    signals.make_interruptible()
    signals.keep_ours_after_attach()
    capture = Capture(services_host, database, Path(output), facts)
    capture.open()
    deadline = None if seconds is None else time.monotonic() + seconds
    reason = "the duration was over"
    at_once = False
    try:
        try:
            signals.off_main(capture.attach, "fbbench-trace-attach")
        except Exception:  # the server cannot be reached, the login failed: nothing was recorded
            capture.discard()
            raise
        while capture.running():
            if deadline is not None and time.monotonic() >= deadline:
                break
            if capture.silent() > SILENT:
                reason, at_once = f"the server stopped answering (nothing for {SILENT:g} s)", True
                break
            time.sleep(0.2)
            if on_progress is not None:
                on_progress(capture.tally.summary(set()))
        else:
            reason = capture.ended_why()
    except KeyboardInterrupt:
        reason = INTERRUPTED
        if capture.running():
            print("Ctrl-C: reading what the server logged until now, then stopping the session "
                  "(Ctrl-C again to stop at once)", flush=True)
    try:
        summary = capture.stop_at_once(reason) if at_once else capture.stop(reason)
    except KeyboardInterrupt:
        summary = capture.stop_at_once(f"{reason}, then at once (a second Ctrl-C): what the server "
                                       "had not handed over yet is not in the file")
    if capture.left_behind or capture.attaching:
        exit_at_once()  # a thread inside the client library must not hold the process's end
    return summary
