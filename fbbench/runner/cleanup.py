"""The one clean-up routine for every ending of a run, and for what killed runs left behind.

A run creates files in its work directory — its database (an embedded run's copy, a managed
server's database), its runtime root (which also holds the engine child's request files and a
managed server's instance), for a replicated run its replication directory (the journal, its
archive, a sync replica), which goes and stays with the database, and, while it populates, a
population being built in the cache — and records each one in the results store *before*
creating it, with the id of the work directory (:class:`fbbench.paths.WorkDir`) and the process
that will remove it. Whatever way a run ends — completed, failed at any phase, interrupted, its
engine crashed — that process calls :func:`clean_run` once the engine child has gone. What a run
killed before it could do so left is removed by the next run in the same work directory with the
same store (:func:`remove_leftovers`).

A command other than a run that makes files there (``db backupspeed --copy``: its copy and its
runtime root) has no run in a results store: it records them in a ledger in the work directory,
``commands/PID-TOKEN.json``, before it makes them (:func:`command_files`), removes them when it
ends, and what a killed one left is removed by the next run or backupspeed in that work
directory (:func:`remove_command_leftovers`).

Only recorded paths are ever deleted, and only those inside the work directory they were recorded
for: never a file because its name looks like one of fbbench's.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil

from fbbench import paths, shape
from fbbench.database import ownership
from fbbench.engines.managed import stop_abandoned_servers
from fbbench.engines.platform import process_alive
from fbbench.engines.runtime import runtime_base
from fbbench.errors import FbbenchError
from fbbench.runner.population_cache import BUILDING_SUFFIX, entry
from fbbench.store import ResultsStore
from fbbench.store.results import RunFiles, StoreError

# The kinds of files a run records (run_files.kind in the store); a command's copy of a database.
DATABASE, RUNTIME, BUILDING, REPLICATION, COPY = "database", "runtime", "building", "replication", "copy"
# Where commands other than runs record the files they make in the work directory.
COMMANDS_DIR = "commands"

REPLICATION_SUFFIX = ".replication"
REPLICA_NAME = "replica.fdb"  # a sync run's replica, in its replication directory


@dataclass(frozen=True)
class RunPaths:
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
        return self.replication / REPLICA_NAME


def databases_dir(workdir: Path) -> Path:
    """Where runs' databases are (an embedded run's copy, a managed server's database)."""
    return workdir / "databases"


def run_paths(workdir: Path, run_id: str) -> RunPaths:
    databases = databases_dir(workdir)
    return RunPaths(databases / f"{run_id}.fdb", runtime_base(workdir, run_id),
                    databases / f"{run_id}{REPLICATION_SUFFIX}")


def run_files(workdir: paths.WorkDir, run_id: str, database: bool, replication: bool = False) -> RunFiles:
    """What a run creates in ``workdir`` and this process removes when it ends (to be recorded
    before it creates them): its runtime root, and its database unless ``database`` is False (a
    database the user asked to keep is not the clean-up's), with its replication directory when
    ``replication`` (it goes and stays with the database)."""
    made = run_paths(workdir.path, run_id)
    files = {str(made.runtime): RUNTIME}
    if database:
        files[str(made.database)] = DATABASE
        if replication:
            files[str(made.replication)] = REPLICATION
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
    runtime root, a half-built population), as ``store`` recorded it, and what killed commands
    recorded in it (:func:`remove_command_leftovers`); returns what was removed.
    A database a run was asked to keep was never recorded, so it stays."""
    # First the servers of killed runs (their files are removed next): by owner, not by the store,
    # so a server whose run another results store recorded is stopped too.
    removed = [f"stopped {server}" for server in stop_abandoned_servers(workdir.path)]
    for run_id, files in store.files_to_remove(workdir.ident).items():
        removed += _remove(store, workdir, run_id, files.paths)
    return removed + remove_command_leftovers(workdir)


def _remove(store: ResultsStore, workdir: paths.WorkDir, run_id: str, files: dict[str, str]) -> list[str]:
    removed, done = [], []
    for path, kind in files.items():
        outcome = _delete(Path(path), kind, workdir.path)
        if outcome is None:
            continue
        done.append(path)
        if outcome:
            removed.append(path)
    with contextlib.suppress(StoreError):  # the next clean-up finds them gone
        store.files_removed(run_id, done)
    return removed


def _delete(target: Path, kind: str, workdir: Path) -> bool | None:
    """Delete one recorded path of ``workdir``: True when it was removed, False when there was
    nothing of ours to remove (already gone, or no longer in the work directory: moved, or a link
    now points out), None when it is still there (tried again next time). A machine shape's
    kernel objects (a cgroup, a network namespace) are removed by :mod:`fbbench.shape`."""
    if kind in shape.KERNEL_KINDS:
        return shape.remove_recorded(kind, str(target))
    if not target.resolve().is_relative_to(workdir):
        return False
    existed = target.exists()
    try:
        if kind == BUILDING:
            if not _remove_abandoned_build(target, workdir):
                return None  # a run builds that population right now; it stays recorded for later
        elif kind == DATABASE:
            ownership.remove_run_copy(str(target), workdir)
        elif kind == REPLICATION:
            ownership.remove_run_copy(str(target / REPLICA_NAME), workdir)  # a sync run's replica
            if existed:
                shutil.rmtree(paths.assert_inside(target, workdir), ignore_errors=True)
        elif kind == COPY:
            if existed:
                paths.assert_inside(target, workdir).unlink()
        elif existed:
            shutil.rmtree(paths.assert_inside(target, workdir), ignore_errors=True)
    except OSError:
        return None  # not removable now (permissions, a directory where a file was)
    if os.path.lexists(target):
        return None
    return existed


@contextlib.contextmanager
def command_files(workdir: paths.WorkDir, files: Mapping[Path, str]) -> Iterator[None]:
    """Record ``files`` (path → kind: COPY a file, RUNTIME a directory), which the caller is
    about to make in ``workdir``, before it makes them; remove them when the block ends, however
    it ends. A killed process's are removed by :func:`remove_command_leftovers`."""
    for path in files:
        if not path.absolute().is_relative_to(workdir.path):
            raise ValueError(f"{path} is not in the work directory {workdir.path}")
    ledgers = workdir.path / COMMANDS_DIR
    ledger = ledgers / f"{os.getpid()}-{secrets.token_hex(4)}.json"
    listed = {str(path.absolute()): kind for path, kind in files.items()}
    text = json.dumps({"workdir": workdir.ident, "owner": os.getpid(), "created": psutil.Process().create_time(),
                       "host": socket.gethostname(), "files": listed}, indent=1)
    try:
        ledgers.mkdir(exist_ok=True)
        with open(ledger, "x") as handle:  # complete before any of the files exists
            handle.write(text + "\n")
    except OSError as error:
        raise FbbenchError(f"cannot record the files it is about to make in {ledgers}: {error.strerror or error}",
                           hint="give --workdir a directory you can write") from None
    try:
        yield
    finally:
        outcomes = [_delete(Path(path), kind, workdir.path) for path, kind in listed.items()]
        if None not in outcomes:  # otherwise the record stays, for the next command to try again
            ledger.unlink(missing_ok=True)


def remove_command_leftovers(workdir: paths.WorkDir) -> list[str]:
    """What commands other than runs recorded in ``workdir`` and left there when they were killed
    (their process gone); returns what was removed. A ledger of a process on another machine (a
    shared directory), or whose process still runs, is left alone."""
    removed: list[str] = []
    for ledger in sorted((workdir.path / COMMANDS_DIR).glob("*.json")):
        try:
            data = json.loads(ledger.read_text())
            owner, created, host = int(data["owner"]), float(data["created"]), str(data["host"])
            files = {str(path): str(kind) for path, kind in dict(data["files"]).items()}
            ident = str(data["workdir"])
        except (OSError, ValueError, KeyError, TypeError):
            # Written in part by a process killed before it made any of the files, or being written now.
            pid = ledger.name.split("-", 1)[0]
            if pid.isdigit() and not process_alive(int(pid)):
                ledger.unlink(missing_ok=True)
            continue
        if host != socket.gethostname() or process_alive(owner, created) or ident != workdir.ident:
            continue
        outcomes = {path: _delete(Path(path), kind, workdir.path) for path, kind in files.items()}
        removed += [path for path, outcome in outcomes.items() if outcome]
        if None not in outcomes.values():
            ledger.unlink(missing_ok=True)
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
