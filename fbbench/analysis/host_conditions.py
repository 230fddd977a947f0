"""The machine as conditions: the ``host.*`` keys of a run's record (CPU, memory, virtualisation,
kernel, the storage under the database and the temp files), the network's round trip as a class,
and a run's host name — what a DBA checks before believing a comparison between machines."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fbbench.sizes import size_text
from fbbench.store.model import StoredRun

_ROTATION: dict[Any, str] = {True: "rotational", False: "solid-state"}


def _gib(value: Any) -> str | None:
    return None if not value else size_text(int(value), unit="GiB")


def _storage(prefix: str, disk: Mapping[str, Any] | None) -> dict[str, Any]:
    """``prefix.*`` keys of a storage record (:func:`fbbench.engines.platform.storage_of`)."""
    if not disk:
        return {}
    device = disk.get("device")
    if device and disk.get("model"):
        device = f"{device} ({disk['model']})"
    return {f"{prefix}.device": device,
            f"{prefix}.medium": disk.get("medium") or _ROTATION.get(disk.get("rotational")),
            f"{prefix}.filesystem": disk.get("filesystem"),
            f"{prefix}.mount_options": disk.get("mount_options"),
            f"{prefix}.scheduler": disk.get("scheduler")}


# The client-to-server round trip, as a class: the exact median moves between repeats, the class
# does not (a loopback against a LAN is a comparison of networks).
_ROUND_TRIP_CLASSES = ((0.5, "under 0.5 ms"), (2.0, "0.5–2 ms"), (10.0, "2–10 ms"))


def round_trip_class(round_trip: Mapping[str, Any] | None) -> str | None:
    if not round_trip:
        return None
    if round_trip.get("loopback"):
        return "loopback"
    median = float(round_trip.get("median_ms") or 0)
    return next((name for bound, name in _ROUND_TRIP_CLASSES if median < bound), "10 ms or more")


def _cpus(host: Mapping[str, Any]) -> str | None:
    if not host.get("cpu_count"):
        return None
    text = f"{host['cpu_count']} threads" if host.get("cpu_cores") else f"{host['cpu_count']}"
    if host.get("cpu_cores"):
        text += f", {host['cpu_cores']} cores"
    if host.get("cpu_affinity") not in (None, host["cpu_count"]):
        text += f" ({host['cpu_affinity']} usable)"
    return text


def host_name(run: StoredRun) -> str | None:
    """The stable name of the host a run ran on (``host.name``)."""
    host = run.get("host") or {}
    return host.get("name") or host.get("hostname")


def host_values(host: Mapping[str, Any]) -> dict[str, Any]:
    """The ``host.*`` condition values of a run's host record (None where it has not got one)."""
    virtual = host.get("virtualization") or {}
    values: dict[str, Any] = {
        "host.name": host.get("name") or host.get("hostname"),
        "host.cpu_model": host.get("cpu_model"),
        "host.cpus": _cpus(host),
        "host.cpu_max_mhz": host.get("cpu_max_mhz"),
        "host.governor": host.get("cpu_governor"),
        "host.hypervisor": virtual.get("hypervisor"),
        "host.container": virtual.get("container"),
        "host.memory": _gib(host.get("memory_bytes")),
        "host.os": host.get("os"),
        "host.kernel": host.get("kernel"),
        "host.machine": host.get("machine"),
    }
    # Runs before the storage facts recorded the work directory's disk, where the database was.
    values |= _storage("host.disk", host.get("database_disk") or (host.get("workdir_disk")
                                                                  if "database_disk" not in host else None))
    values |= _storage("host.temp_disk", host.get("temp_disk"))
    values |= shape_values(host.get("shape"))
    return values


def shape_values(shape: Mapping[str, Any] | None) -> dict[str, Any]:
    """``host.shape.*``: a machine shape (fbbench.shape), each limit said to be emulated wherever
    it is shown; nothing for a host as it is."""
    if not shape:
        return {}
    values: dict[str, Any] = {"host.shape": f"emulated: {shape.get('text')}"}
    values |= {f"host.shape.{key}": f"{value} (emulated)" for key, value in (shape.get("limits") or {}).items()}
    method = (shape.get("network") or {}).get("method")
    if method:
        values["host.shape.net.method"] = method
    return values
