"""Classic in processes vs SuperClassic in threads: does running the core as N processes cost?

Embedded Firebird 5.0, a read-only point select (one row of a 10,000-row table by primary key,
one read-committed read-only transaction each, forced writes off — the select of
benchmarks/core_overhead.py), at 2 and 4 attachments:

- **Classic**: ``ServerMode = Classic``, the native core in one process per attachment
  (fbbench.loadcore.classic: an engine and a Python each, started together, merged exactly);
- **SuperClassic**: ``ServerMode = SuperClassic``, the same core as threads of one process.

Both have a page cache per attachment (256 pages, the engine's default for both), which holds the
whole table: the work is CPU and the lock manager, the same calls in both, except that Classic's
lock table is shared between processes and SuperClassic's between threads. The figure is
operations per second over the measured seconds; the two run interleaved (Classic first in odd
repeats, SuperClassic first in even ones), each on its own database, so the machine's drift
(±20 % between runs here) falls on both alike. Printed: Classic/SuperClassic with its 95 %
interval (fbbench.analysis.stats, pairs of adjacent runs), per attachment count, with the
conditions.

Expected close to 1: per operation both make the same engine calls; Classic adds only what a
process costs — a context switch instead of a thread switch, an own copy of the engine's
metadata cache — none of it per operation. A ratio clearly below 1 would point at the lock
manager's cross-process signalling (blocking ASTs are delivered by a thread of the owning
process in Classic) or at the per-process memory pressure of N engines on a small machine.

Seen on this project's 2-core VM while other work ran (6 pairs of 2 s, not the figures to quote):
2 attachments 1.027 (0.895–1.104): no difference; 4 attachments 0.917 (0.800–1.061): not resolved,
with 14 % more attachment CPU per operation in Classic (121 vs 106 µs). With 4 attachments on 2
cores both architectures do half the operations per second of 2 attachments: the attachments
then contend for the lock table's mutex, and between processes that costs futex wake-ups and
context switches that threads of one process partly avoid — the first suspect if a quiet
machine confirms a ratio below 1 once attachments outnumber cores.

    .venv/bin/python benchmarks/architecture_classic.py [--repeats 6] [--seconds 5] [--warmup 1]
                                                        [--connections 2 4]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fbbench.analysis import stats  # noqa: E402
from fbbench.engines import prepare_runtime, run_in_engine  # noqa: E402

ROWS = 10_000
SQL = "select qty from stock where id = ?"
TARGET = Path(__file__).stem
MODES = {"classic": "Classic", "superclassic": "SuperClassic"}


# ------------------------------------------------------------- run inside the engine child process


def create_database(path: str) -> dict[str, Any]:
    from core_overhead import engine_facts  # a sibling script: the same facts, read the same way

    from fbbench.database import driver

    with driver.create_database(path, page_size=8192, forced_writes=False) as connection:
        connection.execute_immediate("create table stock (id integer not null primary key, qty integer not null)")
        connection.commit()
        connection.execute_immediate(f"""execute block as
            declare i integer = 1;
            begin
              while (i <= {ROWS}) do
              begin
                insert into stock values (:i, 0);
                i = i + 1;
              end
            end""")
        connection.commit()
        return engine_facts(connection)


def measure(path: str, connections: int, warmup: float, seconds: float, processes: bool) -> dict[str, Any]:
    """Operations per second of one run (the core as threads, or as Classic's processes)."""
    from fbbench.engines import current_runtime
    from fbbench.loadcore import run_load, units_completed

    config = {
        "client_library": str(current_runtime().client_library), "database": path, "connections": connections,
        "warmup_seconds": warmup, "measure_seconds": seconds, "interval_seconds": seconds, "seed": 1,
        "units": [{"name": "op", "isolation": "read_committed", "read_only": True,
                   "statements": [{"sql": SQL, "params": [{"kind": "uniform", "args": [1, ROWS]}]}]}],
    }
    result = run_load(config, processes=processes)
    if result["status"] != "completed":
        raise RuntimeError(f"run {result['status']}: {result['failure']}")
    ok = result["units"]["op"]["ok"]
    # The attachment threads' CPU (embedded: the engine's work included), warm-up included: the
    # same measure in both, without Classic's process start-up.
    return {"ops_per_second": ok / result["measured_seconds"], "operations": units_completed(result),
            "cpu_seconds": result.thread_cpu_seconds,
            "processes": len(result.get("worker_processes") or [])}


# ----------------------------------------------------------------------------- the parent process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=6, help="interleaved pairs per attachment count")
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=1.0, help="warm-up seconds per run")
    parser.add_argument("--connections", type=int, nargs="+", default=[2, 4])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fbbench-architecture-classic-", dir="/tmp"))
    try:
        runtimes, facts, paths = {}, {}, {}
        for mode, server_mode in MODES.items():
            runtimes[mode] = prepare_runtime("5.0", work / mode, {"ServerMode": server_mode})
            paths[mode] = str(work / mode / "point.fdb")
            facts[mode] = run_in_engine(runtimes[mode], f"{TARGET}:create_database", paths[mode])
        one = facts["classic"]
        print(f"Firebird {one['version']} embedded; forced writes {'on' if one['forced_writes'] else 'off'}; "
              f"page buffers per attachment {facts['classic']['page_buffers']} (Classic) / "
              f"{facts['superclassic']['page_buffers']} (SuperClassic); ServerMode "
              f"{facts['classic']['server_mode']} / {facts['superclassic']['server_mode']}")
        print(f"host: {platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}; read-only point select on "
              f"{ROWS:,} rows; {args.repeats} interleaved pairs of {args.warmup:g} s warm-up + {args.seconds:g} s")
        for connections in args.connections:
            figures: dict[str, list[float]] = {mode: [] for mode in MODES}
            cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
            for repeat in range(args.repeats):
                order = list(MODES) if repeat % 2 == 0 else list(reversed(MODES))
                for mode in order:
                    run = run_in_engine(runtimes[mode], f"{TARGET}:measure", paths[mode], connections, args.warmup,
                                        args.seconds, mode == "classic")
                    if mode == "classic" and run["processes"] != connections:
                        sys.exit(f"expected {connections} attachment processes, the run had {run['processes']}")
                    figures[mode].append(run["ops_per_second"])
                    cpu[mode].append(run["cpu_seconds"] / max(run["operations"], 1) * 1e6)
            ratio = stats.ratio_of_pairs(figures["superclassic"], figures["classic"])
            print(f"\n{connections} attachments")
            for mode in MODES:
                values = ", ".join(f"{v:,.0f}" for v in figures[mode])
                per_op = sum(cpu[mode]) / len(cpu[mode])
                print(f"  {MODES[mode]:>12}: ops/s {values}; attachment CPU {per_op:.1f} µs/op")
            interval = (f"95 % interval {ratio.low:.3f}–{ratio.high:.3f}" if math.isfinite(ratio.low)
                        else "no interval (too few pairs)")
            print(f"  Classic / SuperClassic: {ratio.ratio:.3f} ({interval}; {ratio.method})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
