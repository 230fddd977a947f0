"""Phase 2 of a run, inside the engine child: the benchmark database, created and populated.

Populated databases are kept in a cache keyed by workload (name, files, scale), page size and
engine version; a run with the same key starts from a copy of it. A run's own database is
always a fresh copy, so runs never see each other's leftovers. Servers get a database built in
place (fbbench cannot copy files on another machine).

Population runs the workload's ``[[load]]`` steps in order; the iterations of a ``for_each``
step are spread over ``load_connections`` attachments. Load speed is measured as database growth
(MB/s) and rows per second.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import queue
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
from fbbench.database import driver, lifecycle, ownership, scripts
from fbbench.errors import FbbenchError, Interrupted
from fbbench.runner.cleanup import BUILDING_SUFFIX
from fbbench.workloads.generators import derived_seed, value
from fbbench.workloads.spec import LoadStep, Workload

POPULATION_FORMAT = 1  # bump when the way fbbench populates changes, to invalidate caches

Progress = Callable[[str, int, int], None]  # step name, done, total


@dataclass(frozen=True)
class DatabasePlan:
    location: str  # the run's database: a path (embedded) or a DSN
    services_host: str  # "" embedded, "host/port" for a server
    cache_dir: str | None  # embedded only
    engine_major: str
    page_size: int | None
    page_buffers: int | None
    forced_writes: bool | None
    sweep_interval: int | None
    fresh: bool
    load_connections: int
    grow: str | None = None  # a scale name: extend a cached smaller population instead of building anew


def cache_material(workload: Workload, plan: DatabasePlan) -> dict[str, Any]:
    return {"format": POPULATION_FORMAT, "workload": workload.name, "files": workload.files,
            "scale": workload.scale, "page_size": plan.page_size, "engine": plan.engine_major}


def cache_key(workload: Workload, plan: DatabasePlan) -> str:
    return hashlib.sha256(json.dumps(cache_material(workload, plan), sort_keys=True).encode()).hexdigest()[:16]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def prepare(plan: DatabasePlan, workload: Workload, progress: Progress) -> dict[str, Any]:
    """Create or copy the run's database; returns the load facts (source, speed)."""
    if plan.cache_dir is None:
        # A database already there (header via the services API, nothing attached) is replaced
        # only if it is an earlier run's; any other one is refused untouched.
        token = ownership.refuse_unless_owned_or_absent(plan.location, "build a database at")
        if token is not None:
            lifecycle.drop(plan.location, token)
            ownership.unregister(plan.location)
        load = build(plan.location, workload, plan, progress)
        load["source"] = "built in place"
    else:
        cache = Path(plan.cache_dir)
        with _cached(cache, workload, plan, progress) as (cached, load):
            started = time.monotonic()
            shutil.copyfile(cached, plan.location)
            load["copy_seconds"] = time.monotonic() - started
        load["cache_file"] = str(cached)
        _take_ownership(plan.location)
    _apply_settings(plan)
    return load


@contextmanager
def _cached(cache: Path, workload: Workload, plan: DatabasePlan,
            progress: Progress) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The cached population for ``workload`` (built now if there is none, or --fresh), and its
    load facts; held under the cache key's lock while the caller uses it."""
    key = cache_key(workload, plan)
    cached, meta = cache / f"{workload.name}-{key}.fdb", cache / f"{workload.name}-{key}.json"
    with _locked(cache / f"{key}.lock"):
        if plan.fresh or not (cached.exists() and meta.exists()):
            for stale in (cached, meta):
                if stale.exists():
                    ownership.unregister(str(stale))
                    stale.unlink()
            building = cache / f"{workload.name}-{key}{BUILDING_SUFFIX}"
            if building.exists():  # left by a build that was killed
                ownership.unregister(str(building))
                building.unlink()
            source = _grow_source(cache, workload, plan) if plan.grow and not plan.fresh else None
            try:
                if source is not None:
                    stats = grow(source, str(building), workload, plan, progress)
                else:
                    stats = build(str(building), workload, plan, progress)
            except BaseException:  # interrupted or failed: a half-built cache is never kept
                ownership.unregister(str(building))
                building.unlink(missing_ok=True)
                raise
            ownership.unregister(str(building))
            building.rename(cached)
            ownership.register(str(cached), _mark_token(str(cached)), {"purpose": "populated cache"})
            meta.write_text(json.dumps({"built_at": time.time(), "key": key, "load": stats,
                                        "material": cache_material(workload, plan)}, indent=2, default=str))
            load = {**stats, "source": stats.get("source", "built (now cached)")}
        else:
            load = {**json.loads(meta.read_text())["load"], "source": "copy of cached population"}
        yield cached, load


def scale_for_size(plan: DatabasePlan, workload: Workload, target_bytes: int,
                   progress: Progress) -> tuple[Workload, dict[str, Any]]:
    """``--target-size``: the workload at the value of its size scale that gives a database of
    about ``target_bytes``. What one unit of that scale takes is measured once, on the population
    at the workload's default value (built and kept in the population cache like any other): its
    size beyond what the scripts alone create, divided by the default value."""
    from fbbench.workloads.spec import load_workload

    assert plan.cache_dir is not None and workload.size_scale is not None
    name = workload.size_scale
    default = workload.scale_defaults[name]
    assert isinstance(default, int | float)
    probe = load_workload(str(workload.directory), {**workload.scale, name: default})
    with _cached(Path(plan.cache_dir), probe, plan, progress) as (_cached_file, facts):
        size, base = int(facts["size_bytes"]), int(facts.get("scripts_bytes") or 0)
    per_unit = (size - base) / default
    if per_unit <= 0:
        raise FbbenchError(f"--target-size: workload {workload.name}'s population did not grow with {name} "
                           f"({size:,} bytes at {name}={default:g})")
    value = max(1.0, (target_bytes - base) / per_unit)
    chosen: int | float = round(value) if isinstance(default, int) else float(f"{value:.4g}")
    sized = load_workload(str(workload.directory), {**workload.scale, name: chosen})
    expected = base + per_unit * chosen
    text = (f"{name}={chosen:,} (about {expected / 1e6:,.0f} MB: {per_unit / 1e3:,.2f} kB per unit of {name}, "
            f"measured on the population at {name}={default:g}, {size / 1e6:,.1f} MB)")
    return sized, {"scale": {name: str(chosen)}, "target_bytes": target_bytes, "expected_bytes": round(expected),
                   "per_unit_bytes": per_unit, "base_bytes": base, "measured_at": {name: default, "size_bytes": size},
                   "text": text}


def _grow_source(cache: Path, workload: Workload, plan: DatabasePlan) -> tuple[Path, dict[str, Any]] | None:
    """The largest cached population of the same workload, page size and engine whose scale
    differs from the one wanted only by a smaller value of the growing parameter."""
    assert plan.grow is not None
    wanted = cache_material(workload, plan)
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
         progress: Progress) -> dict[str, Any]:
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
    shutil.copyfile(database, dsn)
    ownership.register(dsn, _mark_token(dsn), {"purpose": "population (growing)"})
    with driver.connect(dsn) as connection:
        size_before = _size(connection)
    steps: list[tuple[LoadStep, list[tuple[int, ...]] | None]] = []
    for step, before in zip(workload.load, smaller.load, strict=True):
        if step.script is not None:
            continue
        done = set(before.iterations())
        new = [item for item in step.iterations() if item not in done]
        if new:
            steps.append((step, new))
    facts = _load(dsn, workload, plan, progress, steps, started, size_before, material.get("rows") or 0)
    grown_from = material["scale"].get(plan.grow)
    shown = f"{grown_from:g}" if isinstance(grown_from, int | float) else str(grown_from)
    return {**facts, "source": f"grown from {plan.grow}={shown} (now cached)", "grown_from": material["scale"]}


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


def build(dsn: str, workload: Workload, plan: DatabasePlan, progress: Progress) -> dict[str, Any]:
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
    facts = _load(dsn, workload, plan, progress, [(step, None) for step in workload.load], started, size_before)
    return {**facts, "scripts_bytes": size_before}  # what the scripts alone create (--target-size)


def _load(dsn: str, workload: Workload, plan: DatabasePlan, progress: Progress,
          steps: list[tuple[LoadStep, list[tuple[int, ...]] | None]], started: float, size_before: int,
          rows_before: int = 0) -> dict[str, Any]:
    """Run load steps (each with all its iterations, or only those given) on the load attachments;
    the load's facts: time, rows, growth of the database, MB/s and rows/s."""
    load_started = time.monotonic()
    done = []
    with _Loaders(dsn, plan.load_connections) as loaders:
        for step, only in steps:
            step_started = time.monotonic()
            iterations = loaders.run(step, workload, progress, only=only)
            done.append({"name": step.name, "seconds": time.monotonic() - step_started, "iterations": iterations})
    load_seconds = time.monotonic() - load_started
    with driver.connect(dsn) as connection:
        size_after = _size(connection)
        rows = _row_counts(connection)
    total_rows = sum(rows.values())
    grown = max(size_after - size_before, 0)
    return {
        "seconds": time.monotonic() - started,
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


def _size(connection: Any) -> int:
    with connection.cursor() as cursor:
        cursor.execute("select mon$pages * mon$page_size from mon$database")
        return int(cursor.fetchone()[0])


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
    """``n`` attachments on threads; a step's iterations are shared out through a queue.

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

    def run(self, step: LoadStep, workload: Workload, progress: Progress,
            only: list[tuple[int, ...]] | None = None) -> int:
        if step.script is not None:
            progress(step.name, 0, 1)
            scripts.run_file(self._connection(0), step.script, workload.scale)
            progress(step.name, 1, 1)
            return 1
        iterations = step.iterations() if only is None else only
        work: queue.Queue[tuple[int, ...]] = queue.Queue()
        for item in iterations:
            work.put(item)
        workers = min(self.count, len(iterations))
        for index in range(workers):
            self._connection(index)
        done, failures = [0], []
        lock = threading.Lock()
        stop = threading.Event()
        progress(step.name, 0, len(iterations))

        def worker(index: int) -> None:
            connection = self.connections[index]
            while not stop.is_set():
                try:
                    item = work.get_nowait()
                except queue.Empty:
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
                    progress(step.name, done[0], len(iterations))

        threads = [signals.Thread(target=worker, args=(i,), name=f"load-{i + 1}", daemon=True)
                   for i in range(workers)]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while not thread.ended.wait(0.2):
                    pass
        except KeyboardInterrupt:
            stop.set()
            for connection in self.connections:
                # fb_cancel_raise aborts the running statement; an idle attachment refuses, harmlessly.
                with contextlib.suppress(Exception):
                    connection._att.cancel_operation(3)
            deadline = time.monotonic() + 5
            for thread in threads:
                thread.ended.wait(max(0.0, deadline - time.monotonic()))
            raise Interrupted("interrupted during population") from None
        if failures:
            error = failures[0]
            if isinstance(error, FbbenchError):
                raise error
            raise FbbenchError(f"load step '{step.name}' failed: "
                               f"{driver.explain(error, self.dsn).message}") from None
        return len(iterations)
