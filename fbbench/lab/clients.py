"""Several load generators against one server: ``fbbench run … --engine DSN --lab ADDRESS
--clients K`` splits the attachments across K hosts of the lab (when one client box cannot
saturate a large server).

The run is an ordinary run in the coordinator's engine child — the database, the sampler that
reads the DB side once, the checks — except that its load is a :class:`LabClientsRun`: Classic's
process-per-attachment coordinator (:class:`fbbench.loadcore.classic.ProcessRun`), whose worker
processes each drive one host's share of the attachments. Each such process here is a *relay*
(:func:`relay_main`): it places a task on its host (:func:`fbbench.lab.tasks.drive_load`, one
run resource), which runs the same Classic worker there with that host's client library, and
carries the worker's JSON lines both ways through a pair of Dask Queues. The start barrier is
Classic's: every host connects and holds, then all get one start time — as wall-clock time
between machines, each host turning it into its own monotonic clock — and measure the same
period; their intervals and HDR histograms come back and are merged exactly as Classic's
processes' are.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from fbbench.loadcore.classic import ProcessRun

_RELAY_ENTRY = (
    "import sys\n"
    "try:\n"
    "    from fbbench.lab.clients import relay_main\n"
    "    sys.exit(relay_main())\n"
    "except KeyboardInterrupt:\n"
    "    sys.exit(130)\n"
)
QUEUE_WAIT = 0.25  # seconds a relay waits for its host's next line


def shares(connections: int, hosts: list[str]) -> list[tuple[str, int, int]]:
    """(host, first attachment, attachments) for each host: the attachments split as evenly as
    they go, the first hosts taking one more."""
    base, extra = divmod(connections, len(hosts))
    found, first = [], 1
    for position, host in enumerate(hosts):
        count = base + (1 if position < extra else 0)
        if count:
            found.append((host, first, count))
            first += count
    return found


class LabClientsRun(ProcessRun):
    """A load run whose attachments are driven by hosts of a lab; the interface of _core.LoadRun."""

    def __init__(self, config_json: str, lab: dict[str, Any]) -> None:
        super().__init__(config_json)
        self.lab = lab
        self.split = shares(self.connections, list(lab["hosts"]))
        self.groups = [(first, count) for _, first, count in self.split]
        self._hosts = {first: host for host, first, _ in self.split}
        self._token = secrets.token_hex(4)

    def _spawn(self, index: int, stderr: IO[bytes]) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-c", _RELAY_ENTRY], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=stderr, env=os.environ.copy())

    def _first_message(self, index: int, config: dict[str, Any]) -> dict[str, Any]:
        return {**super()._first_message(index, config),
                "relay": {**self.lab, "host": self._hosts[index], "name": f"fbbench-load-{self._token}-{index}"}}


def relay_main() -> int:
    """A relay between Classic's coordinator (stdin, stdout) and one host's load (see the module)."""
    from distributed import Queue

    from fbbench.lab import RESOURCE, tasks
    from fbbench.lab.client import connect

    first = json.loads(sys.stdin.readline())
    relay = first.pop("relay")
    out = sys.stdout.buffer
    tls = Path(relay["tls"]) if relay.get("tls") else None
    with connect(relay["address"], tls, bool(relay.get("insecure"))) as lab:
        lines, commands = Queue(relay["name"] + "-out", client=lab.client), Queue(relay["name"] + "-in",
                                                                                   client=lab.client)
        future = lab.client.submit(tasks.drive_load, {**first, "lines": lines.name, "commands": commands.name},
                                   key=relay["name"], workers=[relay["host"]], allow_other_workers=False,
                                   resources={RESOURCE: 1}, pure=False)

        def forward() -> None:
            """Classic's commands to the host: a start time as wall-clock time, stop; EOF stops."""
            for line in sys.stdin:
                word, _, argument = line.strip().partition(" ")
                if word == "go":
                    commands.put({"go_wall": time.time() + (float(argument) - time.monotonic())})
                elif word == "stop":
                    commands.put({"stop": True})
                elif word == "close":
                    commands.put({"close": True})
            with contextlib.suppress(Exception):
                commands.put({"stop": True})

        threading.Thread(target=forward, name="fbbench-relay-commands", daemon=True).start()
        ended = False
        while True:
            try:
                message = lines.get(timeout=QUEUE_WAIT)
            except TimeoutError:
                if ended:
                    break
                ended = future.done()
                continue
            out.write(json.dumps(message).encode() + b"\n")
            out.flush()
        if future.status != "finished":
            error = future.exception()
            print(f"host {relay['host']}: its load ended without a result ({type(error).__name__}: {error})",
                  file=sys.stderr)
            return 1
        return 0
