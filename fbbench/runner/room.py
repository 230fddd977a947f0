"""Whether a run fits before it starts: the room its population and copies need on the work
directory's disk (estimated from the nearest build the cache measured, or the build the workload
declares), and the time it is planned to take (more than a day refused unless ``--yes``).
Moved out of :mod:`fbbench.runner.run` as it is, so that each stays a size a reader takes in."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from fbbench.engines import EmbeddedEngine, ManagedEngine
from fbbench.errors import FbbenchError
from fbbench.runner import cleanup, limits, population_cache
from fbbench.runner.settings import RunSettings
from fbbench.sizes import given_size_text, size_text
from fbbench.workloads.spec import Workload, load_workload


def check_room_and_time(settings: RunSettings, workload: Workload, engine: Any, workdir: Path,
                        backup: dict[str, Any] | None = None) -> None:
    """Refuse a run whose database would not fit the work directory's disk, or that is planned to
    take more than a day without --yes.

    The database is the cached population's copy (its size known), or a population still to
    build: its size and time are scaled from the nearest build of the same workload that the
    cache measured (:func:`limits.nearest_estimate`; refused only beyond the estimate's margin),
    or, before the first, from the build the workload declares (population_cache.declared). A
    workload that declares none is watched while it builds instead (runner/engine/population.py).
    With ``backup`` (--database-from) the database is restored, not built: the copy of its cached
    restore is checked, a restore still to make has no estimate. With --target-size (embedded
    only) the scale is chosen when the run starts: see :func:`_target_size_room`. A sync
    replicated run makes a second copy beside the run's, its replica. An external server's disk
    is not this machine's."""
    estimate = None
    # --replication sync: the run's replica, a copy of the populated database, lies beside it.
    copies = 2 if settings.replication == "sync" else 1
    if isinstance(engine, EmbeddedEngine | ManagedEngine):
        cache, databases = population_cache.cache_dir(workdir), cleanup.databases_dir(workdir)
        keyed_by = population_cache.engine_key(engine)
        if backup is not None:
            material = population_cache.restore_material(backup["sha256"], settings.page_size, keyed_by)
            name, what = population_cache.RESTORED, f"restore of {backup['name']}"
            key = population_cache.restore_key(material)
        else:
            name, what = workload.name, f"{workload.name} population"
            key = population_cache.cache_key(workload, settings.page_size, keyed_by)
        cached = population_cache.entry(cache, name, key).database
        if settings.target_size is not None and backup is None:
            _target_size_room(settings, workload, keyed_by, cache, databases, copies)
        elif isinstance(engine, EmbeddedEngine) and cached.exists() and not settings.fresh:
            size = cached.stat().st_size
            short = limits.shortfall([(databases, copies * size)])
            if short is not None:
                copy = "copy" if copies == 1 else "copy and its sync replica"
                raise FbbenchError(f"the run's {copy} of the cached {what} "
                                   f"need{'s' if copies == 1 else ''} {size_text(copies * size)}: "
                                   f"{short[0].text()}", hint=limits.ROOM_HINT)
        elif backup is None:
            # Before its first build here, the build the workload declares (population.json).
            measured = population_cache.measurements(cache, workload) or population_cache.declared(workload)
            estimate = limits.nearest_estimate(workload, measured, keyed_by, settings.page_size)
        if estimate is not None:
            # Embedded: built in the cache, then copied for the run; managed: built in place.
            places = [cache, databases] if isinstance(engine, EmbeddedEngine) else [databases]
            places += [databases] * (copies - 1)
            short = limits.shortfall([(place, estimate.size_bytes) for place in places], limits.ESTIMATE_MARGIN)
            if short is not None:
                twice = ", built in the cache and copied for the run" if isinstance(engine, EmbeddedEngine) else ""
                twice += ", and again for its sync replica" if copies == 2 else ""
                wanted = limits.scale_difference(workload.scale, estimate.basis.scale)
                raise FbbenchError(
                    f"the {workload.name} population at {wanted} needs about "
                    f"{size_text(estimate.size_bytes)}{twice}: {short[0].text()} — "
                    f"{estimate.basis_text(workload)}", hint=limits.ROOM_HINT)
    timed = settings.transactions is None
    load = settings.repeat * (settings.warmup + settings.duration) if timed else 0.0
    parts = [f"{settings.repeat} × {limits.duration_text(settings.warmup + settings.duration)} of warm-up and "
             "measurement" if timed else "fixed work, its time unknown"]
    if estimate is not None:
        parts.insert(0, f"the population about {limits.duration_text(estimate.seconds)}, "
                        f"{estimate.basis_text(workload)}")
    limits.check_planned(load + (estimate.seconds if estimate else 0.0), "this run", "; ".join(parts), settings.yes)


def _target_size_room(settings: RunSettings, workload: Workload, cache_engine: str, cache: Path,
                      databases: Path, copies: int = 1) -> None:
    """Refuse a --target-size run whose population would not fit the work directory's disk.

    ``workload`` is at its size scale's default (--target-size refuses a --scale of it): the
    population the size per unit is measured on (runner/engine/population.scale_for_size). Once it
    is cached, the scale chosen and whether its population is cached too are known here: then only
    what is still to be built or copied counts. Before that, the measuring population is built
    (its size estimated as any other's, when the cache measured one of the same shape), and a
    population of about the size asked is built in the cache and copied for the run. ``copies``:
    2 when a sync replica of the run's copy lies beside it (--replication sync)."""
    target = float(settings.target_size or 0)
    needs: list[tuple[Path, float]] = []
    probe = population_cache.entry(cache, workload.name,
                                   population_cache.cache_key(workload, settings.page_size, cache_engine))
    cached: Path | None = None  # the cached population at the scale --target-size will choose
    if probe.database.exists() and probe.meta.exists() and not settings.fresh:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, FbbenchError):
            sizing = population_cache.scale_for_size(workload, target, json.loads(probe.meta.read_text())["load"])
            sized = load_workload(str(workload.directory), {**workload.scale, **sizing["scale"]})
            key = population_cache.cache_key(sized, settings.page_size, cache_engine)
            cached = population_cache.entry(cache, sized.name, key).database
    else:
        measured = population_cache.measurements(cache, workload)
        estimate = limits.nearest_estimate(workload, measured, cache_engine, settings.page_size)
        needs.append((cache, estimate.size_bytes if estimate is not None else 0.0))
    if cached is not None and cached.exists():
        needs.append((databases, copies * float(cached.stat().st_size)))
    else:
        needs += [(cache, target), (databases, copies * target)]
    short = limits.shortfall(needs)
    if short is not None:
        raise FbbenchError(f"{settings.where('target_size')} {given_size_text(int(target))} needs about "
                           f"{size_text(short[1])} in the work directory (the population built in its cache "
                           f"and the run's copy{' and its sync replica' if copies == 2 else ''}): "
                           f"{short[0].text()}",
                           hint="choose a smaller --target-size, or a --workdir on a larger disk")
