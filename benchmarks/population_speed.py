"""How fast does fbbench populate the TPC-C database? Figures, not a timed test.

For each scale (by default 1 and 4 warehouses) this runs ``fbbench run tpcc --fresh`` on the
embedded Firebird 5.0 engine (``--engine`` for another), so the population is always built, never
copied from the cache, followed by the smallest possible run (1 attachment, 1 transaction, no
sweep). It prints what the run's JSON reports under ``population``:

- **MB/s**: growth of the database file (pages × page size, read from MON$DATABASE before and
  after the load steps, so data *and* indices) divided by the load time;
- **rows/s**: rows in the workload's tables after the load, divided by the load time;
- **load s**: the ``[[load]]`` steps of workload.toml — the population procedures running inside
  the engine on the load attachments, then indexes.sql, then transactions.sql. Creating the
  database and running its scripts (schema, helper functions) is not included; the run's whole
  "database" phase (which also counts the rows) is printed beside it;
- **load attachments**: how many attachments shared the steps (fbbench's default is the CPU count);

and the seconds of each load step, from the run's record in the results store.

Everything happens in a private FBBENCH_HOME under /tmp (work directory, populated-database
cache, results store, reports), deleted at the end: the user's own cache and results are not
touched. The engines themselves come from the usual engine cache.

    .venv/bin/python benchmarks/population_speed.py [--engine 5.0] [--warehouses 1 4] [--load-connections N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from fbbench_run import run_tpcc


def populate(home: Path, engine: str, warehouses: int, load_connections: int | None) -> dict[str, Any]:
    """One fresh population through the fbbench CLI; the run's JSON plus its load steps."""
    extra = ["--load-connections", str(load_connections)] if load_connections else []
    run, stored = run_tpcc(home, f"w{warehouses}", "--engine", engine, "--fresh", "--scale",
                           f"warehouses={warehouses}", "--connections", "1", "--transactions", "1", "--no-sweep",
                           *extra)
    if run["population"].get("source") != "built (now cached)":
        sys.exit(f"expected a fresh population, got: {run['population'].get('source')}")
    run["load_steps"] = stored["load"].get("steps", [])
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="5.0")
    parser.add_argument("--warehouses", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--load-connections", type=int, default=None,
                        help="attachments for the population (default: fbbench's, the CPU count)")
    args = parser.parse_args()

    load_before = os.getloadavg()
    home = Path(tempfile.mkdtemp(prefix="fbbench-population-speed-", dir="/tmp"))
    try:
        runs = [populate(home, args.engine, w, args.load_connections) for w in args.warehouses]
    finally:
        shutil.rmtree(home, ignore_errors=True)

    first = runs[0]
    print(f"TPC-C population speed — {first['engine'].get('label')}, {first['engine'].get('version')} "
          f"({first['engine'].get('mode')}), page size {first['database'].get('page_size')}, "
          f"forced writes off while loading")
    print(f"host: {os.cpu_count()} CPUs, load average before: {', '.join(f'{v:.2f}' for v in load_before)} "
          "(other processes share this machine: the figures are noisy)\n")
    header = (f"{'warehouses':>10} {'rows':>11} {'DB growth MB':>12} {'load s':>7} {'MB/s':>7} {'rows/s':>9} "
              f"{'load attachments':>16} {'database phase s':>16}")
    print(header)
    print("-" * len(header))
    for warehouses, run in zip(args.warehouses, runs, strict=True):
        population = run["population"]
        phase = next((p["seconds"] for p in run["phases"] if p["name"] == "database"), None)
        print(f"{warehouses:>10} {population['total_rows']:>11,} {population['grown_bytes'] / 1e6:>12.1f} "
              f"{population['load_seconds']:>7.1f} {population['mb_per_second']:>7.2f} "
              f"{population['rows_per_second']:>9,.0f} {population['load_connections']:>16} "
              f"{phase if phase is not None else float('nan'):>16.1f}")

    print("\nseconds per load step (for_each iterations in brackets):")
    names = [step["name"] for step in runs[0]["load_steps"]]
    width = max(len(name) for name in names)
    print(f"  {'step':<{width}} " + " ".join(f"{f'{w} wh':>12}" for w in args.warehouses))
    for name in names:
        cells = []
        for run in runs:
            step = next((s for s in run["load_steps"] if s["name"] == name), None)
            cells.append(f"{step['seconds']:>6.2f} [{step['iterations']:>3}]" if step else f"{'-':>12}")
        print(f"  {name:<{width}} " + " ".join(f"{c:>12}" for c in cells))


if __name__ == "__main__":
    main()
