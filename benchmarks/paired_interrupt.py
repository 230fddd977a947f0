"""Ctrl-C at random moments of ``fbbench compare --paired``: how many stops were clean?

The hardening issue's stress for the paired Ctrl-C hang: SIGINT is sent to a real
``compare --paired`` (embedded 5.0, the spin workload) after a random delay that falls before the
barrier (parent side, population), at the barrier, during the turns, between pairs and during a
run's after-phase, TRIES times, optionally with ``stress-ng --cpu N`` beside it. A stop is clean
when the command exits with 130 within STOP_SECONDS, prints no traceback, leaves no process of
its own behind, and leaves no run "running" in its store.

    .venv/bin/python benchmarks/paired_interrupt.py --tries 200 --stress 2

Prints one line per try that was not clean (with the moment it was hit and, for a hang, the
stacks of every process), then the count. A Ctrl-C inside the interpreter's own start-up, before
a line of fbbench runs, ends it with Python's traceback: counted apart, as nothing had started.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SPIN = REPO / "benchmarks" / "workloads" / "spin"
STOP_SECONDS = 30.0


def write_spec(directory: Path, duration: str) -> Path:
    spec = directory / "side.toml"
    settings = {"workload": str(SPIN), "engine": "5.0", "connections": 1, "warmup": "1s", "duration": duration,
                "interval": "1s", "workdir": str(directory / "work")}
    spec.write_text("".join(f"{key} = {json.dumps(value)}\n" for key, value in settings.items())
                    + "[scale]\nloops = 10\n")
    return spec


def statuses(store: Path) -> list[str]:
    if not store.exists():
        return []
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10) as db:
            return [row[0] for row in db.execute("select status from runs")]
    except sqlite3.Error:
        return []


def leftovers(marker: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    return [int(pid) for pid in found if int(pid) != os.getpid()]


CLEAN, STARTUP, EARLY, NOT_CLEAN = "clean", "python start-up", "ended before the signal", "NOT CLEAN"


def one_try(directory: Path, delay: float, pairs: int, duration: str) -> tuple[str, str, float | None]:
    """One compare --paired, SIGINT after ``delay`` seconds: (what happened, the details, seconds
    from the signal to the command's exit)."""
    spec = write_spec(directory, duration)
    store = directory / "results.sqlite"
    env = os.environ | {"FBBENCH_HOME": str(directory / "home")}
    started = time.monotonic()
    # The console script, as a user starts it (python -m fbbench would add runpy to the start-up).
    fbbench = Path(sys.executable).with_name("fbbench")
    process = subprocess.Popen([str(fbbench), "compare", "--paired", str(spec), str(spec), "--pairs", str(pairs),
                                "--results", str(store)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    if process.poll() is not None:
        process.communicate()
        return EARLY, f"exit {process.returncode} before {delay:.2f}s", None
    moment = ",".join(statuses(store)) or "no runs yet"
    process.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        out, err = process.communicate(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        stacks = "\n".join(subprocess.run(["py-spy", "dump", "--pid", str(pid)], capture_output=True,
                                          text=True).stdout for pid in [process.pid, *leftovers(str(spec))]) \
            if shutil.which("py-spy") else "(install py-spy for the stacks)"
        process.kill()
        for pid in leftovers(str(spec)):
            os.kill(pid, signal.SIGKILL)
        out, err = process.communicate()
        return NOT_CLEAN, (f"HANG at {delay:.2f}s ({moment}): no exit {STOP_SECONDS:g}s after SIGINT\n{stacks}"
                           f"\n--- stdout tail\n{out[-1500:]}\n--- stderr tail\n{err[-1500:]}"), None
    took = time.monotonic() - sent
    if moment == "no runs yet" and delay < 1.0 and "Traceback" in err \
            and str(REPO / "fbbench") not in err.split("Traceback", 1)[1]:
        # Interrupted inside the interpreter's own start-up, before a line of fbbench ran: its
        # traceback is Python's, and nothing had started.
        return STARTUP, f"at {delay:.2f}s, exit {process.returncode}", took
    problems = []
    # 130 is fbbench's answer to Ctrl-C; -SIGINT is a Ctrl-C that came while the interpreter was
    # already exiting (it restores the default action): the work had ended.
    if process.returncode not in (130, -signal.SIGINT):
        problems.append(f"exit {process.returncode}")
    if "Traceback" in out + err:
        problems.append("traceback")
    time.sleep(0.5)
    left = leftovers(str(spec))
    if left:
        problems.append(f"processes left: {left}")
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    running = [s for s in statuses(store) if s == "running"]
    if running:
        problems.append(f"{len(running)} run(s) still 'running' in the store")
    detail = f"at {delay:.2f}s ({moment}), stopped in {took:.1f}s, total {time.monotonic() - started:.1f}s"
    if problems:
        return NOT_CLEAN, (detail + ": " + "; ".join(problems) + f"\n--- stdout tail\n{out[-2500:]}"
                           f"\n--- stderr tail\n{err[-1500:]}"), took
    return CLEAN, detail, took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=200)
    parser.add_argument("--stress", type=int, default=0, help="stress-ng --cpu N beside the tries (0: none)")
    parser.add_argument("--max-delay", type=float, default=8.0,
                        help="the signal comes after a uniform random delay in [0, this] seconds")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--duration", default="2s", help="each run's measured period")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the directory of every try that was not clean")
    args = parser.parse_args()
    # A shell starts a background job with SIGINT ignored, and an ignored signal stays ignored in
    # every child: fbbench would never see the Ctrl-C this script sends. Ours is the default again.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rng = random.Random(args.seed)
    stress = None
    if args.stress:
        if not shutil.which("stress-ng"):
            print("stress-ng is not installed (apt-get install stress-ng)", file=sys.stderr)
            return 2
        stress = subprocess.Popen(["stress-ng", "--cpu", str(args.stress), "--quiet"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
    counts = dict.fromkeys((CLEAN, STARTUP, EARLY, NOT_CLEAN), 0)
    stop_seconds: list[float] = []
    try:
        for index in range(1, args.tries + 1):
            delay = rng.uniform(0, args.max_delay)
            with tempfile.TemporaryDirectory(prefix="fbbench-interrupt-") as tmp:
                kind, detail, took = one_try(Path(tmp), delay, args.pairs, args.duration)
                if took is not None:
                    stop_seconds.append(took)
                if kind == NOT_CLEAN and args.keep:
                    kept = Path(tempfile.mkdtemp(prefix=f"fbbench-interrupt-try{index}-"))
                    shutil.copytree(tmp, kept, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.fdb"))
                    detail += f"\n(kept in {kept})"
            counts[kind] += 1
            if kind != CLEAN:
                print(f"try {index}: {kind}: {detail}", flush=True)
            elif index % 10 == 0:
                print(f"try {index}: {counts[CLEAN]} clean so far (last: {detail})", flush=True)
    finally:
        if stress is not None:
            stress.terminate()
            stress.wait()
    stopped = args.tries - counts[EARLY]
    print(f"paired Ctrl-C stress: {counts[CLEAN] + counts[STARTUP]} of {stopped} stops clean, {counts[NOT_CLEAN]} not "
          f"({counts[STARTUP]} of the clean ones came inside Python's own start-up, before fbbench ran: "
          f"killed by the signal or the interpreter's traceback, nothing started; {counts[EARLY]} tries ended "
          f"before their signal) — SIGINT "
          f"after 0–{args.max_delay:g} s, --pairs {args.pairs}, {args.duration} measured, "
          f"stress-ng --cpu {args.stress}")
    if stop_seconds:
        ordered = sorted(stop_seconds)
        print(f"seconds from SIGINT to the command's exit: median {ordered[len(ordered) // 2]:.2f}, "
              f"95th percentile {ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]:.2f}, "
              f"max {ordered[-1]:.2f} (over {len(ordered)} stops; a hang counts after {STOP_SECONDS:g} s)")
    return 0 if counts[NOT_CLEAN] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
