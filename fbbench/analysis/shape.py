"""A run's machine shape (``--machine``) as the run document shows it: what was asked, how the
kernel applied it and what the run measured of each limit — one line each, always saying that
the machine was emulated (docs/machine-shapes.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fbbench.sizes import size_text


def _mib(value: Any) -> str:
    return size_text(float(value or 0), unit="MiB", digits=1)


def _disk_lines(disk: Mapping[str, Any]) -> list[str]:
    lines = []
    for device, figures in disk.items():
        parts = []
        for key, label in (("read_iops", "reads"), ("write_iops", "writes")):
            got = figures.get(key) or {}
            if got.get("mean_per_second") is not None or got.get("limit") is not None:
                limit = f" (throttle {got['limit']:,})" if got.get("limit") is not None else ""
                done = f"{got['mean_per_second']:,.0f}/s" if got.get("mean_per_second") is not None else "none"
                parts.append(f"{label} {done}{limit}")
        for key, label in (("read_bps", "read"), ("write_bps", "written")):
            got = figures.get(key) or {}
            if got.get("mean_per_second") is not None or got.get("limit") is not None:
                limit = f" (throttle {got['limit'] / 1e6:,.1f} MB/s)" if got.get("limit") is not None else ""
                done = f"{got['mean_per_second'] / 1e6:,.1f} MB/s" if got.get("mean_per_second") is not None else "none"
                parts.append(f"{label} {done}{limit}")
        if figures.get("bytes_per_io"):
            parts.append(f"{figures['bytes_per_io'] / 1024:,.1f} KiB per I/O")
        lines.append(f"disk {device}, per second while busy: " + ", ".join(parts))
    return lines


def shape_document(shape: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``machine_shape`` of a run result (docs/run-result.md), None for a machine as it is."""
    if not shape:
        return None
    measured = shape.get("measured") or {}
    lines = [f"emulated: {shape.get('text')}" + (f" (preset {shape['preset']})" if shape.get("preset") else "")]
    group = shape.get("cgroup") or {}
    if group:
        lines.append(f"cgroup v{group.get('version')}: " + ", ".join(f"{k} = {v}" for k, v in
                                                                     (group.get("read_back") or {}).items() if v))
    memory = measured.get("memory")
    if memory:
        lines.append(f"memory: peak {_mib(memory.get('peak'))} of {_mib(memory.get('limit'))}, its page cache up to "
                     f"{_mib(memory.get('page_cache_peak'))}; OOM kills {memory.get('oom_kills', 0)}")
    cpus = measured.get("cpus")
    if cpus:
        lines.append(f"cpus: cpuset {cpus.get('cpuset')}, the engine's processes could run on "
                     f"{', '.join(map(str, cpus.get('engine_may_run_on') or [])) or '?'}")
    lines += _disk_lines(measured.get("disk") or {})
    network = shape.get("network") or {}
    if network:
        trip = measured.get("round_trip") or {}
        text = f"link: {network.get('link')}, round trip and loss by {network.get('method')}"
        if trip:
            text += (f"; round trip measured {trip['median_ms']:.2f} ms median, {trip['min_ms']:.2f} ms fastest "
                     f"(of {trip['exchanges']})" if "min_ms" in trip else
                     f"; round trip measured {trip['median_ms']:.2f} ms (median of {trip['exchanges']})")
        loss = measured.get("loss")
        if loss and loss.get("share") is not None:
            text += f"; {loss['dropped']:,} of {loss['packets']:,} packets dropped ({loss['share']:.2%})"
        if measured.get("relay_cpu_seconds") is not None and network.get("method") == "relay":
            text += f"; the relay used {measured['relay_cpu_seconds']:.2f} s of CPU"
        lines.append(text)
    failures = shape.get("failures") or []
    return {"text": shape.get("text"), "preset": shape.get("preset"), "emulated": True,
            "limits": shape.get("limits"), "verified": not failures if "measured" in shape else None,
            "failures": failures, "lines": lines}
