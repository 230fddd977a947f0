"""How long does ``fbbench track publish`` take for a long series, and for one more point?

A results store made for the purpose holds one suite with ``--series`` series of ``--points``
points in all (each point 3 runs, each run with a report file beside the store, as ``fbbench
run`` leaves one: the site hard-links them), the figures of a real point (a headline with an
interval and the six counters), a step in the middle of each series so that changes and their
pages exist, and plans at every point. Then, through the real command:

1. ``track publish`` into a new directory: every page, the run reports, the feed (target: 1,000
   points under 10 s);
2. one more point in one series, and ``track publish`` again: only what changed (target: under 1 s).

The points are made without an engine (their figures are drawn around fixed levels); the
change detection, the site and the run pages are the real ones. Printed with the host's CPUs and
load average.

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
from fbbench.store import ResultsStore  # noqa: E402
from fbbench.store import track as stored  # noqa: E402

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
                                            None, run_series, {"data": {"host.name": "synthetic"}}, figures, PLANS))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--series", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="keep the store and the site here")
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

        first, said = publish()  # the first look at each series (the changes) and the whole site
        print(f"{args.points} points in {args.series} series (3 runs each): publish into a new directory "
              f"{first:.2f} s (the command, Python's start included)\n  {said}")
        again, said = publish()
        print(f"publish again, nothing new: {again:.2f} s\n  {said}")
        with ResultsStore(results) as store:
            add_point(store, results, "t0", per_series, 1.3, rng, time.time())
        one, said = publish()
        print(f"one more point, publish again: {one:.2f} s\n  {said}")
        load = os.getloadavg()
        print(f"host: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; the site on the "
              f"store's file system (run reports hard-linked)")
    finally:
        if args.keep is not None:
            shutil.copytree(home, args.keep, dirs_exist_ok=True)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
