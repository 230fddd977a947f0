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
from typing import Any

from fbbench.errors import FbbenchError
from fbbench.lab import HOSTS_METADATA, RESOURCE, tasks

JOIN_TIMEOUT = 60.0  # seconds a worker tries to reach its scheduler (and waits for it once gone)


def _quiet_dask() -> None:
    """Dask logs every connection at INFO on stderr; a lab says what matters itself."""
    for name in ("distributed", "distributed.worker", "distributed.scheduler", "distributed.core",
                 "distributed.comm", "distributed.nanny", "distributed.http"):
        logging.getLogger(name).setLevel(logging.WARNING)


def serve_worker(address: str, setup: tasks.WorkerSetup, security: Any, *, join_timeout: float = JOIN_TIMEOUT,
                 on_joined: Callable[[str], None] | None = None) -> None:
    """Join the lab at ``address`` and run its tasks until the scheduler goes away or Ctrl-C."""
    tasks.SETUP.__dict__.update(setup.__dict__)
    _quiet_dask()
    asyncio.run(_worker(address, setup, security, join_timeout, on_joined))


async def _worker(address: str, setup: tasks.WorkerSetup, security: Any, join_timeout: float,
                  on_joined: Callable[[str], None] | None) -> None:
    from distributed import Worker

    assert setup.workdir is not None
    scratch = setup.workdir / "lab-dask"
    scratch.mkdir(parents=True, exist_ok=True)
    worker = Worker(address, name=setup.name, nthreads=1, resources={RESOURCE: 1}, security=security,
                    local_directory=str(scratch), death_timeout=join_timeout, dashboard=False)
    try:
        await worker
    except (OSError, TimeoutError) as error:
        with contextlib.suppress(Exception):
            await worker.close()
        raise FbbenchError(f"worker {setup.name} could not join the lab at {address} within {join_timeout:g} s: "
                           f"{error}".rstrip(": "),
                           hint="is the scheduler running there (fbbench lab scheduler)? With TLS, are this "
                                "host's certificates from the lab's CA (the same fbbench lab init DIR)?") from None
    except ValueError as error:  # the scheduler refused it: a worker of this name is there already
        raise FbbenchError(f"worker {setup.name} was refused by the lab at {address}: {error}",
                           hint="each host needs its own --name") from None
    try:
        await worker.scheduler.set_metadata(keys=[*HOSTS_METADATA, setup.name], value=setup.record)
        if on_joined is not None:
            on_joined(worker.address)
        await worker.finished()
    finally:
        with contextlib.suppress(Exception):
            await worker.close()


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
