"""What does Firebird's profiler cost the load it profiles? Figures, not a timed test.

``fbbench run --profile`` starts an RDB$PROFILER session on every load attachment for the measured
period (fbbench/observe/profiler.py). Firebird's README.profiler warns that the profiler's
overhead depends on the OS, the kernel and the CPU — on the clock source the engine reads — and
"may be very high". This measures it here, as benchmarks/observe_overhead.py measures the sampler:
each pair runs TPC-C twice at the same time on their own copies of one populated database, one
with ``profile = true``, one without, time-shared as ``fbbench compare --paired`` runs them (both
connect, meet at a start barrier, measure the same seconds, their engine processes take turns of
0.1 s). Each pair gives one throughput ratio, profiled / unprofiled (score per minute); the ratios
of all pairs give the median ratio and its 95 % interval (fbbench.analysis.stats). Who takes the
first turn alternates between pairs. Printed with the conditions: the engine, the host, its clock
source, the load average before, and how much of the measured period the profiles covered.

    .venv/bin/python benchmarks/profiler_overhead.py [--connections 4] [--pairs 6]
        [--warmup 5s] [--duration 20s] [--interval 5s] [--engine 5.0]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fbbench_run import fbbench, tpcc_on_off_pairs  # noqa: E402

from fbbench.analysis import stats  # noqa: E402
from fbbench.observe.profiler import clock_source  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="5.0")
    parser.add_argument("--connections", type=int, nargs="+", default=[4])
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--warmup", default="5s")
    parser.add_argument("--duration", default="20s")
    parser.add_argument("--interval", default="5s")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="fbbench-profiler-overhead-", dir="/tmp"))
    load_before = os.getloadavg()
    rows = []
    try:
        # The population once, before any pair: both runs of every pair copy the cached database.
        fbbench(home, "run", "tpcc", "--engine", args.engine, "--connections", "1", "--transactions", "1", "--no-sweep")
        for connections in args.connections:
            ratios, covered, statuses = [], [], []
            last: dict[str, Any] = {}
            for pair, documents in enumerate(tpcc_on_off_pairs(home, connections, args, "profile",
                                                                  ("profiled", "unprofiled"))):
                on, off = documents["profiled"], documents["unprofiled"]
                ratios.append(on["score_per_minute"] / off["score_per_minute"])
                profile = on.get("profile") or {}
                statuses.append(profile.get("status"))
                if profile.get("window_seconds") and on.get("measure_seconds"):
                    covered.append(profile["window_seconds"] / on["measure_seconds"])
                last = on
                print(f"  {connections} attachments, pair {pair + 1}: profiled {on['score_per_minute']:,.0f}/min, "
                      f"unprofiled {off['score_per_minute']:,.0f}/min, ratio {ratios[-1]:.4f}; profile "
                      f"{profile.get('status')}, {profile.get('finished')} session(s)", flush=True)
            rows.append((connections, stats.ratio_of_ratios(ratios), covered, statuses, last))
    finally:
        shutil.rmtree(home, ignore_errors=True)

    first = rows[0][4]
    print(f"\nprofiler overhead — {first['engine'].get('label')}, {first['engine'].get('version')}, "
          f"TPC-C 1 warehouse, warm-up {args.warmup}, measured {args.duration}, interval {args.interval}; "
          f"{args.pairs} pair(s) per point, time-shared in 0.1 s turns; plugin Default_Profiler, sessions on every "
          "load attachment")
    print(f"host: {os.cpu_count()} CPUs, {first['host'].get('cpu_model')}, virtualization "
          f"{(first['host'].get('virtualization') or {}).get('hypervisor')}; clock source {clock_source()}; "
          f"load average before: {', '.join(f'{v:.2f}' for v in load_before)}\n")
    print(f"{'attachments':>11} {'profiled / unprofiled':>22} {'95 % interval':>17} {'profile covered':>16} "
          f"{'profiles complete':>18}")
    for connections, estimate, covered, statuses, _doc in rows:
        interval = f"{estimate.low:.4f}–{estimate.high:.4f}" if estimate.has_interval else "–"
        share = f"{100 * sorted(covered)[len(covered) // 2]:.0f} %" if covered else "–"
        complete = f"{statuses.count('complete')} of {len(statuses)}"
        print(f"{connections:>11} {estimate.ratio:>22.4f} {interval:>17} {share:>16} {complete:>18}")
    print("\n(profile covered: the median share of the measured period the profiler's sessions ran; the profiled "
          "run's figures cover the whole period, the sessions' finish and flush in its last second included)")
    for connections, estimate, *_ in rows:
        if estimate.has_interval and estimate.high < 1.0:
            verdict = f"costs {100 * (1 - estimate.high):.1f}–{100 * (1 - estimate.low):.1f} % of the throughput"
        elif estimate.has_interval and estimate.low > 1.0:
            verdict = "profiled runs were faster: the machine's noise, not a gain"
        else:
            verdict = "not resolved at this precision" + (f" ({estimate.note})" if estimate.note else "")
        print(f"  {connections} attachments: {verdict} ({estimate.method})")


if __name__ == "__main__":
    main()
