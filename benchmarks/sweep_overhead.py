"""What does a sweep cost beyond its runs' load time? Figures, not a timed test.

Runs the sweep the issue names — TPC-C at 1 warehouse, 3 connection counts × 3 architectures × 3
repeats, 60 s measured per run — through the real ``fbbench sweep`` in a private FBBENCH_HOME,
and prints the overhead the sweep itself reports: the wall time of its runs against their
warm-up + measured time (populations, start-up, sweep, gstat, checks, reports), and the sweep's
whole wall time. Targets: below 5 % at 60 s cells, below 15 % at 15 s cells.

Then where that time goes, per run (the median over the runs, and the total over all of them),
from what the results store recorded of each run's phases: the runtime root, the engine
process's start, the database (a copy of the cached population; the first run of a population
builds it), the sweep and gstat before, the rest of the phase before (engine facts, statements
prepared), the load's own set-up and end beyond its warm-up and measured seconds (attachments
connecting, the last interval's sample), gstat after, the workload's checks, the rest of the
phase after (audits), the validation, and the end (firebird.log findings, the summary stored);
and between the runs, the sweep's own work (each run's checks before it starts, the clean-up
after it, the report at the end).

    .venv/bin/python benchmarks/sweep_overhead.py [--engine 5.0] [--connections 4 16 32]
        [--architectures super superclassic classic] [--repeats 3] [--warmup 10s] [--duration 60s] [--report sweep.html]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fbbench.store import ResultsStore  # noqa: E402

PARTS = ["runtime root", "engine process start", "database (copy or build)", "sweep before", "gstat before",
         "rest of before", "load set-up and end", "gstat after", "checks", "rest of after", "validation",
         "gaps between phases", "end (log findings, summary)"]


def where_the_time_goes(run: Mapping[str, Any]) -> dict[str, float]:
    """A completed run's wall time beyond its load, by part (seconds), from its stored phases."""
    phases = {phase["name"]: phase for phase in run["phases"]}
    detail = {name: phase.get("detail") or {} for name, phase in phases.items()}
    settings = run.get("settings") or {}
    load = (settings.get("warmup") or 0) + ((run.get("summary") or {}).get("measured_seconds") or 0)
    seconds = {name: float(phase.get("seconds") or 0) for name, phase in phases.items()}
    parts = dict.fromkeys(PARTS, 0.0)
    parts["runtime root"] = seconds.get("runtime", 0.0)
    parts["engine process start"] = phases["database"]["started_at"] - run["started_at"] - parts["runtime root"]
    parts["database (copy or build)"] = seconds.get("database", 0.0)
    parts["sweep before"] = float(detail["before"].get("sweep_seconds") or 0)
    parts["gstat before"] = float(detail["before"].get("gstat_seconds") or 0)
    parts["rest of before"] = seconds.get("before", 0.0) - parts["sweep before"] - parts["gstat before"]
    parts["load set-up and end"] = seconds.get("measure", 0.0) - load
    parts["gstat after"] = float(detail.get("after", {}).get("gstat_seconds") or 0)
    parts["checks"] = float(detail.get("after", {}).get("checks_seconds") or 0)
    parts["rest of after"] = seconds.get("after", 0.0) - parts["gstat after"] - parts["checks"]
    parts["validation"] = seconds.get("validate", 0.0)
    ordered = sorted((phase for name, phase in phases.items() if name not in ("runtime", "timeshare")),
                     key=lambda phase: phase["started_at"])
    for previous, following in itertools.pairwise(ordered):
        parts["gaps between phases"] += following["started_at"] - previous["started_at"] - float(
            previous.get("seconds") or 0)
    last = ordered[-1]
    parts["end (log findings, summary)"] = run["ended_at"] - last["started_at"] - float(last.get("seconds") or 0)
    return parts


def breakdown(store: ResultsStore, run_ids: list[str]) -> tuple[dict[str, list[float]], float, float]:
    """Per part, each completed run's seconds; the runs' wall and load seconds."""
    found: dict[str, list[float]] = {part: [] for part in PARTS}
    wall = load = 0.0
    for run_id in run_ids:
        run = store.load_run(run_id)
        if run["status"] != "completed":
            continue
        for part, seconds in where_the_time_goes(run).items():
            found[part].append(seconds)
        wall += run["ended_at"] - run["started_at"]
        load += (run["settings"].get("warmup") or 0) + (run["summary"].get("measured_seconds") or 0)
    return found, wall, load


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
        with ResultsStore(home / "results.sqlite", create=False) as store:
            run_ids = [run["run_id"] for cell in document["cells"] for run in cell["runs"]]
            parts, runs_wall, runs_load = breakdown(store, run_ids)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    load_after = os.getloadavg()
    overhead = document["overhead"]
    cells = len(document["cells"])
    print(f"sweep overhead — TPC-C 1 warehouse on Firebird {args.engine} embedded; {cells} cells × {args.repeats} "
          f"repeats; warm-up {args.warmup}, measured {args.duration}")
    print(f"host: {os.cpu_count()} CPUs; load average at the start: {', '.join(f'{v:.2f}' for v in load_before)}, "
          f"at the end: {', '.join(f'{v:.2f}' for v in load_after)}\n")
    print(f"runs' wall time:        {overhead['runs_wall_seconds']:>8,.0f} s")
    print(f"their load time:        {overhead['load_seconds']:>8,.0f} s  (warm-up + measured)")
    print(f"overhead of the runs:   {overhead['share'] * 100:>8.1f} %  (population, start-up, sweep, gstat, checks)")
    whole = 100 * (wall - overhead["load_seconds"]) / overhead["load_seconds"]
    print(f"whole sweep, wall time: {wall:>8,.0f} s  → {whole:.1f} % over the load time (reports and the sweep's "
          "own work included)")
    runs = len(parts[PARTS[0]])
    print(f"\nwhere the time beyond the load went, over the {runs} completed runs (from their stored phases):")
    print(f"  {'part':<30} {'median a run':>12} {'all runs':>10} {'of the load':>12}")
    for part in PARTS:
        values = parts[part]
        print(f"  {part:<30} {statistics.median(values) if values else 0:>10.2f} s {sum(values):>8.1f} s "
              f"{sum(values) / runs_load * 100:>10.2f} %")
    accounted = sum(sum(values) for values in parts.values())
    print(f"  {'(sum of the parts)':<30} {'':>12} {accounted:>8.1f} s {accounted / runs_load * 100:>10.2f} %  "
          f"(the runs' wall less their load: {runs_wall - runs_load:.1f} s)")
    between = wall - runs_wall
    print(f"  {'between runs (sweep itself)':<30} {between / max(runs, 1):>10.2f} s {between:>8.1f} s "
          f"{between / runs_load * 100:>10.2f} %  (checks before each run, clean-up, the report)")
    print("targets: below 5 % at 60 s cells, below 15 % at 15 s cells")


if __name__ == "__main__":
    main()
