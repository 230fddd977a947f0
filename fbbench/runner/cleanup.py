"""The one clean-up routine for every ending of a run, and for what killed runs left behind.

A run owns these in the work directory, each named after its id: its database (an embedded run's
copy, a managed server's database), its runtime root (which also holds the engine child's
request files and a managed server's instance) and, for a replicated run, its replication
directory (the journal, its archive, a sync replica), which goes and stays with the database.
Whatever way a run ends — completed, failed at any phase, interrupted, its engine crashed — the
parent calls :func:`clean_run` once the child has gone. A run killed before it could do so is
cleaned by the next run (:func:`remove_leftovers`), which also removes population caches that an
interrupted build left half-written. Only paths inside the work directory are ever deleted.
"""

from __future__ import annotations

import fcntl
import shutil
from dataclasses import dataclass
from pathlib import Path

from fbbench import paths
from fbbench.database import ownership
from fbbench.engines.managed import stop_abandoned_servers
from fbbench.engines.runtime import runtime_base
from fbbench.store import ResultsStore

BUILDING_SUFFIX = ".building.fdb"


REPLICATION_SUFFIX = ".replication"


@dataclass(frozen=True)
class RunFiles:
    database: Path  # an embedded run's database copy
    runtime: Path  # the run's runtime root (and the engine child's request files)
    replication: Path  # --replication: the journal, its archive, the replica of a sync run

    @property
    def journal(self) -> Path:
        return self.replication / "journal"

    @property
    def archive(self) -> Path:
        return self.replication / "archive"

    @property
    def replica(self) -> Path:
        return self.replication / "replica.fdb"


def run_files(workdir: Path, run_id: str) -> RunFiles:
    databases = workdir / "databases"
    return RunFiles(databases / f"{run_id}.fdb", runtime_base(workdir, run_id),
                    databases / f"{run_id}{REPLICATION_SUFFIX}")


def clean_run(workdir: Path, run_id: str, keep_database: bool) -> list[str]:
    """Delete a run's files (its database copy unless it is to be kept); returns what was removed."""
    files = run_files(workdir, run_id)
    removed: list[str] = []
    if not keep_database and files.database.exists():
        ownership.remove_run_copy(str(files.database), workdir)
        removed.append(str(files.database))
    elif not keep_database:
        ownership.unregister(str(files.database))
    if not keep_database and files.replication.exists():
        if files.replica.exists():
            ownership.remove_run_copy(str(files.replica), workdir)
        shutil.rmtree(paths.assert_inside(files.replication, workdir), ignore_errors=True)
        removed.append(str(files.replication))
    elif not keep_database:
        ownership.unregister(str(files.replica))
    if files.runtime.exists():
        shutil.rmtree(paths.assert_inside(files.runtime, workdir), ignore_errors=True)
        removed.append(str(files.runtime))
    return removed


def remove_leftovers(store: ResultsStore, workdir: Path) -> list[str]:
    """What runs killed before their clean-up left in ``workdir``, and half-built population caches.

    Only runs the results store knows: those whose process is gone (status incomplete), and those
    that ended but whose files are still there; a database the run was asked to keep stays.
    """
    # First the servers of killed runs (their files are removed next): by owner, not by the store,
    # so a server whose run another results store recorded is stopped too.
    removed = [f"stopped {server}" for server in stop_abandoned_servers(workdir)]
    for run_id, kept in store.abandoned_runs():
        removed += clean_run(workdir, run_id, kept)
    # A run that ended but whose parent was killed before it could clean up (e.g. a sweep killed
    # right after a run completed): its files are still there although the store says it ended.
    present = {path.stem for path in (workdir / "databases").glob("*.fdb")}
    present |= {path.name for path in (workdir / "runtimes").glob("*") if path.is_dir()}
    present |= {path.name.removesuffix(REPLICATION_SUFFIX)
                for path in (workdir / "databases").glob(f"*{REPLICATION_SUFFIX}")}
    for run_id, kept in store.ended_runs(present):
        removed += clean_run(workdir, run_id, kept)
    removed += _abandoned_builds(workdir / "dbcache")
    return removed


def _abandoned_builds(cache: Path) -> list[str]:
    """``*.building.fdb`` files whose builder is gone (their cache key's lock is free)."""
    removed: list[str] = []
    if not cache.is_dir():
        return removed
    for building in sorted(cache.glob(f"*{BUILDING_SUFFIX}")):
        key = building.name[: -len(BUILDING_SUFFIX)].rsplit("-", 1)[-1]
        with open(cache / f"{key}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # another fbbench is building it right now
            ownership.unregister(str(building))
            paths.assert_inside(building, cache).unlink(missing_ok=True)
            removed.append(str(building))
    return removed
