"""How often does ``fbbench track`` cry wolf, and what is the smallest change it resolves here?

N points of one build — nothing changes between them, so every change reported is a false alarm —
through the real commands (``fbbench track run`` / ``show`` / ``check``) in a private
FBBENCH_HOME, with a three-benchmark suite:

- ``spin``: a CPU-bound PSQL loop (benchmarks/workloads/spin), timed, 2 attachments;
- ``orders``: the single-thread order generation, fixed work (``--orders-units``, 100 by default;
  1 attachment, a fixed seed; ``--orders-pairs`` pairs a relative point, 6 by default): its
  headline is the seconds the work took, and the engine's work per unit repeats;
- ``tpcc``: TPC-C at 1 warehouse, timed, 2 attachments.

Two kinds of series, each N points of the build:

- **absolute**: each point ``--repeats`` runs of the build; the changes found point against point
  (Welch's t on logs) or, from ``long_series`` points on, by Otava's e-divisive means.
- **relative**: each point ``--pairs`` time-shared pairs of the build against the same build as
  its reference (``track run --reference``): an A/A series, whose ratios should sit at 1.

Printed: the changes reported in all series and figures (the target: none at the stated p-value),
the check's failures (none), each point's wall time (the target for a point of this suite with
reference pairs: at most 10 minutes), and the smallest change resolved:

- for a relative point, against its reference: the median half-width of the points' 95 %
  intervals of each figure (the target for the headline: 2 % or less);
- between two absolute points, point against point: the smallest difference Welch's t-test on
  logs would call at the stated p-value with the points' own spread — t(p, df) · s · √(2/n), with s
  the pooled standard deviation of the log samples.

    .venv/bin/python benchmarks/track_false_alarms.py [--points 6] [--kind both|absolute|relative]
        [--engine 5.0] [--repeats 3] [--pairs 6] [--orders-units 100] [--orders-pairs 6]
        [--warmup 5s] [--duration 15s] [--forced-writes on|off] [--keep DIR]
    .venv/bin/python benchmarks/track_false_alarms.py --from DIR   # the figures of a kept home again
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fbbench.analysis import stats  # noqa: E402

SPIN = HERE / "workloads" / "spin"


def fbbench(home: Path, *arguments: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "fbbench", *arguments], cwd=HERE.parent, text=True,
                          env={**os.environ, "FBBENCH_HOME": str(home)}, capture_output=True)
    if done.returncode not in ok:
        sys.exit(f"fbbench {' '.join(arguments)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                 f"{done.stderr[-2000:]}")
    return done


def suite(home: Path, kind: str, args: argparse.Namespace) -> Path:
    timed = f'warmup = "{args.warmup}"\nduration = "{args.duration}"\ninterval = "5s"\n'
    writes = f'forced_writes = "{args.forced_writes}"\n' if args.forced_writes else ""
    text = (f'name = "{kind}"\nrepeats = {args.repeats}\npairs = {args.pairs}\nthreshold = "5%"\n'
            f'[[benchmark]]\nname = "spin"\nworkload = "{SPIN}"\nconnections = 2\n{timed}validate = false\n'
            f'[[benchmark]]\nname = "orders"\nworkload = "orders"\ntransactions = {args.orders_units}\n'
            f'connections = 1\npairs = {args.orders_pairs}\nseed = 1\nvalidate = false\n{writes}'
            'figures = ["headline", "generate_orders p95"]\n'
            f'[[benchmark]]\nname = "tpcc"\nworkload = "tpcc"\nconnections = 2\n{timed}validate = false\n{writes}'
            'scale = { warehouses = 1 }\nfigures = ["headline", "NEW_ORDER p95"]\n')
    path = home / f"{kind}.toml"
    path.write_text(text)
    return path


def make_points(home: Path, kind: str, args: argparse.Namespace) -> list[float]:
    spec = suite(home, kind, args)
    seconds = []
    for number in range(1, args.points + 1):
        started = time.monotonic()
        extra = ["--reference", args.engine] if kind == "relative" else []
        fbbench(home, "track", "run", str(spec), "--engine", args.engine, "--label", f"point {number}", *extra)
        seconds.append(time.monotonic() - started)
        print(f"  {kind} point {number} of {args.points}: {seconds[-1] / 60:.1f} min", flush=True)
    return seconds


def document(home: Path, kind: str) -> dict[str, Any]:
    out = home / f"{kind}-show.json"
    fbbench(home, "track", "show", str(home / f"{kind}.toml"), "--json", str(out))
    check = fbbench(home, "track", "check", str(home / f"{kind}.toml"), "--json", str(home / f"{kind}-check.json"),
                    ok=(0, 1))
    found: dict[str, Any] = json.loads(out.read_text())
    found["check_exit"] = check.returncode
    found["check_verdict"] = json.loads((home / f"{kind}-check.json").read_text())
    return found


def smallest_between_points(series: dict[str, Any], figure: str, p_value: float) -> float | None:
    """The smallest relative difference Welch's t on logs calls at ``p_value`` between two points
    with this series' own spread (pooled log standard deviation, the points' sample count)."""
    logs = [np.log(point["figures"][figure]["samples"]) for point in series["points"]
            if len(point["figures"].get(figure, {}).get("samples") or []) >= 2]
    if len(logs) < 2:
        return None
    n = min(len(x) for x in logs)
    pooled = math.sqrt(sum(float(np.var(x, ddof=1)) * (len(x) - 1) for x in logs) / sum(len(x) - 1 for x in logs))
    if pooled == 0:
        return 0.0
    critical = float(stats.scipy_stats().t.ppf(1 - p_value / 2, 2 * n - 2))
    return math.expm1(critical * pooled * math.sqrt(2 / n))


def report(home: Path, kind: str, seconds: list[float] | None, args: argparse.Namespace | None) -> None:
    found = document(home, kind)
    method = found["suite"]["method"]
    changes = [(s["benchmark"], c["figure"], c["before"]["label"], c["after"]["label"], c["detail"]["ratio"])
               for s in found["series"] for c in s["changes"] if c["state"] == "current"]
    points = sum(len(s["points"]) for s in found["series"])
    print(f"\n{kind}: {len(found['series'])} series, {points} points of one build "
          f"({found['series'][0]['points'][0]['engine_build'] if found['series'] else '?'})")
    print(f"  method: p ≤ {method['p_value']:g}; point against point below {method['long_series']} points, "
          f"else Otava (window {method['window']}); counters ≥ "
          f"{found['suite']['counter_method']['min_magnitude'] * 100:g} %")
    if args is not None:
        print(f"  suite: spin and TPC-C {args.warmup} warm-up + {args.duration} measured, orders {args.orders_units} "
              f"units; {args.repeats} repeats a point, or {args.pairs} pairs (orders {args.orders_pairs}); orders' and "
              f"TPC-C's forced writes {args.forced_writes or 'as fbbench runs them (on)'}")
    print(f"  changes reported (false alarms): {len(changes)}")
    for benchmark, figure, before, after, ratio in changes:
        print(f"    {benchmark}: {figure} {before} → {after} {(ratio - 1) * 100:+.2f} %")
    verdict = found["check_verdict"]
    print(f"  track check: exit {found['check_exit']}, {len(verdict['failures'])} failure(s)")
    for failure in verdict["failures"]:
        print(f"    {failure['benchmark']} {failure['figure']}: {failure['change']}")
    if seconds:
        print(f"  wall time per point (3 benchmarks): median {np.median(seconds) / 60:.1f} min, "
              f"max {max(seconds) / 60:.1f} min")
    for series in found["series"]:
        figures = list(series["points"][0]["figures"])
        for figure in [figures[0], "page fetches per unit"]:
            if kind == "relative":
                halves = [(f["high"] - f["low"]) / 2 * 100 for p in series["points"]
                          if math.isfinite((f := p["figures"].get(figure, {})).get("low", math.nan))]
                if halves:
                    print(f"  {series['benchmark']} {figure}: a point resolves ±{np.median(halves):.2f} % against "
                          f"its reference (median half-width of {len(halves)} points' 95 % intervals)")
            else:
                smallest = smallest_between_points(series, figure, method["p_value"])
                if smallest is not None:
                    print(f"  {series['benchmark']} {figure}: two points differ resolvably from "
                          f"{smallest * 100:.1f} % (Welch on logs at p ≤ {method['p_value']:g}, this spread)")
    load = os.getloadavg()
    print(f"  host: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end"
          + (f"; {args.warmup} warm-up + {args.duration} measured, repeats {args.repeats}, pairs {args.pairs}; "
             f"orders {args.orders_units} units, {args.orders_pairs} pairs" if args else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=6)
    parser.add_argument("--kind", choices=("both", "absolute", "relative"), default="both")
    parser.add_argument("--engine", default="5.0")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--orders-units", type=int, default=100)
    parser.add_argument("--orders-pairs", type=int, default=6)
    parser.add_argument("--warmup", default="5s")
    parser.add_argument("--duration", default="15s")
    parser.add_argument("--forced-writes", choices=("on", "off"),
                        help="orders' and TPC-C's databases with forced writes on or off (default: as fbbench runs "
                             "them, on); off takes the commits' fsync, which two time-shared runs share one disk "
                             "queue for, out of what the time figures follow")
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--from", dest="source", type=Path)
    args = parser.parse_args()
    kinds = ["absolute", "relative"] if args.kind == "both" else [args.kind]
    if args.source is not None:
        for kind in kinds:
            if (args.source / f"{kind}.toml").exists():
                report(args.source, kind, None, None)
        return
    home = Path(tempfile.mkdtemp(prefix="fbbench-track-alarms-"))
    try:
        fbbench(home, "engines", "install", args.engine)
        for kind in kinds:
            print(f"{kind}: {args.points} points of {args.engine}", flush=True)
            seconds = make_points(home, kind, args)
            report(home, kind, seconds, args)
    finally:
        if args.keep is not None:
            shutil.copytree(home, args.keep, dirs_exist_ok=True)
            print(f"kept in {args.keep} (--from {args.keep} prints the figures again)")
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
