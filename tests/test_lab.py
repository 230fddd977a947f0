"""A lab of hosts on Dask distributed, for real: a ``dask scheduler`` process on 127.0.0.1 and
``fbbench lab worker`` processes named a and b, each with its own FBBENCH_HOME (its own engines'
work directory and results store). Sweeps are tiny (the bank test workload, half-second
intervals). No traffic leaves loopback. Two hosts' runs differ in no condition but the host's
own: the paths fbbench makes per run under each host's work directory are not conditions.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from tests.conftest import REPO, assert_clean_error, fb3_server_or_skip, run_cli

BANK = REPO / "tests" / "workloads" / "bank"
DASK = Path(sys.executable).with_name("dask")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while text not in (log.read_text() if log.exists() else ""):
        assert process.poll() is None, f"{log.name} ended: {log.read_text()}"
        assert time.monotonic() < deadline, f"no '{text}' in {log.name}: {log.read_text()}"
        time.sleep(0.2)


@contextmanager
def _process(argv: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("ab") as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, cwd=REPO,
                                   env={**os.environ, "COLUMNS": "200", **(env or {})}, start_new_session=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


class Lab:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.workers: dict[str, subprocess.Popen[bytes]] = {}

    def home(self, name: str) -> Path:
        return self.root / f"home-{name}"

    def start_worker(self, name: str) -> subprocess.Popen[bytes]:
        log = self.root / f"worker-{name}.log"
        log.write_text("")
        env = {"FBBENCH_HOME": str(self.home(name))}
        process = subprocess.Popen([sys.executable, "-m", "fbbench", "lab", "worker", self.address, "--name", name,
                                    "--engine", "5.0"], stdout=log.open("ab"), stderr=subprocess.STDOUT, cwd=REPO,
                                   env={**os.environ, **env}, start_new_session=True)
        _wait_for(log, "joined the lab", process)
        self.workers[name] = process
        return process

    def stop(self) -> None:
        for process in self.workers.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGINT)
        for process in self.workers.values():
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """A real ``dask scheduler`` (allowed-failures 0, as a lab needs) and workers a and b."""
    found = Lab(tmp_path)
    log = tmp_path / "scheduler.log"
    env = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
    with _process([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", str(found.port), "--no-dashboard"],
                  log, env) as scheduler:
        _wait_for(log, "Scheduler at", scheduler, 60)
        try:
            for name in ("a", "b"):
                found.start_worker(name)
            yield found
        finally:
            found.stop()


# For runs that only have to be under way while something is killed or cut: an open loop at a
# modest rate lasts as long as a closed one without the load taking a core the parallel tests share.
PACED = "rate = 40\n"


def _spec(tmp_path: Path, matrix: str, timing: str = 'warmup = "0.5s"\nduration = "1s"\n') -> Path:
    spec = tmp_path / "sweep.toml"
    spec.write_text(f'workload = "{BANK}"\n{timing}interval = "0.5s"\nsweep = false\nrepeats = 1\n'
                    f'[scale]\naccounts = 200\n[matrix]\n{matrix}')
    return spec


def _runs(store: Path) -> list[dict[str, object]]:
    if not store.exists():
        return []
    with closing(sqlite3.connect(store)) as db:
        try:
            rows = db.execute("select run_id, cell, repeat_index, status, host_json, failure, sweep_id from runs "
                              "order by started_at").fetchall()
        except sqlite3.OperationalError:
            return []
    return [{"run_id": r[0], "cell": r[1], "repeat": r[2], "status": r[3],
             "host": json.loads(r[4] or "{}").get("name"), "failure": r[5], "sweep": r[6]} for r in rows]


def test_a_sweep_with_a_host_axis_runs_each_cell_on_its_host(lab: Lab, tmp_path: Path) -> None:
    store = tmp_path / "coordinator.sqlite"
    spec = _spec(tmp_path, 'host = ["a", "b"]\nconnections = [1, 2]\n')
    swept = run_cli("sweep", str(spec), "--lab", lab.address, "--results", str(store), timeout=400)
    assert swept.returncode == 0, swept.stdout + swept.stderr
    assert "lab: a: cell" in swept.stdout and "left" in swept.stdout  # progress per host, with the ETA

    runs = _runs(store)
    assert len(runs) == 4 and all(run["status"] == "completed" for run in runs), runs
    cells = {1: "a", 2: "a", 3: "b", 4: "b"}  # the plan: host a's cells, then host b's
    assert {run["cell"]: run["host"] for run in runs} == cells
    for name in ("a", "b"):  # each host keeps its own copy of its runs
        assert {run["run_id"] for run in _runs(lab.home(name) / "results.sqlite")} == \
            {run["run_id"] for run in runs if run["host"] == name}

    on_a = next(run["run_id"] for run in runs if run["cell"] == 1)
    on_b = next(run["run_id"] for run in runs if run["cell"] == 3)
    compared = run_cli("compare", str(on_a), str(on_b), "--axis", "host", "--results", str(store), "--json",
                       str(tmp_path / "cmp.json"))
    assert compared.returncode == 0, compared.stderr
    document = json.loads((tmp_path / "cmp.json").read_text())
    axis = {row["key"]: row["values"] for row in document["conditions"]["axis"]}
    assert axis["host.name"] == {"A": "a", "B": "b"}
    assert document["conditions"]["differences"] == []
    assert document["conditions"]["equal"]["host.cpu_model"]  # the hardware side by side: the same here


def test_without_a_host_axis_every_cell_runs_on_every_host(lab: Lab, tmp_path: Path) -> None:
    store = tmp_path / "coordinator.sqlite"
    spec = _spec(tmp_path, "connections = [1, 2]\n")
    swept = run_cli("sweep", str(spec), "--lab", lab.address, "--results", str(store), timeout=400)
    assert swept.returncode == 0, swept.stdout + swept.stderr
    runs = _runs(store)
    assert sorted((run["cell"], run["host"], run["repeat"]) for run in runs) == \
        [(1, "a", 1), (1, "b", 1), (2, "a", 1), (2, "b", 1)]
    assert all(run["status"] == "completed" for run in runs)
    assert "hosts are blocks (a, b)" in swept.stdout and "a median" in swept.stdout

    # compare of two cells: within each host, then combined — never one pooled series per cell.
    sweep_id = str(runs[0]["sweep"])
    compared = run_cli("compare", f"{sweep_id}:1", f"{sweep_id}:2", "--results", str(store), "--json",
                       str(tmp_path / "cmp.json"), "--axis", "connections")
    assert compared.returncode == 0, compared.stderr
    document = json.loads((tmp_path / "cmp.json").read_text())
    assert document["blocks"]["hosts"] == ["a", "b"]
    assert document["blocks"]["runs"] == {"A": {"a": 1, "b": 1}, "B": {"a": 1, "b": 1}}
    assert set(document["blocks"]["conditions"]["a"]) >= {"host.name", "host.cpu_model", "host.disk.filesystem"}
    headline = next(row for row in document["figures"] if row["kind"] == "headline")
    per_host = headline["hosts"]["B"]
    combined = headline["ratios"]["B"]
    assert set(per_host) == {"a", "b"} and combined["basis"] == "hosts"
    assert all(per_host[host]["ratio"] is not None for host in per_host), (per_host, headline, _runs(store))
    assert combined["ratio"] == pytest.approx((per_host["a"]["ratio"] * per_host["b"]["ratio"]) ** 0.5)
    # The hosts differ within each side by design: no series-uniformity error names a host key.
    series_rules = [f for f in document["lint"] if f["rule"] == "FB011"]
    assert series_rules == []


def test_a_worker_killed_mid_run_fails_that_run_there_and_resume_runs_it_there(lab: Lab, tmp_path: Path) -> None:
    store = tmp_path / "coordinator.sqlite"
    spec = _spec(tmp_path, 'host = ["a", "b"]\nconnections = [1, 2]\n', 'warmup = "0.5s"\nduration = "4s"\n' + PACED)
    out = tmp_path / "sweep.log"
    with _process([sys.executable, "-m", "fbbench", "sweep", str(spec), "--lab", lab.address, "--results",
                   str(store)], out) as sweeping:
        b_store = lab.home("b") / "results.sqlite"
        deadline = time.monotonic() + 180
        while not any(run["status"] == "running" for run in _runs(b_store)):
            assert sweeping.poll() is None, out.read_text()
            assert time.monotonic() < deadline, "host b never started a run"
            time.sleep(0.2)
        killed = next(run for run in _runs(b_store) if run["status"] == "running")
        os.killpg(lab.workers["b"].pid, signal.SIGKILL)  # the worker and the run it started die with it
        sweeping.wait(300)
    text = out.read_text()
    runs = {run["run_id"]: run for run in _runs(store)}
    assert runs[killed["run_id"]]["status"] == "failed" and runs[killed["run_id"]]["host"] == "b", text
    assert "went away during the run" in str(runs[killed["run_id"]]["failure"])
    assert "left for fbbench sweep --resume" in text  # b's other run never started
    on_a = [run for run in runs.values() if run["host"] == "a"]
    assert sorted(run["cell"] for run in on_a) == [1, 2] and all(r["status"] == "completed" for r in on_a)
    assert not any(run["host"] == "a" for run in _runs(b_store))

    # It resumes on its lab, never here: without --lab, the lab's cells would run on this machine.
    assert_clean_error(run_cli("sweep", "--resume", "last", "--results", str(store)), "resumes there",
                       f"--lab {lab.address}")
    lab.start_worker("b")
    resumed = run_cli("sweep", "--resume", "last", "--lab", lab.address, "--results", str(store), timeout=400)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = _runs(store)
    assert sorted(run["cell"] for run in after if run["host"] == "a") == [1, 2]  # nothing of a's ran again
    completed_b = sorted(run["cell"] for run in after if run["host"] == "b" and run["status"] == "completed")
    assert completed_b == [3, 4], after
    assert len(after) == len(runs) + 2  # only what was missing: b's failed run again, and its other one


def test_a_host_axis_needs_a_lab_and_the_lab_its_hosts(lab: Lab, tmp_path: Path) -> None:
    spec = _spec(tmp_path, 'host = ["a", "c"]\n')
    assert_clean_error(run_cli("sweep", str(spec), "--results", str(tmp_path / "r.sqlite")), "host axis",
                       "--lab")
    assert_clean_error(run_cli("sweep", str(spec), "--lab", lab.address, "--results", str(tmp_path / "r.sqlite")),
                       "host(s) c not in the lab", "it has: a, b")
    assert_clean_error(run_cli("sweep", str(spec), "--lab", "tcp://127.0.0.1:1", "--results",
                               str(tmp_path / "r.sqlite")), "cannot reach the lab")
    # The hosts are asked of the scheduler each time. A Dask client's own view of it, refreshed
    # every 2 s by default, lists no workers while the refresh is in the way (here every 1 ms):
    # read from there, a CI run's sweep once took both hosts for gone and gave up their runs.
    import dask

    from fbbench.lab import client as lab_client

    with (dask.config.set({"distributed.client.scheduler-info-interval": "1ms"}),
          lab_client.connect(lab.address, None, False) as connected):
        seen = {tuple(sorted(connected.workers())) for _ in range(300)}
    assert seen == {("a", "b")}, seen


def test_tls_lets_in_only_the_lab_s_own_ca_and_nothing_listens_unprotected(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "lab-tls", tmp_path / "other-tls"
    for directory in (ours, theirs):
        made = run_cli("lab", "init", str(directory))
        assert made.returncode == 0, made.stderr
    assert oct((ours / "ca-key.pem").stat().st_mode & 0o777) == "0o600"
    assert_clean_error(run_cli("lab", "init", str(ours)), "already holds a lab")

    # Beyond loopback without TLS: refused before anything listens or connects.
    port = _free_port()
    refused = run_cli("lab", "scheduler", "--host", "0.0.0.0", "--port", str(port))
    assert_clean_error(refused, "without TLS", "--insecure")
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # nothing listens
    assert_clean_error(run_cli("sweep", str(_spec(tmp_path, "connections = [1]\n")), "--lab", "tcp://192.0.2.1:8786"),
                       "without TLS")
    assert_clean_error(run_cli("lab", "worker", "tcp://192.0.2.1:8786", "--name", "a"), "without TLS")
    log = tmp_path / "insecure.log"
    with _process([sys.executable, "-m", "fbbench", "lab", "scheduler", "--host", "0.0.0.0", "--port", str(port),
                   "--insecure"], log) as insecure:
        _wait_for(log, "lab scheduler at", insecure, 60)
        assert "insecure lab" in log.read_text()

    # On 127.0.0.1 with TLS on: a worker of another CA cannot join; one of the lab's CA can.
    port = _free_port()
    log = tmp_path / "scheduler.log"
    with _process([sys.executable, "-m", "fbbench", "lab", "scheduler", "--port", str(port), "--tls", str(ours)],
                  log) as scheduler:
        _wait_for(log, "lab scheduler at tls://", scheduler, 60)
        address = f"tls://127.0.0.1:{port}"
        home = {"FBBENCH_HOME": str(tmp_path / "home")}
        stranger = run_cli("lab", "worker", address, "--name", "x", "--engine", "5.0", "--tls", str(theirs),
                           "--join-timeout", "5", env=home, timeout=120)
        assert_clean_error(stranger, "could not join the lab")
        assert_clean_error(run_cli("lab", "hosts", address, "--tls", str(theirs)), "cannot reach the lab")
        member_log = tmp_path / "member.log"
        with _process([sys.executable, "-m", "fbbench", "lab", "worker", address, "--name", "ours", "--engine", "5.0",
                       "--tls", str(ours)], member_log, home) as member:
            _wait_for(member_log, "joined the lab", member)
            listed = run_cli("lab", "hosts", address, "--tls", str(ours))
            assert listed.returncode == 0, listed.stderr
            assert "ours" in listed.stdout and "joined" in listed.stdout and "x " not in listed.stdout


def test_resume_after_a_coordinator_crash_collects_what_the_hosts_finished(lab: Lab, tmp_path: Path) -> None:
    store = tmp_path / "coordinator.sqlite"
    spec = _spec(tmp_path, 'host = ["a", "b"]\n', 'warmup = "0.5s"\nduration = "3s"\n')
    out = tmp_path / "sweep.log"
    stores = {name: lab.home(name) / "results.sqlite" for name in ("a", "b")}
    with _process([sys.executable, "-m", "fbbench", "sweep", str(spec), "--lab", lab.address, "--results",
                   str(store)], out) as sweeping:
        deadline = time.monotonic() + 180
        while not all(any(run["status"] == "running" for run in _runs(path)) for path in stores.values()):
            assert sweeping.poll() is None, out.read_text()
            assert time.monotonic() < deadline, "the hosts never both started their runs"
            time.sleep(0.2)
        os.killpg(sweeping.pid, signal.SIGKILL)  # the coordinator dies; the hosts finish their runs
        sweeping.wait(30)
    assert not _runs(store) or all(run["status"] != "completed" for run in _runs(store))
    deadline = time.monotonic() + 180
    while not all(_runs(path) and all(run["status"] == "completed" for run in _runs(path)) for path in stores.values()):
        assert time.monotonic() < deadline, "the hosts did not finish their runs"
        time.sleep(0.5)
    finished = {run["run_id"] for path in stores.values() for run in _runs(path)}

    resumed = run_cli("sweep", "--resume", "last", "--lab", lab.address, "--results", str(store), timeout=400)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "ended meanwhile imported" in resumed.stdout
    runs = _runs(store)
    assert {run["run_id"] for run in runs} == finished  # imported, nothing run again
    assert all(run["status"] == "completed" for run in runs)
    assert {len(_runs(path)) for path in stores.values()} == {1}


@pytest.mark.server
def test_two_hosts_drive_one_server_and_their_load_is_merged(lab: Lab, tmp_path: Path) -> None:
    from fbbench import loadcore
    from fbbench.analysis import conditions
    from fbbench.store import ResultsStore

    with fb3_server_or_skip(tmp_path / "fb3") as fb3:
        data = tmp_path / "data"
        data.mkdir()
        data.chmod(0o777)  # the server writes the database as its own user
        password = tmp_path / "secrets" / "password"
        password.parent.mkdir()
        password.write_text(fb3.password + "\n")
        store = tmp_path / "coordinator.sqlite"
        done = run_cli("run", str(BANK), "--engine", fb3.dsn(data / "bench.fdb"), "--user", fb3.user,
                       "--password-file", str(password), "--lab", lab.address, "--clients", "2", "-c", "4",
                       "--warmup", "1s", "--duration", "3s", "--interval", "1s", "--no-sweep", "--scale",
                       "accounts=200", "--results", str(store), "--workdir", str(tmp_path / "work"), timeout=400)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    with ResultsStore(store, create=False) as opened:
        run = opened.load_run("last")
    assert run["status"] == "completed"
    assert run["engine"]["load_clients"] == [{"host": "a", "first_attachment": 1, "attachments": 2},
                                             {"host": "b", "first_attachment": 3, "attachments": 2}]
    assert conditions.record(run)["load.clients"] == "a (2), b (2)"
    # The engine saw the 4 attachments at once in the measured period (MON$ATTACHMENTS).
    assert run["engine"]["architecture_verified"]["attachments"] == 4
    # Every attachment, on both hosts, did work; one run, merged.
    attachments = run["summary"]["attachments"]
    assert sorted(a["index"] for a in attachments) == [1, 2, 3, 4] and all(a["units"] > 0 for a in attachments)
    # The merged histograms count exactly what the parts counted: each unit's, and per interval.
    for unit, totals in run["units"].items():
        counted = totals["ok"] + totals["rolled_back"] + totals["conflicts"] + totals["errors"]
        measured = [row for row in run["intervals"] if row["unit"] == unit and row["phase"] == "measure"]
        parts = sum(loadcore.histogram_summary([row["histogram"]])["count"] for row in measured if row["histogram"])
        assert loadcore.histogram_summary([totals["histogram"]])["count"] == parts == counted > 0, unit
    # The password never reached the hosts' stores or logs.
    for name in ("a", "b"):
        for path in lab.home(name).rglob("*"):
            if path.is_file() and path.stat().st_size < 5_000_000:
                assert fb3.password.encode() not in path.read_bytes(), path


def test_the_lab_outlives_its_scheduler_and_refuses_a_name_taken(tmp_path: Path) -> None:
    """Issue 31: the coordinator died with a 60-line traceback when the scheduler did, and silently
    (143) on SIGTERM; a worker left with the scheduler (despite --join-timeout), and a name taken
    was a 71-line traceback."""
    found = Lab(tmp_path)
    env = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
    scheduler_argv = [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", str(found.port), "--no-dashboard"]
    store = tmp_path / "coordinator.sqlite"
    spec = _spec(tmp_path, "connections = [1, 2]\n", 'warmup = "0.5s"\nduration = "4s"\n' + PACED)
    sweep = [sys.executable, "-m", "fbbench", "sweep", str(spec), "--lab", found.address, "--results", str(store)]
    a_store = found.home("a") / "results.sqlite"
    worker_log = tmp_path / "worker-a.log"

    def when_a_runs(sweeping: subprocess.Popen[bytes], out: Path) -> None:
        deadline = time.monotonic() + 180
        while not any(run["status"] == "running" for run in _runs(a_store)):
            assert sweeping.poll() is None, out.read_text()
            assert time.monotonic() < deadline, "host a never started a run"
            time.sleep(0.2)

    with _process(scheduler_argv, tmp_path / "scheduler.log", env) as scheduler:
        _wait_for(tmp_path / "scheduler.log", "Scheduler at", scheduler, 60)
        with _process([sys.executable, "-m", "fbbench", "lab", "worker", found.address, "--name", "a", "--engine",
                       "5.0", "--join-timeout", "20"], worker_log, {"FBBENCH_HOME": str(found.home("a"))}) as worker:
            _wait_for(worker_log, "joined the lab", worker)
            taken = run_cli("lab", "worker", found.address, "--name", "a", "--engine", "5.0",
                            env={"FBBENCH_HOME": str(tmp_path / "home-other")}, timeout=120)
            assert_clean_error(taken, "the name a is taken in the lab", "by the worker at tcp://127.0.0.1:",
                               "pick another --name")
            assert len(taken.stderr.splitlines()) == 2, taken.stderr  # the line and its hint

            out = tmp_path / "sigterm.log"
            with _process(sweep, out) as sweeping:
                when_a_runs(sweeping, out)
                os.killpg(sweeping.pid, signal.SIGTERM)  # as Ctrl-C: the host's run stops, keeps what it measured
                assert sweeping.wait(120) == 130, out.read_text()
            assert "stopping: the hosts' runs keep what they measured" in out.read_text()

            out = tmp_path / "lost.log"
            with _process([*sweep[:4], "--resume", "last", *sweep[5:]], out) as sweeping:
                when_a_runs(sweeping, out)
                os.killpg(scheduler.pid, signal.SIGKILL)
                assert sweeping.wait(120) == 1, out.read_text()
            text = out.read_text()
            assert "Traceback" not in text and "error: lost the lab's scheduler at" in text, text
            assert "go on on their hosts" in text and "--resume w" in text, text
            _wait_for(worker_log, "waiting up to 20 s (--join-timeout)", worker)
            with _process(scheduler_argv, tmp_path / "scheduler-again.log", env) as again:
                _wait_for(worker_log, "rejoined the lab", worker)
                resumed = run_cli("sweep", "--resume", "last", "--lab", found.address, "--results", str(store),
                                  timeout=400)
                assert resumed.returncode == 0, resumed.stdout + resumed.stderr
                assert "ended meanwhile imported" in resumed.stdout  # the run in flight finished on a
                assert sorted(run["cell"] for run in _runs(store) if run["status"] == "completed") == [1, 2]
                os.killpg(again.pid, signal.SIGTERM)
                again.wait(30)
            assert worker.wait(90) == 1
    said = worker_log.read_text()
    assert "Traceback" not in said, said
    assert said.rstrip().splitlines()[-1] == (f"error: worker a: the lab's scheduler at {found.address} did not "
                                               "come back within 20 s (--join-timeout): leaving the lab"), said
