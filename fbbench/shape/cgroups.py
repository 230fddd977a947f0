"""Control groups, v1 and v2: the memory, CPU and disk part of a machine shape.

A run's group is ``fbbench-<run id>`` directly under each hierarchy's root — v1: one directory
per controller (``/sys/fs/cgroup/memory/fbbench-…``, ``…/cpuset/…``, ``…/blkio/…``), v2: one
directory in the unified tree — never under the cgroup fbbench itself sits in (that one belongs
to whatever started fbbench). The engine's processes enter it through a wrapper command that
writes its own pid into each ``cgroup.procs`` and then execs the engine, so nothing the engine
does happens outside the group, and whatever it forks (Classic's processes) inherits it.

Limits, as the kernel names them:

================  =================================  ================================
shape             v1                                 v2
================  =================================  ================================
memory            memory.limit_in_bytes              memory.max (memory.swap.max = 0)
cpus              cpuset.cpus (+ cpuset.mems)        cpuset.cpus
disk.*_iops/bps   blkio.throttle.{read,write}_       io.max riops/wiops/rbps/wbps
                  {iops,bps}_device
================  =================================  ================================

What the group did is read back from its own counters (:meth:`Group.usage`): the memory
high-water mark (v1 ``memory.max_usage_in_bytes``, v2 ``memory.peak``), its page cache
(``memory.stat`` cache / file), OOM kills, and the I/O per device (v1
``blkio.throttle.io_serviced`` / ``io_service_bytes``, v2 ``io.stat``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from fbbench.errors import FbbenchError

V2_ROOT = Path("/sys/fs/cgroup")
PREFIX = "fbbench-"
# The controllers a shape needs, by limit and version: v1 controller (mount) names, v2 names.
V1_CONTROLLERS = {"memory": "memory", "cpus": "cpuset", "disk": "blkio"}
V2_CONTROLLERS = {"memory": "memory", "cpus": "cpuset", "disk": "io"}
ENTER_FAILED = 71  # the wrapper's exit status when it could not join the group


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def version() -> int | None:
    """2 for a unified hierarchy at /sys/fs/cgroup, 1 for controllers mounted one by one, None
    for neither (no cgroup file system visible)."""
    if (V2_ROOT / "cgroup.controllers").exists():
        return 2
    return 1 if v1_mounts() else None


def v1_mounts() -> dict[str, Path]:
    """Each v1 controller's mount point (/proc/self/mountinfo: file system type ``cgroup``)."""
    found: dict[str, Path] = {}
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] != "cgroup":
            continue
        for option in tail[2].split(","):
            if option in V1_CONTROLLERS.values() and option not in found:
                found[option] = Path(fields[4])
    return found


def memory_room() -> int | None:
    """What the memory cgroups this process is in still let it use, in bytes: the least of each
    limit less its usage, from its own group up to the hierarchy's root (a container's limit may
    sit on an ancestor; v1 counts the page cache the group caused in its usage). None where no
    group limits it. Inside a machine shape, the shape's."""
    rooms: list[int] = []
    v1_memory = None
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _hierarchy, controllers, path = [*line.split(":", 2), "", ""][:3]
        if controllers == "" and version() == 2:
            root, names = V2_ROOT, ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):
            v1_memory = v1_memory or v1_mounts().get("memory")
            if v1_memory is None:
                continue
            root, names = v1_memory, ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        directory = root / path.strip("/")
        while True:
            limit, usage = (_read(directory / name).strip() for name in names)
            # v1 says "no limit" with a number near 2^63 (the page-rounded LONG_MAX), v2 with "max".
            if limit.isdigit() and usage.isdigit() and int(limit) < 1 << 62:
                rooms.append(max(0, int(limit) - int(usage)))
            if directory == root or root not in directory.parents:
                break
            directory = directory.parent
    return min(rooms, default=None)


def missing(needs: set[str]) -> str | None:
    """Why this machine cannot apply limits of the kinds ``needs`` (memory, cpus, disk), in one
    line; None when it can. Asked before anything is built."""
    if not needs:
        return None
    if os.geteuid() != 0:
        return f"a machine shape needs root (it makes control groups for {', '.join(sorted(needs))}); this is uid " \
               f"{os.geteuid()}"
    found = version()
    if found is None:
        return "no cgroup file system is mounted (neither /sys/fs/cgroup/cgroup.controllers nor v1 controllers)"
    if found == 2:
        offered = set(_read(V2_ROOT / "cgroup.subtree_control").split())
        lacking = sorted(V2_CONTROLLERS[need] for need in needs if V2_CONTROLLERS[need] not in offered)
        if lacking:
            return (f"the cgroup v2 root does not hand the {', '.join(lacking)} controller(s) to its groups "
                    f"(/sys/fs/cgroup/cgroup.subtree_control has: {' '.join(sorted(offered)) or 'nothing'})")
        if not os.access(V2_ROOT, os.W_OK):
            return "/sys/fs/cgroup is not writable here (a container without that right?)"
        return None
    mounts = v1_mounts()
    for need in sorted(needs):
        controller = V1_CONTROLLERS[need]
        if controller not in mounts:
            return f"the cgroup v1 {controller} controller is not mounted (needed for {need})"
        if not os.access(mounts[controller], os.W_OK):
            return f"the cgroup v1 {controller} controller at {mounts[controller]} is not writable here"
    return None


def paths_for(run_id: str, needs: set[str]) -> list[Path]:
    """The directories a run's group will be (to be recorded before they are made)."""
    name = PREFIX + run_id
    if version() == 2:
        return [V2_ROOT / name]
    mounts = v1_mounts()
    return [mounts[V1_CONTROLLERS[need]] / name for need in sorted(needs)]


@dataclass
class Group:
    """One run's control group (one directory per v1 controller, or one v2 directory)."""

    run_id: str
    needs: set[str]
    version: int = field(default_factory=lambda: version() or 1)
    directories: dict[str, Path] = field(default_factory=dict)  # need → its directory

    def __post_init__(self) -> None:
        name = PREFIX + self.run_id
        if self.version == 2:
            self.directories = dict.fromkeys(self.needs, V2_ROOT / name)
        else:
            mounts = v1_mounts()
            self.directories = {need: mounts[V1_CONTROLLERS[need]] / name for need in self.needs}

    @property
    def paths(self) -> list[Path]:
        return sorted(set(self.directories.values()))

    def create(self) -> None:
        for directory in self.paths:
            directory.mkdir()
        if self.version == 1 and "cpus" in self.needs:
            # A v1 cpuset starts empty, and a task cannot join a cpuset without memory nodes.
            cpuset = self.directories["cpus"]
            (cpuset / "cpuset.mems").write_text(_read(cpuset.parent / "cpuset.mems").strip() or "0")

    def _write(self, need: str, name: str, value: str) -> None:
        target = self.directories[need] / name
        try:
            target.write_text(value)
        except OSError as error:
            raise FbbenchError(f"the kernel refused {value.strip()!r} in {target}: {error.strerror or error}") from None

    def limit_memory(self, size: int) -> None:
        if self.version == 2:
            self._write("memory", "memory.max", str(size))
            with contextlib.suppress(FbbenchError):  # no swap configured: nothing to forbid
                self._write("memory", "memory.swap.max", "0")
        else:
            self._write("memory", "memory.limit_in_bytes", str(size))

    def limit_cpus(self, cpus: list[int]) -> None:
        self._write("cpus", "cpuset.cpus", ",".join(map(str, cpus)))

    def limit_disk(self, devices: list[str], limits: dict[str, int]) -> None:
        """``limits``: read_iops, write_iops, read_bps, write_bps (those given) on each device
        ``major:minor``."""
        for device in devices:
            if self.version == 2:
                v2 = {"read_iops": "riops", "write_iops": "wiops", "read_bps": "rbps", "write_bps": "wbps"}
                self._write("disk", "io.max", f"{device} " + " ".join(f"{v2[k]}={v}" for k, v in limits.items()))
            else:
                for key, value in limits.items():
                    self._write("disk", f"blkio.throttle.{key}_device", f"{device} {value}")

    def read_back(self) -> dict[str, str]:
        """The limit files as the kernel now shows them: what took effect, not what was written."""
        names = {1: {"memory": ["memory.limit_in_bytes"], "cpus": ["cpuset.cpus", "cpuset.effective_cpus"],
                     "disk": [f"blkio.throttle.{k}_device" for k in ("read_iops", "write_iops", "read_bps",
                                                                       "write_bps")]},
                 2: {"memory": ["memory.max"], "cpus": ["cpuset.cpus", "cpuset.cpus.effective"], "disk": ["io.max"]}}
        return {name: _read(self.directories[need] / name).strip()
                for need in self.needs for name in names[self.version][need]}

    def enter_command(self, argv: list[str]) -> list[str]:
        """``argv`` run so that its process joins this group before it execs: nothing it does,
        and nothing it starts, runs outside the group."""
        procs = [str(directory / "cgroup.procs") for directory in self.paths]
        script = ('n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit ' + str(ENTER_FAILED)
                  + '; shift; n=$((n-1)); done; exec "$@"')
        return ["sh", "-c", script, "sh", str(len(procs)), *procs, *argv]

    def pids(self) -> list[int]:
        found: set[int] = set()
        for directory in self.paths:
            found |= {int(pid) for pid in _read(directory / "cgroup.procs").split()}
        return sorted(found)

    def usage(self) -> dict[str, int]:
        """The group's counters now: memory peak, its page cache, OOM kills, failures to charge;
        per-device I/O as ``io:<maj:min>:<read_ios|write_ios|read_bytes|write_bytes>``."""
        found: dict[str, int] = {}
        if "memory" in self.needs:
            memory = self.directories["memory"]
            stat = dict(_pairs(_read(memory / "memory.stat")))
            if self.version == 2:
                found["memory_peak"] = _int(_read(memory / "memory.peak"))
                found["memory_now"] = _int(_read(memory / "memory.current"))
                found["page_cache"] = stat.get("file", 0)
                found["oom_kills"] = dict(_pairs(_read(memory / "memory.events"))).get("oom_kill", 0)
            else:
                found["memory_peak"] = _int(_read(memory / "memory.max_usage_in_bytes"))
                found["memory_now"] = _int(_read(memory / "memory.usage_in_bytes"))
                found["page_cache"] = stat.get("total_cache", stat.get("cache", 0))
                found["oom_kills"] = dict(_pairs(_read(memory / "memory.oom_control"))).get("oom_kill", 0)
                found["limit_hits"] = _int(_read(memory / "memory.failcnt"))
        if "disk" in self.needs:
            found |= self._io()
        return found

    def _io(self) -> dict[str, int]:
        disk = self.directories["disk"]
        found: dict[str, int] = {}
        if self.version == 2:
            for line in _read(disk / "io.stat").splitlines():
                device, *items = line.split()
                for item in items:
                    key, _, value = item.partition("=")
                    name = {"rios": "read_ios", "wios": "write_ios", "rbytes": "read_bytes",
                            "wbytes": "write_bytes"}.get(key)
                    if name:
                        found[f"io:{device}:{name}"] = int(value)
            return found
        for file, suffix in (("blkio.throttle.io_serviced", "ios"), ("blkio.throttle.io_service_bytes", "bytes")):
            for line in _read(disk / file).splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] in ("Read", "Write"):
                    found[f"io:{parts[0]}:{parts[1].lower()}_{suffix}"] = int(parts[2])
        return found


def _pairs(text: str) -> list[tuple[str, int]]:
    pairs = []
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            pairs.append((name, int(value)))
    return pairs


def _int(text: str) -> int:
    text = text.strip()
    return int(text) if text.isdigit() else 0


def remove(directory: Path, timeout: float = 10.0) -> bool:
    """Remove a run's group directory: its processes (a killed run's engine, still running) are
    killed first, since a group with tasks cannot be removed. Only ``fbbench-*`` directories of a
    cgroup file system are ever touched. True when it is gone."""
    if not directory.name.startswith(PREFIX) or not (directory.parent / "cgroup.procs").exists():
        return not directory.exists()
    deadline = time.monotonic() + timeout
    while directory.exists():
        for pid in _read(directory / "cgroup.procs").split():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(pid), signal.SIGKILL)
        try:
            directory.rmdir()
        except FileNotFoundError:
            break
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)  # the killed tasks leave the group a moment after they die
    return True
