"""Write the build each built-in workload declares (``population.json`` in its directory): the load
facts of one population at its default scale — the size after its scripts and after each load step,
and the time each took — from which fbbench estimates a population before its first build on a
machine, so that ``--scale warehouses=1e9`` is refused at once there too (runner/room.py,
``check_room_and_time``; runner/population_cache.py, ``declared``).

Builds each workload through the CLI (``fbbench run … --transactions 1``, or the workload's own
counts) in a private
FBBENCH_HOME under /tmp, deleted at the end. Run it again when a workload's population changes:
a declaration whose population shape no longer matches is ignored, never used.

    .venv/bin/python benchmarks/population_declared.py [--workloads tpcc sysbench scan docflow] [--engine 5.0]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from fbbench_run import run_workload

from fbbench.runner import population_cache
from fbbench.workloads.spec import load_workload

# The built-in workloads whose population grows with a scale through for_each load steps.
GROWING = ("tpcc", "sysbench", "scan", "docflow")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", nargs="+", default=list(GROWING))
    parser.add_argument("--engine", default="5.0")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fbbench-declared-"))
    try:
        for name in args.workloads:
            workload = load_workload(name, {})
            fixed = [] if workload.counted is not None else ["--transactions", "1"]  # a workload's own counts stand
            run_workload(home, f"build-{name}", name, "--engine", args.engine, "--connections", "1", *fixed,
                         "--no-sweep", "--no-monitor", "--no-validate")
            meta = json.loads(next((home / "work" / "dbcache").glob(f"{workload.name}-*.json")).read_text())
            declared = workload.directory / population_cache.DECLARED
            declared.write_text(json.dumps(population_cache.declaration(workload, meta), indent=2) + "\n")
            assert population_cache.declared(workload), f"{declared} does not read back"
            load = meta["load"]
            print(f"{name}: {load['size_bytes'] / 1e6:,.1f} MB in {load['seconds']:.1f} s -> {declared}")
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
