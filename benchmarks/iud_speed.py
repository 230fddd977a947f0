"""The iud workload (IBSurgeon's insert / update / delete test) on Firebird 3.0, 4.0 and 5.0 with
forced writes on and off and the OS file cache on and off, on this machine's disk and on a tmpfs:
rows per second of each operation, in one table a reader can hold against the figures published
by a Firebird user — 2.5.9 at about 9,500 updates/s against 5.0.2 at about 1,400 on one Linux VM,
which the thread blamed on forced writes and write barriers. Figures, not a timed test.

Each cell is one run of ``fbbench run iud`` (embedded, one attachment, the workload's page size
of 16384): every figure comes from the run's own document, with the storage it ran on. The
machine drifts by ±20 % between runs taken one after the other: a difference of a few per cent
between two cells is not resolved by one run each (``--repeat`` and ``fbbench compare`` do that);
the factor forced writes make is.

    .venv/bin/python benchmarks/iud_speed.py [--rows 20000] [--batch 1000] [--engines 3.0 4.0 5.0]
                                             [--disk DIR] [--tmpfs DIR] [--json FILE]
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
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fbbench.report.console import storage_text  # noqa: E402

OPERATIONS = ("insert", "update", "delete")


def run_cell(workdir: Path, engine: str, forced_writes: str, file_cache: str, rows: int, batch: int) -> dict[str, Any]:
    out = workdir / f"iud-{engine}-{forced_writes}-{file_cache}.json"
    done = subprocess.run([sys.executable, "-m", "fbbench", "run", "iud", "--engine", engine, "--scale", f"rows={rows}",
                           "--scale", f"batch={batch}", "-c", "1", "--forced-writes", forced_writes, "--file-cache",
                           file_cache, "--no-sweep", "--workdir", str(workdir / "work"), "--results",
                           str(workdir / "results.sqlite"), "--json", str(out), "--report", str(workdir / "r.html")],
                          capture_output=True, text=True, timeout=3600)
    if done.returncode != 0 or not out.is_file():
        failure = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"engine": engine, "forced_writes": forced_writes, "file_cache": file_cache, "failure": failure}
    document = json.loads(out.read_text())
    figures = {figure["name"]: figure["value"] for figure in document.get("figures", [])}
    return {"engine": engine, "version": document["engine"].get("version"), "forced_writes": forced_writes,
            "file_cache": file_cache, "rows_per_second": document["headline"]["value"],
            **{operation: figures.get(f"{operation} rows/s") for operation in OPERATIONS},
            "storage": (document.get("storage") or {}).get("database"), "page_size": document["database"]["page_size"],
            "status": document["status"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000, help="rows inserted, updated and deleted")
    parser.add_argument("--batch", type=int, default=1_000, help="rows per transaction")
    parser.add_argument("--engines", nargs="+", default=["3.0", "4.0", "5.0"])
    parser.add_argument("--disk", type=Path, help="a directory on this machine's disk (default: a temporary one)")
    parser.add_argument("--tmpfs", type=Path, default=Path("/dev/shm"), help="a directory on a tmpfs")
    parser.add_argument("--json", type=Path, help="also write the cells to this file")
    args = parser.parse_args()
    places = {"disk": Path(tempfile.mkdtemp(prefix="fbbench-iud-", dir=args.disk))}
    if args.tmpfs.is_dir() and os.access(args.tmpfs, os.W_OK):
        places["tmpfs"] = Path(tempfile.mkdtemp(prefix="fbbench-iud-", dir=args.tmpfs))
    else:
        print(f"no tmpfs at {args.tmpfs}: the disk only")
    print(f"iud: {args.rows:,} rows inserted, updated and deleted, {args.batch:,} per transaction, 1 attachment, "
          f"embedded; {os.cpu_count()} CPU(s). Published for comparison (one Linux VM, another user's): Firebird 2.5.9 "
          "about 9,500 updates/s, 5.0.2 about 1,400.")
    cells = []
    try:
        for place, workdir in places.items():
            header = None
            for engine in args.engines:
                for forced_writes in ("on", "off"):
                    for file_cache in ("on", "off"):
                        cell = {"place": place, **run_cell(workdir, engine, forced_writes, file_cache, args.rows,
                                                           args.batch)}
                        cells.append(cell)
                        if header is None and cell.get("storage"):
                            header = storage_text(cell["storage"])
                            print(f"\n{place}: {header}")
                            print(f"  {'engine':<22} {'forced writes':<14} {'file cache':<11} {'rows/s':>9} "
                                  + " ".join(f"{op + '/s':>10}" for op in OPERATIONS))
                        if cell.get("failure"):
                            print(f"  {engine:<22} {forced_writes:<14} {file_cache:<11} failed: {cell['failure']}")
                            continue
                        print(f"  {cell['version'] or engine:<22} {forced_writes:<14} {file_cache:<11} "
                              f"{cell['rows_per_second']:>9,.0f} "
                              + " ".join(f"{cell[op]:>10,.0f}" if cell.get(op) is not None else f"{'–':>10}"
                                         for op in OPERATIONS), flush=True)
    finally:
        for workdir in places.values():
            shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(cells, indent=2))


if __name__ == "__main__":
    main()
