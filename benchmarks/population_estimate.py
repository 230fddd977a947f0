"""How far are fbbench's population estimates from what is then built? The figures behind
``runner/limits.py``'s ESTIMATE_MARGIN.

Builds a workload at a small scale (the measured build), estimates the population at each larger
scale from it alone (runner/limits.estimate_population: each for_each step's growth and time per
iteration, times its iterations), then builds that scale and prints estimated against built:
database size and build time, and their ratios. Runs go through the CLI (``fbbench run …
--transactions 1``) in a private FBBENCH_HOME under /tmp, deleted at the end.

    .venv/bin/python benchmarks/population_estimate.py [--workload tpcc] [--parameter warehouses]
                                                       [--base 1] [--scales 2 4] [--tiny] [--engine 5.0]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from fbbench_run import run_workload

from fbbench.runner import limits, population_cache
from fbbench.workloads.spec import load_workload

TINY = {"items": "2000", "customers": "300", "orders": "300"}
MB = 1 << 20


def build(home: Path, workload: str, engine: str, scale: dict[str, str]) -> None:
    flags = [item for name, value in scale.items() for item in ("--scale", f"{name}={value}")]
    run_workload(home, "build-" + "-".join(f"{k}{v}" for k, v in scale.items()), workload, "--engine", engine,
                 *flags, "--connections", "1", "--transactions", "1", "--no-sweep", "--no-monitor",
                 "--load-connections", str(os.cpu_count() or 2))


def built(cache: Path, workload_name: str, scale: dict[str, str]) -> dict[str, float]:
    for meta_file in cache.glob(f"{workload_name}-*.json"):
        meta = json.loads(meta_file.read_text())
        if {k: str(v) for k, v in meta["material"]["scale"].items()} == {
                k: str(v) for k, v in load_workload(workload_name, scale).scale.items()}:
            load = meta["load"]
            return {"size": load["size_bytes"], "seconds": load["seconds"]}
    sys.exit(f"no cache entry for {scale}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", default="tpcc")
    parser.add_argument("--parameter", default="warehouses")
    parser.add_argument("--base", default="1")
    parser.add_argument("--scales", nargs="+", default=["2", "4"])
    parser.add_argument("--tiny", action="store_true", help="TPC-C's quick-test knobs (2,000 items, 300 customers "
                        "and orders per district)")
    parser.add_argument("--engine", default="5.0")
    args = parser.parse_args()
    extra = TINY if args.tiny else {}
    home = Path(tempfile.mkdtemp(prefix="fbbench-population-estimate-", dir="/tmp"))
    cache = population_cache.cache_dir(home / "work")
    try:
        base = {**extra, args.parameter: args.base}
        build(home, args.workload, args.engine, base)
        major = args.engine[:3]
        measured = population_cache.measurements(cache, load_workload(args.workload, base))
        print(f"{args.workload} on {args.engine}, measured build at {args.parameter}={args.base}"
              f"{' (tiny knobs)' if extra else ''}; {os.cpu_count()} CPUs, {os.cpu_count()} load attachments\n")
        print(f"{args.parameter:>12} {'est. MB':>9} {'built MB':>9} {'size ratio':>10} {'est. s':>8} {'built s':>8} "
              f"{'time ratio':>10}")
        truth = built(cache, args.workload, base)
        print(f"{args.base:>12} {'':>9} {truth['size'] / MB:>9.1f} {'':>10} {'':>8} {truth['seconds']:>8.1f}")
        for value in args.scales:
            scale = {**extra, args.parameter: value}
            workload = load_workload(args.workload, scale)
            estimate = limits.nearest_estimate(workload, measured, major, None)
            if estimate is None:
                sys.exit(f"no estimate for {scale}: the measured build is not of the same shape")
            build(home, args.workload, args.engine, scale)
            truth = built(cache, args.workload, scale)
            print(f"{value:>12} {estimate.size_bytes / MB:>9.1f} {truth['size'] / MB:>9.1f} "
                  f"{estimate.size_bytes / truth['size']:>10.2f} {estimate.seconds:>8.1f} {truth['seconds']:>8.1f} "
                  f"{estimate.seconds / truth['seconds']:>10.2f}")
        print(f"\nratio = estimate / built; the refusal margin (runner/limits.py ESTIMATE_MARGIN) is "
              f"{limits.ESTIMATE_MARGIN:g}")
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
