"""The measured phase, inside the engine child: the native core drives the attachments, and a
sampler on an attachment and a thread of its own reads the engine (MON$) and the workload's
DB-side metrics at every interval boundary. Everything is stored as each interval completes, so
an interrupted or killed run keeps what it measured.

Python never runs per transaction here: the main thread polls the core's live counters for the
display and the store; the sampler thread only ever waits for boundaries and the database.

The metric window is the score's window: the readings at the boundary where the measured period
starts (the end of the warm-up, or the run's zero — read while the load holds connected, before
its first unit) and at the last boundary; their times are
stored with each metric, and the change per interval is stored too, so NOPM has a value per
interval that adds up to the whole.
"""

from __future__ import annotations

import json
import resource
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.console import Console

from fbbench.observe.profiler import CLOSING_SQL, LoadEnd, ProfilerThread
from fbbench.observe.sampler import Sampler, SamplerThread
from fbbench.runner.engine import facts
from fbbench.runner.engine.live import LiveDisplay
from fbbench.runner.engine.replication import JournalWatch
from fbbench.store import ResultsStore
from fbbench.store.model import RecordedSettings
from fbbench.workloads.spec import Workload

if TYPE_CHECKING:
    from fbbench.loadcore import LiveCounters, LoadResult

ZERO = -1  # the sampler's reading at the run's zero
BASELINE_WAIT_SECONDS = 30.0  # for the baseline reading while the load holds at its start


@dataclass
class MetricWindow:
    """The readings a metric's value is between."""

    start: float | None = None  # level
    end: float | None = None
    start_at: float | None = None  # time.time() of the reading
    end_at: float | None = None


@dataclass
class Measured:
    result: LoadResult  # the core's result (docs/core-api.md), plus this process's CPU
    metrics: dict[str, dict[str, Any]]  # name → start, end, value, per_minute, description, window
    sample_seconds: list[float] = field(default_factory=list)  # how long each engine reading took
    sampler_errors: list[str] = field(default_factory=list)
    architecture: dict[str, Any] | None = None  # what the engine really ran (facts.architecture_reading)
    journal: dict[str, Any] | None = None  # --replication async: JournalWatch.figures over the measured period


class _ArchitectureCheck:
    """Reads the architecture the engine runs (fbbench.observe.architecture) from the first
    measured boundary on: within the sampler's reading at that boundary when there is a sampler,
    else through an attachment of its own, on a thread of its own (never in the way of the
    boundary watcher). Under a ramp-up not every attachment may be there yet: it reads again at
    the next boundaries until it has seen them all."""

    def __init__(self, dsn: str, connections: int, first_boundary: int, sampler: SamplerThread | None) -> None:
        self.dsn, self.connections, self.first_boundary, self.sampler = dsn, connections, first_boundary, sampler
        self.reading: dict[str, Any] | None = None
        self._asked = False
        self._thread: threading.Thread | None = None

    def boundary(self, boundary: int) -> None:
        """Called before the sampler hears of the boundary, so that its reading answers."""
        if boundary < self.first_boundary:
            return
        if self.sampler is not None:
            if not self._asked:
                self._asked = True
                self.sampler.sampler.architecture_wanted = self.connections
            return
        if (self._thread is not None and self._thread.is_alive()) or \
                (self.reading is not None and self.reading.get("attachments", 0) >= self.connections):
            return
        self._thread = threading.Thread(target=self._read, name="fbbench-architecture", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            reading = facts.architecture_reading(self.dsn, set())
        except Exception as error:  # evidence missing is recorded, not a reason to lose the run
            reading = {"architecture": None, "error": f"{type(error).__name__}: {error}".strip()}
        if self.reading is None or reading.get("architecture") is not None:
            self.reading = reading

    def result(self, timeout: float) -> dict[str, Any] | None:
        """After the run (and after the sampler was closed)."""
        if self.sampler is not None:
            return self.sampler.sampler.architecture
        if self._thread is not None:
            self._thread.join(timeout)
        return self.reading


class _Readings:
    """Turns the sampler's readings into stored rows: metric levels become changes per interval."""

    def __init__(self, store: ResultsStore, run_id: str, workload: Workload, start_boundary: int) -> None:
        self.store, self.run_id = store, run_id
        self.start_boundary = start_boundary  # the reading that opens the measured window
        self.levels: dict[str, float] = {}
        self.windows = {metric.name: MetricWindow() for metric in workload.metrics}
        self.last_interval = ZERO
        self.sample_seconds: list[float] = []

    def take(self, thread: SamplerThread) -> None:
        for interval, rows in thread.take():
            self._record(interval, rows)

    def _record(self, interval: int, rows: list[tuple[str, str, float]]) -> None:
        taken_at = next((value for source, name, value in rows if (source, name) == ("sample", "taken_at")), None)
        stored: list[tuple[str, str, float | None]] = []
        for source, name, value in rows:
            if source != "metric":
                stored.append((source, name, value))
                continue
            if name in self.levels:
                stored.append(("metric", name, value - self.levels[name]))
            stored.append(("metric_level", name, value))
            self.levels[name] = value
            window = self.windows.get(name)
            if window is None:
                continue
            if interval == self.start_boundary or (window.start is None and interval >= self.start_boundary):
                window.start, window.start_at = value, taken_at
            elif window.start is not None:
                window.end, window.end_at = value, taken_at
        seconds = next((v for s, n, v in rows if (s, n) == ("sample", "seconds")), None)
        if seconds is not None and interval != ZERO:
            self.sample_seconds.append(seconds)
        if interval != ZERO:
            self.last_interval = max(self.last_interval, interval)
        self.store.record_samples(self.run_id, interval, stored)


def run(config: dict[str, Any], workload: Workload, store: ResultsStore, run_id: str, dsn: str, console: Console,
        settings: RecordedSettings, monitor: bool, tables: list[str], processes: bool = False,
        barrier: dict[str, str] | None = None, journal: JournalWatch | None = None,
        engine_processes: Callable[[], Sequence[int]] | None = None,
        lab: dict[str, Any] | None = None, profiler: ProfilerThread | None = None) -> Measured:
    """Warm-up and measure: the core's result, the metrics over the measured window, the samples stored.

    ``processes``: the core runs Classic's one process per attachment (embedded Classic).
    ``barrier``: the run is time-shared with another (fbbench compare --paired): connected, it
    waits at the start barrier and starts at the common zero (:mod:`fbbench.runner.barrier`).
    ``journal``: a replicated run's journal, read at every boundary (and at the zero before any work).
    ``lab``: the attachments are driven by a lab's hosts (:mod:`fbbench.lab.clients`); the sampler
    and the metrics are read here, once.
    ``profiler``: ``--profile`` (:mod:`fbbench.observe.profiler`): its sessions start with the
    measured period — before the zero of a load held connected without a warm-up, else at the
    boundary that opens it — and each load attachment finishes its own once its load has ended
    (the core's ``closing_sql``)."""
    from fbbench import _core, loadcore
    from fbbench.runner import barrier as start_barrier

    if profiler is not None:
        config = {**config, "closing_sql": CLOSING_SQL}
    timeline = _core.Timeline(json.dumps(config))
    measure_start = timeline.measure_start_boundary  # where the metric window opens
    opening = timeline.interval_closed_by(measure_start)
    readings = _Readings(store, run_id, workload, ZERO if opening is None else opening)
    thread = None
    if monitor or workload.metrics:
        every = {m.name: m.sql for m in workload.metrics if m.every == "interval"}
        at_end = {m.name: m.sql for m in workload.metrics if m.every == "end"}
        thread = SamplerThread(Sampler(dsn, tables, monitor=monitor, metrics=every, end_metrics=at_end,
                                       engine_processes=engine_processes))
        thread.wait_ready(30)
    architecture = _ArchitectureCheck(dsn, config["connections"], measure_start, thread)

    baseline_before_zero = False  # the held load's baseline was read: the zero itself needs none
    zero: float | None = None  # the run's zero (CLOCK_MONOTONIC), once the held load starts
    ramp = float(config.get("connect_rate") or 0.0) > 0
    # Without a warm-up the measured period starts at the zero: the held load's attachments get
    # their sessions before it (under a ramp-up they are not all there yet: at the zero's boundary).
    profile_at_hold = profiler is not None and measure_start == 1 and not ramp

    def hold() -> float:
        """The load holds connected at its start: the baseline is read before any of its work (a
        reading at the zero itself races the first units, and a counted metric such as NOPM would
        miss one), then the load starts — time-shared, at the pair's common zero."""
        nonlocal baseline_before_zero, zero
        if journal is not None:
            journal.zero()
        if thread is not None:
            baseline_before_zero = thread.zero(wait=BASELINE_WAIT_SECONDS)
        if profiler is not None and profile_at_hold:
            profiler.start(wait=PROFILER_START_WAIT_SECONDS)
        zero = start_barrier.arrive(start_barrier.Barrier.from_json(barrier)) if barrier is not None \
            else time.monotonic()
        if profiler is not None:
            profiler.plan(zero + (timeline.boundary_offset(measure_start) or 0.0))
        return zero

    def on_boundary(boundary: int, at: float, last: bool) -> bool:
        """Straight from the core at each boundary: the sampler reads right then. True at the
        planned end of the measured period once that is read (under --profile the attachments
        then finish their sessions: never beside a MON$ snapshot, nor inside the period's figures)."""
        period_end = boundary > 0 and timeline.end is not None and timeline.boundary_offset(boundary + 1) is None
        closing = period_end and profiler is not None  # the core's closing_sql may run
        if journal is not None:
            journal.boundary(boundary, last)
        if profiler is not None and boundary == measure_start and not profile_at_hold and not last:
            profiler.start()
        if not last:
            architecture.boundary(boundary)
        if thread is None or boundary == 0:
            return closing
        at_monotonic = time.monotonic() - (time.time() - at)
        interval = timeline.interval_closed_by(boundary)
        if interval is None:  # the run's zero
            if not baseline_before_zero:
                thread.zero(at_monotonic)
            return False
        # The end-only metrics are read where the measured window starts and at the last boundary:
        # the one the run ends with, or a timed run's planned end (which the watcher may report
        # before it knows the run is over, and then only says so with a call for no boundary).
        thread.boundary(interval, at_monotonic, full=last or period_end or boundary == measure_start,
                        wait=END_READING_WAIT_SECONDS if closing else None)
        return closing

    stored = [0]

    def on_progress(live: LiveCounters, display: LiveDisplay) -> None:
        completed, last = live.get("intervals_completed", 0), live.get("last_interval")
        if last and completed > stored[0]:
            store.record_interval(run_id, last)
            stored[0] = completed
        if thread is not None:
            readings.take(thread)
        display.update(live)

    # CPU of the whole process (embedded: the engine too), of this thread (polling, storing) and of
    # the sampler's thread: how much of the machine fbbench itself used.
    process_before, python_before = _process_cpu(), time.thread_time()
    sampler_before = thread.cpu_now() if thread is not None else 0.0
    try:
        with LiveDisplay.measurement(console, workload, settings) as display:
            held = barrier is not None or thread is not None or journal is not None or profiler is not None
            make_run = None
            if lab is not None:
                from fbbench.lab.clients import LabClientsRun  # the lab sits above the runner: asked for here only

                def make_run(config_json: str) -> Any:
                    return LabClientsRun(config_json, lab)
            result = loadcore.run_load(config, on_progress=lambda live: on_progress(live, display),
                                     on_boundary=on_boundary, processes=processes,
                                     hold=hold if held else None, make_run=make_run)
        if profiler is not None:
            profiler.load_ended(LoadEnd.of(result, timeline.end))
        if barrier is not None and zero is not None:  # first: the coordinator waits for it
            _own_turns(result, start_barrier.Barrier.from_json(barrier), zero, settings)
    finally:
        if thread is not None:
            thread.close(timeout=30)  # answers the boundaries already reported, then detaches
            readings.take(thread)
    result["process_cpu_seconds"] = _process_cpu() - process_before
    result["python_cpu_seconds"] = time.thread_time() - python_before + (
        thread.cpu_seconds - sampler_before if thread is not None else 0.0)
    measured = bool(result.get("measured_seconds"))  # a run stopped in warm-up measured nothing
    metrics = _metric_results(workload, readings.windows, result) if measured else {}
    journaled = None
    if journal is not None:
        for interval, rows in journal.interval_rows().items():
            store.record_samples(run_id, interval, rows)
        if measured:
            journaled = journal.figures(measure_start, result.get("measured_seconds") or 0.0)
    return Measured(result, metrics, readings.sample_seconds, list(thread.errors) if thread else [],
                    architecture.result(timeout=15), journaled)


PROFILER_START_WAIT_SECONDS = 60.0  # for the sessions of a load held at its start
# --profile: how long the attachments' closing statements wait for the end's reading (the core
# waits at most half its watchdog bound for it anyway).
END_READING_WAIT_SECONDS = 4.0


def _own_turns(result: LoadResult, shared: Any, zero: float, settings: RecordedSettings) -> None:
    """A time-shared run: tell the coordinator its measured period ended; fixed work is then
    timed by its own turns only (runner/timeshare.py), its wall time kept beside them."""
    from fbbench.runner import barrier as start_barrier

    fixed_work = settings.get("transactions") is not None
    wall = result.get("measured_seconds") or 0.0
    end = zero + (0.0 if fixed_work else float(settings.get("warmup") or 0.0)) + wall
    start_barrier.measured(shared, end)
    if fixed_work and wall > 0:
        own, turns = start_barrier.own_seconds(shared, zero, end)
        result["timeshare"] = {"wall_seconds": wall, "own_seconds": own, "turns": turns}
        result["measured_seconds"] = own


def _metric_results(workload: Workload, windows: dict[str, MetricWindow],
                    result: LoadResult) -> dict[str, dict[str, Any]]:
    measured_seconds = result.get("measured_seconds") or 0.0
    results = {}
    for metric in workload.metrics:
        window = windows[metric.name]
        delta = None if window.start is None or window.end is None else window.end - window.start
        seconds = (window.end_at - window.start_at) if window.start_at and window.end_at else None
        value = delta
        if metric.per_minute and delta is not None:
            # Per minute of the score's measured period: the readings are taken at its boundaries.
            value = delta * 60 / measured_seconds if measured_seconds > 0 else None
        results[metric.name] = {"start": window.start, "end": window.end, "value": value,
                                "per_minute": metric.per_minute, "description": metric.description,
                                "window": (window.start_at, window.end_at) if seconds else None,
                                "window_seconds": seconds}
    return results


def sampling_cost(sample_seconds: list[float], interval_seconds: float) -> dict[str, Any] | None:
    """How long one engine reading took (median, max) and whether that is too much to ignore."""
    if not sample_seconds:
        return None
    median, worst = statistics.median(sample_seconds), max(sample_seconds)
    # A reading holds the monitoring lock that also stalls the workload's attachments while the
    # snapshot is built: above 1 % of an interval (median) or 10 % (max), it may show in the figures.
    heavy = median > 0.01 * interval_seconds or worst > 0.1 * interval_seconds
    return {"readings": len(sample_seconds), "median_seconds": median, "max_seconds": worst, "heavy": heavy}


def _process_cpu() -> float:
    """This process and its ended children: Classic's attachment processes are children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
