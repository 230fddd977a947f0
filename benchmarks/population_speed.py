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

and the seconds of each load step, from the run's record in the results store; and how many of
the TPC-C consistency checks passed after it (all must: the script stops otherwise).

Beside each population, the **engine's ceiling** (benchmarks/engine_ceiling.py): what the same
engine inserts per second into the same tables — the same rows per table, of the same widths —
when the same number of attachments each run plain PSQL loops per table (transactions of at
most 30,000 rows) with no fbbench in the way, followed by the same index step; and what the
disk under the work directory writes per second (a sequential write, fsync'd). The ratio
population rows/s ÷ ceiling rows/s says how close the population comes to the engine's limit on
this machine, whatever the machine (target: ≥ 80 % at 4 warehouses). The load average at the
start and end of each measurement is printed with it. Each population and each ceiling starts after
an ``os.sync()``: with forced writes off, the one before leaves hundreds of MB of dirty pages that
the kernel would otherwise write back during the next one. ``--repeats`` interleaves populations
and ceilings and prints each scale's median ratio, its range and the ratio of the medians.
Beside wall time, the embedded engine's CPU seconds (its process's, every thread's) over the load
steps and over the ceiling, and the ratio of rows per CPU-second: the work each did, which moved
less than wall time on a VM whose speed moved by tens of per cent within minutes (2026-12-01, six
pairs at 4 warehouses: wall-time ratios 67.5–83.7 %, CPU ratios 59.1–70.2 %). The CPU ratio is the
lower one there: the ceiling's plain inserts left part of the 2 CPUs idle, the population did not.

Everything happens in a private FBBENCH_HOME under /tmp (work directory, populated-database
cache, results store, reports), deleted at the end: the user's own cache and results are not
touched. The engines themselves come from the usual engine cache.

    .venv/bin/python benchmarks/population_speed.py [--engine 5.0] [--warehouses 1 4] [--load-connections N]
        [--repeats 1] [--no-ceiling]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from engine_ceiling import disk_write
from fbbench_run import run_tpcc

from fbbench.engines import prepare_runtime, run_in_engine

TPCC = Path(__file__).resolve().parent.parent / "fbbench" / "workloads" / "builtin" / "tpcc"
# The ceiling's transactions: at most this many rows, about the population's largest call (a
# district's order lines). One transaction of a whole table share measured slower and far less
# steadily (ORDER_LINE 4 to 15 s on a quiet machine) than the population's own calls: no ceiling.
CEILING_BLOCK_ROWS = 30_000


def ceiling(home: Path, engine: str, warehouses: int, run: dict[str, Any]) -> dict[str, Any]:
    """The engine's insert ceiling beside ``run``'s population: engine_ceiling.ceiling in an
    engine child of the same engine, on a database of its own under ``home``."""
    runtime = prepare_runtime(engine, home / "ceiling-runtime")
    target = home / f"ceiling-w{warehouses}.fdb"
    target.unlink(missing_ok=True)
    os.sync()  # the population's and its copy's dirty pages written now, not by the kernel during the ceiling
    before = os.getloadavg()
    found = run_in_engine(runtime, "engine_ceiling:ceiling", run["cache_file"], str(target), "tpcc",
                          {"warehouses": warehouses}, run["database"]["page_size"],
                          run["population"]["load_connections"], list(run["population"]["rows"]),
                          str(TPCC / "indexes.sql"), CEILING_BLOCK_ROWS)
    target.unlink(missing_ok=True)
    return found | {"load": (before, os.getloadavg())}


def populate(home: Path, engine: str, warehouses: int, load_connections: int | None) -> dict[str, Any]:
    """One fresh population through the fbbench CLI; the run's JSON plus its load steps."""
    extra = ["--load-connections", str(load_connections)] if load_connections else []
    run, stored = run_tpcc(home, f"w{warehouses}", "--engine", engine, "--fresh", "--scale",
                           f"warehouses={warehouses}", "--connections", "1", "--transactions", "1", "--no-sweep",
                           *extra)
    if run["population"].get("source") != "built (now cached)":
        sys.exit(f"expected a fresh population, got: {run['population'].get('source')}")
    failed = [check["name"] for check in run.get("checks", []) if not check["passed"]]
    if not run.get("checks") or failed:  # a faster population that breaks the data is no population
        sys.exit(f"the TPC-C consistency checks after the population: {', '.join(failed) or 'none ran'}")
    run["load_steps"] = stored["load"].get("steps", [])
    run["cache_file"] = stored["load"]["cache_file"]
    return run


def engine_cpu(run: dict[str, Any]) -> float:
    """The engine child's CPU seconds over the population's load steps (the embedded engine's, all threads)."""
    return sum(step.get("cpu_seconds") or 0.0 for step in run["load_steps"])


def wall_ratio(run: dict[str, Any], found: dict[str, Any]) -> float:
    """Population rows/s ÷ the ceiling's rows/s beside it."""
    return run["population"]["rows_per_second"] / found["rows_per_second"]


def cpu_ratio(run: dict[str, Any], found: dict[str, Any]) -> float:
    """Population rows per engine CPU-second ÷ the ceiling's: the same comparison by CPU work, which a
    machine that runs slower for a while (steal, a neighbour) moves less than it moves wall time."""
    return (run["population"]["total_rows"] / engine_cpu(run)) / (found["rows"] / found["cpu_seconds"])


def loads(pair: tuple[tuple[float, ...], tuple[float, ...]]) -> str:
    return f"{', '.join(f'{v:.2f}' for v in pair[0])} → {', '.join(f'{v:.2f}' for v in pair[1])}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="5.0")
    parser.add_argument("--warehouses", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--load-connections", type=int, default=None,
                        help="attachments for the population (default: fbbench's, the CPU count)")
    parser.add_argument("--repeats", type=int, default=1, help="populations (each with its ceiling) per scale")
    parser.add_argument("--no-ceiling", action="store_true", help="the populations alone")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="fbbench-population-speed-", dir="/tmp"))
    measured: list[tuple[int, dict[str, Any], dict[str, Any] | None]] = []
    try:
        disk = disk_write(home)
        for _ in range(args.repeats):
            for warehouses in args.warehouses:
                os.sync()  # nor the previous ceiling's during this population
                before = os.getloadavg()
                run = populate(home, args.engine, warehouses, args.load_connections)
                run["load"] = (before, os.getloadavg())
                found = None if args.no_ceiling else ceiling(home, args.engine, warehouses, run)
                measured.append((warehouses, run, found))
    finally:
        shutil.rmtree(home, ignore_errors=True)

    first = measured[0][1]
    print(f"TPC-C population speed — {first['engine'].get('label')}, {first['engine'].get('version')} "
          f"({first['engine'].get('mode')}), page size {first['database'].get('page_size')}, "
          f"forced writes off while loading")
    print(f"host: {os.cpu_count()} CPUs; the disk under the work directory writes {disk:,.0f} MB/s "
          "(sequential, fsync'd); other processes share this machine: the figures are noisy\n")
    header = (f"{'warehouses':>10} {'rows':>11} {'DB growth MB':>12} {'load s':>7} {'CPU s':>6} {'MB/s':>7} "
              f"{'rows/s':>9} {'load attachments':>16} {'database phase s':>16} {'checks':>7}  "
              "load average start → end")
    print(header)
    print("-" * len(header))
    for warehouses, run, _ in measured:
        population = run["population"]
        phase = next((p["seconds"] for p in run["phases"] if p["name"] == "database"), None)
        print(f"{warehouses:>10} {population['total_rows']:>11,} {population['grown_bytes'] / 1e6:>12.1f} "
              f"{population['load_seconds']:>7.1f} {engine_cpu(run):>6.1f} {population['mb_per_second']:>7.2f} "
              f"{population['rows_per_second']:>9,.0f} {population['load_connections']:>16} "
              f"{phase if phase is not None else float('nan'):>16.1f} "
              f"{sum(c['passed'] for c in run['checks']):>3}/{len(run['checks']):<3}  {loads(run['load'])}")

    if not args.no_ceiling:
        print("\nthe engine's ceiling beside each: the same rows of the same tables, plain PSQL loops on as many "
              "attachments, then the same indices")
        header = (f"{'warehouses':>10} {'rows':>11} {'insert s':>8} {'index s':>7} {'CPU s':>6} {'MB/s':>7} "
                  f"{'rows/s':>9} {'population/ceiling':>18} {'by CPU':>7}  load average start → end")
        print(header)
        print("-" * len(header))
        for warehouses, run, found in measured:
            assert found is not None
            ratio = wall_ratio(run, found)
            print(f"{warehouses:>10} {found['rows']:>11,} {found['insert_seconds']:>8.1f} "
                  f"{found['index_seconds']:>7.1f} {found['cpu_seconds']:>6.1f} {found['mb_per_second']:>7.2f} "
                  f"{found['rows_per_second']:>9,.0f} {ratio:>17.1%} {cpu_ratio(run, found):>7.1%}  "
                  f"{loads(found['load'])}")
        for warehouses in dict.fromkeys(w for w, _, _ in measured):
            # Each pair is a population and its own ceiling, measured one after the other.
            pairs = [(run, found) for w, run, found in measured if w == warehouses and found]
            if len(pairs) > 1:
                ratios = sorted(wall_ratio(run, found) for run, found in pairs)
                population_rows = statistics.median(run["population"]["rows_per_second"] for run, _ in pairs)
                ceiling_rows = statistics.median(found["rows_per_second"] for _, found in pairs)
                print(f"{warehouses:>10} wh: population/ceiling median {statistics.median(ratios):.1%} of "
                      f"{len(ratios)} pairs (from {ratios[0]:.1%} to {ratios[-1]:.1%}); medians: population "
                      f"{population_rows:,.0f} rows/s, ceiling {ceiling_rows:,.0f} rows/s, their ratio "
                      f"{population_rows / ceiling_rows:.1%}")
                by_cpu = sorted(cpu_ratio(run, found) for run, found in pairs)
                print(f"{warehouses:>10} wh: by the engine's CPU, median {statistics.median(by_cpu):.1%} "
                      f"(from {by_cpu[0]:.1%} to {by_cpu[-1]:.1%})")

    if not args.no_ceiling:
        print("\nthe ceiling's seconds per table (all attachments at once, table by table):")
        tables = list(measured[0][2]["per_table"]) if measured[0][2] else []
        width = max((len(name) for name in tables), default=5)
        print(f"  {'table':<{width}} " + " ".join(f"{f'{w} wh':>16}" for w, _, _ in measured))
        for name in tables:
            cells = [f"{found['per_table'][name]['seconds']:>6.2f} s {found['per_table'][name]['rows']:>7,}"
                     for _, _, found in measured if found]
            print(f"  {name:<{width}} " + " ".join(f"{c:>16}" for c in cells))

    print("\nseconds per load step, wall / the engine's CPU (for_each iterations in brackets):")
    names = [step["name"] for step in measured[0][1]["load_steps"]]
    width = max(len(name) for name in names)
    print(f"  {'step':<{width}} " + " ".join(f"{f'{w} wh':>19}" for w, _, _ in measured))
    for name in names:
        cells = []
        for _, run, _ in measured:
            step = next((s for s in run["load_steps"] if s["name"] == name), None)
            cells.append(f"{step['seconds']:>6.2f} / {step.get('cpu_seconds') or float('nan'):>5.2f} "
                         f"[{step['iterations']:>3}]" if step else f"{'-':>19}")
        print(f"  {name:<{width}} " + " ".join(f"{c:>19}" for c in cells))
    print("\ntarget: the population's rows/s at ≥ 80 % of the engine's ceiling at 4 warehouses")


if __name__ == "__main__":
    main()
