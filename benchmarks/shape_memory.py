"""Does a memory shape make a database bigger than "RAM"? Figures, not a timed test (root only).

One TPC-C population several times the shape's memory (default: 16 warehouses, about 1.9 GB,
against memory=512MiB), then the same run twice, one after the other, each on a fresh copy:
inside the shape, and on the machine as it is. For each: the share of the engine's page-read
bytes that reached the storage (the run's own OS-cache figure, ``os_cache.storage_share``: its
processes' block reads against MON$ page reads × page size), the throughput, and what the shape
verified (the group's memory peak and page cache). Without the shape, the copy the run made is
in the host's page cache and nothing reaches the storage; inside it, most reads do.

One attachment per warehouse by default: a TPC-C attachment keeps its home warehouse
(``home(n)``: attachment k → warehouse k mod n), so with fewer attachments than warehouses only
theirs are hot, and the working set — not the file's size — is what must outgrow the memory
(seen: 4 attachments on 16 warehouses under memory=512MiB read 14 % from the storage). Within
the hot warehouses TPC-C is skewed too (NURand picks items and customers), so a cache of a
quarter of the database still serves most reads: "most from the storage" needs a database many
times the memory, hence a second, smaller shape.

    sudo .venv/bin/python benchmarks/shape_memory.py [--memory 512MiB 128MiB] [--warehouses 16]
        [--connections N] [--warmup 10s] [--duration 60s] [--engine 5.0]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fbbench_run import fbbench, run_tpcc  # noqa: E402

from fbbench.sizes import size_text  # noqa: E402


def measured(home: Path, name: str, *args: str) -> dict[str, Any]:
    """One run's result document — also of a run that failed after measuring (a shape's OOM kill at
    its end), read back from the store."""
    output = home / f"{name}.json"
    fbbench(home, "run", "tpcc", *args, "--json", str(output), check=False)
    if not output.exists():
        sys.exit(f"the run {name} left no result")
    return dict(json.loads(output.read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="5.0")
    parser.add_argument("--memory", nargs="+", default=["512MiB", "128MiB"], help="one shaped run for each")
    parser.add_argument("--warehouses", type=int, default=16)
    parser.add_argument("--connections", type=int, default=None, help="default: one per warehouse")
    parser.add_argument("--warmup", default="10s")
    parser.add_argument("--duration", default="60s")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    args.connections = args.connections or args.warehouses
    if os.geteuid() != 0:
        sys.exit("a machine shape needs root (its cgroup): run this as root")
    home = Path(tempfile.mkdtemp(prefix="fbbench-shape-memory-", dir="/var/tmp"))
    load_before = os.getloadavg()
    try:
        common = ["--engine", args.engine, "--scale", f"warehouses={args.warehouses}", "-c", str(args.connections),
                  "--warmup", args.warmup, "--duration", args.duration, "--interval", "5s", "--no-validate"]
        # The population first (its build is not what is measured), then the two runs on copies of it.
        run_tpcc(home, "population", "--engine", args.engine, "--scale", f"warehouses={args.warehouses}",
                 "-c", "1", "--transactions", "1", "--no-sweep", "--no-validate")
        runs = [("memory=" + memory, measured(home, f"shaped-{memory}", *common, "--machine", f"memory={memory}"))
                for memory in args.memory]
        runs.append(("as is", measured(home, "plain", *common)))
        size = max(document["database"].get("size_bytes") or 0 for _, document in runs)
        print(f"TPC-C {args.warehouses} warehouses: database {size_text(size)}; embedded {args.engine}, "
              f"{args.connections} attachments, {args.duration} measured after {args.warmup}")
        for name, document in runs:
            cache = document.get("os_cache") or {}
            headline = document.get("headline") or {}
            print(f"  {name:>16}: {headline.get('name')} {headline.get('value') or 0:,.0f}; page reads "
                  f"{cache.get('engine_page_reads') or 0:,.0f}, of their bytes from the storage: "
                  f"{(cache.get('storage_share') or 0):.0%} (block reads "
                  f"{size_text((cache.get('process') or {}).get('read_bytes') or 0)})")
            if document.get("status") != "completed":
                print(f"{'':>20}{document.get('status')}: {document.get('failure')} (its figures are those the "
                      "store kept of the measured period)")
            for line in (document.get("machine_shape") or {}).get("lines") or []:
                print(f"{'':>20}{line}")
        print(f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}")
    finally:
        if args.keep:
            print(f"kept: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
