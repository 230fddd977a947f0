"""Typed Python face of the native load core (``fbbench._core``, docs/core-api.md).

The runner builds the config (the JSON-shaped dict of docs/core-api.md), calls
:func:`run_load`, and gets a :class:`LoadResult`. Python never runs per transaction: it starts
the run, polls live counters for the progress display, and turns Ctrl-C into the core's stop
flag, so an interrupted run still returns what it measured (status ``"stopped"``).

Results and live counters are the plain JSON the core produced (``result["units"]``,
``live["last_interval"]``), typed by the TypedDicts below: the results store takes those nested
dicts as they are.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any, NotRequired, TypedDict

from fbbench import _core, signals

# --------------------------------------------------------------------------------------- results
# What the core hands back is the JSON of docs/core-api.md, read as plain dicts (the results store
# takes them as they are); these types name its keys, so that a type checker finds a misspelt one.


class OutcomeCounts(TypedDict):
    ok: int
    rolled_back: int
    conflicts: int
    errors: int


class UnitInterval(OutcomeCounts, total=False):
    histogram: str  # the interval's latencies (serialized HDR histogram)


class IntervalStats(TypedDict):
    index: int
    phase: str  # warmup | measure
    start_offset: float
    seconds: float
    units: dict[str, UnitInterval]


class LiveCounters(TypedDict):
    elapsed_seconds: float
    phase: str  # connecting | ready | warmup | measure | stopping | done
    connected: int
    intervals_completed: int
    units: dict[str, OutcomeCounts]
    measure_units: dict[str, OutcomeCounts]
    last_interval: IntervalStats | None
    failure: str | None


class CodeCount(TypedDict):
    gdscode: int
    count: int
    message: str


class UnitResult(OutcomeCounts):
    histogram: str
    latency_ms: dict[str, float]
    errors_by_code: list[CodeCount]
    conflicts_by_code: list[CodeCount]
    tally: dict[str, float]


class AttachmentResult(TypedDict):
    index: int
    home: int | None
    units: int  # units it ran, warm-up and uncounted ones included
    error: str | None


class LoadResult(TypedDict):
    status: str  # completed | stopped | failed
    failure: str | None  # also names abandoned attachments
    started_at: float
    measure_started_at: float | None
    ended_at: float
    measured_seconds: float
    client_cpu_seconds: float
    thread_cpu_seconds: float
    attachments: list[AttachmentResult]
    # Attachments that did not come back within the watchdog bound after the run ended: their
    # threads may still be inside the engine, so the process should end with os._exit.
    abandoned: list[int]
    intervals: list[IntervalStats]
    units: dict[str, UnitResult]
    # Classic's one process per attachment (loadcore.classic): each process's facts.
    worker_processes: NotRequired[list[dict[str, Any]]]
    # A replay's own measurements (docs/core-api.md, "Replay").
    replay: NotRequired[dict[str, Any]]
    # Added by the runner (runner/engine/measure.py): this process's CPU, and Python's share.
    process_cpu_seconds: NotRequired[float]
    python_cpu_seconds: NotRequired[float]
    # A time-shared fixed-work run (runner/engine/measure.py): measured_seconds is its own turns;
    # wall_seconds, own_seconds and turns say how that was counted (runner/barrier.own_seconds).
    timeshare: NotRequired[dict[str, Any]]


def units_completed(result: LoadResult) -> int:
    """Units of every attachment, warm-up and uncounted ones included."""
    return sum(attachment["units"] for attachment in result["attachments"])


# ------------------------------------------------------------------------------------------ run

ProgressCallback = Callable[[LiveCounters], None]


BoundaryCallback = Callable[[int, float, bool], bool | None]  # True: the closing statements may run


def run_load(config: Mapping[str, Any], on_progress: ProgressCallback | None = None,
             poll_seconds: float = 0.5, on_boundary: BoundaryCallback | None = None,
             processes: bool = False, hold: Callable[[], float] | None = None,
             make_run: Callable[[str], Any] | None = None) -> LoadResult:
    """Run the load to its end and return what was measured.

    ``processes=True`` runs it as Classic does: one process per attachment, the database opened
    in shared mode (the engine's ServerMode must be Classic), merged into one result of the same
    shape (:mod:`fbbench.loadcore.classic`); the default runs the attachments as threads of this
    process.

    Ctrl-C (KeyboardInterrupt) or SIGTERM, raised while waiting or inside ``on_progress``, sets
    the stop flag; the run then ends within about two seconds and its result has status
    ``"stopped"``. Whatever the engine does, the call returns at most the watchdog bound
    (``watchdog_seconds`` + the largest finite ``lock_timeout``) after the measured period or
    the stop: an attachment still inside the engine by then is abandoned and listed in
    ``abandoned`` (status ``"failed"`` after a completed period, ``"stopped"`` after a stop).
    Its thread may still be running: the caller should end the process with ``os._exit`` once
    the results are safe.
    Any other exception from ``on_progress`` also stops the run, and is re-raised afterwards.
    ``ValueError`` means the config was refused before anything started.

    ``on_boundary(boundary, at, last)`` is called on a thread of its own as soon as the core
    passes a boundary — 1 is the run's zero, 1 + k the end of interval k, 0 only for a last
    call that brings no boundary — with the boundary's wall-clock time; ``last`` is true exactly
    once, when the run is over. Observers (the engine sampler) read right at the boundaries this
    way, not whenever the next poll happens to come. When it returns True (once the end of the
    measured period has been read), the attachments run the config's ``closing_sql``: they wait
    for that at most half the watchdog bound.

    ``hold``: start in the core's hold mode. Once every attachment is connected (under a ramp-up:
    at once, the ramp being part of the warm-up), ``hold()`` is called on this thread and returns
    the CLOCK_MONOTONIC time to start at — the run's zero. Time-shared runs meet there
    (:func:`fbbench.runner.barrier.arrive`) so that they measure the same seconds.

    ``make_run(config_json)``: another object with the LoadRun interface to drive (a lab's load
    generators on other hosts, :class:`fbbench.lab.clients.LabClientsRun`).
    """
    if hold is not None:
        config = {**config, "hold": True}
    if make_run is not None:
        run: Any = make_run(json.dumps(dict(config)))
    elif processes:
        from fbbench.loadcore.classic import ProcessRun

        run = ProcessRun(json.dumps(dict(config)))
    else:
        run = _core.LoadRun(json.dumps(dict(config)))
    # Ctrl-C and SIGTERM become the stop flag, not libfbclient's shutdown of every attachment.
    with signals.stop_signals_interrupt():
        run.start()
        watcher = _watch_boundaries(run, on_boundary) if on_boundary is not None else None
        try:
            if hold is not None:
                _hold(run, hold, float(config.get("connect_rate") or 0.0) > 0)
            while not run.wait(poll_seconds):
                if on_progress is not None:
                    on_progress(json.loads(run.poll()))
        except KeyboardInterrupt:
            _stop_and_wait(run)
        except BaseException:
            _stop_and_wait(run)
            raise
        finally:
            if watcher is not None:
                watcher.join(5)
    if on_progress is not None:
        on_progress(json.loads(run.poll()))
    result: LoadResult = json.loads(run.result())
    return result


def _hold(run: Any, hold: Callable[[], float], ramp: bool) -> None:
    """Hold mode: wait until the run holds connected (not under a ramp), then start it at ``hold()``."""
    while not ramp:
        if run.wait(HOLD_POLL_SECONDS):
            return  # ended before it was ready (an attach refused): nothing to start
        if json.loads(run.poll()).get("phase") == "ready":
            break
    run.go(hold())


HOLD_POLL_SECONDS = 0.02  # while connecting: how soon a held run's readiness is noticed


def _watch_boundaries(run: Any, on_boundary: BoundaryCallback) -> threading.Thread:
    def call(boundary: int, at: float, last: bool) -> None:
        with contextlib.suppress(Exception):  # an observer's failure is its own
            if on_boundary(boundary, at, last):
                run.open_closing()

    def watch() -> None:
        seen = 0
        while True:
            passed, done, at = run.wait_boundary(seen, 0.5)
            new = range(seen + 1, passed + 1)
            for boundary in new:
                call(boundary, at, done and boundary == passed)
            seen = max(seen, passed)
            if done:
                if not new:
                    call(0, at, True)  # the run is over and no boundary came with its end
                return

    thread = threading.Thread(target=watch, name="fbbench-boundaries", daemon=True)
    thread.start()
    return thread


def _stop_and_wait(run: Any) -> None:
    # The core's watchdog bounds this wait: no engine call is waited for here.
    run.stop()
    while True:
        try:
            if run.wait(0.5):
                return
        except KeyboardInterrupt:
            continue  # a second Ctrl-C while stopping changes nothing: the stop is under way


def histogram_summary(histograms: list[str]) -> dict[str, float]:
    """Merge serialized histograms; count, min_us, max_us, mean_us, p50_us … p999_us."""
    return dict(_core.histogram_summary(list(histograms)))


def merge_histograms(histograms: list[str]) -> str:
    return str(_core.merge_histograms(list(histograms)))


def build_tpb(isolation: str, read_only: bool = False, lock_timeout: int | None = None) -> bytes:
    """The exact TPB the core starts a unit's transaction with (isolation: one of spec.ISOLATIONS)."""
    return bytes(_core.build_tpb(isolation, read_only, lock_timeout))
