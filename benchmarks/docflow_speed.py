"""docflow (OLTP-EMUL's document flow) on embedded Firebird: population speed, score, fbbench's share.

Prints, with the conditions they ran under:

- **population** at `mode=small` and `mode=medium` (`--fresh`, so always built): rows and MB
  written by the load steps, per second (the run's `population` figures);
- **score**: successful business actions per minute (docflow's headline) at 4 and 32
  attachments, the other workers' documents kept separate (the default);
- **fbbench's own CPU**: the core's time in its own code plus fbbench's Python threads, as a
  share of the engine process's CPU (embedded: engine and client in one process). Target
  (issue "the field's own workloads"): below 5 % at 4 attachments.

Everything happens in a private FBBENCH_HOME under /tmp, deleted at the end.

    .venv/bin/python benchmarks/docflow_speed.py [--engine 5.0] [--modes small medium] [--connections 4 32]
                                                 [--warmup 20s] [--duration 60s]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from fbbench_run import run_workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="5.0")
    parser.add_argument("--modes", nargs="+", default=["small", "medium"])
    parser.add_argument("--connections", type=int, nargs="+", default=[4, 32])
    parser.add_argument("--warmup", default="20s")
    parser.add_argument("--duration", default="60s")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fbbench-docflow-speed-", dir="/tmp"))
    load_before = os.getloadavg()
    try:
        populations = []
        for mode in args.modes:
            run, _ = run_workload(home, f"populate-{mode}", "docflow", "--engine", args.engine, "--scale",
                                  f"mode={mode}", "--fresh", "--connections", "1", "--transactions", "1",
                                  "--no-sweep")
            populations.append((mode, run))
        scores = []
        for connections in args.connections:
            run, _ = run_workload(home, f"score-{connections}", "docflow", "--engine", args.engine, "--scale",
                                  f"mode={args.modes[0]}", "--connections", str(connections), "--warmup",
                                  args.warmup, "--duration", args.duration)
            scores.append((connections, run))
    finally:
        shutil.rmtree(home, ignore_errors=True)

    first = populations[0][1] if populations else scores[0][1]
    engine = first["engine"]
    print(f"docflow — {engine.get('label')}, {engine.get('version')} ({engine.get('mode')}), "
          f"page size {first['database'].get('page_size')}")
    print(f"host: {os.cpu_count()} CPUs, {first['host'].get('cpu_model')}; load average before: "
          f"{', '.join(f'{v:.2f}' for v in load_before)} (other processes share this machine)\n")
    print(f"{'mode':>8} {'rows':>10} {'MB':>8} {'load s':>7} {'rows/s':>9} {'MB/s':>7} {'load attachments':>16}")
    for mode, run in populations:
        population = run["population"]
        print(f"{mode:>8} {population['total_rows']:>10,} {population['grown_bytes'] / 1e6:>8.1f} "
              f"{population['load_seconds']:>7.1f} {population['rows_per_second']:>9,.0f} "
              f"{population['mb_per_second']:>7.2f} {population['load_connections']:>16}")
    print(f"\nscore at mode={args.modes[0]}, warm-up {args.warmup}, measured {args.duration}:")
    print(f"{'attachments':>11} {'business actions/min':>21} {'all units/min':>14} {'conflicts':>10} {'errors':>7} "
          f"{'fbbench CPU share':>18}")
    for connections, run in scores:
        units = run["units"].values()
        share = None
        if run.get("process_cpu_seconds"):
            share = 100 * ((run.get("client_cpu_seconds") or 0) + (run.get("python_cpu_seconds") or 0)) \
                / run["process_cpu_seconds"]
        print(f"{connections:>11} {run['headline']['value']:>21,.0f} {run['score_per_minute']:>14,.0f} "
              f"{sum(u['conflicts'] for u in units):>10,} {sum(u['errors'] for u in units):>7,} "
              f"{'–' if share is None else f'{share:.2f} %':>18}")
    print("\ntarget: fbbench's own CPU below 5 % of the process's at 4 attachments")


if __name__ == "__main__":
    main()
