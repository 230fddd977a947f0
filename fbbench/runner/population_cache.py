"""The populated-database cache in a work directory: where its entries live and what names them.

Populated databases are kept per workload (name, files, scale), page size and engine version
under ``WORKDIR/dbcache``: ``NAME-KEY.fdb`` and its facts ``NAME-KEY.json``, built as
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

from fbbench.errors import FbbenchError
from fbbench.workloads.spec import Workload, stored_workload

POPULATION_FORMAT = 1  # bump when the way fbbench populates changes, to invalidate caches
BUILDING_SUFFIX = ".building.fdb"


def cache_dir(workdir: Path) -> Path:
    return workdir / "dbcache"


def cache_material(workload: Workload, page_size: int | None, engine_major: str) -> dict[str, Any]:
    return {"format": POPULATION_FORMAT, "workload": workload.name, "files": workload.files,
            "scale": workload.scale, "page_size": page_size, "engine": engine_major}


def cache_key(workload: Workload, page_size: int | None, engine_major: str) -> str:
    material = cache_material(workload, page_size, engine_major)
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
