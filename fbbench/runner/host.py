"""Facts about the machine a run measured: what an expert needs to judge a comparison — the
host's stable name, CPU (model, cores and threads, frequency governor), memory, virtualisation,
kernel, and the storage under the database and under the engine's temp directory
(:func:`fbbench.engines.platform.storage_of`)."""

from __future__ import annotations

import contextlib
import os
import platform
import struct
import sys
from pathlib import Path
from typing import Any

import psutil

from fbbench import __version__
from fbbench.engines import platform as host_os


def _elf_bits(library: Path) -> int | None:
    try:
        with library.open("rb") as handle:
            header = handle.read(5)
    except OSError:
        return None
    return {1: 32, 2: 64}.get(header[4]) if header[:4] == b"\x7fELF" else None


def host_facts(workdir: Path, client_library: Path | None = None, *, host_name: str | None = None,
               database_dir: Path | None = None, temp_dir: Path | None = None) -> dict[str, Any]:
    """The machine's facts. ``host_name``: the stable name the user gave (--host-name; default
    the hostname). ``database_dir``/``temp_dir``: where the engine keeps the database and its sort
    files on this machine (None: not on this machine, a server's, and not visible)."""
    frequency = None
    with contextlib.suppress(Exception):  # psutil has no frequency on some systems, or raises there
        found = psutil.cpu_freq()
        frequency = round(found.max or found.current) if found else None
    facts: dict[str, Any] = {
        "name": host_name or platform.node(),
        "hostname": platform.node(),
        "cpu_model": host_os.cpu_model() or platform.processor() or "unknown",
        "cpu_count": os.cpu_count(),
        "cpu_cores": psutil.cpu_count(logical=False),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_max_mhz": frequency or None,
        "cpu_governor": host_os.cpu_governor(),
        "virtualization": host_os.virtualization(),
        "memory_bytes": psutil.virtual_memory().total,
        "os": host_os.os_name() or platform.system(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "fbbench": __version__,
        "client_bits": struct.calcsize("P") * 8,
        "workdir_disk": host_os.storage_of(workdir),
        "database_disk": host_os.storage_of(database_dir) if database_dir is not None else None,
        "temp_disk": host_os.storage_of(temp_dir) if temp_dir is not None else None,
    }
    if client_library is not None:
        facts["fbclient_bits"] = _elf_bits(client_library)
    return facts
