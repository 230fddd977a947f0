"""Facts about the machine a run measured: what an expert needs to judge a comparison."""

from __future__ import annotations

import os
import platform
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

from fbbench import __version__
from fbbench.engines import platform as host_os


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _os_name() -> str:
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return platform.system()


def _disk_of(path: Path) -> dict[str, Any]:
    """Device, filesystem and whether it spins — the storage a database's I/O goes to."""
    facts: dict[str, Any] = {"path": str(path)}
    try:
        output = subprocess.run(["df", "-PT", str(path)], capture_output=True, text=True, check=False).stdout
        fields = output.splitlines()[1].split()
        facts.update(device=fields[0], filesystem=fields[1], size_bytes=int(fields[2]) * 1024,
                     free_bytes=int(fields[4]) * 1024)
        block = Path(fields[0]).name.rstrip("0123456789")
        rotational = _read(f"/sys/block/{block}/queue/rotational").strip()
        if rotational:
            facts["rotational"] = rotational == "1"
    except (OSError, IndexError, ValueError):
        pass
    return facts


def _elf_bits(library: Path) -> int | None:
    try:
        with library.open("rb") as handle:
            header = handle.read(5)
    except OSError:
        return None
    return {1: 32, 2: 64}.get(header[4]) if header[:4] == b"\x7fELF" else None


def host_facts(workdir: Path, client_library: Path | None = None) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "hostname": platform.node(),
        "cpu_model": host_os.cpu_model() or platform.processor() or "unknown",
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_bytes": psutil.virtual_memory().total,
        "os": _os_name(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "fbbench": __version__,
        "client_bits": struct.calcsize("P") * 8,
        "workdir_disk": _disk_of(workdir),
    }
    if client_library is not None:
        facts["fbclient_bits"] = _elf_bits(client_library)
    return facts
