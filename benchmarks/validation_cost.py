"""What does validating the database after a run cost? Seconds per GB of a TPC-C database.

For each scale (by default 1 and 8 warehouses, about 0.12 and 1 GB) this runs ``fbbench run tpcc
--validate --keep-database`` on an embedded engine (5.0 by default) with the smallest possible load
(1 attachment, 1 transaction, no sweep), so the run's own validation is the one after a real run:
the full validation (``gfix -v -full -n`` through the services API) that fbbench does. Then it
validates the kept copy again ``--repeats`` times, full and online, in one engine child, and
prints each one's seconds, the database's size and seconds per GB (median of the repeats), and the
CPU seconds the engine child spent on it (the embedded engine validates in that process): on a
machine shared with other work the wall time stretches with the load, the CPU time much less.

The database was just copied or written, so it sits in the OS file cache: the figures are the
validation's own work (reading every page through Firebird's cache, checking it), not the
disk's. On a cold cache add the time to read the file once. Everything happens in a private
FBBENCH_HOME under /tmp, deleted at the end; the engines come from the usual engine cache.

    .venv/bin/python benchmarks/validation_cost.py [--engine 5.0] [--warehouses 1 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from fbbench_run import run_tpcc


def timed(database: str, repeats: int) -> dict[str, list[float]]:
    """Inside an engine child: the full validation as fbbench does it, and the online one, ``repeats`` times."""
    from fbbench.database import driver
    from fbbench.observe.firebird_log import LogWatch
    from fbbench.observe.validation import validate

    seconds: dict[str, list[float]] = {"full": [], "online": [], "full_cpu": [], "online_cpu": []}
    for _ in range(repeats):
        cpu = time.process_time()
        found = validate("", database, LogWatch())
        seconds["full_cpu"].append(time.process_time() - cpu)
        if found.method != "full" or not found.sound:
            raise RuntimeError(f"expected a sound full validation, got {found.to_dict()}")
        seconds["full"].append(found.seconds)
        started, cpu = time.monotonic(), time.process_time()
        with driver.server("", database) as server:
            server.database.validate(database=database, callback=lambda _line: None)
        seconds["online"].append(time.monotonic() - started)
        seconds["online_cpu"].append(time.process_time() - cpu)
    return seconds


def measure(home: Path, engine: str, warehouses: int, repeats: int) -> dict[str, Any]:
    from fbbench.engines import prepare_runtime, run_in_engine

    run, _stored = run_tpcc(home, f"w{warehouses}", "--engine", engine, "--scale", f"warehouses={warehouses}",
                            "--connections", "1", "--transactions", "1", "--no-sweep", "--validate",
                            "--keep-database")
    validation = run["validation"]
    if not validation or not validation.get("done") or not validation.get("sound"):
        raise SystemExit(f"the run's validation did not find a sound database: {validation}")
    database = run["database"]["path"]
    runtime = prepare_runtime(engine, home / "work", name=f"validation-cost-{warehouses}")
    again = run_in_engine(runtime, "validation_cost:timed", database, repeats)
    return {"warehouses": warehouses, "bytes": Path(database).stat().st_size, "run_seconds": validation["seconds"],
            "page_size": run["database"]["page_size"], "label": run["engine"]["label"],
            "version": run["engine"]["version"], **again}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="5.0")
    parser.add_argument("--warehouses", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    load_before = os.getloadavg()
    home = Path(tempfile.mkdtemp(prefix="fbbench-validation-cost-", dir="/tmp"))
    try:
        rows = [measure(home, args.engine, w, args.repeats) for w in args.warehouses]
    finally:
        shutil.rmtree(home, ignore_errors=True)

    first = rows[0]
    print(f"Validation after a run — TPC-C on {first['label']} ({first['version']}), page size {first['page_size']}, "
          "database in the OS file cache")
    print(f"host: {os.cpu_count()} CPUs, load average before: {', '.join(f'{v:.2f}' for v in load_before)} "
          "(other processes share this machine: the figures are noisy)\n")
    header = (f"{'warehouses':>10} {'database GB':>11} {'full s (run)':>12} {'full s':>7} {'full s/GB':>9} "
              f"{'CPU s/GB':>8} {'online s':>8} {'online s/GB':>11} {'CPU s/GB':>8}")
    print(header)
    print("-" * len(header))
    for row in rows:
        gigabytes = row["bytes"] / 1e9
        full, online = statistics.median(row["full"]), statistics.median(row["online"])
        full_cpu, online_cpu = statistics.median(row["full_cpu"]), statistics.median(row["online_cpu"])
        print(f"{row['warehouses']:>10} {gigabytes:>11.3f} {row['run_seconds']:>12.2f} {full:>7.2f} "
              f"{full / gigabytes:>9.1f} {full_cpu / gigabytes:>8.1f} {online:>8.2f} {online / gigabytes:>11.1f} "
              f"{online_cpu / gigabytes:>8.1f}")
    print(f"\nfull s (run): the validation the run itself did; full s and online s: the median of {args.repeats} "
          "more on the kept copy, wall time; CPU s: the engine child's (GB = 10^9 bytes of the database file)")


if __name__ == "__main__":
    main()
