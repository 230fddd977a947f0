"""How long does ``fbbench track publish`` take for a long series, and for one more point?

A results store made for the purpose holds one suite with ``--series`` series of ``--points``
points in all (each point 3 runs, each run with a report file beside the store, as ``fbbench
run`` leaves one: the site hard-links them), the figures of a real point (a headline with an
interval and the six counters), a step in the middle of each series so that changes and their
pages exist, and plans at every point. Then, through the real command:

1. ``track publish`` into a new directory: every page, the run reports, the feed (target: 1,000
   points under 10 s);
2. one more point in one series, and ``track publish`` again: only what changed (target: under 1 s).

Publishing again with nothing new, one more point (each in the next series) and the fixed cost are
each measured ``--repeat`` times (5): their median and range are printed.

The points are made without an engine (their figures are drawn around fixed levels); the
change detection, the site and the run pages are the real ones. ``track run`` looks at a series
for changes as it adds each point, so the store is looked at before the first publish, as
``track run`` would have left it (that time is printed apart: 1,000 points looked at from scratch
replay every length of every series), and the one more point is looked at as ``track run`` does
before the publish after it. Each publish is timed as the whole command and as its site step (what
the command says); the command's fixed cost (Python and fbbench starting: ``fbbench --version``) is
printed beside them. Printed with the host's CPUs and load average.

    .venv/bin/python benchmarks/track_publish_speed.py [--points 1000] [--series 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fbbench import paths  # noqa: E402
from fbbench.analysis import track as tracking  # noqa: E402
from fbbench.analysis.changepoints import Method  # noqa: E402
from fbbench.store import ResultsStore  # noqa: E402
from fbbench.store import track as stored  # noqa: E402
from fbbench.track import changes  # noqa: E402
from fbbench.track.suite import read_suite  # noqa: E402

COUNTERS = list(tracking.counter_names().values())
PAGE = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n{paths.HTML_GENERATOR}\n'
        "<title>run</title></head><body>" + "x" * 150_000 + "</body></html>\n")
PLANS = {"statements": [{"unit": "u", "statement": 1, "sql": "select count(*) from t where v = ?",
                         "plan": "PLAN (T INDEX (T_V))", "explained": "Select Expression\n  -> Filter"}],
         "routines": []}


def add_point(store: ResultsStore, results: Path, series_id: str, number: int, level: float,
              rng: np.random.Generator, at: float) -> None:
    runs = []
    run_series = f"s-{series_id}-{number}"
    for repeat in range(1, 4):
        run_id = f"r-{series_id}-{number}-{repeat}"
        store.db.execute("insert into runs (run_id, started_at, status, workload, settings_json, series_id, "
                         "repeat_index) values (?, ?, 'completed', 'synthetic', '{}', ?, ?)",
                         (run_id, at, run_series, repeat))
        report = paths.default_report(results, run_id)
        report.write_text(PAGE)
        runs.append(run_id)
    samples = list(rng.normal(level, level * 0.03, 3))
    figures = {"elapsed": {"kind": tracking.FIGURE, "better": "lower", "unit": " s", "samples": samples,
                           "value": float(np.median(samples)), "low": min(samples), "high": max(samples), "n": 3}}
    for name in COUNTERS:
        value = 1000.0 * level
        figures[name] = {"kind": tracking.COUNTER, "better": "lower", "unit": "", "samples": [value] * 3,
                         "value": value, "low": value, "high": value, "n": 3}
    stored.add_point(store, stored.PointRow(f"p{series_id}-{number:05d}", series_id, "speed", series_id,
                                            f"build {number}", "5.0", "LI-V5.0.4.1812 Firebird 5.0", None, None, at,
                                            None, run_series, {"data": {"host.name": "synthetic"}}, figures, PLANS,
                                            {"B": runs}))


def _suite_methods(suite: Path) -> tuple[Method, Method]:
    parsed = read_suite(suite)
    return parsed.method, parsed.counter_method


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--series", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="keep the store and the site here")
    parser.add_argument("--repeat", type=int, default=5, help="times the fixed cost, publishing again with "
                        "nothing new, and one more point are each measured (median and range printed)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fbbench-publish-speed-"))
    try:
        results = home / "results.sqlite"
        suite = home / "speed.toml"
        suite.write_text('name = "speed"\n[[benchmark]]\nname = "orders"\nworkload = "orders"\n')
        paths.default_report(results, "x").parent.mkdir(parents=True)
        rng = np.random.default_rng(1)
        started = time.time() - args.points * 60
        per_series = args.points // args.series
        with ResultsStore(results) as store:
            for s in range(args.series):
                series_id = f"t{s}"
                stored.add_series(store, stored.SeriesRow(series_id, "speed", series_id, "absolute", "engine", None,
                                                          started, None, 0))
                for n in range(per_series):
                    level = 1.0 if n < per_series // 2 else 1.3
                    add_point(store, results, series_id, n, level, rng, started + (s * per_series + n) * 60)
        env = {**os.environ, "FBBENCH_HOME": str(home)}
        site = home / "site"

        def publish() -> tuple[float, str]:
            clock = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "fbbench", "track", "publish", str(suite), "-o", str(site),
                                   "--results", str(results)], capture_output=True, text=True, env=env, cwd=HERE.parent)
            seconds = time.monotonic() - clock
            if done.returncode != 0:
                sys.exit(done.stdout[-2000:] + done.stderr[-2000:])
            return seconds, done.stdout.strip()

        methods = changes.methods_of(*_suite_methods(suite))

        def look() -> float:  # what track run does after adding a point
            clock = time.monotonic()
            with ResultsStore(results) as store:
                changes.evaluate_suite(store, "speed", methods)
            return time.monotonic() - clock

        def started_only() -> float:
            clock = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "fbbench", "--version"], capture_output=True, env=env,
                                  cwd=HERE.parent)
            assert done.returncode == 0, done.stderr
            return time.monotonic() - clock

        def spread(times: list[float]) -> str:
            return (f"{float(np.median(times)):.2f} s (median of {len(times)}, {min(times):.2f}–{max(times):.2f})"
                    if len(times) > 1 else f"{times[0]:.2f} s")

        print(f"{args.points} points in {args.series} series (3 runs each, a report each): looked at for changes from "
              f"scratch (every length, as if they came one by one) {look():.1f} s — track run does it a point at a "
              f"time\nthe command's fixed cost (fbbench --version): "
              f"{spread([started_only() for _ in range(args.repeat)])}")
        first, said = publish()
        print(f"publish into a new directory: {first:.2f} s (the command)\n  {said}")
        again = [publish() for _ in range(args.repeat)]
        print(f"publish again, nothing new: {spread([seconds for seconds, _ in again])}\n  {again[-1][1]}")
        looked, one = [], []
        for extra in range(args.repeat):
            with ResultsStore(results) as store:
                add_point(store, results, f"t{extra % args.series}", per_series + extra // args.series, 1.3, rng,
                          time.time())
            looked.append(look())
            one.append(publish())
        print(f"one more point: looked at for changes {spread(looked)} (in track run), then publish again: "
              f"{spread([seconds for seconds, _ in one])} (the command)\n  {one[-1][1]}")
        load = os.getloadavg()
        print(f"host: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; the site on the "
              f"store's file system (run reports hard-linked)")
    finally:
        if args.keep is not None:
            shutil.copytree(home, args.keep, dirs_exist_ok=True)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
