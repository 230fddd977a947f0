"""Does watching the engine change what it measures? Figures, not a timed test.

Each pair runs TPC-C twice at the same time on their own copies of one populated database: one
with the engine sampler (MON$ at every interval boundary, the default), one with ``monitor =
false``. So that both see the same machine — a 2-core VM drifts by ±20 % between runs taken one
after the other — they run as ``fbbench compare --paired`` runs them (fbbench.runner.timeshare):
both connect, meet at a start barrier, measure the same seconds, and their engine processes take
turns of 0.1 s (the other one stopped). Each pair gives one throughput ratio, monitored /
unmonitored (score per minute); the ratios of all pairs give the median ratio and its 95 %
interval (fbbench.analysis.stats). Who takes the first turn alternates between pairs. Also
printed: how long one MON$ reading took (median, max) in the monitored runs, and what the
sampler's own attachment read.

Target (issue "Engine observation"): ≥ 0.99 × at the default interval (10 s).

    .venv/bin/python benchmarks/observe_overhead.py [--connections 4 32] [--pairs 6]
        [--warmup 10s] [--duration 60s] [--interval 10s] [--engine 5.0]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fbbench_run import fbbench, tpcc_on_off_pairs  # noqa: E402

from fbbench.analysis import stats  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="5.0")
    parser.add_argument("--connections", type=int, nargs="+", default=[4, 32])
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--warmup", default="10s")
    parser.add_argument("--duration", default="60s")
    parser.add_argument("--interval", default="10s")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="fbbench-observe-overhead-", dir="/tmp"))
    load_before = os.getloadavg()
    rows = []
    try:
        # The population once, before any pair: both runs of every pair copy the cached database.
        fbbench(home, "run", "tpcc", "--engine", args.engine, "--connections", "1", "--transactions", "1", "--no-sweep")
        for connections in args.connections:
            ratios, readings, worst, fetches = [], [], [], []
            for pair, documents in enumerate(tpcc_on_off_pairs(home, connections, args, "monitor",
                                                                  ("monitored", "unmonitored"))):
                on, off = documents["monitored"], documents["unmonitored"]
                ratios.append(on["score_per_minute"] / off["score_per_minute"])
                sampling = on.get("sampling") or {}
                readings.append(sampling.get("median_seconds") or 0.0)
                worst.append(sampling.get("max_seconds") or 0.0)
                fetches.append(sum((s.get("sampler") or {}).get("page_fetches", 0) for s in on["engine_samples"]))
                print(f"  {connections} attachments, pair {pair + 1}: monitored {on['score_per_minute']:,.0f}/min, "
                      f"unmonitored {off['score_per_minute']:,.0f}/min, ratio {ratios[-1]:.4f}", flush=True)
            estimate = stats.ratio_of_ratios(ratios)
            rows.append((connections, estimate, readings, worst, fetches, on))
    finally:
        shutil.rmtree(home, ignore_errors=True)

    first = rows[0][5]
    print(f"\nengine sampler overhead — {first['engine'].get('label')}, {first['engine'].get('version')}, "
          f"TPC-C 1 warehouse, warm-up {args.warmup}, measured {args.duration}, interval {args.interval}; "
          f"{args.pairs} pair(s) per point, time-shared in 0.1 s turns")
    print(f"host: {os.cpu_count()} CPUs, {first['host'].get('cpu_model')}; load average before: "
          f"{', '.join(f'{v:.2f}' for v in load_before)}\n")
    print(f"{'attachments':>11} {'monitored / unmonitored':>24} {'95 % interval':>17} {'reading median':>15} "
          f"{'reading max':>12} {'sampler fetches/run':>20}")
    for connections, estimate, readings, worst, fetches, _doc in rows:
        interval = (f"{estimate.low:.4f}–{estimate.high:.4f}" if estimate.has_interval else "–")
        median_reading = 1000 * sorted(readings)[len(readings) // 2]
        print(f"{connections:>11} {estimate.ratio:>24.4f} {interval:>17} {median_reading:>12.1f} ms "
              f"{1000 * max(worst):>9.1f} ms {sorted(fetches)[len(fetches) // 2]:>20,.0f}")
    print("\ntarget: ≥ 0.99 × (the 95 % interval's low end at or above 0.99 meets it with confidence; an interval "
          "reaching below 0.99 but including 1.0 means this machine cannot resolve the difference)")
    for connections, estimate, *_ in rows:
        if estimate.has_interval and estimate.low >= 0.99:
            verdict = "meets the target"
        elif estimate.has_interval and estimate.high < 0.99:
            verdict = "misses the target"
        else:
            verdict = "not resolved at this precision" + (f" ({estimate.note})" if estimate.note else "")
        print(f"  {connections} attachments: {verdict} ({estimate.method})")


if __name__ == "__main__":
    main()
