"""Classic: the native core in N processes of one attachment each, merged into one run.

Firebird's Classic server is one process per attachment, each with its own engine instance and
page cache, on a database opened in shared mode. Embedded, the same is the load core running in
N processes: the run's firebird.conf says ``ServerMode = Classic``, which makes every embedded
engine open the database shared, and each process drives one attachment.

:class:`ProcessRun` has the interface of ``_core.LoadRun`` (``start``, ``poll``, ``stop``,
``wait``, ``wait_boundary``, ``result``), so :func:`fbbench.loadcore.run_load` drives it like a
threaded run and the caller gets one result of the same shape (docs/core-api.md).

How it works:

- **processes**: ``start`` spawns one worker per attachment with this process's environment (so
  the same engine runtime), forked from the run's attachment template
  (:func:`fbbench.engines.template_server.serve_attachments`: an interpreter that has imported the
  worker, in this process's group, which a time-shared pair stops and continues; a new ``python
  -c`` interpreter where it cannot be had), and hands each, as the first line on its stdin, the
  run's config with ``connections = 1``, ``attachment_index = k`` (so its unit and parameter
  streams, home and name are exactly thread k's: same seed, same work in every architecture),
  ``hold = true`` and, under a target rate, its share of the rate;
- **start barrier**: each worker connects and holds (phase ``ready``). Once all are ready, the
  parent sends every one ``go T`` with one CLOCK_MONOTONIC time T a little ahead (or, when the
  run itself was started with ``hold``, the T its caller gives to :meth:`ProcessRun.go`); each core
  makes T its zero, so interval boundaries agree across the processes within a millisecond or
  so (the clock is the machine's). Under a ramp-up (``connect_rate``) the go comes as soon as
  every worker has started and the ramp itself is timed from T;
- **pipes**: every worker writes JSON lines on its stdout: ``started``, ``live`` (its poll(),
  every 0.25 s), ``interval`` (each closed interval as it closes, histograms included: none is
  skipped) and ``result`` (its core's result, its peak RSS and CPU); stdin carries ``go`` and
  ``stop``, and its end (EOF: this process is gone) stops the worker too. One thread reads all
  the pipes; stderr goes to a file per worker, kept for a crash message;
- **merge**: intervals merge by index, totals by unit, exactly (``_core.merge_results``: counts
  add, HDR histograms merge, errors by code add); live counters add up, and the last interval
  shown is the latest one every worker has closed (``_core.merge_intervals``). Boundaries are
  reported by this process's own clock at the timeline's interval ends, the moments every worker
  closes its intervals at (an observer reads right then, as in a threaded run, not after the
  workers' messages came in — by then they may have detached); one that ends the run early (a
  stop, the end of fixed work) as the first worker reports it;
- **fixed work** (``transactions``): each worker does its attachment's units; the run ends when
  all are done, and the last interval lasts as long as the longest process's;
- **stop and failure**: ``stop`` (Ctrl-C, SIGTERM) is sent to every worker; a worker whose run
  fails (lost connection, a database that cannot be written, an attach refused) fails the run
  and the others are stopped; a worker that dies without a result (a crash) fails the run with
  the tail of its stderr;
- **watchdog**: each worker's core bounds its own attachment as in a threaded run (abandons it
  after ``watchdog_seconds`` + the longest finite lock timeout, then ends its process at once).
  A worker process that has still not handed in its result :data:`PROCESS_GRACE` seconds after
  that bound is SIGKILLed and named like an abandoned attachment ("attachment N did not return
  within S s … (its process was killed)"); what it streamed before (its closed intervals) is
  kept, the other workers' results too.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any

from fbbench import _core, signals
from fbbench.engines.template import Template, TemplateChild
from fbbench.loadcore.classic_process import WorkerHandle, WorkerProcess, who
from fbbench.workloads.figures import OUTCOMES

WORKER_COMMAND = signals.child_command("fbbench.loadcore.classic_worker:worker_main")
START_AHEAD = 0.2  # seconds between sending go and the common zero: every worker reads it in time
PROCESS_GRACE = 5.0  # beyond the core's own watchdog bound: a worker writes its result and exits


def _forked(template: Template, stderr: IO[bytes]) -> TemplateChild:
    """A worker forked by ``template``, with pipes for its stdin and stdout as Popen gives them."""
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    try:
        child = template.fork_stdio(stdin_read, stdout_write, stderr.fileno())
    except BaseException:
        os.close(stdin_write)
        os.close(stdout_read)
        raise
    finally:  # the child's ends: its own now, or nobody's
        os.close(stdin_read)
        os.close(stdout_write)
    child.stdin = os.fdopen(stdin_write, "wb")
    child.stdout = os.fdopen(stdout_read, "rb")
    return child


def _seconds_text(seconds: float) -> str:
    return f"{seconds:.0f}" if float(seconds).is_integer() else f"{round(seconds, 3)}"


class ProcessRun:
    """A load run over N worker processes, one attachment each; the interface of _core.LoadRun."""

    def __init__(self, config_json: str) -> None:
        self._timeline = _core.Timeline(config_json)  # the core's checks and ValueError, before anything starts
        self.config: dict[str, Any] = json.loads(config_json)
        self.connections = int(self.config["connections"])
        first = int(self.config.get("attachment_index") or 1)
        self.indices = list(range(first, first + self.connections))
        # (first attachment, attachments) of each process: one each for Classic; a lab's load
        # generators (fbbench.lab.clients) give each host its share.
        self.groups: list[tuple[int, int]] = [(index, 1) for index in self.indices]
        lock_waits = [u.get("lock_timeout") for u in self.config["units"] if u.get("lock_timeout") is not None]
        self.bound = float(self.config.get("watchdog_seconds") or 10.0) + max(lock_waits, default=0)
        self._cond = threading.Condition()
        self._workers: list[WorkerProcess] = []
        self._started = False
        self._stop_requested = False  # by the caller (the user), before counting ended
        self._halting = False  # stop sent to the workers
        self._failures: list[str] = []  # the run's own failures (a worker crashed, could not start)
        self._ended: float | None = None  # time.monotonic() when counting ended
        self._why_ended = "after the end of the measured period"
        self._zero_mono: float | None = None
        self._zero_wall: float | None = None
        self._go_at: float | None = None  # hold mode: the zero the caller gave to go()
        self._boundaries = 0
        self._boundary_at = 0.0
        self._merged_last: tuple[int, dict[str, Any]] | None = None
        self._late_note: str | None = None  # the workers killed by the watchdog
        self._result: str | None = None
        self._done = False
        self._template: Template | None = None
        self._template_failed = False

    # -- the LoadRun interface ----------------------------------------------------------------

    def start(self) -> None:
        if self._started:
            raise RuntimeError("this run was already started")
        self._started = True
        rate = self.config.get("target_rate")
        for index, count in self.groups:
            config = {**self.config, "connections": count, "attachment_index": index, "hold": True}
            if rate is not None:
                config["target_rate"] = rate * count / self.connections  # arrivals per attachment as in threads
            stderr = tempfile.TemporaryFile(prefix=f"fbbench-attachment-{index}-")  # noqa: SIM115 (closed at the end)
            try:
                process = self._spawn(index, stderr)
            except OSError as error:
                stderr.close()
                with self._cond:
                    self._failures.append(f"cannot start the process of {who(list(range(index, index + count)))}: "
                                          f"{error}")
                break
            worker = WorkerProcess(index, process, stderr, count)
            worker.send(json.dumps(self._first_message(index, config)))
            self._workers.append(worker)
        threading.Thread(target=self._read, name="fbbench-classic-pipes", daemon=True).start()
        threading.Thread(target=self._control, name="fbbench-classic-control", daemon=True).start()

    def _spawn(self, index: int, stderr: IO[bytes]) -> WorkerHandle:
        """The process that drives the attachments from ``index`` (this machine's, by default):
        forked from the run's attachment template, or where there is none, a new interpreter."""
        template = self._attachment_template()
        if template is not None:
            try:
                return _forked(template, stderr)
            except OSError:
                # The template died, or cannot fork: the rest start the ordinary way. It is not
                # closed before the run ends: that would stop the processes it forked already.
                self._template_failed = True
        return subprocess.Popen(WORKER_COMMAND, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=stderr, env=os.environ.copy())

    def _attachment_template(self) -> Template | None:
        """The template this run's attachment processes are forked from, started with the first:
        an interpreter that has imported the worker (0.06 s of CPU each, 2-core VM, against one
        fork). None where it cannot start."""
        if self._template is None and not self._template_failed:
            try:
                self._template = Template.start(os.environ.copy(), "serve_attachments")
            except OSError:
                self._template_failed = True
        return None if self._template_failed else self._template

    def _close_template(self) -> None:
        """Its end: once every process forked from it has ended (it kills those still running)."""
        template, self._template = self._template, None
        if template is not None:
            template.close()

    def _first_message(self, index: int, config: dict[str, Any]) -> dict[str, Any]:
        """The first line a worker reads: its run's config (docs/core-api.md) and who its parent is."""
        return {"config": config, "parent_pid": os.getpid(), "sys_path": [p for p in sys.path if p]}

    def poll(self) -> str:
        with self._cond:
            return json.dumps(self._live())

    def go(self, start_monotonic: float) -> None:
        """Hold mode (the run's config has ``hold``): start at this CLOCK_MONOTONIC time."""
        if not self.config.get("hold"):
            raise RuntimeError('go() is for a run started with "hold": true')
        with self._cond:
            if self._go_at is None:
                self._go_at = float(start_monotonic)
            self._cond.notify_all()

    def open_closing(self) -> None:
        """closing_sql: the end of the measured period has been read; every worker's attachments
        run their closing statements now."""
        with self._cond:
            for worker in self._workers:
                worker.send("close")

    def stop(self) -> None:
        with self._cond:
            if self._ended is None:
                self._stop_requested = True
            self._halt_locked()

    def wait(self, timeout_seconds: float) -> bool:
        if not self._started:
            return False
        deadline = time.monotonic() + max(timeout_seconds, 0.0)
        with self._cond:
            while not self._done:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def wait_boundary(self, seen: int, timeout_seconds: float) -> tuple[int, bool, float]:
        deadline = time.monotonic() + max(timeout_seconds, 0.0)
        with self._cond:
            while self._boundaries <= seen and not self._done:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return self._boundaries, self._done, self._boundary_at

    def result(self) -> str:
        with self._cond:
            if self._result is None:
                raise RuntimeError("the run has not ended yet: wait() until it returns True")
            return self._result

    def __del__(self) -> None:
        # A run dropped unfinished must not leave its workers hammering the database.
        with contextlib.suppress(Exception):
            if not self._done:
                self.stop()

    # -- the parent's threads -----------------------------------------------------------------

    def _halt_locked(self) -> None:
        if not self._halting:
            self._halting = True
            if self._ended is None and self._stop_requested:
                self._why_ended = "after the stop"
            for worker in self._workers:
                worker.send("stop")
        self._cond.notify_all()

    def _fail_locked(self, message: str | None = None) -> None:
        """The run fails: every worker stops. ``message``: a failure of the run's own (a worker
        that crashed, or could not start); a worker's failure is in its result already."""
        if self._ended is None and self._why_ended != "after the run failed":
            self._why_ended = "after the run failed"
        if message is not None:
            self._failures.append(message)
        self._halt_locked()

    def _read(self) -> None:
        """Reads every worker's output: one thread for all pipes."""
        selector = selectors.DefaultSelector()
        for worker in self._workers:
            assert worker.process.stdout is not None
            os.set_blocking(worker.process.stdout.fileno(), False)
            selector.register(worker.process.stdout, selectors.EVENT_READ, worker)
        open_pipes = len(self._workers)
        while open_pipes:
            for key, _ in selector.select(timeout=0.5):
                worker = key.data
                try:
                    chunk = os.read(key.fd, 1 << 16)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    selector.unregister(key.fileobj)
                    open_pipes -= 1
                    with self._cond:
                        worker.eof = True
                        self._cond.notify_all()
                    continue
                worker.buffer += chunk
                *lines, worker.buffer = worker.buffer.split(b"\n")
                with self._cond:
                    for line in lines:
                        try:
                            message = json.loads(line)
                        except ValueError:  # not ours (a library writing to stdout): ignored
                            continue
                        if isinstance(message, dict):
                            self._message(worker, message)
                    self._cond.notify_all()
        selector.close()

    def _message(self, worker: WorkerProcess, message: dict[str, Any]) -> None:
        if "live" in message:
            worker.live = message["live"]
            if worker.live.get("failure") and worker.result is None and self._ended is None:
                self._fail_locked()  # one attachment's failure stops the run, as in threads
        elif "interval" in message:
            interval = message["interval"]
            worker.intervals[interval["index"]] = interval
            if self._zero_wall is not None and len(worker.intervals) + 1 > self._boundaries:
                # The first worker past a boundary marks it: it is the same moment in all of them.
                self._boundaries = len(worker.intervals) + 1
                self._boundary_at = self._zero_wall + interval["start_offset"] + interval["seconds"]
        elif "started" in message:
            worker.started = True
            worker.facts["pid"] = message["started"]
        elif "result" in message:
            worker.result = message["result"]
            worker.facts.update(message.get("process") or {})
            if worker.result.get("status") == "failed" and self._ended is None:
                self._fail_locked()

    def _control(self) -> None:
        try:
            self._run()
        except BaseException as error:  # never leave the caller waiting for ever
            with self._cond:
                self._failures.append(f"the Classic run's control failed: {type(error).__name__}: {error}")
                self._halt_locked()
            self._kill_all()
        finally:
            self._close_template()  # its processes have all ended, or were killed just now
            with self._cond:
                if self._result is None:
                    merged = self._merge()
                    self._result = json.dumps(merged)
                    if self._zero_wall is not None:
                        # Every boundary the merged result has: the zero, then one per interval.
                        intervals = merged["intervals"]
                        self._boundaries = 1 + len(intervals)
                        if intervals:
                            last = intervals[-1]
                            self._boundary_at = self._zero_wall + last["start_offset"] + last["seconds"]
                self._done = True
                self._cond.notify_all()

    def _run(self) -> None:
        ramp = float(self.config.get("connect_rate") or 0.0) > 0
        with self._cond:
            # The start barrier: every worker connected and holding (under a ramp: started).
            while not self._halting:
                gone = next((w for w in self._workers if w.eof or w.result is not None), None)
                if gone is not None and not self._stop_requested:
                    # A run with an attachment short is not the run asked for: none starts.
                    self._fail_locked(None if gone.result is not None and gone.result.get("status") == "failed"
                                      else self._crash_message(gone, "before it was ready") if gone.result is None
                                      else f"{gone.who}: its process ended before the start")
                    break
                if self._workers and all(w.started if ramp else w.ready for w in self._workers):
                    break
                self._cond.wait(0.1)
            if self.config.get("hold"):
                while not self._halting and not self._failures and self._go_at is None:
                    self._cond.wait(0.1)
            if not self._halting and not self._failures and len(self._workers) == len(self.groups):
                start = self._go_at if self._go_at is not None else time.monotonic() + START_AHEAD
                self._zero_mono, self._zero_wall = start, time.time() + (start - time.monotonic())
                for worker in self._workers:
                    worker.send(f"go {start!r}")
            elif not self._halting:
                self._halt_locked()
        if self._zero_mono is not None:
            self._wait_until(self._zero_mono)
            with self._cond:
                if self._boundaries == 0:
                    self._boundaries, self._boundary_at = 1, self._zero_wall or time.time()
                self._cond.notify_all()
        self._until_counting_ends()
        self._until_workers_return()

    def _wait_until(self, moment: float) -> None:
        with self._cond:
            while not self._halting and time.monotonic() < moment:
                self._cond.wait(moment - time.monotonic())

    def _planned_end(self) -> float | None:
        end = self._timeline.end
        return None if self._zero_mono is None or end is None else self._zero_mono + end

    def _pass_planned_boundaries(self) -> float | None:
        """Boundaries whose planned moment has come; the next one's time.monotonic()."""
        assert self._zero_mono is not None and self._zero_wall is not None
        while True:
            offset = self._timeline.boundary_offset(self._boundaries + 1)
            if offset is None:
                return None  # past the last boundary of a timed run
            if self._zero_mono + offset > time.monotonic():
                return self._zero_mono + offset
            self._boundaries += 1
            self._boundary_at = self._zero_wall + offset
            self._cond.notify_all()

    def _until_counting_ends(self) -> None:
        end = self._planned_end()
        with self._cond:
            while True:
                upcoming = self._pass_planned_boundaries() if self._zero_mono is not None else None
                for worker in self._workers:
                    if worker.eof and worker.result is None and not worker.killed and not self._crashed(worker):
                        self._fail_locked(self._crash_message(worker, "during the run"))
                if self._halting or not any(w.counting for w in self._workers):
                    break
                if end is not None and time.monotonic() >= end:
                    break
                wake = min(t for t in (end, upcoming, time.monotonic() + 0.1) if t is not None)
                self._cond.wait(max(wake - time.monotonic(), 0.0005))
            self._ended = time.monotonic()

    @staticmethod
    def _crashed(worker: WorkerProcess) -> bool:
        return bool(worker.facts.get("crashed"))

    def _crash_message(self, worker: WorkerProcess, when: str) -> str:
        worker.facts["crashed"] = True
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.process.wait(0.5)  # its output closed: it is ending, if not gone already
        tail = worker.stderr_tail()
        return (f"{worker.who}: {worker.ended_how()} without a result {when}"
                + (f"; its stderr ends with:\n{tail}" if tail else ""))

    def _until_workers_return(self) -> None:
        """The watchdog: every worker hands in its result within the bound, or is killed."""
        deadline = (self._ended or time.monotonic()) + self.bound + PROCESS_GRACE
        with self._cond:
            while any(w.result is None and not w.eof for w in self._workers):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.2))
            late = [w for w in self._workers if w.result is None and not w.eof]
            for worker in late:
                worker.killed = True
            for worker in self._workers:
                if worker.eof and worker.result is None and not worker.killed and not self._crashed(worker):
                    self._failures.append(self._crash_message(worker, "after the run"))
        for worker in late:
            with contextlib.suppress(OSError):
                worker.process.kill()
        if late:
            self._late_note = (f"{who([i for w in late for i in w.attachments])} did not return within "
                               f"{_seconds_text(self.bound + PROCESS_GRACE)} s {self._why_ended} (cancelled, then "
                               "its process was killed)")
        # Processes that handed in their result end on their own at once; a stuck exit is killed.
        stop_by = time.monotonic() + PROCESS_GRACE
        for worker in self._workers:
            try:
                worker.process.wait(max(stop_by - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    worker.process.kill()
                worker.process.wait()
            with contextlib.suppress(OSError):
                worker.stderr.close()
            if worker.process.stdin is not None:
                with contextlib.suppress(OSError):
                    worker.process.stdin.close()

    def _kill_all(self) -> None:
        for worker in self._workers:
            with contextlib.suppress(OSError):
                worker.process.kill()

    # -- live counters and the merged result ----------------------------------------------------

    def _complete_intervals(self) -> int:
        """Intervals every worker has closed (or will never close: it finished or is gone)."""
        count = 0
        while self._workers and all(count in w.intervals or not w.counting for w in self._workers):
            if not any(count in w.intervals for w in self._workers):
                break
            count += 1
        return count

    def _live(self) -> dict[str, Any]:
        names = [unit["name"] for unit in self.config["units"]]
        units = {name: dict.fromkeys(OUTCOMES, 0) for name in names}
        measure = {name: dict.fromkeys(OUTCOMES, 0) for name in names}
        for worker in self._workers:
            for into, key in ((units, "units"), (measure, "measure_units")):
                for name, counts in (worker.live.get(key) or {}).items():
                    for outcome in OUTCOMES:
                        into.setdefault(name, dict.fromkeys(OUTCOMES, 0))[outcome] += counts.get(outcome, 0)
        completed = self._complete_intervals()
        last = None
        if completed:
            index = completed - 1
            if self._merged_last is None or self._merged_last[0] != index:
                parts = [json.dumps(w.intervals[index]) for w in self._workers if index in w.intervals]
                self._merged_last = (index, json.loads(_core.merge_intervals(parts)))
            last = self._merged_last[1]
        elapsed = max(time.monotonic() - self._zero_mono, 0.0) if self._zero_mono is not None else 0.0
        if self._done:
            phase = "done"
        elif self._halting or self._ended is not None:
            phase = "stopping"
        elif self._zero_mono is None or time.monotonic() < self._zero_mono:
            phase = "ready" if self._workers and all(w.ready for w in self._workers) else "connecting"
        elif elapsed < float(self.config.get("warmup_seconds") or 0.0):
            phase = "warmup"
        else:
            phase = "measure"
        failures = [*self._failures, *(w.live["failure"] for w in self._workers if w.live.get("failure"))]
        return {"elapsed_seconds": elapsed, "phase": phase,
                "connected": sum(int(w.live.get("connected") or 0) for w in self._workers),
                "intervals_completed": completed, "units": units, "measure_units": measure,
                "last_interval": last, "failure": "; ".join(dict.fromkeys(failures)) or None}

    def _home(self, index: int) -> int | None:
        for unit in self.config["units"]:
            for statement in unit["statements"]:
                for param in statement.get("params", []):
                    if param["kind"] == "home":
                        return (index - 1) % int(param["args"][0]) + 1
        return None

    def _merge(self) -> dict[str, Any]:
        parts: list[str] = []
        killed = [i for w in self._workers if w.killed for i in w.attachments]
        for worker in self._workers:
            if worker.result is not None:
                parts.append(json.dumps(worker.result))
                continue
            recorded = sum(sum(c.get(o, 0) for o in OUTCOMES) for c in (worker.live.get("units") or {}).values())
            error = self._late_note if worker.killed else next(
                (f for f in self._failures if f.startswith(f"{worker.who}:")), "its process ended")
            parts.append(json.dumps({
                "status": "failed", "failure": None,
                "attachments": [{"index": i, "home": self._home(i), "units": recorded if i == worker.index else 0,
                                 "error": error} for i in worker.attachments],
                "abandoned": worker.attachments if worker.killed else [],
                "intervals": [worker.intervals[i] for i in sorted(worker.intervals)]}))
        never_started = [i for i in self.indices if i not in {a for w in self._workers for a in w.attachments}]
        for index in never_started:
            parts.append(json.dumps({"attachments": [{"index": index, "home": self._home(index), "units": 0,
                                                      "error": "its process could not be started"}]}))
        if not parts:
            parts.append(json.dumps({"status": "failed"}))
        merged: dict[str, Any] = json.loads(_core.merge_results(parts))
        # Units no worker reported (nothing ran) still appear, as in a threaded run's result.
        for unit in self.config["units"]:
            if unit["name"] not in merged["units"]:
                empty = json.loads(_core.merge_results([json.dumps({"units": {unit["name"]: {
                    "tally": dict.fromkeys((t.strip().upper() for t in unit.get("tally", [])), 0)}}})]))
                merged["units"][unit["name"]] = empty["units"][unit["name"]]
        statuses = [json.loads(p).get("status") for p in parts]
        crashed = bool(self._failures)
        worker_failed = any(w.result is not None and w.result.get("status") == "failed" for w in self._workers)
        if crashed or worker_failed:
            status = "failed"
        elif self._stop_requested:
            status = "stopped"
        elif killed:
            status = "failed"
        elif "stopped" in statuses:
            status = "stopped"
        else:
            status = "completed"
        failures = [*self._failures]
        if merged.get("failure"):
            failures.append(merged["failure"])
        if self._late_note:
            failures.append(self._late_note)
        merged["status"] = status
        merged["failure"] = "; ".join(dict.fromkeys(failures)) or None
        if merged.get("started_at") is None:
            merged["started_at"] = time.time()
        if merged.get("ended_at") is None:
            merged["ended_at"] = time.time()
        merged["worker_processes"] = [
            {"index": w.index, **{k: v for k, v in w.facts.items() if k != "crashed"},
             "returncode": w.process.returncode, "killed": w.killed} for w in self._workers]
        return merged
