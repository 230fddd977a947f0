"""How much memory does one attachment cost? The figures behind fbbench's ``--connections`` check.

For each engine and architecture this runs a short TPC-C (tiny scale, 1 warehouse's
shape) at two attachment counts and prints the engine process's peak RSS (``peak_rss_bytes``,
the engine child's VmHWM: embedded, the engine runs in that process; until 2026-11-30 its
ru_maxrss, which was the CLI's peak wherever that was larger) and the slope between
them: memory per attachment, page cache of SuperClassic/Classic included (DefaultDbCachePages
is 256 there, 2048 shared under SuperServer, × 8 KB pages). fbbench/runner/limits.py uses these
slopes, plus a margin, to refuse runs that would not fit.

Classic (embedded: one process per attachment, each an engine and a Python) adds up the engine
child's peak RSS and every attachment process's largest PSS (proportional set size: the pages
the processes share, the engine's code and Python's, divided among them, so that the sum is
what they really take); it also prints the threads of one attachment process (the process
limit counts threads).

Everything happens in a private FBBENCH_HOME under /tmp, deleted at the end.

    .venv/bin/python benchmarks/attachment_memory.py [--engines 3.0 4.0 5.0] [--modes Super SuperClassic]
                                                     [--counts 10 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from fbbench_run import run_tpcc

TINY = ["--scale", "items=2000", "--scale", "customers=300", "--scale", "orders=300"]
MB = 1 << 20


THREADS: list[int] = []


def peak(home: Path, engine: str, mode: str, connections: int) -> float:
    run, _stored = run_tpcc(home, f"{engine}-{mode}-{connections}", "--engine", engine, *TINY,
                            "--set", f"ServerMode={mode}", "--connections", str(connections),
                            "--warmup", "2s", "--duration", "6s", "--interval", "2s", "--no-sweep")
    processes = (run["engine"].get("architecture") or {}).get("processes") or []
    THREADS.extend(p["threads"] for p in processes if p.get("threads"))
    return float(run["peak_rss_bytes"]) + sum(p.get("peak_pss_bytes") or 0 for p in processes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engines", nargs="+", default=["3.0", "4.0", "5.0"])
    parser.add_argument("--modes", nargs="+", default=["Super", "SuperClassic"])
    parser.add_argument("--counts", type=int, nargs=2, default=[10, 100])
    args = parser.parse_args()
    low, high = args.counts
    home = Path(tempfile.mkdtemp(prefix="fbbench-attachment-memory-", dir="/tmp"))
    print(f"peak RSS of the engine process, TPC-C (tiny scale), {low} vs {high} attachments; "
          f"host: {os.cpu_count()} CPUs\n")
    print(f"{'engine':>6} {'mode':>12} {f'{low} att. MB':>11} {f'{high} att. MB':>12} {'MB per attachment':>18}")
    try:
        for engine in args.engines:
            for mode in args.modes:
                small, large = peak(home, engine, mode, low), peak(home, engine, mode, high)
                slope = (large - small) / (high - low)
                print(f"{engine:>6} {mode:>12} {small / MB:>11.0f} {large / MB:>12.0f} {slope / MB:>18.2f}")
                if THREADS:
                    print(f"{'':>6} {'':>12} threads per attachment process: at most {max(THREADS)}")
                    THREADS.clear()
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
