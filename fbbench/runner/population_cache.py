"""The populated-database cache in a work directory: where its entries live and what names them.

Populated databases are kept per workload (name, files, scale), page size and engine version
(restored backups per checksum, page size and engine version: :data:`RESTORED`) under
``WORKDIR/dbcache``: ``NAME-KEY.fdb`` and its facts ``NAME-KEY.json``, built as
``NAME-KEY.building.fdb`` under the lock ``KEY.lock``. The engine side builds and reads them
(:mod:`fbbench.runner.engine.population`), the parent side cleans what a killed build left
(:mod:`fbbench.runner.cleanup`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fbbench.engines.catalog import EmbeddedEngine, ManagedEngine
from fbbench.errors import FbbenchError
from fbbench.sizes import size_text
from fbbench.workloads.spec import Workload, stored_workload

POPULATION_FORMAT = 1  # bump when the way fbbench populates changes, to invalidate caches
BUILDING_SUFFIX = ".building.fdb"


def cache_dir(workdir: Path) -> Path:
    return workdir / "dbcache"


def engine_key(engine: EmbeddedEngine | ManagedEngine) -> str:
    """What the cache keys a local engine's databases by (:attr:`EmbeddedEngine.cache_engine`: the
    major version, or a build's major and ODS when they differ from its major's releases'); a
    managed server builds its database in place, by its major."""
    return engine.cache_engine if isinstance(engine, EmbeddedEngine) else engine.major


def cache_material(workload: Workload, page_size: int | None, engine_major: str) -> dict[str, Any]:
    return {"format": POPULATION_FORMAT, "workload": workload.name, "files": workload.files,
            "scale": workload.scale, "page_size": page_size, "engine": engine_major}


def cache_key(workload: Workload, page_size: int | None, engine_major: str) -> str:
    material = cache_material(workload, page_size, engine_major)
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:16]


# The cache entries of restored gbak backups (``--database-from``, ``fbbench db restore``) are
# named RESTORED-KEY, keyed by the backup's checksum, the page size and the engine version.
RESTORED = "restored"


def restore_material(backup_sha256: str, page_size: int | None, engine_major: str) -> dict[str, Any]:
    return {"format": POPULATION_FORMAT, "backup_sha256": backup_sha256, "page_size": page_size,
            "engine": engine_major}


def restore_key(material: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Entry:
    """One cache entry's files."""

    database: Path
    meta: Path
    building: Path
    lock: Path


def entry(cache: Path, workload_name: str, key: str) -> Entry:
    stem = f"{workload_name}-{key}"
    return Entry(cache / f"{stem}.fdb", cache / f"{stem}.json", cache / f"{stem}{BUILDING_SUFFIX}",
                 cache / f"{key}.lock")


def scale_for_size(workload: Workload, target_bytes: float, measured: dict[str, Any]) -> dict[str, Any]:
    """``--target-size``'s arithmetic: the value of ``workload``'s size scale (``size_scale`` in
    workload.toml) that gives a database of about ``target_bytes``, from the load facts of its
    population at the scale's default value (``measured``; ``workload`` is at that default): the
    size beyond what the scripts alone create, divided by the default value, is what one unit of
    the scale takes. Returns the scale to run at (``{name: text}``) and how it was chosen."""
    name = workload.size_scale
    assert name is not None
    default = workload.scale_defaults[name]
    assert isinstance(default, int | float)
    size = int(measured["size_bytes"])
    # After the scripts, before the load steps; a population grown from a smaller one started larger.
    base = 0 if measured.get("grown_from") is not None else int(measured.get("base_bytes") or 0)
    per_unit = (size - base) / default
    if per_unit <= 0:
        raise FbbenchError(f"--target-size: workload {workload.name}'s population did not grow with {name} "
                           f"({size:,} bytes at {name}={default:g})")
    value = max(1.0, (target_bytes - base) / per_unit)
    chosen: int | float = round(value) if isinstance(default, int) else float(f"{value:.4g}")
    expected = base + per_unit * chosen
    text = (f"{name}={chosen:,} (about {size_text(expected, unit='MB', digits=0)}: "
            f"{size_text(per_unit, unit='KB', digits=2)} per unit of {name}, measured on the population at "
            f"{name}={default:g}, {size_text(size, unit='MB')})")
    return {"scale": {name: str(chosen)}, "target_bytes": target_bytes, "expected_bytes": round(expected),
            "per_unit_bytes": per_unit, "base_bytes": base, "measured_at": {name: default, "size_bytes": size},
            "text": text}


@dataclass(frozen=True)
class StepMeasure:
    name: str
    iterations: int
    bytes: int  # what the database grew by during the step
    seconds: float


@dataclass(frozen=True)
class Measurement:
    """A population built from scratch, as its cache entry recorded it: the database's size after
    the workload's scripts and after each load step, and the time each took."""

    database: Path  # the cache entry's file
    scale: dict[str, Any]
    engine: str
    page_size: int | None
    size_bytes: int
    base_bytes: int  # after the scripts, before the first load step
    base_seconds: float
    steps: tuple[StepMeasure, ...]
    built_at: float
    declared: bool = False  # the build its workload declares (DECLARED), not one of this cache


# A workload directory's declared build: the load facts of one population of it (at its default
# scale), so that a scale that could never fit or finish is refused before its first build here.
DECLARED = "population.json"


def declaration(workload: Workload, meta: dict[str, Any]) -> dict[str, Any]:
    """The text of a workload's :data:`DECLARED` file, from a cache entry's facts (``meta``, the
    JSON beside a cached population of ``workload``)."""
    load, material = meta["load"], meta["material"]
    return {"note": "the load facts of one build of this workload (benchmarks/population_declared.py): fbbench "
                    "estimates a population from them before its first build on a machine",
            "shape_sha256": hashlib.sha256(workload.population_shape().encode()).hexdigest(),
            "scale": material["scale"], "engine": material["engine"], "page_size": material["page_size"],
            "built_at": meta.get("built_at"),
            **{key: load[key] for key in ("size_bytes", "base_bytes", "base_seconds", "load_connections", "steps")}}


def declared(workload: Workload) -> list[Measurement]:
    """The build ``workload``'s directory declares (:data:`DECLARED`), when it does and its load
    still does per iteration what the declared one did; empty otherwise."""
    path = workload.directory / DECLARED
    try:
        if not path.is_file():
            return []
        facts = json.loads(path.read_text())
        if facts["shape_sha256"] != hashlib.sha256(workload.population_shape().encode()).hexdigest():
            return []  # the workload changed since: its declaration says nothing about it now
        steps = tuple(StepMeasure(s["name"], int(s["iterations"]), int(s["bytes"]), float(s["seconds"]))
                      for s in facts["steps"])
        return [Measurement(path, dict(facts["scale"]), str(facts["engine"]), facts["page_size"],
                            int(facts["size_bytes"]), int(facts["base_bytes"]), float(facts["base_seconds"]), steps,
                            float(facts.get("built_at") or 0), declared=True)]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def measurements(cache: Path, workload: Workload) -> list[Measurement]:
    """The builds in ``cache`` of ``workload`` at any scale, engine or page size whose load does
    per iteration what the workload's does now (:meth:`Workload.population_shape`).

    Entries grown from a smaller one measured only what they added, and entries made before
    fbbench recorded each step's growth measured too little: neither is returned."""
    if not cache.is_dir():
        return []
    shape = workload.population_shape()
    found = []
    for meta_file in sorted(cache.glob(f"{workload.name}-*.json")):
        try:
            meta = json.loads(meta_file.read_text())
            material, load = meta["material"], meta["load"]
            if material["format"] != POPULATION_FORMAT or material["workload"] != workload.name:
                continue
            if load.get("grown_from") is not None or load.get("base_bytes") is None:
                continue
            built = stored_workload(material["files"], {k: str(v) for k, v in material["scale"].items()})
            if built.population_shape() != shape:
                continue
            steps = tuple(StepMeasure(s["name"], int(s["iterations"]), int(s["bytes"]), float(s["seconds"]))
                          for s in load["steps"])
            found.append(Measurement(meta_file.with_suffix(".fdb"), dict(material["scale"]), str(material["engine"]),
                                     material["page_size"], int(load["size_bytes"]), int(load["base_bytes"]),
                                     float(load["base_seconds"]), steps, float(meta.get("built_at") or 0)))
        except (OSError, ValueError, KeyError, TypeError, FbbenchError):
            continue  # an entry from another fbbench, or half-written: not a measurement
    return found
