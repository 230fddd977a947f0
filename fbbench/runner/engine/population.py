"""Phase 2 of a run, inside the engine child: the benchmark database, created and populated.

Populated databases are kept in a cache (:mod:`fbbench.runner.population_cache`) keyed by
workload (name, files, scale), page size and engine version; a run with the same key starts from
a copy of it. A run's own database is always a fresh copy, so runs never see each other's
leftovers. Servers get a database built in place (fbbench cannot copy files on another machine).

Population runs the workload's ``[[load]]`` steps in order; the iterations of a ``for_each``
step are spread over ``load_connections`` attachments. Load speed is measured as database growth
(MB/s) and rows per second; a build is stopped before it fills the disk or runs for days
(:mod:`fbbench.runner.engine.build_watch`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import random
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fbbench import signals
from fbbench.analysis.run import COPIED_POPULATION
from fbbench.database import driver, lifecycle, ownership, scripts
from fbbench.errors import FbbenchError, Interrupted
from fbbench.runner import limits, population_cache
from fbbench.runner.engine import facts
from fbbench.runner.engine.build_watch import Watch
from fbbench.runner.population_cache import cache_key, cache_material
from fbbench.sizes import size_text
from fbbench.workloads.generators import derived_seed, value
from fbbench.workloads.spec import LoadStep, Workload

Progress = Callable[[str, int, int], None]  # step name, done, total
# Told of a file about to be created in the work directory (the population being built), so that
# it is recorded before it exists: the clean-up removes only recorded files.
Creating = Callable[[Path], None]


@dataclass(frozen=True)
class DatabasePlan:
    location: str  # the run's database: a path (embedded) or a DSN
    services_host: str  # "" embedded, "host/port" for a server
    cache_dir: str | None  # embedded only
    # What the population cache keys databases by: the engine's major version, or a registered
    # build's major and ODS when they differ from the official releases' (EmbeddedEngine.cache_engine)
    engine_major: str
    page_size: int | None
    page_buffers: int | None
    forced_writes: bool | None
    sweep_interval: int | None
    fresh: bool
    load_connections: int
    grow: str | None = None  # a scale name: extend a cached smaller population instead of building anew
    # A database built in place whose file is on this machine (a managed server's), watched as it grows.
    local_file: str | None = None
    # Seconds a build may be projected to take before it is stopped; None: as long as it takes (--yes).
    time_limit: float | None = None
    # A gbak backup to restore instead of building the workload's database (runner/backup.py):
    # path, name, sha256, size_bytes, stream (send it through the services connection).
    restore: dict[str, Any] | None = None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def prepare(plan: DatabasePlan, workload: Workload, progress: Progress, creating: Creating) -> dict[str, Any]:
    """Create or copy the run's database; returns the load facts (source, speed)."""
    if plan.restore is not None:
        load = restored(plan, progress, creating)
    elif plan.cache_dir is None:
        _clear_place(plan.location)
        watch = Watch(Path(plan.local_file) if plan.local_file else None, None, plan.time_limit)
        load = build(plan.location, workload, plan, progress, watch)
        load["source"] = "built in place"
    else:
        cache = Path(plan.cache_dir)

        def make(building: str) -> dict[str, Any]:
            source = _grow_source(cache, workload, plan) if plan.grow and not plan.fresh else None
            watch = Watch(Path(building), Path(plan.location), plan.time_limit)
            if source is not None:
                return grow(source, building, workload, plan, progress, watch)
            return build(building, workload, plan, progress, watch)

        load = _from_cache(plan, workload.name, cache_key(workload, plan.page_size, plan.engine_major),
                           cache_material(workload, plan.page_size, plan.engine_major), make, creating,
                           "built (now cached)", COPIED_POPULATION, "the run's copy of the cached population")

    _apply_settings(plan)
    return load


def _clear_place(location: str) -> None:
    """A database already at a server's location (header via the services API, nothing attached)
    is replaced only if it is an earlier run's; any other one is refused untouched."""
    token = ownership.refuse_unless_owned_or_absent(location, "build a database at")
    if token is not None:
        lifecycle.drop(location, token)
        ownership.unregister(location)


def _from_cache(plan: DatabasePlan, name: str, key: str, material: dict[str, Any],
                make: Callable[[str], dict[str, Any]], creating: Creating, built: str, copied: str,
                what: str) -> dict[str, Any]:
    """The run's database as a copy (``what``) of the cache entry ``name-key``
    (:func:`fbbench.runner.population_cache.entry`), made first when it is missing or
    ``plan.fresh`` (:func:`_cache_entry`). Returns the facts of the making (as cached) with the
    copy's own."""
    with _cache_entry(plan, name, key, material, make, creating, built, copied) as (cached, load):
        if plan.location:  # else only the cache entry was wanted (fbbench db restore)
            started = time.monotonic()
            _copy(cached, Path(plan.location), what)
            load["copy_seconds"] = time.monotonic() - started
    load["cache_file"] = str(cached)
    if plan.location:
        _take_ownership(plan.location)
    return load


@contextmanager
def _cache_entry(plan: DatabasePlan, name: str, key: str, material: dict[str, Any],
                 make: Callable[[str], dict[str, Any]], creating: Creating, built: str,
                 copied: str) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The cache entry ``name-key`` (:func:`fbbench.runner.population_cache.entry`) and the facts
    of its making, made first (by ``make``, at the entry's building path, recorded through
    ``creating`` before it exists) when it is missing or ``plan.fresh``; held under the key's lock
    while the caller uses it. A half-made entry is never kept. ``built`` / ``copied``: the load's
    source when it was made now / when it was cached."""
    files = population_cache.entry(Path(str(plan.cache_dir)), name, key)
    cached, meta = files.database, files.meta
    with _locked(files.lock):
        if plan.fresh or not (cached.exists() and meta.exists()):
            for stale in (cached, meta):
                if stale.exists():
                    ownership.unregister(str(stale))
                    stale.unlink()
            building = files.building
            if building.exists():  # left by a build that was killed
                ownership.unregister(str(building))
                building.unlink()
            creating(building)
            try:
                stats = make(str(building))
                # Swept once here, forced writes still off: the load leaves garbage (back versions),
                # which each run's own sweep would otherwise collect again in every copy, with the
                # run's forced writes on (seconds a run, for the same state).
                stats["cache_sweep_seconds"] = facts.sweep(plan.services_host, str(building))
            except BaseException:  # interrupted or failed: a half-built cache is never kept
                ownership.unregister(str(building))
                building.unlink(missing_ok=True)
                raise
            ownership.unregister(str(building))
            building.rename(cached)
            ownership.register(str(cached), _mark_token(str(cached)), {"purpose": "populated cache"})
            meta.write_text(json.dumps({"built_at": time.time(), "key": key, "load": stats,
                                        "material": material}, indent=2, default=str))
            load = {**stats, "source": stats.get("source", built)}
        else:
            stored = json.loads(meta.read_text())
            if "cache_sweep_seconds" not in stored["load"]:  # cached before caches were swept: once, now
                stored["load"]["cache_sweep_seconds"] = facts.sweep(plan.services_host, str(cached))
                meta.write_text(json.dumps(stored, indent=2, default=str))
            load = {**stored["load"], "source": copied, "cache_built_at": stored.get("built_at")}
        yield cached, load


def restored(plan: DatabasePlan, progress: Progress, creating: Creating) -> dict[str, Any]:
    """The run's database restored from a gbak backup (plan.restore) instead of built: cached per
    backup checksum, engine version and page size (a server's is restored in place). The
    workload's scripts and load steps are not run: the database is the user's."""
    from fbbench.database import restore
    from fbbench.engines import current_runtime

    backup = plan.restore
    assert backup is not None
    step = f"restore {backup['name']}"
    details = {"backup": backup["name"], "sha256": backup["sha256"], "backup_bytes": backup["size_bytes"]}

    def make(location: str) -> dict[str, Any]:
        progress(step, 0, 1)
        server_path = location if plan.cache_dir is not None else _server_path(location)
        facts = restore.restore(backup["path"], location, plan.services_host, server_path, plan.page_size, details,
                                current_runtime().tmp_dir, stream=bool(backup.get("stream")))
        progress(step, 1, 1)
        seconds = facts["restore_seconds"]
        return {**facts, "restored_from": details, "seconds": seconds,
                "mb_per_second": backup["size_bytes"] / 1e6 / seconds if seconds > 0 else None}

    if plan.cache_dir is None:
        _clear_place(plan.location)
        try:
            return {**make(plan.location), "source": "restored in place"}
        except BaseException:
            restore.drop_unmarked(plan.location)
            raise
    material = population_cache.restore_material(backup["sha256"], plan.page_size, plan.engine_major)
    return _from_cache(plan, population_cache.RESTORED, population_cache.restore_key(material), material, make,
                       creating, "restored (now cached)", "copy of the cached restore",
                       "the run's copy of the restored database")


def scale_for_size(plan: DatabasePlan, workload: Workload, target_bytes: int, progress: Progress,
                   creating: Creating) -> tuple[Workload, dict[str, Any]]:
    """``--target-size``: the workload at the value of its size scale that gives a database of
    about ``target_bytes`` (:func:`population_cache.scale_for_size`). What one unit of that scale
    takes is measured once, on the population at the workload's default value, built and kept in
    the population cache like any other."""
    from fbbench.workloads.spec import load_workload

    assert plan.cache_dir is not None and workload.size_scale is not None
    name = workload.size_scale
    probe = load_workload(str(workload.directory), {**workload.scale, name: workload.scale_defaults[name]})
    cache = Path(plan.cache_dir)

    def make(building: str) -> dict[str, Any]:
        source = _grow_source(cache, probe, plan) if plan.grow and not plan.fresh else None
        watch = Watch(Path(building), None, plan.time_limit)  # the probe is not copied
        if source is not None:
            return grow(source, building, probe, plan, progress, watch)
        return build(building, probe, plan, progress, watch)

    with _cache_entry(plan, probe.name, cache_key(probe, plan.page_size, plan.engine_major),
                      cache_material(probe, plan.page_size, plan.engine_major), make, creating,
                      "built (now cached)", COPIED_POPULATION) as (_cached_file, facts):
        sizing = population_cache.scale_for_size(probe, target_bytes, facts)
    return load_workload(str(workload.directory), {**workload.scale, **sizing["scale"]}), sizing


def _grow_source(cache: Path, workload: Workload, plan: DatabasePlan) -> tuple[Path, dict[str, Any]] | None:
    """The largest cached population of the same workload, page size and engine whose scale
    differs from the one wanted only by a smaller value of the growing parameter."""
    assert plan.grow is not None
    wanted = cache_material(workload, plan.page_size, plan.engine_major)
    target = wanted["scale"].get(plan.grow)
    if target is None:
        raise FbbenchError(f"cannot grow by '{plan.grow}': workload {workload.name} has no such scale parameter",
                           hint=f"its scale parameters: {', '.join(sorted(workload.scale))}")
    candidates = []
    for meta_file in cache.glob(f"{workload.name}-*.json"):
        try:
            meta = json.loads(meta_file.read_text())
        except (OSError, ValueError):
            continue
        material = meta.get("material")
        database = meta_file.with_suffix(".fdb")
        if not material or not database.exists():
            continue
        same = all(material.get(k) == wanted[k] for k in ("format", "workload", "files", "page_size", "engine"))
        scale = dict(material.get("scale") or {})
        smaller = scale.pop(plan.grow, None)
        rest = {k: v for k, v in wanted["scale"].items() if k != plan.grow}
        if same and scale == rest and isinstance(smaller, int | float) and smaller < target:
            candidates.append((smaller, database, {**material, "rows": (meta.get("load") or {}).get("total_rows")}))
    if not candidates:
        return None
    _smaller, database, material = max(candidates, key=lambda item: item[0])
    return database, material


def grow(source: tuple[Path, dict[str, Any]], dsn: str, workload: Workload, plan: DatabasePlan,
         progress: Progress, watch: Watch) -> dict[str, Any]:
    """A copy of a smaller population, extended by the load iterations the larger scale adds.

    A load step's iterations are derived from its ``for_each`` ranges; those the smaller scale
    already ran are skipped, and so is every step whose ranges did not grow (scripts among them):
    each iteration's seed depends on the step and the iteration only, so the grown database holds
    what a fresh build at the larger scale would.
    """
    from fbbench.workloads.spec import load_workload

    database, material = source
    smaller = load_workload(str(workload.directory), {k: str(v) for k, v in material["scale"].items()})
    started = time.monotonic()
    _copy(database, Path(dsn), "the copy of the smaller population to grow")
    ownership.register(dsn, _mark_token(dsn), {"purpose": "population (growing)"})
    with driver.connect(dsn) as connection:
        size_before = _size(connection)
    steps: list[tuple[LoadStep, _Work | None]] = []
    for step, before in zip(workload.load, smaller.load, strict=True):
        if step.script is not None:
            continue
        count = step.count - step.shared_count(before)
        if count > 0:
            steps.append((step, _Work(_not_in(step, before), count)))
    facts = _load(dsn, workload, plan, progress, watch, steps, started, size_before, material.get("rows") or 0)
    grown_from = material["scale"].get(plan.grow)
    shown = f"{grown_from:g}" if isinstance(grown_from, int | float) else str(grown_from)
    return {**facts, "source": f"grown from {plan.grow}={shown} (now cached)", "grown_from": material["scale"]}


def _not_in(step: LoadStep, before: LoadStep) -> Iterator[tuple[int, ...]]:
    """The iterations of ``step`` that ``before`` (the same step at a smaller scale) did not run."""
    return (item for item in step.iterations() if not before.covers(item))


def _mark_token(location: str) -> str:
    with driver.connect(location) as connection:
        mark = ownership.read_mark(connection)
    if mark is None:
        raise FbbenchError(f"{location} lost its fbbench mark")
    return str(mark["token"])


def _take_ownership(location: str) -> None:
    """A copy is a new database: it gets its own token, so the cache entry stays distinct."""
    token = ownership.new_token()
    with driver.connect(location) as connection:
        with connection.cursor() as cursor:
            cursor.execute(f"update {ownership.MARK_TABLE} set token = ?", (token,))
        connection.commit()
    ownership.register(location, token, {"purpose": "run database"})


def _apply_settings(plan: DatabasePlan) -> None:
    from firebird.driver import DbWriteMode

    database = plan.location if plan.cache_dir is not None else _server_path(plan.location)
    with driver.server(plan.services_host) as server:
        if plan.forced_writes is not None:
            mode = DbWriteMode.SYNC if plan.forced_writes else DbWriteMode.ASYNC
            server.database.set_write_mode(database=database, mode=mode)
        if plan.page_buffers is not None:
            server.database.set_default_cache_size(database=database, size=plan.page_buffers)
        if plan.sweep_interval is not None:
            server.database.set_sweep_interval(database=database, interval=plan.sweep_interval)


def _server_path(dsn: str) -> str:
    from fbbench.engines.catalog import parse_engine

    return parse_engine(dsn).path  # type: ignore[union-attr]


def build(dsn: str, workload: Workload, plan: DatabasePlan, progress: Progress, watch: Watch) -> dict[str, Any]:
    """Create the database, run the workload's scripts and its load steps."""
    token = ownership.new_token()
    started = time.monotonic()
    # Forced writes off while loading: the run's own setting is applied to the copy afterwards.
    with driver.create_database(dsn, page_size=plan.page_size, forced_writes=False) as connection:
        ownership.write_mark(connection, token, {"purpose": "population", "workload": workload.name,
                                                 "scale": workload.scale})
        ownership.register(dsn, token, {"purpose": "population"})
        for script in workload.scripts:
            progress(f"script {script.name}", 0, 1)
            scripts.run_file(connection, script, workload.scale)
            progress(f"script {script.name}", 1, 1)
        size_before = _size(connection)
    return _load(dsn, workload, plan, progress, watch, [(step, None) for step in workload.load], started,
                 size_before)


@dataclass
class _Work:
    """Some of a step's iterations, drawn one at a time, and how many they are."""

    items: Iterator[tuple[int, ...]]
    count: int


def _load(dsn: str, workload: Workload, plan: DatabasePlan, progress: Progress, watch: Watch,
          steps: list[tuple[LoadStep, _Work | None]], started: float, size_before: int,
          rows_before: int = 0) -> dict[str, Any]:
    """Run load steps (each with all its iterations, or only those given) on the load attachments;
    the load's facts: time, rows, growth of the database (in all and by each step: what estimates
    of other scales scale, :func:`fbbench.runner.limits.estimate_population`), MB/s and rows/s."""
    load_started = time.monotonic()
    done = []
    with _Loaders(dsn, plan.load_connections) as loaders, driver.connect(dsn) as observer:
        size = size_before
        for step, only in steps:
            step_started, cpu_started = time.monotonic(), time.process_time()
            iterations = loaders.run(step, workload, progress, watch, only=only)
            # An embedded engine runs in this process: its CPU (every thread's) beside the wall time;
            # a server's is not this process's to count.
            cpu_seconds = time.process_time() - cpu_started if not plan.services_host else None
            grown_to = _size(observer, fresh=True)
            done.append({"name": step.name, "seconds": time.monotonic() - step_started, "iterations": iterations,
                         "bytes": grown_to - size, "cpu_seconds": cpu_seconds})
            size = grown_to
    load_seconds = time.monotonic() - load_started
    with driver.connect(dsn) as connection:
        size_after = _size(connection)
        rows = _row_counts(connection)
    total_rows = sum(rows.values())
    grown = max(size_after - size_before, 0)
    return {
        "seconds": time.monotonic() - started,
        "base_bytes": size_before,  # after the scripts (or the copy grown from), before the load steps
        "base_seconds": load_started - started,
        "load_seconds": load_seconds,
        "load_connections": plan.load_connections,
        "steps": done,
        "rows": rows,
        "total_rows": total_rows,
        "size_bytes": size_after,
        "grown_bytes": grown,
        "mb_per_second": grown / 1e6 / load_seconds if load_seconds > 0 else None,
        "rows_per_second": (total_rows - rows_before) / load_seconds if load_seconds > 0 else None,
    }


def _size(connection: Any, fresh: bool = False) -> int:
    """The database's size; ``fresh``: in a transaction of its own, ended after (MON$ tables are a
    snapshot taken once per transaction)."""
    with connection.cursor() as cursor:
        cursor.execute("select mon$pages * mon$page_size from mon$database")
        size = int(cursor.fetchone()[0])
    if fresh:
        connection.commit()
    return size


def _copy(source: Path, target: Path, what: str) -> None:
    """Copy a database file, refused with the figures when the target's disk has no room for it."""
    size = source.stat().st_size
    short = limits.shortfall([(target.parent, size)])
    if short is not None:
        raise FbbenchError(f"no room for {what} ({size_text(size)}): {short[0].text()}", hint=limits.ROOM_HINT)
    try:
        shutil.copyfile(source, target)
    except OSError as error:
        target.unlink(missing_ok=True)
        raise FbbenchError(f"cannot write {what} to {target}: {error.strerror or error}",
                           hint=limits.ROOM_HINT) from None


def _row_counts(connection: Any) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("select trim(rdb$relation_name) from rdb$relations where coalesce(rdb$system_flag, 0) = 0 "
                       "and rdb$view_blr is null and rdb$relation_type in (0, 1) "
                       f"and rdb$relation_name <> '{ownership.MARK_TABLE}' order by 1")
        tables = [row[0] for row in cursor.fetchall()]
        counts = {}
        for table in tables:
            cursor.execute(f'select count(*) from "{table}"')
            counts[table] = int(cursor.fetchone()[0])
    return counts


class _Loaders:
    """``n`` attachments on threads, drawing a step's iterations one at a time from one iterator.

    firebird-driver calls release the GIL inside the client library, so long-running load
    procedures really run in parallel. Ctrl-C cancels the running statements
    (fb_cancel_operation) so the phase ends within seconds.
    """

    def __init__(self, dsn: str, count: int) -> None:
        self.dsn = dsn
        self.count = count
        self.connections: list[Any] = []

    def __enter__(self) -> _Loaders:
        return self

    def __exit__(self, *exc: object) -> None:
        for connection in self.connections:
            with suppress(Exception):
                connection.close()

    def _connection(self, index: int) -> Any:
        while len(self.connections) <= index:
            self.connections.append(driver.connect(self.dsn))
        return self.connections[index]

    def run(self, step: LoadStep, workload: Workload, progress: Progress, watch: Watch,
            only: _Work | None = None) -> int:
        watch.step(step.name)
        if step.script is not None:
            progress(step.name, 0, 1)
            scripts.run_file(self._connection(0), step.script, workload.scale)
            progress(step.name, 1, 1)
            return 1
        work = only or _Work(step.iterations(), step.count)
        total = work.count
        workers = min(self.count, total)
        for index in range(workers):
            self._connection(index)
        done, failures = [0], []
        lock = threading.Lock()
        stop = threading.Event()
        progress(step.name, 0, total)

        def worker(index: int) -> None:
            connection = self.connections[index]
            while not stop.is_set():
                with lock:
                    item = next(work.items, None)
                if item is None:
                    return
                rng = random.Random(derived_seed(workload.name, step.index, *item))
                params = [*item, *(value(g, rng, index + 1, {}) for g in step.params)]
                try:
                    with connection.cursor() as cursor:
                        cursor.execute(step.sql, params)
                        if cursor.description:
                            cursor.fetchall()
                    connection.commit()
                except Exception as error:  # reported by the main thread with the step's name
                    failures.append(error)
                    stop.set()
                    return
                with lock:
                    done[0] += 1
                    progress(step.name, done[0], total)

        threads = [signals.Thread(target=worker, args=(i,), name=f"load-{i + 1}", daemon=True)
                   for i in range(workers)]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while not thread.ended.wait(0.2):
                    watch.check(done[0], total)
        except KeyboardInterrupt:
            self._halt(threads, stop)
            raise Interrupted("interrupted during population") from None
        except FbbenchError:  # the watch stopped the build
            self._halt(threads, stop)
            raise
        if failures:
            error = failures[0]
            if isinstance(error, FbbenchError):
                raise error
            raise FbbenchError(f"load step '{step.name}' failed: "
                               f"{driver.explain(error, self.dsn).message}") from None
        return total

    def _halt(self, threads: list[signals.Thread], stop: threading.Event) -> None:
        """Stop a step's attachments within seconds: no next iteration, the running ones cancelled."""
        stop.set()
        for connection in self.connections:
            # fb_cancel_raise aborts the running statement; an idle attachment refuses, harmlessly.
            with contextlib.suppress(Exception):
                connection._att.cancel_operation(3)
        deadline = time.monotonic() + 5
        for thread in threads:
            thread.ended.wait(max(0.0, deadline - time.monotonic()))


def restore_into_cache(plan: dict[str, Any]) -> dict[str, Any]:
    """``fbbench db restore``: only the cache entry of a backup (made when missing or fresh). No
    run records its building file: one a killed restore left is removed by the next restore of
    that backup (under the entry's lock)."""
    return restored(DatabasePlan(**plan), lambda _step, _done, _total: None, lambda _path: None)
