"""What does a lab cost? Figures, not a timed test.

A lab of two hosts on this machine (``fbbench lab scheduler`` on loopback and two ``fbbench lab
worker`` processes, each with its own FBBENCH_HOME: its own work directory and results store),
against the same cells run locally. Prints:

- the time from a sweep's start to its first run measuring, locally and on the lab (the sweep
  row's creation to the first run's measure phase, both from the coordinator's store);
- the lab's overhead per run: the same N cells (a host axis naming one host, so that both run
  one after the other) on the lab and locally, wall time of the whole sweep command, the
  difference divided by N (target: < 3 s a run);
- a TPC-C run's bundle: its size, and the time to import it into an empty store (median of
  several imports; target: a 60 s TPC-C run's bundle imports in < 1 s).

    .venv/bin/python benchmarks/lab_overhead.py [--runs 4] [--duration 2s] [--tpcc-duration 60s] [--imports 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BANK = REPO / "tests" / "workloads" / "bank"


def _fbbench(*args: str, home: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "fbbench", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "FBBENCH_HOME": str(home), "COLUMNS": "200"})
    if check and done.returncode != 0:
        sys.exit(f"fbbench {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return done


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while text not in log.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"no '{text}' from {log.name}:\n{log.read_text()[-2000:]}")
        time.sleep(0.2)


def _start(argv: list[str], log: Path, home: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:
        return subprocess.Popen([sys.executable, "-m", "fbbench", *argv], cwd=REPO, stdout=output,
                                stderr=subprocess.STDOUT, env={**os.environ, "FBBENCH_HOME": str(home)},
                                start_new_session=True)


def _spec(path: Path, body: str, duration: str) -> Path:
    path.write_text(f'workload = "{BANK}"\nwarmup = "0.5s"\nduration = "{duration}"\ninterval = "0.5s"\n'
                    f'sweep = false\nrepeats = 1\n[scale]\naccounts = 200\n[matrix]\n{body}')
    return path


def _first_measure(store: Path) -> float:
    """Seconds from the (latest) sweep's creation to its first run's measure phase."""
    with closing(sqlite3.connect(store)) as db:
        sweep_id, created = db.execute("select sweep_id, created_at from sweeps order by created_at desc").fetchone()
        first = db.execute("select min(p.started_at) from phases p join runs r using (run_id) "
                           "where r.sweep_id = ? and p.name = 'measure'", (sweep_id,)).fetchone()[0]
    return float(first - created)


def _timed_sweep(spec: Path, home: Path, store: Path, *lab: str) -> float:
    started = time.monotonic()
    _fbbench("sweep", str(spec), "--results", str(store), *lab, home=home)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=4, help="cells run one after the other, locally and on the lab")
    parser.add_argument("--duration", default="2s", help="measured period of each of those runs")
    parser.add_argument("--tpcc-duration", default="60s", help="the TPC-C run whose bundle is measured")
    parser.add_argument("--imports", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="local and lab sweeps, interleaved")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="fbbench-lab-overhead-", dir="/tmp"))
    processes: list[subprocess.Popen[bytes]] = []
    load_before = os.getloadavg()
    try:
        port = _free_port()
        address = f"tcp://127.0.0.1:{port}"
        scheduler = _start(["lab", "scheduler", "--port", str(port)], root / "scheduler.log", root / "coordinator")
        processes.append(scheduler)
        _wait_for(root / "scheduler.log", "lab scheduler at", scheduler)
        for name in ("a", "b"):
            worker = _start(["lab", "worker", address, "--name", name, "--engine", "5.0"], root / f"worker-{name}.log",
                            root / f"home-{name}")
            processes.append(worker)
            _wait_for(root / f"worker-{name}.log", "joined the lab", worker)
        coordinator, local = root / "coordinator", root / "local"
        connections = list(range(1, args.runs + 1))
        # Warm both: the population cache of each home is built once, outside the figures.
        _timed_sweep(_spec(root / "warm.toml", 'host = ["a", "b"]\nconnections = [1]\n', "0.5s"), coordinator,
                     coordinator / "r.sqlite", "--lab", address)
        _timed_sweep(_spec(root / "warm-local.toml", "connections = [1]\n", "0.5s"), local, local / "r.sqlite")

        one_host = _spec(root / "one-host.toml", f'host = ["a"]\nconnections = {connections}\n', args.duration)
        local_spec = _spec(root / "local.toml", f"connections = {connections}\n", args.duration)
        # Interleaved, round by round, so that the machine's drift falls on both alike.
        lab_walls, local_walls, lab_firsts, local_firsts = [], [], [], []
        for _ in range(args.rounds):
            lab_walls.append(_timed_sweep(one_host, coordinator, coordinator / "r.sqlite", "--lab", address))
            lab_firsts.append(_first_measure(coordinator / "r.sqlite"))
            local_walls.append(_timed_sweep(local_spec, local, local / "r.sqlite"))
            local_firsts.append(_first_measure(local / "r.sqlite"))
        two_hosts = _spec(root / "two-hosts.toml", f"connections = {connections}\n", args.duration)
        blocks_wall = _timed_sweep(two_hosts, coordinator, coordinator / "r.sqlite", "--lab", address)

        tpcc = root / "tpcc"
        _fbbench("run", "tpcc", "--scale", "warehouses=1", "-c", "4", "--warmup", "10s", "--duration",
                 args.tpcc_duration, "--results", str(tpcc / "r.sqlite"), home=tpcc)
        bundle = root / "tpcc.fbbundle"
        _fbbench("results", "export", "last", "-o", str(bundle), "--results", str(tpcc / "r.sqlite"), home=tpcc)
        bundle_size = bundle.stat().st_size
        with closing(sqlite3.connect(tpcc / "r.sqlite")) as db:
            rows = sum(db.execute(f"select count(*) from {table}").fetchone()[0]
                       for table in ("intervals", "engine_samples", "unit_totals", "metrics", "checks", "phases"))
        imports = []
        for attempt in range(args.imports):
            target = root / f"import-{attempt}.sqlite"
            started = time.monotonic()
            _fbbench("results", "import", str(bundle), "--results", str(target), home=tpcc)
            imports.append(time.monotonic() - started)
        in_process = []
        sys.path.insert(0, str(REPO))
        from fbbench.store import ResultsStore, exchange
        from fbbench.store import bundle as bundles

        for attempt in range(args.imports):
            started = time.monotonic()
            with ResultsStore(root / f"direct-{attempt}.sqlite") as store:
                exchange.import_bundle(store, bundles.read(bundle))
            in_process.append(time.monotonic() - started)
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGINT)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)
    load_after = os.getloadavg()
    print(f"lab overhead — a 2-host lab on this machine ({os.cpu_count()} CPUs; load {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after), loopback, Firebird 5.0 embedded, bank workload at 200 accounts, "
          f"warm-up 0.5 s + {args.duration} measured a run")
    print(f"  from a sweep's start to its first run measuring (median of {args.rounds}): local "
          f"{statistics.median(local_firsts):.2f} s, lab {statistics.median(lab_firsts):.2f} s")
    differences = [(lab - local) / args.runs for lab, local in zip(lab_walls, local_walls, strict=True)]
    print(f"  {args.runs} runs one after the other, {args.rounds} rounds interleaved: local "
          f"{', '.join(f'{w:.1f}' for w in local_walls)} s; lab (one host) "
          f"{', '.join(f'{w:.1f}' for w in lab_walls)} s: "
          f"the lab's cost per run {', '.join(f'{d:+.2f}' for d in differences)} s, median "
          f"{statistics.median(differences):+.2f} s (target < 3 s)")
    print(f"  the same {args.runs} cells on both hosts (host as a block, {2 * args.runs} runs): {blocks_wall:.1f} s")
    print(f"  a TPC-C run's bundle (1 warehouse, 4 connections, 10 s warm-up + {args.tpcc_duration}, {rows:,} stored "
          f"rows besides the run's): {bundle_size / 1024:,.1f} KiB")
    print(f"  its import into an empty store: fbbench results import {statistics.median(imports):.2f} s "
          f"(median of {len(imports)}, the CLI's start included); exchange.import_bundle "
          f"{statistics.median(in_process) * 1000:.0f} ms (median of {len(in_process)}) (target < 1 s)")


if __name__ == "__main__":
    main()
