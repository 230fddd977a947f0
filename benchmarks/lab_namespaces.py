"""A lab off loopback on one machine, shown step by step (root only).

The scheduler, hosts ``a`` and ``b`` and the coordinator each get a network namespace of their
own on one link-local segment (fbbench/shape/segment.py), so the lab runs with mutual TLS as
between machines. Host ``b`` is 200 ms away (a delay line holds its frames 100 ms each way). Then:

1. a host-axis sweep (the bank test workload, a and b) runs over that link;
2. host ``a``'s link is cut in the middle of a cell for ``--partition`` seconds (longer than the
   scheduler's ``worker-ttl``): the cell is recorded as failed there, or finishes;
3. the worker is started again if it left, and ``fbbench sweep --resume`` completes the rest;
4. every (cell, repeat) is counted once in the coordinator's store, and each run it counts is one
   its host finished.

Every command is printed as it runs. Nothing leaves the namespaces; they are removed at the end,
on Ctrl-C, and — recorded in ``--state`` before they are made — by the next start after a kill.

    sudo .venv/bin/python benchmarks/lab_namespaces.py [--partition 15] [--state /var/tmp/fbbench-lab-ns]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from fbbench.shape.segment import Segment, remove_recorded  # noqa: E402

BANK = REPO / "tests" / "workloads" / "bank"
PORT = 8786
ENV = {**os.environ, "COLUMNS": "160", "PYTHONPATH": str(REPO)}


def say(text: str) -> None:
    print(text, flush=True)


def query(store: Path, sql: str) -> list[tuple[Any, ...]]:
    if not store.exists():
        return []
    try:
        with closing(sqlite3.connect(store, timeout=10)) as db:
            return db.execute(sql).fetchall()
    except sqlite3.OperationalError:
        return []


class Demo:
    def __init__(self, root: Path, segment: Segment) -> None:
        self.root, self.segment = root, segment
        self.tls = root / "tls"
        self.address = f"tls://{segment.address('scheduler')}:{PORT}"
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def fbbench(self, member: str, *argv: str, home: str | None = None) -> list[str]:
        say(f"[{member}] fbbench {' '.join(shlex.quote(a) for a in argv)}")
        return self.segment.command(member, [sys.executable, "-m", "fbbench", *argv])

    def start(self, member: str, ready: str, *argv: str, env: dict[str, str] | None = None) -> None:
        log = self.root / f"{member}.log"
        offset = log.stat().st_size if log.exists() else 0  # a member started again: only its new lines
        process = subprocess.Popen(self.fbbench(member, *argv), stdout=log.open("ab"), stderr=subprocess.STDOUT,
                                   cwd=REPO, start_new_session=True, env={**ENV, **(env or {})})
        self.processes[member] = process
        deadline = time.monotonic() + 120
        while ready not in log.read_text()[offset:]:
            if process.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"{member} did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.2)

    def worker(self, name: str) -> None:
        self.start(name, "joined the lab", "lab", "worker", self.address, "--name", name, "--engine", "5.0",
                   "--tls", str(self.tls), env={"FBBENCH_HOME": str(self.root / f"home-{name}")})

    def joined(self) -> set[str]:
        listed = subprocess.run(self.segment.command("coordinator", [
            sys.executable, "-m", "fbbench", "lab", "hosts", self.address, "--tls", str(self.tls)]),
            capture_output=True, text=True, cwd=REPO, env=ENV).stdout
        rows = [[c.strip() for c in line.split("│")[1:3]] for line in listed.splitlines() if line.startswith("│")]
        return {name for name, state in rows if state == "joined"}

    def sweep(self, *argv: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(self.fbbench("coordinator", "sweep", *argv, "--lab", self.address, "--tls",
                                             str(self.tls), "--results", str(self.root / "coordinator.sqlite")),
                                cwd=REPO, env={**ENV, "FBBENCH_HOME": str(self.root / "home-coordinator")},
                                start_new_session=True)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGINT)
        for process in self.processes.values():
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)


def spec(root: Path, name: str, duration: str, hosts: str) -> Path:
    path = root / f"{name}.toml"
    path.write_text(f'workload = "{BANK}"\nwarmup = "0.5s"\nduration = "{duration}"\ninterval = "0.5s"\n'
                    f'sweep = false\nrepeats = 2\n[scale]\naccounts = 200\n[matrix]\nhost = {hosts}\n')
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partition", type=float, default=15.0, help="seconds host a's link stays down")
    parser.add_argument("--state", type=Path, default=Path("/var/tmp/fbbench-lab-ns"),
                        help="where the namespaces are recorded before they are made")
    parser.add_argument("--keep", action="store_true", help="keep the homes, logs, stores and reports")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("network namespaces need root: run this as root")
    left = remove_recorded(args.state)
    if left:
        say(f"removed what a killed demo left: {', '.join(left)}")
    root = Path(tempfile.mkdtemp(prefix="fbbench-lab-ns-", dir="/var/tmp"))
    subprocess.run([sys.executable, "-m", "fbbench", "lab", "init", str(root / "tls")], check=True, cwd=REPO,
                   env=ENV, stdout=subprocess.DEVNULL)
    started = time.monotonic()
    with Segment(["scheduler", "a", "b", "coordinator"], args.state, delays={"b": 0.1}) as segment:
        say("segment: " + ", ".join(f"{m} {segment.address(m)}" for m in segment.members) + "; b's frames held "
            "100 ms each way")
        demo = Demo(root, segment)
        try:
            demo.start("scheduler", "lab scheduler at", "lab", "scheduler", "--host", segment.address("scheduler"),
                       "--port", str(PORT), "--tls", str(demo.tls),
                       env={"DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": "6s"})
            for name in ("a", "b"):
                demo.worker(name)
            say("\n1. a host-axis sweep over a and b (b 200 ms away)")
            first = demo.sweep(str(spec(root, "both", "1s", '["a", "b"]')))
            say(f"   sweep ended with {first.wait()}")
            say(f"\n2. a cell on a; its link cut for {args.partition:g} s in the middle of it")
            second = demo.sweep(str(spec(root, "partition", "8s", '["a"]')))
            host_store = root / "home-a" / "results.sqlite"
            measuring = "select count(distinct idx) from intervals where phase = 'measure' and run_id in " \
                        "(select run_id from runs where status = 'running')"
            while (query(host_store, measuring) or [(0,)])[0][0] < 2 and second.poll() is None:
                time.sleep(0.2)
            segment.cut("a")
            say("   a's link is down")
            time.sleep(args.partition)
            segment.mend("a")
            say(f"   a's link is up again; the sweep ended with {second.wait()}")
            say("\n3. a back in the lab, then sweep --resume")
            while "a" not in demo.joined() and demo.processes["a"].poll() is None:
                time.sleep(1)
            if "a" not in demo.joined():
                say("   the worker the scheduler gave up on left; started again")
                demo.worker("a")
            say(f"   resume ended with {demo.sweep('--resume', 'last').wait()}")
            say("\n4. the coordinator's runs of the partitioned sweep")
            rows = query(root / "coordinator.sqlite", "select run_id, cell, repeat_index, status, "
                         "substr(coalesce(failure, ''), 1, 70) from runs where sweep_id = (select sweep_id "
                         "from runs where sweep_id is not null order by started_at desc limit 1)")
            for row in rows:
                say("   " + " | ".join(str(v) for v in row))
            counted = sorted((cell, repeat) for _, cell, repeat, status, _ in rows if status == "completed")
            on_host = {r[0] for r in query(host_store, "select run_id from runs where status = 'completed'")}
            say(f"   completed (cell, repeat): {counted}; each counted once: {len(counted) == len(set(counted))}; "
                f"every one of them finished on host a: "
                f"{all(r[0] in on_host for r in rows if r[3] == 'completed')}")
        finally:
            demo.stop()
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
    removed = "namespaces removed" + ("" if args.keep else f" and {root}")
    say(f"\n{removed}; {time.monotonic() - started:.0f} s in all; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
