"""The managed local server (fbbench.engines.managed) on Debian's real Firebird 3.0 server.

Only Debian's layout can be tested here: official 4.0/5.0 installs come from tarballs on GitHub,
which these machines cannot reach.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from fbbench.engines import ManagedEngine, run_in_engine
from fbbench.engines.installation import MARKER
from fbbench.engines.managed import ManagedServer, running, stop_abandoned_servers
from fbbench.engines.managed.server import instance_processes
from fbbench.engines.runtime import prepare_runtime
from fbbench.errors import FbbenchError
from tests.conftest import REPO, assert_clean_error, process_running, run_cli
from tests.fb3server import debian_fb3, fb3_server_unavailable

pytestmark = pytest.mark.server

BANK = Path(__file__).parent / "workloads" / "bank"
T = TypeVar("T")


@pytest.fixture(scope="module")
def engine() -> ManagedEngine:
    reason = fb3_server_unavailable()
    if reason:
        pytest.skip(reason)
    return debian_fb3()


# ------------------------------------------------------------------------------------ helpers


def _marked_under(root: Path) -> list[int]:
    """Live processes of any managed instance whose directory lies under ``root``."""
    prefix = f"{MARKER}={root}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X") and any(item.startswith(prefix) for item in environ):
            found.append(int(entry))
    return found


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


def _wait_for(what: str, condition: Callable[[], T], timeout: float = 30.0, step: float = 0.05) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out waiting for {what}")


def _files_containing(root: Path, secret: bytes) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            with contextlib.suppress(OSError):
                if secret in path.read_bytes():
                    found.append(str(path))
    return found


def _child_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


# ------------------------------------------------------------------------- architectures, conf


@pytest.mark.parametrize(("mode", "own_process"), [("Super", False), ("SuperClassic", False), ("Classic", True)])
def test_server_modes_conf_and_a_clean_stop(engine: ManagedEngine, tmp_path: Path, mode: str,
                                            own_process: bool) -> None:
    work = tmp_path / "work"
    with running(engine, work, {"ServerMode": mode, "DefaultDbCachePages": "1234"}, f"run-{mode}") as run:
        server = run.server
        assert run.services_host == f"127.0.0.1/{server.port}" and _accepts(server.port)
        assert server.home == work / "runtimes" / f"run-{mode}" / "server" and server.log_path.is_relative_to(work)
        database = run.data_dir / "modes.fdb"
        seen = run_in_engine(run.runtime, "tests.managed_child:two_attachments", run.dsn(database),
                             f"{MARKER}={server.home}")
        assert [a["protocol"] for a in seen] == ["TCPv4", "TCPv4"], seen  # the run goes over TCP
        assert all(a["engine_version"].startswith("3.0.11") for a in seen)
        # DefaultDbCachePages reached the server: a new database uses it as its cache size.
        assert [a["page_buffers"] for a in seen] == [1234, 1234], seen
        pids = [a["pid"] for a in seen]
        assert all(a["in_instance"] for a in seen), seen
        if own_process:  # Classic: one process per attachment, forked by the listener
            assert len(set(pids)) == 2 and server.pid not in pids, (pids, server.pid)
        else:  # Super and SuperClassic: threads of the one server process
            assert pids == [server.pid, server.pid], (pids, server.pid)
        assert f"ServerMode = {mode}" in (server.root / "firebird.conf").read_text()
        assert database.exists()
    assert server.returncode in (0, -signal.SIGTERM, -signal.SIGKILL), server.returncode
    assert not _accepts(server.port)
    assert server.processes() == [] and not any(process_running(pid) for pid in [*pids, server.pid])
    assert not (server.home / "server.json").exists()


def test_architecture_classic_is_the_servers_own_and_verified(engine: ManagedEngine, tmp_path: Path) -> None:
    """--architecture classic on a managed server: the server's ServerMode, whose listener forks a
    server process per connection; the core runs threads as usual, and the run verifies from
    MON$ATTACHMENTS that each of its attachments had a server process of its own."""
    out = tmp_path / "run.json"
    result = run_cli("run", str(BANK), "--engine", "server:/usr", "--architecture", "classic", "--connections", "3",
                     "--warmup", "1s", "--duration", "3s", "--interval", "1s", "--no-sweep", "--workdir",
                     str(tmp_path / "work"), "--results", str(tmp_path / "results.sqlite"), "--json", str(out),
                     "--report", str(tmp_path / "r.html"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    doc = json.loads(out.read_text())
    architecture = doc["engine"]["architecture"]
    assert architecture["requested"] == architecture["verified"] == "classic", architecture
    evidence = architecture["evidence"]
    assert evidence["attachments"] == evidence["server_processes"] == 3, evidence
    assert not evidence["shares_process_with_observer"] and evidence["database_pool_bytes"] == 0
    assert architecture["processes"] is None  # the core ran threads: the server made the processes
    assert doc["engine"]["firebird_conf"]["ServerMode"] == "Classic"


# ----------------------------------------------------------------------- Ctrl-C, kill -9, leftovers


def test_ctrl_c_during_a_run_stops_every_server_process(engine: ManagedEngine, tmp_path: Path) -> None:
    work, results = tmp_path / "work", tmp_path / "results.sqlite"
    cli = subprocess.Popen([sys.executable, "-m", "fbbench", "run", str(BANK), "--engine", "server:/usr",
                            "--set", "ServerMode=Classic", "--connections", "2", "--duration", "60s",
                            "--interval", "1s", "--no-sweep", "--workdir", str(work), "--results", str(results)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_child_env())
    try:
        record = _wait_for("the managed server", lambda: next(work.glob("runtimes/*/server/server.json"), None))
        home = record.parent
        # Classic: the listener plus one process per attachment (load and sampler) once measuring.
        def busy() -> list[int] | None:
            found = instance_processes(home)
            return found if len(found) >= 3 else None

        pids = _wait_for("Classic's per-attachment servers", busy)
        cli.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends to fbbench
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 130, out[-2000:] + err
    assert "interrupted" in out and "Traceback" not in out + err, out[-2000:] + err
    assert instance_processes(home) == [] and not any(process_running(pid) for pid in pids)
    assert not home.exists() and list((work / "databases").iterdir()) == []  # the run's clean-up ran


OWNER = r"""
import json, sys
from pathlib import Path
from fbbench.engines.catalog import ManagedEngine
from fbbench.engines.managed import ManagedServer
server = ManagedServer.start(ManagedEngine(**json.loads(sys.argv[1])), Path(sys.argv[2]),
                             conf={"ServerMode": "Classic"})
# The password goes to the test through this pipe only, to attach a client of its own.
print(json.dumps({"pid": server.pid, "port": server.port, "password": server.password}), flush=True)
sys.stdin.read()
"""

HOLD = r"""
import sys
from fbbench.database import driver
password = sys.stdin.readline().rstrip("\n")  # as fbbench hands credentials over: never in an environment
with driver._driver().connect(sys.argv[1], user="SYSDBA", password=password) as connection:
    with connection.cursor() as cursor:
        cursor.execute("select mon$server_pid from mon$attachments where mon$attachment_id = current_connection")
        print(cursor.fetchone()[0], flush=True)
    sys.stdin.read()
"""


def test_kill_9_of_the_owner_then_the_leftover_clean_up(engine: ManagedEngine, tmp_path: Path) -> None:
    work = tmp_path / "work"
    home = work / "runtimes" / "killed-run" / "server"
    owner = subprocess.Popen([sys.executable, "-c", OWNER, json.dumps(engine.to_dict()), str(home)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_child_env())
    client = None
    try:
        started = json.loads(owner.stdout.readline())
        listener = started["pid"]
        # A client that is not the owner's child keeps a Classic server process busy.
        dsn = f"127.0.0.1/{started['port']}:{work / 'held.fdb'}"
        runtime = prepare_runtime(dsn, tmp_path / "client", user="SYSDBA", password=started["password"])
        created = run_in_engine(runtime, "tests.managed_child:two_attachments", dsn, f"{MARKER}={home}")
        assert created[0]["in_instance"]
        client = subprocess.Popen([sys.executable, "-c", HOLD, dsn], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=runtime.env(_child_env()))
        client.stdin.write(started["password"] + "\n")
        client.stdin.flush()
        worker = int(client.stdout.readline())
        assert worker != listener and set(instance_processes(home)) == {listener, worker}
        assert stop_abandoned_servers(work) == [] and process_running(listener)  # its owner lives: left alone

        owner.kill()  # kill -9: no clean-up code runs in the owner
        owner.wait()
        # The listener dies with its owner (PR_SET_PDEATHSIG); the forked per-attachment server
        # does not inherit that and keeps serving its client: the next clean-up must stop it.
        _wait_for("the listener to die with its owner", lambda: not process_running(listener), timeout=5)
        time.sleep(0.3)
        assert instance_processes(home) == [worker]
        stopped = stop_abandoned_servers(work)
        assert len(stopped) == 1 and f"pid {worker}" in stopped[0] and str(home) in stopped[0], stopped
        assert instance_processes(home) == [] and not process_running(worker)
        assert not (home / "server.json").exists() and stop_abandoned_servers(work) == []
    finally:
        for process in (owner, client):
            if process is not None and process.poll() is None:
                process.kill()
        with contextlib.suppress(AssertionError):
            stop_abandoned_servers(work)


# ------------------------------------------------------------------------------------ bad input


def test_bad_engines_and_settings_are_one_line_errors(engine: ManagedEngine, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    not_executable = tmp_path / "not-executable"
    (not_executable / "bin").mkdir(parents=True)
    (not_executable / "bin" / "firebird").write_text("not a program\n")
    not_firebird = tmp_path / "not-firebird"
    (not_firebird / "bin").mkdir(parents=True)
    (not_firebird / "bin" / "firebird").write_text("#!/bin/sh\necho hello\nexit 3\n")
    (not_firebird / "bin" / "firebird").chmod(0o755)
    work = tmp_path / "work"
    cases = [
        (["--engine", "nosuch"], ["unknown engine 'nosuch'", "server:DIR"]),
        (["--engine", f"server:{empty}"], [f"{empty} is not a Firebird installation", "/usr"]),
        (["--engine", "server:/usr/sbin"], ["not the installation directory", "server:/usr"]),
        (["--engine", f"server:{not_executable}"], [f"{not_executable}/bin/firebird cannot be run"]),
        (["--engine", f"server:{not_firebird}"], ["did not report a Firebird server version: hello"]),
        (["--engine", "server:/usr", "--set", "RemoteServicePort=3050"],
         ["RemoteServicePort cannot be set for a managed server", "free port"]),
        (["--engine", "server:/usr", "--set", "UserManager=Legacy_UserManager"], ["cannot create fbbench's SYSDBA"]),
        # Checked against the keys Debian's own firebird.conf documents.
        (["--engine", "server:/usr", "--set", "DefaultDbCachPages=100"],
         ["unknown firebird.conf key 'DefaultDbCachPages' for Firebird 3.0.11 server (managed, Debian)",
          "did you mean DefaultDbCachePages"]),
    ]
    for arguments, fragments in cases:
        result = run_cli("run", str(BANK), *arguments, "--duration", "2s", "--workdir", str(work),
                         "--results", str(tmp_path / "results.sqlite"))
        assert_clean_error(result, *fragments)
        assert result.stderr.count("error:") == 1, result.stderr
        assert _marked_under(tmp_path) == []
    assert not (work / "runtimes").exists() or list((work / "runtimes").iterdir()) == []


@pytest.mark.alone  # times the refusal: within 10 s
def test_a_taken_port_is_a_one_line_error_not_a_minute_of_retries(engine: ManagedEngine, tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(FbbenchError) as refused:
            ManagedServer.start(engine, tmp_path / "given-port", port=port)
        assert refused.value.message == f"port {port} on 127.0.0.1 is taken by another process"
        assert _marked_under(tmp_path) == []

    # Taken after fbbench chose it: the 3.0 server would retry bind() for a minute; fbbench sees
    # that the LISTEN socket on its port is not its server's and gives up within seconds.
    server = ManagedServer.start(engine, tmp_path / "restarted")
    server.stop()
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", server.port))
        squatter.listen()
        began = time.monotonic()
        with pytest.raises(FbbenchError) as refused:
            server.restart()
        assert refused.value.message == f"port {server.port} on 127.0.0.1 is taken by another process"
        assert time.monotonic() - began < 10
    assert server.processes() == [] and not server.is_running()


@pytest.fixture
def full_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs with 96 KB left (mounted by the test, as root); skipped where not allowed."""
    mount = tmp_path / "full"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        (mount / "filler").write_bytes(b"\0" * (2 * 1024 * 1024 - 96 * 1024))
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_security_database_that_cannot_be_created(engine: ManagedEngine, full_filesystem: Path) -> None:
    home = full_filesystem / "server"
    with pytest.raises(FbbenchError) as refused:
        ManagedServer.start(engine, home)
    assert refused.value.message.startswith(f"could not create the security database {home}/security/security3.fdb: ")
    assert "\n" not in refused.value.message and refused.value.hint == f"the file system of {home} is full"
    assert instance_processes(home) == []


# ------------------------------------------------------------------- registry, password, a run


def test_a_registered_engine_runs(engine: ManagedEngine, tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    env = {"FBBENCH_HOME": str(home)}
    added = run_cli("engines", "add", "fb3-debian", "/usr", env=env)
    assert added.returncode == 0, added.stderr
    assert "Firebird 3.0.11 server (managed, Debian)" in added.stdout
    listed = run_cli("engines", "list", env=env)
    assert listed.returncode == 0 and "fb3-debian" in listed.stdout and "/usr" in listed.stdout
    assert_clean_error(run_cli("run", str(BANK), "--engine", "fb3-debain", "--workdir", str(work), env=env),
                       "unknown engine 'fb3-debain'", "did you mean fb3-debian?")

    target = tmp_path / "run.json"
    run = run_cli("run", str(BANK), "--engine", "fb3-debian", "--connections", "2", "--warmup", "1s", "--duration",
                  "4s", "--interval", "1s", "--workdir", str(work), "--json", str(target), env=env, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr
    # Firebird 3.0's services fail once the security database's path passes 99 characters; the
    # server sees it under a short name in its namespace, so a deep work directory still works.
    # The sweep before measuring is a services call; the server's log, kept in the store, shows it.
    assert len(str(work / "runtimes" / "RUN-ID-0000-0000" / "server" / "security" / "security3.fdb")) > 99
    with contextlib.closing(sqlite3.connect(home / "results.sqlite")) as store:
        (log,) = store.execute("select firebird_log from runs").fetchone()
    assert "Sweep is finished" in log, log
    document = json.loads(target.read_text())
    assert document["status"] == "completed" and document["engine"]["label"] == engine.label
    assert document["engine"]["mode"] == "Super" and document["units"]["transfer"]["ok"] > 0
    assert all(check["passed"] for check in document["checks"]), document["checks"]
    assert _marked_under(tmp_path) == [] and not list(work.glob("runtimes/*/server"))
    assert json.loads((home / "owned-databases.json").read_text()) == {}  # the run's database went with it

    removed = run_cli("engines", "remove", "fb3-debian", env=env)
    assert removed.returncode == 0 and "removed fb3-debian (/usr)" in removed.stdout
    assert_clean_error(run_cli("engines", "remove", "fb3-debian", env=env), "no registered engine named 'fb3-debian'")


def test_the_sysdba_password_is_in_no_environment_command_line_or_file(engine: ManagedEngine, tmp_path: Path) -> None:
    """Issue "hardening" 6: the engine child of a managed run carried ISC_PASSWORD in its
    environment, readable in /proc/PID/environ by any process of the user and inherited by all
    it starts. The run happens in this process, so that the test can know the password (from the
    server object, the only place it lives); a thread reads every process's environment and
    command line while the run goes on, the engine child's among them."""
    from fbbench.engines.managed import server as managed_server
    from fbbench.runner.run import execute
    from fbbench.runner.settings import RunSettings

    work, results = tmp_path / "work", tmp_path / "results.sqlite"
    settings = RunSettings(workload=str(BANK), engine=engine.spec, connections=2, warmup=1.0, duration=3.0,
                           interval=1.0, workdir=str(work), results=str(results)).validate()
    children: list[int] = []
    found: list[str] = []  # where the password was seen
    watched: set[int] = set()  # processes whose environment was read while the password was known
    passwords: set[bytes] = set()
    ended = threading.Event()

    def watch() -> None:
        while not ended.is_set():
            for secret in {server.password.encode() for server in list(managed_server._running)}:
                passwords.add(secret)
                for entry in filter(str.isdigit, os.listdir("/proc")):
                    for part in ("environ", "cmdline"):
                        with contextlib.suppress(OSError):
                            if secret in Path(f"/proc/{entry}/{part}").read_bytes():
                                found.append(f"/proc/{entry}/{part}")
                            watched.add(int(entry))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        outcome = execute(settings, on_engine=lambda process: children.append(process.pid))
    finally:
        ended.set()
        watcher.join(10)
    assert outcome.status == "completed", outcome.failure
    assert len(passwords) == 1 and len(next(iter(passwords))) >= 32
    assert children and children[0] in watched  # the engine child was looked at
    assert sorted(set(found)) == []
    password = next(iter(passwords))
    for root in (work, tmp_path):  # the results store with its WAL, the registry, the work directory
        assert _files_containing(root, password) == [], root
