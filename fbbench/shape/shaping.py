"""One run's machine shape, made, watched, verified and removed: the object the runner holds.

The runner asks :func:`plan` for it (before anything runs: a shape this machine cannot apply is
refused in one line), records :meth:`Shaping.kernel_objects` in the run's files, then enters it
(``with shaping:`` makes the cgroup and the link, and removes them however the block ends). It
starts the engine's processes through :meth:`Shaping.engine_launcher` (the embedded engine
child, whose Classic processes inherit the group; or the managed server) and a managed run's
load through :meth:`Shaping.client_launcher` (the client's namespace). While the engine runs a
watcher thread reads the group's counters twice a second; :meth:`Shaping.verify` turns what it
saw into the record the run keeps (``host.shape``) and the limits that did not take effect.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import psutil

from fbbench.engines import platform as host_os
from fbbench.errors import FbbenchError
from fbbench.shape import cgroups, network, verify
from fbbench.shape.spec import Shape, check_against_host, shown

CGROUP, NETNS = "cgroup", "netns"  # the kinds of kernel objects a run records (run_files.kind)
WATCH_INTERVAL = 0.5


def _needs(shape: Shape) -> set[str]:
    return ({"memory"} if shape.memory else set()) | ({"cpus"} if shape.cpus else set()) | (
        {"disk"} if shape.disk else set())


def _device_of(path: Path) -> tuple[str, str] | None:
    """The whole disk under ``path``: (major:minor, name), None on a file system without one."""
    facts = host_os.storage_of(path)
    name = facts.get("block_device")
    if not name:
        return None
    number = Path(f"/sys/block/{name}/dev").read_text().strip()
    return number, str(name)


def plan(shape: Shape, run_id: str, engine_kind: str, database_dir: Path, temp_dir: Path | None,
         where: str = "--machine") -> Shaping:
    """The shape of one run, checked against this machine before anything is made.
    ``engine_kind``: embedded, managed or server (an external server is refused: fbbench does not
    run it, so nothing of it can be shaped)."""
    if engine_kind == "server":
        raise FbbenchError(f"{where} shapes the machine fbbench runs the engine on; an external server runs "
                           "elsewhere", hint="shape an embedded engine or a managed server (--engine server:DIR)")
    if shape.network and engine_kind != "managed":
        raise FbbenchError(f"{where}: net.* shapes the link to a server, and an embedded engine has none",
                           hint="give a managed server, --engine server:/usr (Debian's Firebird 3.0)")
    check_against_host(shape, where)
    needs = _needs(shape)
    refusal = cgroups.missing(needs) or (network.missing(bool(shape.net_loss)) if shape.network else None)
    if refusal:
        raise FbbenchError(f"{where}: {refusal}", hint="run without --machine, or as root on a host with that")
    devices: list[tuple[str, str]] = []
    if shape.disk:
        for directory in (database_dir, *([temp_dir] if temp_dir else [])):
            device = _device_of(directory)
            if device is None:
                raise FbbenchError(f"{where}: disk.* throttles a block device, and {directory} is on none (a tmpfs?)",
                                   hint="give --workdir on a disk")
            if device not in devices:
                devices.append(device)
    return Shaping(shape, run_id, devices)


@dataclass
class Shaping:
    shape: Shape
    run_id: str
    devices: list[tuple[str, str]] = field(default_factory=list)  # (major:minor, name) under the database and temp
    group: cgroups.Group | None = None
    link: network.Link | None = None
    cpus: list[int] = field(default_factory=list)
    made: bool = False
    _watch: verify.Watch = field(default_factory=verify.Watch)
    _thread: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        needs = _needs(self.shape)
        if needs:
            self.group = cgroups.Group(self.run_id, needs)
        if self.shape.network:
            self.link = network.Link(self.run_id, self.shape.net_rtt, self.shape.net_rate, self.shape.net_loss)
        if self.shape.cpus:
            self.cpus = sorted(os.sched_getaffinity(0))[: self.shape.cpus]

    def kernel_objects(self) -> dict[str, str]:
        """Path → kind of every kernel object this shape will make: the run records them in its
        files before they exist, so a killed run's are removed by the next one."""
        objects = {str(path): CGROUP for path in (self.group.paths if self.group else [])}
        return objects | {str(path): NETNS for path in (self.link.paths if self.link else [])}

    # -- making and removing --------------------------------------------------------------------

    def __enter__(self) -> Shaping:
        try:
            if self.group is not None:
                self.group.create()
                if self.shape.memory:
                    self.group.limit_memory(self.shape.memory)
                if self.cpus:
                    self.group.limit_cpus(self.cpus)
                if self.shape.disk:
                    limits = {key: getattr(self.shape, f"disk_{key}")
                              for key in ("read_iops", "write_iops", "read_bps", "write_bps")
                              if getattr(self.shape, f"disk_{key}") is not None}
                    self.group.limit_disk([number for number, _ in self.devices], limits)
            if self.link is not None:
                self.link.create()
            self.made = True
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.remove()

    def remove(self) -> list[str]:
        """Remove every object this shape made (also what a failed making left); what remains."""
        self.stop_watching()
        left: list[str] = []
        if self.link is not None:
            self.link.remove()
            left += [str(path) for path in self.link.paths if path.exists()]
        if self.group is not None:
            left += [str(path) for path in self.group.paths if not cgroups.remove(path)]
        return left

    # -- starting the engine inside it ----------------------------------------------------------

    def engine_launcher(self, argv: list[str]) -> list[str]:
        """The command that starts the engine's process (the embedded engine child, the managed
        server) inside the shape: its group, and a managed server's network namespace."""
        command = list(argv)
        if self.link is not None:
            command = [shutil.which("ip") or "ip", *network.in_namespace(self.link.server_ns, command)[1:]]
        if self.group is not None:
            command = self.group.enter_command(command)
            command[0] = shutil.which("sh") or "/bin/sh"
        return command

    def client_launcher(self, argv: list[str]) -> list[str]:
        """The command that starts a managed run's load (its engine child) on the client's side
        of the link."""
        if self.link is None:
            return list(argv)
        return [shutil.which("ip") or "ip", *network.in_namespace(self.link.client_ns, list(argv))[1:]]

    def serve(self, server_port: int) -> tuple[str, int]:
        """Once a managed server listens in its namespace: the address and port its clients use
        (the relay's, or the server's own behind netem)."""
        assert self.link is not None
        return self.link.start_relay(server_port, host_os.dying_with_owner([]))

    # -- watching and verifying -----------------------------------------------------------------

    def start_watching(self) -> None:
        if self.group is None or self._thread is not None:
            return
        self._watch.started = time.monotonic()
        self._thread = threading.Thread(target=self._watch_loop, name="machine shape watch", daemon=True)
        self._thread.start()

    def _watch_loop(self) -> None:
        assert self.group is not None
        while True:
            self._sample()
            if self._stop.wait(WATCH_INTERVAL):
                self._sample()
                return

    def _sample(self) -> None:
        assert self.group is not None
        pids = self.group.pids()
        affinity: set[int] = set()
        for pid in pids:
            with contextlib.suppress(psutil.Error):
                affinity |= set(psutil.Process(pid).cpu_affinity() or [])
        self._watch.add(time.monotonic(), self.group.usage(), pids, affinity)

    def stop_watching(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def out_of_memory(self) -> str | None:
        """Why the engine died, when it was the group's OOM killer (the engine's memory inside
        the shape ran out; nothing outside the group was touched)."""
        if self.group is None or not self.shape.memory:
            return None
        kills = max(self.group.usage().get("oom_kills", 0), self._watch.last("oom_kills"))
        if kills <= 0:
            return None
        return (f"the engine ran out of memory inside the machine shape (memory={shown('memory', self.shape.memory)}):"
                f" the kernel's OOM killer ended {kills} of its processes in the run's own cgroup, nothing else")

    def record(self) -> dict[str, Any]:
        """What the shape is, as the run records it before measuring (``host.shape``)."""
        found: dict[str, Any] = {"text": self.shape.text(), "preset": self.shape.preset,
                                 "limits": {key: shown(key, value) for key, value in self.shape.limits().items()},
                                 "emulated": True}
        if self.group is not None:
            found["cgroup"] = {"version": self.group.version, "paths": [str(p) for p in self.group.paths],
                               "read_back": self.group.read_back() if self.made else {}}
        if self.cpus:
            found["cpus"] = self.cpus
        if self.devices:
            found["devices"] = [f"{name} ({number})" for number, name in self.devices]
        if self.link is not None:
            found["network"] = {"method": self.link.method or None, "server_namespace": self.link.server_ns,
                                "client_namespace": self.link.client_ns,
                                "link": f"{network.CLIENT_ADDRESS} ↔ {network.SERVER_ADDRESS} (veth)"}
        return found

    def verify(self, run_seconds: float | None = None) -> tuple[dict[str, Any], list[str]]:
        """The shape's record with what was measured, and the limits that did not take effect
        (each one line). Call once the engine has ended, before the shape is removed."""
        self.stop_watching()
        record = self.record()
        measured: dict[str, Any] = {}
        failures: list[str] = []
        if self.group is not None:
            got, failed = verify.group(self.shape, self._watch, record["cgroup"]["read_back"], self.devices, self.cpus)
            measured |= got
            failures += failed
        if self.link is not None and self.link.relay_process is not None:
            got, failed = verify.link(self.shape, self.link)
            measured |= got
            failures += failed
        record["measured"] = measured
        record["failures"] = failures
        return record, failures
