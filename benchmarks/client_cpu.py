"""How much of the CPU does fbbench itself use while it drives the engine? Figures, not a timed test.

Runs ``fbbench run tpcc`` on the embedded Firebird 5.0 engine (``--engine`` for another):
1 warehouse, 4 connections, 10 s warm-up, 30 s measured (options below), in a private
FBBENCH_HOME under /tmp that is deleted at the end (the population is built there once: the
user's cache and results store are not touched). It prints the CPU figures the run's JSON
reports and the fraction of the process's CPU that is fbbench's own:

    fbbench share = (client_cpu_seconds + python_cpu_seconds) / process_cpu_seconds

What the figures are (fbbench/runner/engine/phases.py, core/src/run/worker.rs, docs/core-api.md):

- ``client_cpu_seconds`` — the native load core's own code: per unit, the time from drawing the
  unit and binding its parameters to the first client-library call, plus the time after the
  commit / rollback spent recording the outcome and latency, summed over the attachments. It is
  measured with a monotonic clock, i.e. wall time, not CPU time: on a busy machine a thread
  descheduled inside that window counts as core time (an overestimate). Work the core does
  *inside* the library window (filling and reading message buffers, tallies) is not in it.
- ``python_cpu_seconds`` — CPU time of the Python thread that runs the core call
  (time.thread_time): polling live counters, the progress display, writing intervals to the
  results store, and reading the DB-side metrics at the start and end of the measured period
  (in embedded mode the engine's work for those few queries runs on this thread, so it counts here).
- ``process_cpu_seconds`` — getrusage(RUSAGE_SELF) of the engine child process around the core
  call: in embedded mode the engine itself (its work on the attachment threads and its own
  background threads: garbage collector, cache writer …), the client library, the core and Python.
- ``thread_cpu_seconds`` — CPU time of the core's attachment threads (CLOCK_THREAD_CPUTIME_ID):
  engine + client library + core, as the engine runs on the calling thread in embedded mode.

Not in either fbbench figure, so counted in "rest of the process" with the engine's background
threads: the core's control thread (it waits on a condition variable and merges histograms once
per interval: negligible) and, when the output is a terminal, rich's refresh thread for the live
display (here the output is piped, so there is none).

All four cover the whole core call — connecting, warm-up *and* measured period, stopping — not
only the measured period: the core does not report them per phase. The share is the same kind of
quantity throughout, so it is a fair estimate for the measured period too.

    .venv/bin/python benchmarks/client_cpu.py [--engine 5.0] [--connections 4] [--warmup 10] [--duration 30]
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


def run(home: Path, args: argparse.Namespace) -> dict[str, Any]:
    document, stored = run_tpcc(home, "run", "--engine", args.engine, "--scale", "warehouses=1",
                                "--connections", str(args.connections), "--warmup", f"{args.warmup}s",
                                "--duration", f"{args.duration}s")
    if document["status"] != "completed":
        sys.exit(f"the run did not complete: {document['status']} {document.get('failure')}")
    # Units per attachment over the whole core call (warm-up included), the span the CPU figures cover.
    attachments = stored["summary"].get("attachments", [])
    document["units_whole_run"] = sum(a.get("units", 0) for a in attachments)
    return document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="5.0")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=10, help="seconds")
    parser.add_argument("--duration", type=int, default=30, help="measured seconds")
    args = parser.parse_args()

    load_before = os.getloadavg()
    home = Path(tempfile.mkdtemp(prefix="fbbench-client-cpu-", dir="/tmp"))
    try:
        document = run(home, args)
    finally:
        shutil.rmtree(home, ignore_errors=True)

    core = document["client_cpu_seconds"]
    python = document["python_cpu_seconds"]
    process = document["process_cpu_seconds"]
    threads = document["thread_cpu_seconds"]
    wall = next((p["seconds"] for p in document["phases"] if p["name"] == "measure"), None)
    cpus = os.cpu_count() or 1
    engine = document["engine"]
    ok = sum(unit["ok"] for unit in document["units"].values())
    committed = sum(unit["ok"] + unit["rolled_back"] for unit in document["units"].values())

    print(f"fbbench's own CPU during TPC-C — {engine.get('label')}, {engine.get('version')} ({engine.get('mode')})")
    print(f"1 warehouse, {document['connections']} connections, {args.warmup} s warm-up + "
          f"{document['measure_seconds']:.1f} s measured; score {document['score_per_minute']:,.0f}/min, "
          f"NOPM {document['metrics'].get('NOPM', float('nan')):,.0f}")
    print(f"database: page size {document['database'].get('page_size')}, page buffers "
          f"{document['database'].get('page_buffers')}, forced writes "
          f"{'on' if document['database'].get('forced_writes') else 'off'} (fbbench's defaults)")
    print(f"host: {cpus} CPUs, load average before: {', '.join(f'{v:.2f}' for v in load_before)} "
          "(other processes share this machine: the figures are noisy)\n")

    rows = [
        ("process CPU (embedded: engine + client library + fbbench)", process),
        ("  attachment threads (engine + client library + core)", threads),
        ("    of which the core's own code (client_cpu_seconds, wall)", core),
        ("  Python orchestration thread (python_cpu_seconds)", python),
        ("  rest of the process (engine background threads, core control thread)", process - threads - python),
    ]
    width = max(len(label) for label, _ in rows)
    for label, seconds in rows:
        print(f"  {label:<{width}} {seconds:>9.3f} s {100 * seconds / process:>6.2f} %")
    if wall:
        print(f"\n  wall time of the run's measure phase (connect, warm-up, measured period, stop): {wall:.1f} s; "
              f"process CPU = {process / wall:.2f} of {cpus} CPUs")
    units = document["units_whole_run"]
    print(f"  units: {units:,} over the whole core call, {committed:,} in the measured period ({ok:,} ok); "
          f"fbbench CPU per unit {1e6 * (core + python) / max(units, 1):.1f} µs, process CPU per unit "
          f"{1e6 * process / max(units, 1):.0f} µs")
    share = (core + python) / process
    print(f"\nfbbench share = (client_cpu_seconds + python_cpu_seconds) / process_cpu_seconds = "
          f"({core:.3f} + {python:.3f}) / {process:.3f} = {100 * share:.2f} %")
    print("(client_cpu_seconds is wall time in the core's own code, not CPU time, and all figures cover the "
          "whole core call, warm-up included: see the docstring)")


if __name__ == "__main__":
    main()
