"""A lab of benchmark hosts on Dask distributed: Dask schedules, carries and notices failures;
fbbench adds only what is specific to benchmarks.

- :mod:`.security`: where a lab may listen, and its TLS (a CA and certificates made with
  ``cryptography``, loaded by scheduler, workers and clients alike);
- :mod:`.worker`: ``fbbench lab worker``, a Dask worker that runs one fbbench run at a time
  (a worker resource) with its own engines, work directory and results store;
- :mod:`.tasks`: what runs on a worker — one run (:mod:`.task` in a process of its own), the
  runs of a sweep that finished there, the host's record;
- :mod:`.sweep`: ``fbbench sweep --lab``, the coordinator: cells placed on hosts, each finished
  run imported into the coordinator's store as its bundle arrives, resumed after a crash.
"""

from typing import Any

RESOURCE = "fbbench-run"  # one per worker: two runs never share a host
HOSTS_METADATA = ("fbbench", "hosts")  # the scheduler's metadata: worker name → its host record
DEFAULT_PORT = 8786  # Dask's


def connected_workers(client: Any) -> dict[str, dict[str, Any]]:
    """The workers connected to the client's scheduler now: address → what the scheduler says of it.

    Asked of the scheduler and read from its answer, not from ``Client.scheduler_info()``: that
    returns the client's cached identity, which the client's own periodic refresh (every 2 s) may
    overwrite between the fetch and the return with one that lists no workers at all. A sweep took
    both of its hosts for gone that way (the scheduler's log: both connected, both kept their
    runs) and gave up their queued runs."""
    identity = client.sync(client.scheduler.identity, n_workers=-1)
    return dict(identity.get("workers") or {})
