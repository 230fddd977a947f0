"""A lab off loopback on one machine: the scheduler, each worker and the coordinator in network
namespaces of their own, joined on one link-local segment (fbbench/shape/segment.py), so the lab
runs with mutual TLS as docs/lab.md requires. A host-axis sweep runs over a link with a 200 ms
round trip; a partition in the middle of a cell is survived: the cell is recorded as failed (or
finishes), ``sweep --resume`` completes the rest, and no run is lost or counted twice.

Root only (namespaces); skipped elsewhere with the reason. No traffic leaves the namespaces.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from fbbench.shape import network
from fbbench.shape.segment import PREFIX as SEGMENT_PREFIX
from fbbench.shape.segment import Segment
from tests.conftest import REPO

# Beside other tests: the namespaces are the segment's own (fbbench-seg-TOKEN-*, no other test makes
# or counts them), the partition outlasts WORKER_TTL by 9 s and the 200 ms link's probe is a lower
# bound, which a busy machine only exceeds.

BANK = REPO / "tests" / "workloads" / "bank"
PORT = 8786
WORKER_TTL = "6s"  # the scheduler gives a silent worker up after this (Dask's default: 5 minutes)


def _query(store: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    if not store.exists():
        return []
    try:
        with closing(sqlite3.connect(store, timeout=10)) as db:
            return db.execute(sql, args).fetchall()
    except sqlite3.OperationalError:
        return []


def _wait(condition: Any, seconds: float, what: str, log: Path | None = None) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}" + (f":\n{log.read_text()[-3000:]}" if log else ""))


class NamespacedLab:
    """A scheduler, workers a and b and a coordinator, each in its own namespace, with TLS."""

    def __init__(self, root: Path, segment: Segment) -> None:
        self.root, self.segment = root, segment
        self.tls = root / "tls"
        self.address = f"tls://{segment.address('scheduler')}:{PORT}"
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.store = root / "coordinator.sqlite"

    def start(self, member: str, argv: list[str], ready: str, env: dict[str, str] | None = None) -> None:
        log = self.root / f"{member}.log"
        log.write_text("")
        process = subprocess.Popen(self.segment.command(member, [sys.executable, "-m", "fbbench", *argv]),
                                   stdout=log.open("ab"), stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True,
                                   env={**os.environ, "COLUMNS": "200", "PYTHONPATH": str(REPO), **(env or {})})
        self.processes[member] = process
        _wait(lambda: ready in log.read_text() or process.poll() is not None, 120, f"{member}: {ready}", log)
        assert process.poll() is None, log.read_text()

    def worker(self, name: str) -> None:
        self.start(name, ["lab", "worker", self.address, "--name", name, "--engine", "5.0", "--tls", str(self.tls)],
                   "joined the lab", {"FBBENCH_HOME": str(self.home(name))})

    def hosts(self) -> set[str]:
        """The hosts joined to the lab now, as ``fbbench lab hosts`` lists them."""
        listed = subprocess.run(self.segment.command("coordinator", [
            sys.executable, "-m", "fbbench", "lab", "hosts", self.address, "--tls", str(self.tls)]),
            capture_output=True, text=True, cwd=REPO, env={**os.environ, "COLUMNS": "200", "PYTHONPATH": str(REPO)})
        rows = [[cell.strip() for cell in line.split("│")[1:3]] for line in listed.stdout.splitlines()
                if line.startswith("│")]
        return {name for name, state in rows if state == "joined"}

    def home(self, name: str) -> Path:
        return self.root / f"home-{name}"

    def sweep(self, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.segment.command("coordinator", [
            sys.executable, "-m", "fbbench", "sweep", *argv, "--lab", self.address, "--tls", str(self.tls),
            "--results", str(self.store)]), capture_output=True, text=True, cwd=REPO, timeout=timeout,
            env={**os.environ, "COLUMNS": "200", "PYTHONPATH": str(REPO),
                 "FBBENCH_HOME": str(self.home("coordinator"))})

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
                process.wait(10)


@contextlib.contextmanager
def namespaced_lab(root: Path, delays: dict[str, float] | None = None) -> Iterator[NamespacedLab]:
    why = network.missing(needs_loss=False)
    if why:
        pytest.skip(f"a lab in namespaces cannot be made here: {why}")
    made = subprocess.run([sys.executable, "-m", "fbbench", "lab", "init", str(root / "tls")], capture_output=True,
                          text=True, cwd=REPO)
    assert made.returncode == 0, made.stderr
    with Segment(["scheduler", "a", "b", "coordinator"], root / "segment", delays=delays or {}) as segment:
        lab = NamespacedLab(root, segment)
        try:
            lab.start("scheduler", ["lab", "scheduler", "--host", segment.address("scheduler"), "--port", str(PORT),
                                    "--tls", str(lab.tls)], "lab scheduler at",
                      {"DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": WORKER_TTL})
            for name in ("a", "b"):
                lab.worker(name)
            yield lab
        finally:
            lab.stop()
    assert not [p for p in network.NETNS_DIR.glob(f"{SEGMENT_PREFIX}{segment.token}-*")]


def _spec(root: Path, top: str, hosts: str) -> Path:
    spec = root / "sweep.toml"
    spec.write_text(f'workload = "{BANK}"\nwarmup = "0.5s"\ninterval = "0.5s"\nsweep = false\n{top}'
                    f'[scale]\naccounts = 200\n[matrix]\nhost = {hosts}\n')
    return spec


def _sweep_runs(store: Path) -> list[tuple[str, int, int, str, str]]:
    rows = _query(store, "select run_id, cell, repeat_index, status, host_json from runs where sweep_id is not null")
    return [(run_id, cell, repeat, status, host) for run_id, cell, repeat, status, host in rows]


def test_a_host_axis_sweep_runs_in_namespaces_with_tls_over_a_200_ms_link(tmp_path: Path) -> None:
    with namespaced_lab(tmp_path, delays={"b": 0.1}) as lab:
        # The link works as shaped: b is 200 ms away from the scheduler, a is not.
        probe = ("import socket, sys, time; t = time.perf_counter(); "
                 f"socket.create_connection((sys.argv[1], {PORT})).close(); print(time.perf_counter() - t)")
        far = float(subprocess.run(lab.segment.command("b", [sys.executable, "-c", probe,
                                                             lab.segment.address("scheduler")]),
                                   capture_output=True, text=True).stdout)
        assert far >= 0.19, far
        spec = _spec(tmp_path, 'duration = "1s"\nrepeats = 2\n', '["a", "b"]')
        done = lab.sweep(str(spec))
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr
        runs = _sweep_runs(lab.store)
        assert sorted((cell, repeat, status) for _, cell, repeat, status, _ in runs) == [
            (1, 1, "completed"), (1, 2, "completed"), (2, 1, "completed"), (2, 2, "completed")], runs
        assert len({run_id for run_id, *_ in runs}) == 4
        assert "tls://169.254.78.1" in (tmp_path / "scheduler.log").read_text()


def test_a_partition_mid_cell_is_survived_and_resume_completes_the_rest(tmp_path: Path) -> None:
    with namespaced_lab(tmp_path) as lab:
        # At a modest rate (open loop): the run only has to be under way when the link is cut.
        spec = _spec(tmp_path, 'duration = "8s"\nrepeats = 2\nrate = 40\n', '["a"]')
        log = tmp_path / "coordinator.log"
        with log.open("w") as out:
            sweeping = subprocess.Popen(lab.segment.command("coordinator", [
                sys.executable, "-m", "fbbench", "sweep", str(spec), "--lab", lab.address, "--tls", str(lab.tls),
                "--results", str(lab.store)]), stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
                env={**os.environ, "COLUMNS": "200", "PYTHONPATH": str(REPO)}, start_new_session=True)
        host_store = lab.home("a") / "results.sqlite"
        try:
            measuring = "select count(distinct idx) from intervals where phase = 'measure'"
            _wait(lambda: (_query(host_store, measuring) or [(0,)])[0][0] >= 2, 180, "a cell measuring on a", log)
            lab.segment.cut("a")  # the partition: a's packets go nowhere, nobody is told
            time.sleep(15)  # longer than the scheduler waits for a silent worker
            lab.segment.mend("a")
            sweeping.wait(240)
        finally:
            if sweeping.poll() is None:
                os.killpg(sweeping.pid, signal.SIGKILL)
        before = _sweep_runs(lab.store)
        # The cell is recorded as failed (its host went away) or it finished.
        assert before and all(status in ("completed", "failed") for *_, status, _ in before), before
        # The scheduler gave the silent worker up; once its run is over, that worker leaves: started again, it
        # joins under its name, and the resumed sweep finds its host.
        _wait(lambda: "a" in lab.hosts() or lab.processes["a"].poll() is not None, 120, "a back or gone",
              tmp_path / "a.log")
        if "a" not in lab.hosts():
            lab.worker("a")
        resumed = lab.sweep("--resume", "last")
        assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr
        after = _sweep_runs(lab.store)
        completed = sorted((cell, repeat) for _, cell, repeat, status, _ in after if status == "completed")
        assert completed == [(1, 1), (1, 2)], after  # each repeat counted once
        assert len({run_id for run_id, *_ in after}) == len(after)
        # Nothing lost: every run the host finished is in its own store, and each completed run the
        # coordinator counts is one of them.
        on_host = {row[0] for row in _query(host_store, "select run_id from runs where status = 'completed'")}
        assert {run_id for run_id, _, _, status, _ in after if status == "completed"} <= on_host
