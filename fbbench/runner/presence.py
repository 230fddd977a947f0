"""Which other fbbench runs are at work on this machine now, as a run's results store or work
directory shows them: two loads at once spoil each other's timings, so a run says so as it starts.

Each run holds a lock in its runtime directory for as long as it lives (``run.lock``: an flock
the kernel drops when the process dies, even by kill -9, with the run's id in the file), and its
row in the results store says ``running`` with the pid of the process at work. A run that shares
either with this one is found; one with another store *and* another work directory is not.
The lock files are only read here, never deleted: they go with their runtime directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fbbench.store import ResultsStore

RUN_LOCK = "run.lock"


@contextlib.contextmanager
def holding(runtime_base: Path, run_id: str, results: Path, pair: str | None) -> Iterator[None]:
    """This run's lock in its runtime directory, held until the block ends."""
    with open(runtime_base / RUN_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.write(json.dumps({"run_id": run_id, "results": str(results), "pair": pair}))
        lock.flush()
        yield


def others(store: ResultsStore, workdir: Path, run_id: str, pair: str | None) -> list[str]:
    """The runs at work now besides ``run_id`` and the other run of its ``pair`` (compare --paired
    runs two at once on purpose), one line each: the run id and where it lives."""
    found: dict[str, str] = {}
    for run in store.running_runs():
        if run["run_id"] != run_id and not _same_pair(run["settings"].get("timeshare"), pair):
            found[run["run_id"]] = f"{run['run_id']} (results {store.path})"
    for facts in _locks_held(workdir / "runtimes"):
        other = str(facts.get("run_id"))
        if other != run_id and other not in found and not (pair and facts.get("pair") == pair):
            found[other] = f"{other} (work directory {workdir}, results {facts.get('results')})"
    return list(found.values())


def _same_pair(timeshare: Any, pair: str | None) -> bool:
    return bool(pair) and isinstance(timeshare, dict) and timeshare.get("pair") == pair


def _locks_held(runtimes: Path) -> Iterator[dict[str, Any]]:
    """What the run locks under ``runtimes`` say, of the runs that hold them now."""
    for path in sorted(runtimes.glob(f"*/{RUN_LOCK}")):
        try:
            with open(path) as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    continue  # nobody holds it: its run is gone
                except BlockingIOError:
                    facts = json.loads(lock.read() or "{}")
        except (OSError, ValueError):
            continue  # removed meanwhile, or being written: not a run to name
        if isinstance(facts, dict) and facts.get("run_id"):
            yield facts
