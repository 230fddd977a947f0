"""A coordinator's connection to a lab: a Dask client with the lab's security, and what the lab
says about itself (its hosts and their records, its scheduler's failure policy)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fbbench.errors import FbbenchError
from fbbench.lab import HOSTS_METADATA, connected_workers, security

CONNECT_TIMEOUT = 15.0


@dataclass(frozen=True)
class Lab:
    address: str
    insecure: bool  # no TLS off loopback (--insecure): recorded with every run
    client: Any  # distributed.Client

    def workers(self) -> dict[str, str]:
        """Connected worker name → its address."""
        return {str(worker.get("name")): address for address, worker in connected_workers(self.client).items()}

    def records(self) -> dict[str, dict[str, Any]]:
        """Every host record a worker published (also of workers gone since)."""
        try:
            found = self.client.get_metadata(list(HOSTS_METADATA), default={})
        except KeyError:
            found = {}
        return dict(found or {})

    def allowed_failures(self) -> int:
        return int(self.client.run_on_scheduler(_allowed_failures))

    def tags(self) -> list[str]:
        """What every run the lab makes records about it (an insecure lab is said so)."""
        return [f"lab {self.address}" + (" without TLS (--insecure)" if self.insecure else "")]


def _allowed_failures(dask_scheduler: Any) -> int:
    return int(dask_scheduler.allowed_failures)


@contextlib.contextmanager
def connect(text: str, tls: Path | None, insecure: bool) -> Iterator[Lab]:
    """The lab at ``text``; refused before any connection when it is off loopback without TLS."""
    from distributed import Client

    from fbbench.lab.worker import _quiet_dask

    address = security.address(text, tls)
    unprotected = security.check_exposure(security.host_of(address), tls, insecure, "a lab")
    _quiet_dask()
    try:
        client = Client(address, security=security.security(tls, "client"), timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as error:
        raise FbbenchError(f"cannot reach the lab at {address}: {error}",
                           hint="start it with fbbench lab scheduler (and its hosts with fbbench lab worker)"
                           + ("; are this machine's certificates from the lab's CA?" if tls else "")) from None
    try:
        yield Lab(address, unprotected, client)
    finally:
        with contextlib.suppress(Exception):
            client.close(timeout=5)
