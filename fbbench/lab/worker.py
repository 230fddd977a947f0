"""``fbbench lab worker`` and ``fbbench lab scheduler``: Dask's own worker and scheduler, started
with what a benchmark lab needs.

A worker has one thread and one unit of the resource :data:`fbbench.lab.RESOURCE`: every run asks
for it, so two runs never share a host. Before it joins it proves its engines work (``fbbench
doctor``) and, once joined, publishes its host record in the scheduler's metadata
(:data:`fbbench.lab.HOSTS_METADATA`). A scheduler started here says ``allowed-failures = 0``: a
task whose worker died is failed at once, never run again elsewhere (the coordinator records
the run as failed on that host and ``sweep --resume`` runs it there again).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fbbench.errors import FbbenchError
from fbbench.lab import HOSTS_METADATA, RESOURCE, connected_workers, tasks

JOIN_TIMEOUT = 60.0  # seconds a worker tries to reach its scheduler (and waits for it once gone)


def _quiet_dask(log: Path | None = None) -> None:
    """Dask logs every connection at INFO, and a lost scheduler as tracebacks, on stderr; a lab says
    what matters itself in one line. Dask's own records go to ``log`` instead (warnings and up),
    or are left out below ERROR where there is no file for them."""
    found = logging.getLogger("distributed")
    for name in ("distributed", "distributed.worker", "distributed.scheduler", "distributed.core",
                 "distributed.comm", "distributed.nanny", "distributed.http", "distributed.client"):
        logging.getLogger(name).setLevel(logging.WARNING)
    if log is None:
        for name in ("distributed.client", "distributed.worker", "distributed.core", "distributed.comm"):
            logging.getLogger(name).setLevel(logging.CRITICAL)  # what a lost scheduler prints as tracebacks
        return
    with contextlib.suppress(OSError):
        log.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        found.handlers = [handler]
        found.propagate = False
        # Dask gives some of its loggers (distributed.client, distributed.gc) a stderr handler of their own.
        for name, child in logging.root.manager.loggerDict.items():
            if name.startswith("distributed.") and isinstance(child, logging.Logger):
                child.handlers, child.propagate = [], True


class LabGone(FbbenchError):
    """The lab's scheduler went away and did not come back within the worker's --join-timeout."""

    exit_code = 1


def serve_worker(address: str, setup: tasks.WorkerSetup, security: Any, *, join_timeout: float = JOIN_TIMEOUT,
                 on_joined: Callable[[str], None] | None = None, on_note: Callable[[str], None] | None = None) -> None:
    """Join the lab at ``address`` and run its tasks until Ctrl-C. When the scheduler goes (killed,
    stopped, or its connection broken) the worker waits for it to come back and rejoins, for up to
    ``join_timeout`` seconds each time; then it leaves (:class:`LabGone`)."""
    tasks.SETUP.__dict__.update(setup.__dict__)
    assert setup.workdir is not None
    _quiet_dask(setup.workdir / "lab-logs" / "dask-worker.log")
    asyncio.run(_worker(address, setup, security, join_timeout, on_joined, on_note or (lambda text: None)))


async def _worker(address: str, setup: tasks.WorkerSetup, security: Any, join_timeout: float,
                  on_joined: Callable[[str], None] | None, note: Callable[[str], None]) -> None:
    from distributed import Worker

    assert setup.workdir is not None
    scratch = setup.workdir / "lab-dask"
    scratch.mkdir(parents=True, exist_ok=True)
    rejoining = False
    while True:
        worker = Worker(address, name=setup.name, nthreads=1, resources={RESOURCE: 1}, security=security,
                        local_directory=str(scratch), death_timeout=join_timeout, dashboard=False)
        try:
            await worker
        except (OSError, TimeoutError) as error:
            with contextlib.suppress(Exception):
                await worker.close()
            if rejoining:
                raise LabGone(f"worker {setup.name}: the lab's scheduler at {address} did not come back within "
                              f"{join_timeout:g} s (--join-timeout): leaving the lab") from None
            raise FbbenchError(f"worker {setup.name} could not join the lab at {address} within {join_timeout:g} s: "
                               f"{error}".rstrip(": "),
                               hint="is the scheduler running there (fbbench lab scheduler)? With TLS, are this "
                                    "host's certificates from the lab's CA (the same fbbench lab init DIR)?") from None
        except (ValueError, RuntimeError) as error:  # the scheduler refused it: a worker of this name is there
            with contextlib.suppress(Exception):
                await worker.close()
            raise _refusal(error, setup.name, address, security) from None
        try:
            await worker.scheduler.set_metadata(keys=[*HOSTS_METADATA, setup.name], value=setup.record)
            if rejoining:
                note(f"worker {setup.name} rejoined the lab at {address} as {worker.address}")
            elif on_joined is not None:
                on_joined(worker.address)
            await worker.finished()  # the scheduler went away (or told it to close): a run in flight finished first
        finally:
            with contextlib.suppress(Exception):
                await worker.close()
        note(f"worker {setup.name}: the lab's scheduler at {address} is gone; waiting up to {join_timeout:g} s "
             "(--join-timeout) for it to come back, then rejoining")
        rejoining = True


def _refusal(error: Exception, name: str, address: str, security: Any) -> FbbenchError:
    """Why the scheduler would not take this worker, in one line: Dask says "name taken" inside a
    RuntimeError's cause; the worker that has the name, and its host, are asked of the scheduler."""
    said = " ".join(str(part) for part in (error, error.__cause__) if part is not None)
    if "name taken" not in said:
        return FbbenchError(f"worker {name} was refused by the lab at {address}: {said}")
    holder = ""
    with contextlib.suppress(Exception):
        from distributed import Client

        with Client(address, security=security, timeout=10) as client:
            workers = connected_workers(client)
            there = next((a for a, w in workers.items() if str(w.get("name")) == name), None)
            record = client.get_metadata([*HOSTS_METADATA, name], default={}) or {}
            machine = (record.get("host") or {}).get("hostname") or (record.get("host") or {}).get("name")
            holder = f" by the worker at {there}" if there else ""
            holder += f" on host {machine}" if machine else ""
    return FbbenchError(f"the name {name} is taken in the lab at {address}{holder}",
                        hint="each host needs its own name: pick another --name")


def serve_scheduler(host: str, port: int, security: Any, on_ready: Callable[[str], None] | None = None) -> None:
    """A Dask scheduler with a lab's defaults: bound where told (127.0.0.1 unless told otherwise),
    no dashboard, and a task whose worker dies failed at once (allowed-failures 0)."""
    import dask

    _quiet_dask()
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        asyncio.run(_scheduler(host, port, security, on_ready))


async def _scheduler(host: str, port: int, security: Any, on_ready: Callable[[str], None] | None) -> None:
    from distributed import Scheduler

    try:
        scheduler = Scheduler(host=host, port=port, security=security, dashboard=False, dashboard_address=None)
        await scheduler
    except OSError as error:
        raise FbbenchError(f"the scheduler cannot listen on {host}:{port}: {error.strerror or error}",
                           hint="is another scheduler there? give another --port") from None
    try:
        if on_ready is not None:
            on_ready(scheduler.address)
        await scheduler.finished()
    finally:
        with contextlib.suppress(Exception):
            await scheduler.close()
