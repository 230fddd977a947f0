"""A gbak backup as the source of a run's database (``--database-from``, ``fbbench db restore``):
checked and fingerprinted here, in the parent, before any engine runs; restored by the engine
child (:func:`fbbench.runner.engine.population.restored`). The backup file is only ever read.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from fbbench.engines import EmbeddedEngine, Engine, ServerEngine, parse_engine, prepare_runtime, run_in_engine
from fbbench.errors import FbbenchError
from fbbench.runner.population_cache import cache_dir

_CHUNK = 1 << 20


def backup_facts(path: str, what: str = "--database-from") -> dict[str, Any]:
    """The backup's path, name, size and sha256 (what the restore cache is keyed by); a one-line
    error when it is not a readable, non-empty file."""
    backup = Path(path).expanduser()
    if not backup.exists():
        raise FbbenchError(f"{what} {path}: no such file")
    if not backup.is_file():
        raise FbbenchError(f"{what} {path} is not a file", hint="give a gbak backup file (.fbk)")
    if not os.access(backup, os.R_OK):
        raise FbbenchError(f"{what} {path} is not readable")
    size = backup.stat().st_size
    if size == 0:
        raise FbbenchError(f"{what} {path} is empty", hint="give a gbak backup file (.fbk)")
    digest = hashlib.sha256()
    with open(backup, "rb") as source:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
    return {"path": str(backup.resolve()), "name": backup.name, "size_bytes": size, "sha256": digest.hexdigest()}


def for_engine(facts: dict[str, Any], engine: Engine) -> dict[str, Any]:
    """An external server cannot read this machine's file: the backup is sent through its services
    connection instead."""
    return {**facts, "stream": isinstance(engine, ServerEngine)}


def restore_into_cache(path: str, engine_name: str, workdir: Path, page_size: int | None, fresh: bool,
                       user: str | None = None, password: str | None = None) -> dict[str, Any]:
    """``fbbench db restore``: the backup restored into the work directory's cache for an embedded
    engine (made once per backup checksum, engine version and page size)."""
    from fbbench.database.manage import check_page_size

    engine = parse_engine(engine_name)
    if not isinstance(engine, EmbeddedEngine):
        raise FbbenchError(f"fbbench db restore keeps restored databases for embedded engines, not {engine.label}",
                           hint="for a server, fbbench run WORKLOAD --database-from BACKUP --engine … restores "
                                "it in place for the run")
    check_page_size(page_size, engine)
    facts = backup_facts(path, "the backup")
    workdir.mkdir(parents=True, exist_ok=True)
    plan = {"location": "", "services_host": "", "cache_dir": str(cache_dir(workdir)),
            "engine_major": engine.cache_engine, "page_size": page_size, "page_buffers": None, "forced_writes": None,
            "sweep_interval": None, "fresh": fresh, "load_connections": 1, "restore": for_engine(facts, engine)}
    runtime = prepare_runtime(engine, workdir, user=user, password=password)
    try:
        load = run_in_engine(runtime, "fbbench.runner.engine.population:restore_into_cache", plan)
    finally:
        runtime.remove(workdir)
    return {**load, "backup": facts, "engine": engine.label}
