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

RESOURCE = "fbbench-run"  # one per worker: two runs never share a host
HOSTS_METADATA = ("fbbench", "hosts")  # the scheduler's metadata: worker name → its host record
DEFAULT_PORT = 8786  # Dask's
