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

from fbbench.workloads.spec import Workload

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
