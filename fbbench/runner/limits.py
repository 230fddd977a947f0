"""Will a run fit on this machine, and how long will it take? Checked before anything starts.

A Firebird attachment costs memory in the engine (its own pools, metadata, statement cache) and,
under SuperClassic and Classic, its own page cache; embedded, every attachment is also a thread
of the fbbench engine process. ``--connections 100000`` once grew the engine to 24 GB until the
kernel killed it; this module refuses such a run up front, saying what would fit.

The per-attachment figures are measured, not guessed: ``benchmarks/attachment_memory.py`` runs
TPC-C at two attachment counts per engine and architecture and prints the slope of the engine
process's peak RSS. The estimate adds a margin on top, because a workload with more statements
per attachment, or a bigger statement cache, costs more than TPC-C.
"""

from __future__ import annotations

import math
import shutil
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from fbbench.engines import platform
from fbbench.engines.firebird_conf import DEFAULT_PAGE_BUFFERS, integer, lookup
from fbbench.errors import FbbenchError
from fbbench.sizes import size_text

if TYPE_CHECKING:
    from fbbench.runner.population_cache import Measurement
    from fbbench.store import ResultsStore
    from fbbench.workloads.spec import Workload

MB = 1 << 20
# Peak RSS of the engine process per TPC-C attachment, without its page cache: the slope between
# 10 and 100 attachments measured by benchmarks/attachment_memory.py (embedded 3.0.14 / 4.0.7 /
# 5.0.4, 8 KB pages, 2026-11-30, the mean of two runs: Super 3.37 / 3.51 / 4.02 MB; SuperClassic
# 7.57 / 7.88 / 9.15 MB, of which 2 MB are its own 256-page cache). The page cache is added
# separately (estimate()). The peak is the engine child's own VmHWM; the figures of 2026-11-23
# (SuperClassic 6.04 / 6.13 / 6.46 MB) came from ru_maxrss, which at 10 attachments was the CLI's
# larger peak, so their slopes were too low.
# Classic, embedded, is one process per attachment (an engine and a Python): the engine child's
# peak RSS plus every attachment process's largest PSS, slope between 4 and 16 attachments
# (benchmarks/attachment_memory.py --modes Classic --counts 4 16, 2026-11-30: 17.35 / 16.85 /
# 17.17 MB, of which 2 MB are its own 256-page cache). A managed Classic server's forked processes
# have no Python and cost less: the same figure bounds them.
PER_ATTACHMENT_BYTES = {
    "super": {"3.0": 3.37 * MB, "4.0": 3.51 * MB, "5.0": 4.02 * MB},
    "superclassic": {"3.0": 5.57 * MB, "4.0": 5.88 * MB, "5.0": 7.15 * MB},
    "classic": {"3.0": 15.35 * MB, "4.0": 14.85 * MB, "5.0": 15.17 * MB},
}
BASE_BYTES = 200 * MB  # the fbbench process, Python, the engine's own start-up
MARGIN = 1.25  # workloads heavier than TPC-C per attachment
DEFAULT_PAGE_SIZE = 8192
THREADS_PER_ATTACHMENT = 1  # embedded: the core's attachment thread runs the engine's work
# Classic: a process per attachment, with 8 threads at most (Python's main thread and its pipe
# reader, the core's control, timekeeper, attachment and canceller threads, the engine's own),
# counted by benchmarks/attachment_memory.py. The process limit (ulimit -u) counts threads.
TASKS_PER_CLASSIC_ATTACHMENT = 8


@dataclass(frozen=True)
class Need:
    connections: int
    per_attachment: float
    cache_per_attachment: float
    shared_cache: float

    @property
    def total(self) -> float:
        return BASE_BYTES + self.shared_cache + self.connections * (self.per_attachment + self.cache_per_attachment)

    def fitting(self, available: float) -> int:
        each = self.per_attachment + self.cache_per_attachment
        return max(int((available - BASE_BYTES - self.shared_cache) // each), 0)


def estimate(connections: int, engine_major: str, architecture: str, conf: dict[str, str], page_size: int | None,
             page_buffers: int | None) -> Need:
    """The memory ``connections`` attachments take under ``architecture`` (super | superclassic | classic)."""
    buffers = page_buffers or integer(lookup(conf, "DefaultDbCachePages")) or DEFAULT_PAGE_BUFFERS[architecture]
    cache = buffers * (page_size or DEFAULT_PAGE_SIZE)
    measured = PER_ATTACHMENT_BYTES[architecture]
    per = measured.get(engine_major, max(measured.values())) * MARGIN
    if architecture == "super":
        return Need(connections, per, 0.0, float(cache))
    return Need(connections, per, float(cache), 0.0)


def available_memory() -> tuple[float, str]:
    """Memory this process may still use, and what limits it."""
    candidates = [(float(psutil.virtual_memory().available), "available memory (MemAvailable)"),
                  *platform.memory_limits()]
    return min(candidates)


def thread_limit() -> tuple[float, str]:
    """How many more threads (or processes) this user may start, and what limits it."""
    return min(platform.task_limits(), default=(float("inf"), "nothing"))


def check(connections: int, engine_label: str, engine_major: str | None, architecture: str | None,
          conf: dict[str, str], page_size: int | None, page_buffers: int | None,
          flag: str = "--connections") -> None:
    """Refuse a run whose attachments would not fit, naming what would. ``engine_major`` None: an
    external server; ``architecture`` None: the engine's default (SuperServer); ``flag``: the
    setting that asks for the attachments (the population's are ``--load-connections``)."""
    architecture = architecture or "super"
    threads, what_limits = thread_limit()
    # A local Classic engine runs a process per attachment (embedded: fbbench's; managed: the
    # server's forks); an external server's processes are not this machine's.
    classic = engine_major is not None and architecture == "classic"
    each = TASKS_PER_CLASSIC_ATTACHMENT if classic else THREADS_PER_ATTACHMENT
    if connections * each + 32 > threads:
        needs = (f"a process of up to {each} threads per attachment ({connections * each:,} threads)" if classic
                 else "as many threads")
        raise FbbenchError(
            f"{flag} {connections:,} needs {needs}, more than {what_limits} allows ({threads:,.0f})",
            hint=f"at most about {max((int(threads) - 32) // each, 1):,} attachments can run here")
    if engine_major is None:  # an external server's memory is not this machine's
        return
    need = estimate(connections, engine_major, architecture, conf, page_size, page_buffers)
    available, what_limits = available_memory()
    if need.total > available:
        per_attachment = need.per_attachment + need.cache_per_attachment
        cache = (f" + {size_text(need.shared_cache, unit='MB', digits=0)} shared page cache" if need.shared_cache
                 else f" including its own {size_text(need.cache_per_attachment, unit='MB', digits=0)} page cache")
        raise FbbenchError(
            f"{flag} {connections:,} needs about {size_text(need.total, unit='GB')} for {engine_label} "
            f"({size_text(per_attachment, unit='MB')} per attachment{cache}); {what_limits} is "
            f"{size_text(available, unit='GB')}",
            hint=f"at most about {need.fitting(available):,} attachments fit here")


# ------------------------------------------------------------------------------- disk

# An estimate of a population is refused only when it exceeds the room by more than this factor:
# inside it, the build goes ahead and is watched as it grows (the engine side stops it before the
# disk fills). How far estimates land from the built size: benchmarks/population_estimate.py.
ESTIMATE_MARGIN = 1.25
ROOM_HINT = "free some space, give --workdir on a larger disk, or a smaller --scale"
# What fbbench leaves free on a file system for everyone else (and for its results store): 5 % of
# it, at most 1 GiB. A build that would eat into it is refused, or stopped.
RESERVE_SHARE = 0.05
RESERVE_CAP = float(1 << 30)


@dataclass(frozen=True)
class Room:
    """The free space of the file system that holds ``directory`` (or would, once created)."""

    directory: Path
    device: int
    free: float
    total: float

    @property
    def reserve(self) -> float:
        return min(RESERVE_CAP, RESERVE_SHARE * self.total)

    @property
    def usable(self) -> float:
        return max(self.free - self.reserve, 0.0)

    def text(self) -> str:
        return (f"the file system of {self.directory} has {size_text(self.free)} free, of which fbbench leaves "
                f"{size_text(self.reserve)}")


def room(directory: Path) -> Room:
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    usage = shutil.disk_usage(existing)
    return Room(directory, existing.stat().st_dev, float(usage.free), float(usage.total))


def shortfall(needs: Sequence[tuple[Path, float]], margin: float = 1.0) -> tuple[Room, float] | None:
    """The first file system on which what ``needs`` puts there (directory, bytes; summed per file
    system) is more than ``margin`` times what may be used of it, and that sum."""
    by_device: dict[int, tuple[Room, float]] = {}
    for directory, need in needs:
        found = room(directory)
        first, total = by_device.get(found.device, (found, 0.0))
        by_device[found.device] = (first, total + need)
    return next(((found, need) for found, need in by_device.values() if need > margin * found.usable), None)


def count_text(number: float) -> str:
    """``31,000,000,010``; beyond a million billions, ``3.1e+301`` (nobody reads 300 digits)."""
    if abs(number) >= 1e15:
        return f"{number:.3g}"
    return f"{number:,}" if isinstance(number, int) else f"{number:,.1f}"


@dataclass(frozen=True)
class PopulationEstimate:
    """A population's size and build time, scaled from a measured build of the same shape."""

    size_bytes: float
    seconds: float
    basis: Measurement
    iterations: int  # the load steps' iterations wanted (for_each steps)
    basis_iterations: int  # the measured build's

    def basis_text(self, workload: Workload) -> str:
        """Which build the estimate comes from, and what it measured."""
        basis = self.basis
        at = scale_difference(basis.scale, workload.scale)
        built_in = basis.base_seconds + sum(step.seconds for step in basis.steps)
        whose = f"the build its workload declares ({basis.database.name})" if basis.declared else "its build"
        return (f"estimated from {whose} at {at} on {basis.engine} with page size {basis.page_size or 'default'}: "
                f"{size_text(basis.size_bytes)} in {duration_text(built_in)}, {count_text(self.basis_iterations)} "
                f"load iterations (this scale has {count_text(self.iterations)})")


def scale_difference(scale: Mapping[str, Any], other: Mapping[str, Any]) -> str:
    """``scale``'s values where they differ from ``other``'s: ``warehouses=1,000,000,000``."""
    different = sorted((name, value) for name, value in scale.items() if other.get(name) != value)
    return ", ".join(f"{name}={_scale_value(value)}" for name, value in different) or "this scale"


def _scale_value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return count_text(value) if isinstance(value, int) else str(value)


def estimate_population(workload: Workload, measured: Measurement) -> PopulationEstimate | None:
    """``workload``'s population from a measured build of the same shape: each ``for_each`` step's
    growth and time per iteration times its iterations now; the steps that run once (indices,
    balances, procedures) in proportion to the data the ``for_each`` steps load; the scripts' part
    as measured. None when a step the workload runs now ran no iteration in the measured build."""
    if len(measured.steps) != len(workload.load):
        return None
    data_then = data_now = seconds_then = seconds_now = 0.0  # of the for_each steps
    once_bytes = once_seconds = 0.0  # of the steps that run once
    iterations_then = iterations_now = 0
    for step, done in zip(workload.load, measured.steps, strict=True):
        if not step.for_each:
            once_bytes += done.bytes
            once_seconds += done.seconds
            continue
        iterations_then += done.iterations
        iterations_now += step.count
        if done.iterations == 0:
            if step.count:
                return None
            continue
        ratio = step.count / done.iterations
        data_then += done.bytes
        data_now += done.bytes * ratio
        seconds_then += done.seconds
        seconds_now += done.seconds * ratio
    # How much more data there will be; where the for_each steps grew the file by less than a page,
    # their iterations say it instead.
    grown = (data_now / data_then if data_then > 0
             else iterations_now / iterations_then if iterations_then else 1.0)
    # What the measured build grew by outside its steps (nothing, but for rounding of page counts).
    rest = max(measured.size_bytes - measured.base_bytes - data_then - once_bytes, 0.0)
    return PopulationEstimate(measured.base_bytes + data_now + once_bytes * grown + rest,
                              measured.base_seconds + seconds_now + once_seconds * grown,
                              measured, iterations_now, iterations_then)


def nearest_estimate(workload: Workload, measured: Sequence[Measurement], engine_major: str,
                     page_size: int | None) -> PopulationEstimate | None:
    """The estimate from the measured build nearest to ``workload``'s scale (by its load
    iterations), preferring builds on the same engine and page size; None without one."""
    candidates = []
    for build in measured:
        estimate = estimate_population(workload, build)
        if estimate is None:
            continue
        distance = abs(math.log((estimate.iterations + 1) / (estimate.basis_iterations + 1)))
        other = build.engine != engine_major or build.page_size != page_size
        candidates.append(((other, distance, -build.built_at), estimate))
    return min(candidates, key=lambda item: item[0])[1] if candidates else None


# ------------------------------------------------------------------------------- planned time

STARTUP_GUESS = 8.0  # seconds a run spends outside warm-up and measure when the store knows no better


def overhead_per_run(store: ResultsStore) -> float:
    """What a run costs besides its warm-up and measured period, from this store's recent runs."""
    extra = []
    for run in store.list_runs(20):
        if run["status"] != "completed" or not run["ended_at"]:
            continue
        settings = run["settings"]
        load = (settings.get("warmup") or 0) + (run["summary"].get("measured_seconds") or 0)
        extra.append(max(run["ended_at"] - run["started_at"] - load, 0.0))
    return statistics.median(extra) if extra else STARTUP_GUESS


# The settings that decide how long fixed work takes: a stored run with the same ones is the same spec.
_SPEC_SETTINGS = ("workload", "engine", "scale", "connections", "transactions", "conf", "architecture", "page_size",
                  "page_buffers", "forced_writes", "replication", "replication_conf", "file_cache", "database_from",
                  "target_size", "target_rate", "lab", "clients", "profile", "monitor", "sweep", "validation")
# Settings a run's checks fill in when not given (the workload's page size, a local engine's
# architecture): not given here, any stored value is the one they would choose again.
_CHOSEN_BY_CHECKS = ("page_size", "architecture")
RECENT_RUNS = 50  # how far back the store is searched for runs of the same spec


@dataclass(frozen=True)
class FixedWorkTime:
    """How long the store's recent runs of one fixed-work spec took, start to end (setting up,
    the work, the checks): the median over ``runs`` completed runs; ``shared``: they were
    time-shared pairs (compare --paired), so each took as long as its pair."""

    seconds: float
    runs: int
    shared: bool

    def text(self) -> str:
        pairs = " (time-shared, each as long as its pair)" if self.shared else ""
        return (f"about {duration_text(self.seconds)} a run, as this results store's {self.runs} recent run(s) of "
                f"the same spec took{pairs}")


def fixed_work_time(store: ResultsStore | None, settings: Mapping[str, Any], units: int) -> FixedWorkTime | None:
    """The time of a fixed-work run of ``settings`` (recorded run settings) doing ``units`` units
    per attachment, from the store's recent completed runs of the same spec; None without one —
    fixed work has no time of its own to plan by (a timed run's warm-up and duration are not its)."""
    if store is None:
        return None
    wanted = {**settings, "transactions": units}

    def same(stored: Mapping[str, Any]) -> bool:
        return all(stored.get(key) == wanted.get(key) for key in _SPEC_SETTINGS
                   if not (key in _CHOSEN_BY_CHECKS and wanted.get(key) is None))

    found = [(run["ended_at"] - run["started_at"], bool(run["settings"].get("timeshare")))
             for run in store.list_runs(RECENT_RUNS)
             if run["status"] == "completed" and run["ended_at"] and same(run["settings"])]
    if not found:
        return None
    return FixedWorkTime(statistics.median(seconds for seconds, _ in found), len(found), any(s for _, s in found))


PLANNED_LIMIT_SECONDS = 24 * 3600.0  # a run, a sweep or paired runs planned longer need --yes


def check_planned(seconds: float, what: str, detail: str, yes: bool) -> None:
    """Refuse what is planned to take longer than a day, with the total and how it adds up,
    unless the user said --yes."""
    if seconds > PLANNED_LIMIT_SECONDS and not yes:
        raise FbbenchError(f"{what} is planned to take about {duration_text(seconds)} ({detail}), more than "
                           f"{duration_text(PLANNED_LIMIT_SECONDS)}", hint="add --yes if you mean it")


def duration_text(seconds: float) -> str:
    if seconds < 59.95:
        return f"{seconds:.1f} s"
    seconds = round(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days >= 1e6:
        return f"{count_text(days)} days"
    if days >= 2:
        return f"{days:,} days {hours} h"
    hours += 24 * days
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s"
