"""What does a sweep cost beyond its runs' load time? Figures, not a timed test.

Runs the sweep the issue names — TPC-C at 1 warehouse, 3 connection counts × 3 architectures × 3
repeats, 60 s measured per run — through the real ``fbbench sweep`` in a private FBBENCH_HOME,
and prints the overhead the sweep itself reports: the wall time of its runs against their
warm-up + measured time (populations, start-up, sweep, gstat, checks, reports), and the sweep's
whole wall time. Target: below 15 %.

    .venv/bin/python benchmarks/sweep_overhead.py [--engine 5.0] [--connections 4 16 32]
        [--architectures super superclassic classic] [--repeats 3] [--warmup 10s] [--duration 60s] [--report sweep.html]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="5.0")
    parser.add_argument("--connections", type=int, nargs="+", default=[4, 16, 32])
    parser.add_argument("--architectures", nargs="+", default=["super", "superclassic", "classic"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", default="10s")
    parser.add_argument("--duration", default="60s")
    parser.add_argument("--report", type=Path, help="keep the sweep's HTML report here")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fbbench-sweep-overhead-", dir="/tmp"))
    spec = home / "sweep.toml"
    spec.write_text(f'workload = "tpcc"\nengine = "{args.engine}"\nwarmup = "{args.warmup}"\n'
                    f'duration = "{args.duration}"\nrepeats = {args.repeats}\n[matrix]\n'
                    f"connections = {json.dumps(args.connections)}\n"
                    f"architecture = {json.dumps(args.architectures)}\n")
    load_before = os.getloadavg()
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "fbbench", "sweep", str(spec), "--json", str(home / "s.json"),
                               *(["--report", str(args.report.resolve())] if args.report else [])],
                              cwd=HERE.parent, env={**os.environ, "FBBENCH_HOME": str(home)}, capture_output=True,
                              text=True)
        wall = time.monotonic() - started
        if done.returncode != 0:
            sys.exit(f"the sweep failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
        document = json.loads((home / "s.json").read_text())
    finally:
        shutil.rmtree(home, ignore_errors=True)
    overhead = document["overhead"]
    cells = len(document["cells"])
    print(f"sweep overhead — TPC-C 1 warehouse on Firebird {args.engine} embedded; {cells} cells × {args.repeats} "
          f"repeats; warm-up {args.warmup}, measured {args.duration}")
    print(f"host: {os.cpu_count()} CPUs; load average before: {', '.join(f'{v:.2f}' for v in load_before)}\n")
    print(f"runs' wall time:        {overhead['runs_wall_seconds']:>8,.0f} s")
    print(f"their load time:        {overhead['load_seconds']:>8,.0f} s  (warm-up + measured)")
    print(f"overhead of the runs:   {overhead['share'] * 100:>8.1f} %  (population, start-up, sweep, gstat, checks)")
    whole = 100 * (wall - overhead["load_seconds"]) / overhead["load_seconds"]
    print(f"whole sweep, wall time: {wall:>8,.0f} s  → {whole:.1f} % over the load time (reports and the sweep's "
          "own work included)")
    print("target: below 15 %")


if __name__ == "__main__":
    main()
