"""What a lab's coordinator asks of a worker (these functions run in the ``fbbench lab worker``
process, sent there by Dask): one run, the runs of a sweep that finished there, its record.

A run goes to :mod:`fbbench.lab.task` in a process of its own that dies with the worker (even
by kill -9: PR_SET_PDEATHSIG), so a worker that dies mid-run leaves an incomplete run in its
store and nothing running. Every finished run travels back as a bundle of its stored rows.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fbbench import paths
from fbbench.engines import platform
from fbbench.lab.task import ANSWER
from fbbench.store import ResultsStore, bundle, exchange

_ENTRY = "from fbbench.lab.task import main; main()"
LOG_TAIL = 2000


@dataclass
class WorkerSetup:
    """What ``fbbench lab worker`` set for this process: its name, where it keeps runs, what it offers."""

    name: str = ""
    workdir: Path | None = None
    results: Path | None = None
    engines: list[str] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)  # published to the scheduler's metadata
    tags: list[str] = field(default_factory=list)  # e.g. an insecure lab, recorded with every run


SETUP = WorkerSetup()


def _results() -> Path:
    return (SETUP.results or paths.default_results()).expanduser().resolve()


def _workdir() -> Path:
    """This worker's work directory, fbbench's by its marker (made or refused as ``fbbench run`` would)."""
    return paths.own_workdir(SETUP.workdir).path


def _stop_requested(name: str | None) -> bool:
    """Whether the coordinator set its stop event (Ctrl-C): a Dask Event, asked through this task's client."""
    if not name:
        return False
    try:
        from distributed import Event, get_client

        return bool(Event(name, client=get_client()).is_set())
    except Exception:  # no client (the scheduler is gone): nobody to stop for
        return False


def _announce(queue: str | None, run_id: str) -> None:
    """Tell the coordinator that this run starts now (a task queued on this worker has not)."""
    if not queue:
        return
    from distributed import Queue, get_client

    Queue(queue, client=get_client()).put({"run_id": run_id, "host": SETUP.name, "at": time.time()})


def run(request: dict[str, Any]) -> dict[str, Any]:
    """One run on this host; its status and, once it is recorded, its bundle (bytes)."""
    run_id = str(request["run_id"])
    _announce(request.get("started_queue"), run_id)
    settings = {**request["settings"], "host_name": SETUP.name, "workdir": str(_workdir()),
                "results": str(_results()), "tags": [*request["settings"].get("tags", []), *SETUP.tags]}
    logs = _workdir() / "lab-logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{run_id}.log"
    started = time.monotonic()
    with log.open("w+b") as output:
        process = subprocess.Popen(platform.dying_with_owner([sys.executable, "-c", _ENTRY]), stdin=subprocess.PIPE,
                                   stdout=output, stderr=subprocess.STDOUT)
        assert process.stdin is not None
        process.stdin.write(json.dumps({**request, "settings": settings}).encode() + b"\n")
        process.stdin.close()
        interrupted = False
        while True:
            try:
                process.wait(timeout=0.5)  # returns the moment the run's process ends
                break
            except subprocess.TimeoutExpired:
                pass
            if not interrupted and _stop_requested(request.get("stop_event")):
                process.send_signal(signal.SIGINT)  # the run stops and keeps what it measured
                interrupted = True
        output.seek(0)
        text = output.read().decode(errors="replace")
    answer = next((json.loads(line[len(ANSWER):]) for line in reversed(text.splitlines()) if line.startswith(ANSWER)),
                  None)
    if answer is None:
        code = process.returncode
        why = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        answer = {"status": "failed", "failure": f"the run's process on {SETUP.name} ended without an answer ({why})"}
    data = None
    with ResultsStore(_results()) as store:
        if store.db.execute("select 1 from runs where run_id = ?", (run_id,)).fetchone():
            data = bundle.encode(exchange.export_bundle(store, [run_id]))
    return {"run_id": run_id, "host": SETUP.name, "status": answer["status"], "failure": answer.get("failure"),
            "hint": answer.get("hint"), "bundle": data, "seconds": time.monotonic() - started,
            "log_tail": "" if answer["status"] == "completed" else text[-LOG_TAIL:]}


def finished_runs(sweep_id: str) -> dict[str, Any]:
    """The runs of ``sweep_id`` this host holds: a bundle of those that ended, the ids of those still running."""
    results = _results()
    found: dict[str, Any] = {"host": SETUP.name, "bundle": None, "running": [], "ended": []}
    if not results.exists():
        return found
    with ResultsStore(results, create=False) as store:
        rows = store.db.execute("select status, pid, host, run_id from runs where sweep_id = ?", (sweep_id,)).fetchall()
        for row in rows:
            (found["running"] if store.status_of(row) == "running" else found["ended"]).append(row[3])
        if found["ended"]:
            found["bundle"] = bundle.encode(exchange.export_bundle(store, found["ended"]))
    return found


def host_record() -> dict[str, Any]:
    """This worker's published record (its name, host facts, engines and their doctor's checks)."""
    return SETUP.record


def drive_load(request: dict[str, Any]) -> dict[str, Any]:
    """This host's share of a multi-client run's attachments (fbbench.lab.clients): Classic's
    worker process here, with this host's client library, its JSON lines carried to the
    coordinator's relay through one Dask Queue and its commands (a start time as wall-clock time,
    stop) through another."""
    import shutil
    import threading

    from distributed import Queue, get_client

    from fbbench.engines import prepare_runtime
    from fbbench.loadcore.classic import WORKER_COMMAND

    client = get_client()
    lines, commands = Queue(request["lines"], client=client), Queue(request["commands"], client=client)
    workdir = _workdir()
    (workdir / "lab-logs").mkdir(parents=True, exist_ok=True)
    config = dict(request["config"])
    runtime = prepare_runtime(config["database"], workdir, {}, name=f"load-{request['lines']}")
    config["client_library"] = str(runtime.client_library)
    try:
        with (workdir / "lab-logs" / f"{request['lines']}.stderr").open("w+b") as stderr:
            process = subprocess.Popen(platform.dying_with_owner(WORKER_COMMAND),
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                       env=runtime.env())
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps({"config": config, "parent_pid": os.getpid(),
                                            "sys_path": [p for p in sys.path if p]}).encode() + b"\n")
            process.stdin.flush()
            output = process.stdout

            def carry() -> None:
                for line in output:
                    lines.put(json.loads(line))

            reader = threading.Thread(target=carry, name="fbbench-load-lines", daemon=True)
            reader.start()
            while process.poll() is None:
                try:
                    command = commands.get(timeout=0.25)
                except TimeoutError:
                    continue
                if "go_wall" in command:  # the coordinator's start, on this machine's monotonic clock
                    text = f"go {time.monotonic() + (command['go_wall'] - time.time())!r}\n"
                elif command.get("close"):  # the end of the measured period was read: closing_sql
                    text = "close\n"
                else:
                    text = "stop\n"
                with contextlib.suppress(OSError):
                    process.stdin.write(text.encode())
                    process.stdin.flush()
            reader.join(30)
            stderr.seek(0)
            tail = stderr.read().decode(errors="replace")[-LOG_TAIL:]
    finally:
        shutil.rmtree(paths.assert_inside(runtime.base, workdir), ignore_errors=True)
    return {"host": SETUP.name, "returncode": process.returncode, "stderr_tail": tail}
