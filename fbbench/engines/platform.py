"""What fbbench asks of the operating system that only Linux (or POSIX) answers, in one place.

Process facts that any system has — is a process alive, its state, its environment, its open
sockets, a machine's memory — are read through psutil wherever they are needed. What remains
here has no portable form, and a port to another system is the work of this module:

- process groups and their signals: a run's engine child and its Classic attachment processes
  are one group, stopped and continued as one (SIGSTOP / SIGCONT time-sharing), killed as one;
- a child that dies with its owner, even when the owner is killed with -9 (PR_SET_PDEATHSIG);
- a private mount namespace with bind mounts (``unshare``), which gives Debian's Firebird server
  its own log and security directories;
- the file descriptors of a process as that process sees them (another mount namespace's paths);
- the limits of a container or a user (its memory cgroups, v1 or v2, up to their root; pids.max, threads-max, rlimits).

It lives in ``engines/`` because the lowest of its users is there (the managed server); the
runner (time-sharing, the memory check) sits above it. A process's figures of itself (peak
resident set, proportional set, threads) are in :mod:`fbbench.engines.own_process`, which imports
nothing of this module's: each Classic attachment process reads them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# ----------------------------------------------------------------------------- process groups


def in_own_process_group() -> dict[str, Any]:
    """subprocess.Popen arguments that make the child the leader of a process group of its own
    (its pid is the group's id): a signal to the group reaches it and whatever it starts."""
    return {"process_group": 0}


def in_own_session() -> dict[str, Any]:
    """subprocess.Popen arguments that give the child a session (and process group) of its own:
    the terminal's Ctrl-C does not reach it."""
    return {"start_new_session": True}


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to every process of a group (gone, or not ours: nothing happens)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_group(pgid: int) -> None:
    signal_group(pgid, signal.SIGKILL)


def stop_group(pgid: int) -> None:
    signal_group(pgid, signal.SIGSTOP)


def continue_group(pgid: int) -> None:
    signal_group(pgid, signal.SIGCONT)


def process_alive(pid: int, created: float | None = None, *, unreadable: bool = False) -> bool:
    """Whether ``pid`` runs — a zombie, ended but not yet reaped, does not — and, given
    ``created`` (psutil's create_time), is that process and not another that reuses its number;
    ``unreadable`` for a process that is there but not ours to look at.

    A process whose first thread has ended while others still run or still exit (SIGKILL on a
    process whose engine threads are writing pages: its first thread can end before them) shows
    that thread's state, zombie: it still holds its files and their locks until its last thread
    is gone, so it still runs."""
    import psutil  # in the functions that use it: a Classic attachment process imports this module

    try:
        process = psutil.Process(pid)
        return ((process.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD) or _threads_left(pid))
                and (created is None or process.create_time() == created))
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return unreadable


def _threads_left(pid: int) -> bool:
    """Whether a process whose first thread is a zombie has other threads."""
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def stop_self() -> None:
    """Stop this process until someone continues it."""
    os.kill(os.getpid(), signal.SIGSTOP)


def is_stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped by a signal (SIGSTOP), and not merely asleep."""
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_STOPPED
    except psutil.Error:
        return False


def group_cpu_seconds(pgid: int) -> float:
    """CPU seconds (user + system) the live processes of a process group have used so far."""
    import psutil

    total = 0.0
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == pgid:
                times = process.cpu_times()
                total += times.user + times.system
        except (OSError, psutil.Error):
            continue  # ended while we looked
    return total


# -------------------------------------------------------------------------- dying with the owner

# Runs between fork and the real program's exec: PR_SET_PDEATHSIG(SIGKILL), and an exit at once
# if the owner is already gone (it died before the setting took effect).
_DIE_WITH_OWNER = (
    "import ctypes, os, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, 9)\n"  # PR_SET_PDEATHSIG, SIGKILL
    "if os.getppid() != int(sys.argv[1]):\n"
    "    os._exit(70)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


def dying_with_owner(argv: Sequence[str]) -> list[str]:
    """The command that runs ``argv`` (a program's path first) so that it is killed when this
    process's thread that starts it ends, even by kill -9."""
    return [sys.executable, "-I", "-c", _DIE_WITH_OWNER, str(os.getpid()), *argv]


# ------------------------------------------------------------------------------ mount namespaces


@functools.cache
def private_mount_namespace(*targets: Path) -> tuple[str, ...] | None:
    """The command prefix that gives a child a mount namespace of its own in which the
    directories ``targets`` may be bind-mounted over, or None where that is not allowed."""
    if shutil.which("unshare") is None or not all(target.is_dir() for target in targets):
        return None
    prefix: tuple[str, ...] = ("unshare", "--mount", "--propagation", "private")
    if os.geteuid() != 0:
        # A user namespace makes the bind mount legal without privileges (where the kernel allows it).
        prefix = ("unshare", "--map-root-user", "--mount", "--propagation", "private")
    with tempfile.TemporaryDirectory(prefix="fbbench-ns-probe-") as scratch:
        mounts = " && ".join(f'mount --bind "$1" "${n}"' for n in range(2, len(targets) + 2))
        try:
            probe = subprocess.run([*prefix, "--", "sh", "-c", mounts, "sh", scratch, *map(str, targets)],
                                   capture_output=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return None
    return prefix if probe.returncode == 0 else None


def with_bind_mounts(prefix: Sequence[str], mounts: Sequence[tuple[Path, Path]], argv: Sequence[str]) -> list[str]:
    """``argv`` run in a private mount namespace (``prefix``) where each (source, target) of
    ``mounts`` is bind-mounted first."""
    binds = " && ".join(f'mount --bind "${2 * n + 1}" "${2 * n + 2}"' for n in range(len(mounts)))
    script = f'{binds} && shift {2 * len(mounts)} && exec "$@"'
    return [*prefix, "--", "sh", "-c", script, "sh", *(str(path) for pair in mounts for path in pair), *argv]


def open_paths(pid: int) -> set[str]:
    """What the process's file descriptors point to, as the process sees them: paths in its own
    mount namespace too (psutil's open_files leaves out paths that do not exist in ours), or
    ``socket:[inode]``."""
    targets: set[str] = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                targets.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return targets


# ----------------------------------------------------------------------------------- limits


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def memory_limits() -> list[tuple[float, str]]:
    """Limits on the memory this process may still use, besides the machine's available memory:
    (bytes, what sets the limit)."""
    from fbbench.shape import cgroups  # the one reader of cgroups, v1 and v2

    limits: list[tuple[float, str]] = []
    room = cgroups.memory_room()
    if room is not None:
        limits.append((room, "the memory cgroup's limit (a container's or a machine shape's)"))
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limits.append((soft, "the address-space limit (ulimit -v)"))
    return limits


def task_limits() -> list[tuple[float, str]]:
    """Limits on the threads (or processes) this user may start: (count, what sets the limit)."""
    limits: list[tuple[float, str]] = []
    soft, _hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY and os.geteuid() != 0:
        limits.append((soft, "the process/thread limit (ulimit -u)"))
    threads_max = _read("/proc/sys/kernel/threads-max").strip()
    if threads_max.isdigit():
        limits.append((int(threads_max), "the kernel's threads-max"))
    pid_max = _read("/sys/fs/cgroup/pids.max").strip()
    if pid_max.isdigit():
        limits.append((int(pid_max), "the container's task limit (cgroup pids.max)"))
    return limits


def cpu_model() -> str | None:
    """The processor's model name (psutil does not tell it), or None."""
    for line in _read("/proc/cpuinfo").splitlines():
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()
    return None


# ------------------------------------------------------------------------- the OS page cache

_MEMINFO_KEYS = {"MemTotal": "total", "MemAvailable": "available", "Cached": "page_cache", "Dirty": "dirty",
                 "Writeback": "writeback"}


def os_name() -> str | None:
    """The distribution's own name for itself (os-release's PRETTY_NAME), None where there is none."""
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


def meminfo() -> dict[str, int]:
    """The host's memory as /proc/meminfo tells it, in bytes: total, available, page_cache (the
    file pages the kernel holds, Cached), dirty and writeback (written, not yet on the disk)."""
    found: dict[str, int] = {}
    for line in _read("/proc/meminfo").splitlines():
        key, _, rest = line.partition(":")
        if key in _MEMINFO_KEYS:
            number, *unit = rest.split()
            found[_MEMINFO_KEYS[key]] = int(number) * (1024 if unit == ["kB"] else 1)
    return found


def page_cache_drop_refusal() -> str | None:
    """Why this process cannot drop the OS page cache (None when it can): only root may write
    /proc/sys/vm/drop_caches."""
    if os.geteuid() != 0:
        return f"dropping the OS page cache needs root (writing /proc/sys/vm/drop_caches); this is uid {os.geteuid()}"
    if not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        return "/proc/sys/vm/drop_caches cannot be written here (a container without that right?)"
    return None


def drop_page_cache() -> dict[str, int]:
    """Write dirty pages out, then drop the clean page cache (echo 1 > drop_caches); the page
    cache's size before and after, in bytes."""
    before = meminfo().get("page_cache", 0)
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("1\n")
    return {"page_cache_before": before, "page_cache_after": meminfo().get("page_cache", 0)}


def process_io(pid: int) -> dict[str, int]:
    """A process's major page faults (its own and its waited-for children's) and block I/O
    (/proc/PID/io read_bytes, write_bytes: what reached the storage layer, page cache excluded);
    empty where the kernel does not tell (another user's process)."""
    found: dict[str, int] = {}
    stat = _read(f"/proc/{pid}/stat")
    fields = stat.rsplit(")", 1)[1].split() if ")" in stat else []
    if len(fields) > 11:
        found["major_faults"] = int(fields[9]) + int(fields[10])  # majflt, cmajflt (fields 12, 13)
    for line in _read(f"/proc/{pid}/io").splitlines():
        key, _, value = line.partition(":")
        if key in ("read_bytes", "write_bytes"):
            found[key] = int(value)
    return found


# ------------------------------------------------------------------------------- the machine


def cpu_governor() -> str | None:
    """The CPU frequency governor (performance, powersave, schedutil …), None where the kernel
    exposes none (most virtual machines)."""
    governors = {_read(f"/sys/devices/system/cpu/cpu{n}/cpufreq/scaling_governor").strip()
                 for n in range(os.cpu_count() or 1)} - {""}
    return ", ".join(sorted(governors)) or None


def virtualization() -> dict[str, str | None]:
    """The hypervisor and the container this process runs in ("none" when bare), as
    systemd-detect-virt tells them, else from the CPU's hypervisor flag and container marks.
    Asked once per boot (and per container: the boot id and this process's root mount decide):
    the answer is kept in the engine cache, as every run's conditions read it."""
    from fbbench import paths  # here: a Classic attachment process imports this module, and needs none of it

    boot = _read("/proc/sys/kernel/random/boot_id").strip()
    root = _mount_of(Path("/")) or {}
    key = f"{boot}-{root.get('device_number', '')}-{os.stat('/').st_ino}".replace(":", ".")
    kept = paths.cache_dir() / "virtualization" / f"{key}.json" if boot else None
    if kept is not None:
        with contextlib.suppress(OSError, ValueError):
            answer = json.loads(kept.read_text())
            if isinstance(answer, dict) and set(answer) == {"hypervisor", "container"}:
                return answer
    found = _detect_virtualization()
    if kept is not None:
        with contextlib.suppress(OSError):  # a cache: unwritable, it is asked again next time
            paths.write_whole(kept, json.dumps(found))
    return found


def _detect_virtualization() -> dict[str, str | None]:
    found: dict[str, str | None] = {"hypervisor": None, "container": None}
    detect = shutil.which("systemd-detect-virt")
    if detect is not None:
        for kind, flag in (("hypervisor", "--vm"), ("container", "--container")):
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                answer = subprocess.run([detect, flag], capture_output=True, text=True, timeout=5).stdout.strip()
                found[kind] = answer or None
    if found["hypervisor"] is None:
        flags = next((line for line in _read("/proc/cpuinfo").splitlines() if line.startswith("flags")), "")
        found["hypervisor"] = "yes (unknown)" if " hypervisor" in flags else "none"
    if found["container"] is None:
        marks = {"/.dockerenv": "docker", "/run/.containerenv": "podman"}
        found["container"] = next((name for path, name in marks.items() if os.path.exists(path)), "none")
    return found


def _mount_of(path: Path) -> dict[str, str] | None:
    """The /proc/self/mountinfo entry whose mount point holds ``path`` (the longest one)."""
    best: dict[str, str] | None = None
    target = str(path)
    for line in _read("/proc/self/mountinfo").splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 6 or len(tail) < 2:
            continue
        point = fields[4].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best["mount_point"])):
            best = {"mount_point": point, "device_number": fields[2], "mount_options": fields[5],
                    "filesystem": tail[0], "source": tail[1], "super_options": tail[2] if len(tail) > 2 else ""}
    return best


def _block_device(device_number: str) -> Path | None:
    """The whole disk (/sys/block/NAME) of a block device ``major:minor``, a partition's parent."""
    try:
        device = Path(f"/sys/dev/block/{device_number}").resolve(strict=True)
    except OSError:
        return None
    if (device / "partition").exists():
        device = device.parent
    return device if (device / "queue").is_dir() else None


def storage_of(path: Path) -> dict[str, Any]:
    """The storage under ``path`` as a DBA checks it before believing a disk comparison: the
    mount's device and filesystem, its mount options (noatime, barrier / nobarrier …), the
    block device's model, whether it spins, its I/O scheduler, and the free space."""
    existing = path.expanduser().absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    facts: dict[str, Any] = {"path": str(path)}
    with contextlib.suppress(OSError):
        usage = shutil.disk_usage(existing)
        facts.update(size_bytes=usage.total, free_bytes=usage.free)
    mount = _mount_of(existing.resolve())
    if mount is None:
        return facts
    options = dict.fromkeys([*mount["mount_options"].split(","), *mount["super_options"].split(",")])
    facts.update(device=mount["source"], filesystem=mount["filesystem"], mount_point=mount["mount_point"],
                 mount_options=",".join(option for option in options if option))
    if mount["filesystem"] in ("tmpfs", "ramfs"):
        facts.update(medium="memory", scheduler="none (no block device)")
        return facts
    block = _block_device(mount["device_number"])
    if block is None:
        return facts
    rotational = _read(str(block / "queue/rotational")).strip()
    scheduler = _read(str(block / "queue/scheduler")).strip()
    chosen = next((word[1:-1] for word in scheduler.split() if word.startswith("[")), scheduler or None)
    model = _read(str(block / "device/model")).strip()
    if not model:
        with contextlib.suppress(OSError):
            model = Path(os.readlink(block / "device/driver")).name  # e.g. virtio_blk: no model to read
    facts.update(block_device=block.name, model=model or None, scheduler=chosen,
                 medium={"1": "rotational", "0": "solid-state"}.get(rotational))
    if rotational:
        facts["rotational"] = rotational == "1"
    return facts


def listening_ports(pid: int) -> set[int]:
    """The TCP ports ``pid`` listens on, read in the process's own network namespace
    (/proc/PID/net/tcp*, matched to its socket inodes): psutil reads this process's namespace, where
    a server in a namespace of its own holds nothing."""
    inodes = {target[8:-1] for target in open_paths(pid) if target.startswith("socket:[")}
    ports: set[int] = set()
    for table in ("tcp", "tcp6"):
        for line in _read(f"/proc/{pid}/net/{table}").splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports
