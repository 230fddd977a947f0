"""Does fbbench (or the engine under it) grow while it runs for a long time? A soak test.

64 attachments of TPC-C on embedded Firebird 5.0 for 30 minutes (``--minutes`` to shorten): the
resident memory (RSS) of the engine process (embedded, the engine runs in fbbench's engine child,
with the load core and the sampler) and of the fbbench process that started it, sampled at every
``--interval``, next to the throughput of each interval and what Firebird itself says it
allocated (MON$MEMORY_USAGE, read by the run's sampler at each interval's end). Then the trend of each RSS per
hour with its 95 % interval: the Theil–Sen slope of the samples taken while measuring, judged as
the run's own steady state fits throughput (fbbench/analysis/steady.py), said to resolve growth
when its interval excludes 0, with the slopes of the first and second half beside it (memory that
fills a cache levels off; a leak does not). The target: no growth resolved.

Everything happens in a private FBBENCH_HOME under /tmp, deleted at the end.

    .venv/bin/python benchmarks/soak.py [--minutes 30] [--connections 64] [--warehouses 4] [--interval 30]
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

import psutil
from fbbench_run import HERE

from fbbench.analysis.steady import IntervalSeries, SteadyState, steady_state

MB = 1 << 20


def engine_child(parent: psutil.Process) -> psutil.Process | None:
    try:
        children = parent.children(recursive=True)
    except psutil.Error:
        return None
    return next((c for c in children if _is_engine_child(c)), None)


def _is_engine_child(process: psutil.Process) -> bool:
    try:
        return "child_main" in " ".join(process.cmdline())
    except psutil.Error:
        return False


def rss(process: psutil.Process | None) -> float | None:
    try:
        return float(process.memory_info().rss) if process is not None else None
    except psutil.Error:
        return None


def trend(samples: list[tuple[float, float]], start: float, end: float, step: float) -> SteadyState | None:
    """The steady-state judgement of the samples taken in [start, end] (seconds, bytes)."""
    inside = [(t, value / MB) for t, value in samples if start <= t <= end]
    if len(inside) < 5:
        return None
    return steady_state(IntervalSeries(tuple(v for _, v in inside), tuple(step for _ in inside),
                                       tuple(t - start for t, _ in inside), tuple(True for _ in inside),
                                       "RSS", " MB"))


def trend_text(name: str, samples: list[tuple[float, float]], start: float, end: float, step: float) -> str:
    """The slope per hour with its 95 % interval, whether it resolves growth, and the slopes of
    the first and second half (a cache that fills slows down; a leak does not)."""
    state = trend(samples, start, end, step)
    if state is None:
        return f"{name}: too few samples while measuring"
    minutes = (end - start) / 60
    slope, low, high = (value * state.center for value in (state.slope, state.slope_low, state.slope_high))
    if low > 0:
        verdict = "growth resolved"
    elif high < 0:
        verdict = "shrinking resolved"
    else:
        verdict = "no growth resolved"
    material = "" if state.trend == "none" else f"; a {state.trend} trend by the run's own rule (≥ 5 % over the period)"
    middle = start + (end - start) / 2
    halves = [trend(samples, a, b, step) for a, b in ((start, middle), (middle, end))]
    split = ", ".join(f"{label} {half.slope * half.center:+,.1f} MB/h" for label, half in zip(
        ("first half", "second half"), halves, strict=True) if half is not None)
    return (f"{name}: level {state.center:,.1f} MB; slope {slope:+,.2f} MB/h, 95 % CI {low:+,.2f} to {high:+,.2f} "
            f"MB/h over {state.n_measured} samples in {minutes:.1f} min, a change of {state.slope * minutes / 60:+.2%}"
            f" of the level — {verdict}{material}" + (f" ({split})" if split else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="measured period (default 30)")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--warehouses", type=int, default=4)
    parser.add_argument("--interval", type=float, default=30.0, help="seconds between samples and intervals")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds of warm-up")
    parser.add_argument("--engine", default="5.0")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fbbench-soak-", dir="/tmp"))
    document = home / "soak.json"
    command = [sys.executable, "-m", "fbbench", "run", "tpcc", "--engine", args.engine,
               "--scale", f"warehouses={args.warehouses}", "--connections", str(args.connections),
               "--warmup", f"{args.warmup:g}s", "--duration", f"{args.minutes * 60:g}s",
               "--interval", f"{args.interval:g}s", "--json", str(document), "--report", str(home / "soak.html")]
    samples: dict[str, list[tuple[float, float]]] = {"engine": [], "fbbench": []}
    try:
        with open(home / "output.txt", "w") as output:
            started = time.time()
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, cwd=HERE.parent,
                                       env={**os.environ, "FBBENCH_HOME": str(home), "COLUMNS": "120"})
            parent = psutil.Process(process.pid)
            child = None
            while process.poll() is None:
                child = child if child is not None and child.is_running() else engine_child(parent)
                now = time.time()
                for name, target in (("engine", child), ("fbbench", parent)):
                    value = rss(target)
                    if value is not None:
                        samples[name].append((now, value))
                time.sleep(max(0.0, args.interval - (time.time() - now)))
        if process.returncode != 0 or not document.exists():
            sys.exit(f"fbbench run failed (exit {process.returncode}):\n"
                     f"{(home / 'output.txt').read_text()[-3000:]}")
        run = json.loads(document.read_text())
        report(args, run, samples, started)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def report(args: argparse.Namespace, run: dict, samples: dict[str, list[tuple[float, float]]], started: float) -> None:
    engine = run.get("engine") or {}
    print(f"soak: TPC-C, {args.warehouses} warehouse(s), {args.connections} attachments, embedded "
          f"{engine.get('version') or args.engine}, {engine.get('mode') or 'Super'}; warm-up {args.warmup:g} s, "
          f"measured {run['measure_seconds'] / 60:.1f} min, intervals and samples every {args.interval:g} s; "
          f"host: {os.cpu_count()} CPUs, {psutil.virtual_memory().total / (1 << 30):.0f} GiB\n")
    scores = {row["index"]: row["score_per_minute"] for row in run.get("interval_scores", [])}
    # Each interval's end on the wall clock: the engine sampler's reading at its boundary.
    ends = {row["index"]: (row["phase"], row["sample"]["taken_at"]) for row in run.get("engine_samples", [])
            if (row.get("sample") or {}).get("taken_at")}
    # What Firebird says it allocated (MON$MEMORY_USAGE: the database's pool and the attachments'),
    # read at the same boundaries: what of the growth is the engine's own. Allocated is not
    # resident (it can exceed the RSS), so it is a trend to set beside the RSS, not a part of it.
    held = {row["index"]: (row.get("memory") or {}) for row in run.get("engine_samples", [])}
    firebird = [(ends[index][1], float((held[index].get("allocated") or 0)
                                       + (held[index].get("attachments_allocated") or 0)))
                for index in sorted(ends) if held.get(index)]
    measured = sorted(at for phase, at in ends.values() if phase == "measure")
    warmed = [at for phase, at in ends.values() if phase == "warmup"]
    if not measured:
        sys.exit("the run recorded no measured interval with its time (was --no-monitor given?)")
    measured_from, measured_to = max(warmed, default=measured[0]), measured[-1]

    def nearest(name: str, at: float) -> str:
        found = min(samples[name], key=lambda sample: abs(sample[0] - at), default=None)
        return f"{found[1] / MB:,.1f}" if found is not None else "–"

    samples["firebird"] = firebird
    print(f"{'interval':>8} {'phase':>8} {'at s':>7} {'score/min':>10} {'engine RSS MB':>14} "
          f"{'Firebird alloc. MB':>18} {'fbbench RSS MB':>15}")
    for index in sorted(ends):
        phase, at = ends[index]
        print(f"{index:>8} {phase:>8} {at - started:>7.0f} {scores.get(index, 0):>10,.0f} "
              f"{nearest('engine', at):>14} {nearest('firebird', at):>18} {nearest('fbbench', at):>15}")
    print()
    for name, label in (("engine", "engine process (engine, load core, sampler)"),
                        ("firebird", "what Firebird says it allocated (MON$MEMORY_USAGE, not all resident)"),
                        ("fbbench", "fbbench process")):
        print(trend_text(label, samples[name], measured_from, measured_to, args.interval))
    steady = run.get("steady") or {}
    if steady:
        print(f"throughput: {steady.get('text', '')}")
    print(f"\npeak RSS of the engine process {(run.get('peak_rss_bytes') or 0) / MB:,.0f} MB (its VmHWM); "
          "'at s' counts from fbbench's start")

if __name__ == "__main__":
    main()
