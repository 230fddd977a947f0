"""What does a machine shape cost by itself? Figures, not a timed test.

Each pair runs TPC-C twice at the same time, each on its own copy of one populated database: A
inside a shape above anything the run uses (the host's memory, every CPU, throttles far above the
disk's speed: the cgroup, its accounting and the throttle's bookkeeping, but no limit that binds),
B on the machine as it is. So that both see the same machine — a 2-core VM drifts by ±20 %
between runs taken one after the other — they run as ``fbbench compare --paired`` runs them
(fbbench.runner.timeshare): one start barrier, the same seconds, engine processes taking turns of
0.1 s. Each pair gives one throughput ratio A/B (score per minute); their median and its exact
95 % interval come from compare itself. Also printed: what each shaped run verified (the group's
memory peak, its I/O per busy second) and the load average before and after.

Target (issue 29): ≥ 0.98.

Needs root (the shape's cgroup). The network part (a managed server behind the relay) is not
measured here: its cost is the relay's CPU, which every shaped run prints itself.

    .venv/bin/python benchmarks/shape_overhead.py [--connections 4] [--pairs 6]
        [--warmup 10s] [--duration 60s] [--engine 5.0]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fbbench_run import fbbench  # noqa: E402


def unbinding_shape() -> str:
    """Limits no run here reaches: all the memory and every CPU this process may use, disk
    throttles of a million I/Os and 100 GB per second."""
    memory_mib = psutil.virtual_memory().total // 2**20
    cpus = len(os.sched_getaffinity(0))
    return (f"memory={memory_mib}MiB, cpus={cpus}, disk.read_iops=1000000, disk.write_iops=1000000, "
            "disk.read_bps=100GB, disk.write_bps=100GB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="5.0")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--warmup", default="10s")
    parser.add_argument("--duration", default="60s")
    parser.add_argument("--interval", default="10s")
    parser.add_argument("--keep", action="store_true", help="keep the private home (results, reports)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("a machine shape needs root (its cgroup): run this as root")

    home = Path(tempfile.mkdtemp(prefix="fbbench-shape-overhead-", dir="/var/tmp"))
    load_before = os.getloadavg()
    shape = unbinding_shape()
    try:
        # The population once, before any pair: both runs of every pair copy the cached database.
        fbbench(home, "run", "tpcc", "--engine", args.engine, "-c", "1", "--transactions", "1", "--no-sweep")
        specs = []
        for name, machine in (("shaped", shape), ("as-is", "none")):
            spec = home / f"{name}.toml"
            spec.write_text(f'workload = "tpcc"\nengine = "{args.engine}"\nconnections = {args.connections}\n'
                            f'warmup = "{args.warmup}"\nduration = "{args.duration}"\ninterval = "{args.interval}"\n'
                            f'sweep = false\nvalidate = false\nmachine = {json.dumps(machine)}\n')
            specs.append(str(spec))
        compared = home / "pairs.json"
        command = [sys.executable, "-m", "fbbench", "compare", "--paired", *specs, "--pairs", str(args.pairs),
                   "--axis", "machine", "--baseline", "B", "--json", str(compared)]
        done = subprocess.run(command, cwd=HERE.parent,
                              text=True, capture_output=True,
                              env={**os.environ, "FBBENCH_HOME": str(home), "COLUMNS": "150"})
        print(done.stdout[-6000:], flush=True)
        if done.returncode not in (0, 1) or not compared.exists():
            sys.exit(f"compare --paired failed ({done.returncode}):\n{done.stderr[-3000:]}")
        document = json.loads(compared.read_text())
        headline = next((f for f in document.get("figures") or [] if f.get("kind") == "headline"), {})
        print(f"\nshape A: {shape}")
        print(f"TPC-C, {args.connections} attachments, embedded {args.engine}, {args.pairs} time-shared pairs of "
              f"{args.duration} after {args.warmup}")
        for label, ratio in (headline.get("ratios") or {}).items():
            if ratio:
                print(f"{headline.get('name')} shaped ({label}) / as is: {ratio['ratio']:.3f} (95 % CI "
                      f"{ratio.get('low') or 0:.3f}–{ratio.get('high') or 0:.3f}, {ratio.get('basis')}, "
                      f"n = {ratio.get('n_a')}); target ≥ 0.98")
        for label, verdict in (headline.get("verdicts") or {}).items():
            if verdict:
                print(f"verdict ({label}): {verdict.get('text')}")
        for side in document.get("sides") or []:
            if side.get("label") != "A":
                continue
            for run in side.get("runs") or []:
                shown = fbbench(home, "results", "show", run["run_id"], check=False).stdout
                lines = [line for line in shown.splitlines() if line.startswith("machine shape:")]
                print(f"  {run['run_id']}: " + " | ".join(line.removeprefix("machine shape: ") for line in lines[2:]))
        print(f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f} (2-core VM shared with "
              "other work)")
    finally:
        if args.keep:
            print(f"kept: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
