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

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psutil

from fbbench.engines import platform
from fbbench.engines.firebird_conf import DEFAULT_PAGE_BUFFERS, integer, lookup
from fbbench.errors import FbbenchError

if TYPE_CHECKING:
    from fbbench.store import ResultsStore

MB = 1 << 20
# Peak RSS of the engine process per TPC-C attachment, without its page cache: the slope between
# 10 and 100 attachments measured by benchmarks/attachment_memory.py (embedded 3.0.14 / 4.0.7 /
# 5.0.4, 8 KB pages, 2026-11-23: Super 3.66 / 3.60 / 4.00 MB; SuperClassic 6.04 / 6.13 / 6.46 MB,
# of which 2 MB are its own 256-page cache). The page cache is added separately (estimate()).
# Classic, embedded, is one process per attachment (an engine and a Python): the engine child's
# peak RSS plus every attachment process's largest PSS, slope between 4 and 16 attachments
# (benchmarks/attachment_memory.py --modes Classic --counts 4 16, 2026-11-23: 16.25 / 16.56 /
# 17.69 MB, of which 2 MB are its own 256-page cache). A managed Classic server's forked processes
# have no Python and cost less: the same figure bounds them.
PER_ATTACHMENT_BYTES = {
    "super": {"3.0": 3.66 * MB, "4.0": 3.60 * MB, "5.0": 4.00 * MB},
    "superclassic": {"3.0": 4.04 * MB, "4.0": 4.13 * MB, "5.0": 4.46 * MB},
    "classic": {"3.0": 14.25 * MB, "4.0": 14.56 * MB, "5.0": 15.69 * MB},
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
          conf: dict[str, str], page_size: int | None, page_buffers: int | None) -> None:
    """Refuse a run whose attachments would not fit, naming what would. ``engine_major`` None: an
    external server; ``architecture`` None: the engine's default (SuperServer)."""
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
            f"--connections {connections:,} needs {needs}, more than {what_limits} allows ({threads:,.0f})",
            hint=f"at most about {max((int(threads) - 32) // each, 1):,} attachments can run here")
    if engine_major is None:  # an external server's memory is not this machine's
        return
    need = estimate(connections, engine_major, architecture, conf, page_size, page_buffers)
    available, what_limits = available_memory()
    if need.total > available:
        each = need.per_attachment + need.cache_per_attachment
        cache = (f" + {need.shared_cache / MB:,.0f} MB shared page cache" if need.shared_cache
                 else f" including its own {need.cache_per_attachment / MB:,.0f} MB page cache")
        raise FbbenchError(
            f"--connections {connections:,} needs about {need.total / (1 << 30):,.1f} GB for {engine_label} "
            f"({each / MB:,.1f} MB per attachment{cache}); {what_limits} is {available / (1 << 30):,.1f} GB",
            hint=f"at most about {need.fitting(available):,} attachments fit here")


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


def duration_text(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s"
