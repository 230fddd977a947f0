"""The one clean-up routine for every ending of a run, and for what killed runs left behind.

A run creates files in its work directory — its database (an embedded run's copy, a managed
server's database), its runtime root (which also holds the engine child's request files and a
managed server's instance) and, while it populates, a population being built in the cache — and
records each one in the results store *before* creating it, with the id of the work directory
(:class:`fbbench.paths.WorkDir`) and the process that will remove it. Whatever way a run ends
— completed, failed at any phase, interrupted, its engine crashed — that process calls
:func:`clean_run` once the engine child has gone. What a run killed before it could do so left is
removed by the next run in the same work directory with the same store (:func:`remove_leftovers`).

Only recorded paths are ever deleted, and only those inside the work directory they were recorded
for: never a file because its name looks like one of fbbench's.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from fbbench import paths
from fbbench.database import ownership
from fbbench.engines.managed import stop_abandoned_servers
from fbbench.engines.runtime import runtime_base
from fbbench.runner.population_cache import BUILDING_SUFFIX, entry
from fbbench.store import ResultsStore
from fbbench.store.results import RunFiles, StoreError

# The kinds of files a run records (run_files.kind in the store).
DATABASE, RUNTIME, BUILDING = "database", "runtime", "building"


@dataclass(frozen=True)
class RunPaths:
    database: Path  # an embedded run's database copy
    runtime: Path  # the run's runtime root (and the engine child's request files)


def databases_dir(workdir: Path) -> Path:
    """Where runs' databases are (an embedded run's copy, a managed server's database)."""
    return workdir / "databases"


def run_paths(workdir: Path, run_id: str) -> RunPaths:
    return RunPaths(databases_dir(workdir) / f"{run_id}.fdb", runtime_base(workdir, run_id))


def run_files(workdir: paths.WorkDir, run_id: str, database: bool) -> RunFiles:
    """What a run creates in ``workdir`` and this process removes when it ends (to be recorded
    before it creates them): its runtime root, and its database unless ``database`` is False (a
    database the user asked to keep is not the clean-up's)."""
    made = run_paths(workdir.path, run_id)
    files = {str(made.runtime): RUNTIME}
    if database:
        files[str(made.database)] = DATABASE
    return RunFiles(workdir.ident, os.getpid(), files)


def _lock_of(building: Path) -> Path:
    stem = building.name[: -len(BUILDING_SUFFIX)]
    workload, key = stem.rsplit("-", 1)
    return entry(building.parent, workload, key).lock


def clean_run(store: ResultsStore, workdir: paths.WorkDir, run_id: str, made: RunFiles) -> list[str]:
    """Delete a run's files: ``made`` (what the caller recorded for it) and what its engine child
    recorded since; returns what was removed."""
    files = dict(made.paths)
    with contextlib.suppress(StoreError):  # the store cannot be read: what the caller recorded goes all the same
        for recorded in store.files_to_remove(workdir.ident, run_id).values():
            files |= recorded.paths
    return _remove(store, workdir, run_id, files)


def remove_leftovers(store: ResultsStore, workdir: paths.WorkDir) -> list[str]:
    """What runs of ``workdir`` left there when their fbbench process was killed (their copy,
    runtime root, a half-built population), as ``store`` recorded it; returns what was removed.
    A database a run was asked to keep was never recorded, so it stays."""
    # First the servers of killed runs (their files are removed next): by owner, not by the store,
    # so a server whose run another results store recorded is stopped too.
    removed = [f"stopped {server}" for server in stop_abandoned_servers(workdir.path)]
    for run_id, files in store.files_to_remove(workdir.ident).items():
        removed += _remove(store, workdir, run_id, files.paths)
    return removed


def _remove(store: ResultsStore, workdir: paths.WorkDir, run_id: str, files: dict[str, str]) -> list[str]:
    removed, done = [], []
    for path, kind in files.items():
        target = Path(path)
        if not target.resolve().is_relative_to(workdir.path):
            done.append(path)  # not in this directory (it was moved, or a link now points out): not ours to delete
            continue
        existed = target.exists()
        try:
            if kind == BUILDING:
                if not _remove_abandoned_build(target, workdir.path):
                    continue  # a run builds that population right now; it stays recorded for later
            elif kind == DATABASE:
                ownership.remove_run_copy(path, workdir.path)
            elif existed:
                shutil.rmtree(paths.assert_inside(target, workdir.path), ignore_errors=True)
        except OSError:
            continue  # not removable now (permissions, a directory where a file was): tried again next time
        if os.path.lexists(target):
            continue
        done.append(path)
        if existed:
            removed.append(path)
    with contextlib.suppress(StoreError):  # the next clean-up finds them gone
        store.files_removed(run_id, done)
    return removed


def _remove_abandoned_build(building: Path, workdir: Path) -> bool:
    """Delete a population being built whose builder is gone; False when a builder holds its
    lock (the file may be a newer build of the same population)."""
    if not building.exists():
        return True
    with open(_lock_of(building), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        ownership.unregister(str(building))
        paths.assert_inside(building, workdir).unlink(missing_ok=True)
        return True
