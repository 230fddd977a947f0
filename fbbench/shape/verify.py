"""Whether each limit of a shape took effect, from what the run measured — never assumed.

- the processes: the engine's were in the group (seen there by the watcher);
- ``memory``: the limit the kernel shows, the group's high-water mark within it, its page cache
  (the share of the engine's reads that reached the storage is the run's own OS-cache figure,
  beside it in the run result), OOM kills;
- ``cpus``: the cpuset the kernel shows, and the CPUs the engine's processes may run on;
- ``disk.*``: the I/O the group did on each throttled device, per second while it did any —
  the mean of those seconds within the throttle (10 % for the kernel's slices), its peak second;
- ``net.rtt``: a small message's round trip through the very link (the relay's echo port, or
  netem's qdiscs), its fastest of 60 within 0.5 ms or a quarter of the round trip, whichever is
  more (slower ones waited for a busy CPU too: the median is recorded beside it);
- ``net.rate``: the qdisc is in place, and what it sent; ``net.loss``: the packets the rule saw
  and dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fbbench.shape.spec import Shape, shown

if TYPE_CHECKING:
    from fbbench.shape.network import Link

THROTTLE_SLACK = 1.10  # the kernel's throttle works in slices: a mean second may overshoot a little
MEMORY_SLACK = 1 << 16


@dataclass
class Watch:
    """The group's counters as the watcher read them: (monotonic time, counters, pids, CPUs)."""

    samples: list[tuple[float, dict[str, int], list[int], set[int]]] = field(default_factory=list)
    started: float | None = None

    def add(self, at: float, usage: dict[str, int], pids: list[int], affinity: set[int]) -> None:
        self.samples.append((at, usage, pids, affinity))

    def last(self, key: str) -> int:
        return self.samples[-1][1].get(key, 0) if self.samples else 0

    def peak(self, key: str) -> int:
        return max((usage.get(key, 0) for _, usage, _, _ in self.samples), default=0)

    def rates(self, key: str) -> list[tuple[float, float]]:
        """(seconds, change) between consecutive samples of a cumulative counter."""
        found = []
        for (t0, a, _, _), (t1, b, _, _) in zip(self.samples, self.samples[1:], strict=False):
            if t1 > t0:
                found.append((t1 - t0, float(b.get(key, 0) - a.get(key, 0))))
        return found


def _busy(rates: list[tuple[float, float]]) -> dict[str, float] | None:
    """The mean per second over the intervals with any I/O, and the busiest interval's rate."""
    busy = [(seconds, change) for seconds, change in rates if change > 0]
    if not busy:
        return None
    seconds = sum(s for s, _ in busy)
    return {"mean_per_second": sum(c for _, c in busy) / seconds, "peak_per_second": max(c / s for s, c in busy),
            "busy_seconds": seconds, "total": sum(c for _, c in busy)}


def group(shape: Shape, watch: Watch, read_back: Mapping[str, str], devices: list[tuple[str, str]],
          cpus: list[int]) -> tuple[dict[str, Any], list[str]]:
    measured: dict[str, Any] = {"watched_samples": len(watch.samples)}
    failures: list[str] = []
    seen = sorted({pid for _, _, pids, _ in watch.samples for pid in pids})
    measured["processes_seen"] = len(seen)
    if not seen:
        failures.append("no process of the engine was ever seen inside the shape's cgroup")
    if shape.memory:
        limit_text = read_back.get("memory.limit_in_bytes") or read_back.get("memory.max") or ""
        applied = int(limit_text) if limit_text.isdigit() else None
        measured["memory"] = {"limit": applied, "peak": watch.peak("memory_peak"),
                              "page_cache_peak": watch.peak("page_cache"), "oom_kills": watch.last("oom_kills"),
                              "limit_hits": watch.last("limit_hits")}
        if applied is None or not shape.memory - 4096 <= applied <= shape.memory:
            failures.append(f"memory={shown('memory', shape.memory)}: the kernel shows the group's limit as "
                            f"{limit_text or 'nothing'}")
        elif watch.peak("memory_peak") > applied + MEMORY_SLACK:
            failures.append(f"memory={shown('memory', shape.memory)}: the group's memory reached "
                            f"{watch.peak('memory_peak'):,} bytes, above its limit")
    if shape.cpus:
        effective = read_back.get("cpuset.effective_cpus") or read_back.get("cpuset.cpus.effective") or ""
        used = sorted({cpu for _, _, _, affinity in watch.samples for cpu in affinity})
        measured["cpus"] = {"cpuset": effective, "engine_may_run_on": used}
        if _cpu_list(effective) != cpus:
            failures.append(f"cpus={shape.cpus}: the kernel shows the group's CPUs as '{effective}', not "
                            f"{','.join(map(str, cpus))}")
        elif used and not set(used) <= set(cpus):
            failures.append(f"cpus={shape.cpus}: the engine's processes could run on CPUs {used}")
    if shape.disk:
        measured["disk"] = {}
        for number, name in devices:
            device: dict[str, Any] = {}
            for key, counter in (("read_iops", "read_ios"), ("write_iops", "write_ios"),
                                 ("read_bps", "read_bytes"), ("write_bps", "write_bytes")):
                done = _busy(watch.rates(f"io:{number}:{counter}"))
                limit = getattr(shape, f"disk_{key}")
                device[key] = {"limit": limit, **(done or {})}
                if limit is not None and done is not None and done["mean_per_second"] > limit * THROTTLE_SLACK:
                    failures.append(f"disk.{key}={shown('disk.' + key, limit)}: the engine did "
                                    f"{done['mean_per_second']:,.0f} per second on {name} while it did any")
            ios = sum(device[k].get("total", 0) for k in ("read_iops", "write_iops"))
            device["bytes_per_io"] = (sum(device[k].get("total", 0) for k in ("read_bps", "write_bps")) / ios
                                      if ios else None)
            measured["disk"][name] = device
            if not any(number in text for name_, text in read_back.items() if "throttle" in name_ or name_ == "io.max"):
                failures.append(f"disk.*: the kernel shows no throttle on {name} ({number})")
    return measured, failures


def _cpu_list(text: str) -> list[int]:
    found: list[int] = []
    for part in (p for p in text.strip().split(",") if p):
        low, _, high = part.partition("-")
        found += list(range(int(low), int(high or low) + 1))
    return found


def link(shape: Shape, link: Link) -> tuple[dict[str, Any], list[str]]:
    failures: list[str] = []
    measured: dict[str, Any] = {"method": link.method}
    from fbbench.errors import FbbenchError

    try:
        trip = link.probe()
    except FbbenchError as error:
        trip = None
        failures.append(f"the link's round trip could not be measured: {error.message}")
    measured["round_trip"] = trip
    if shape.net_rtt and trip is not None:
        wanted = shape.net_rtt * 1000
        tolerance = max(0.5, wanted / 4)
        # The link's own round trip is its floor: no exchange comes back sooner than the hold, and
        # one that waited for a busy CPU (the load's, on a small machine) came back later for a
        # reason any network would share. The median is recorded and shown beside it.
        floor = trip.get("min_ms", trip["median_ms"])
        if not wanted - tolerance <= floor <= wanted + tolerance:
            failures.append(f"net.rtt={shown('net.rtt', shape.net_rtt)}: the link's round trip measured "
                            f"{floor:.2f} ms at its fastest, {trip['median_ms']:.2f} ms median "
                            f"(of {trip['exchanges']})")
    counters = link.counters()
    measured["counters"] = counters
    if shape.net_rate and not any(key.endswith("_sent_bytes") for key in counters):
        failures.append(f"net.rate={shown('net.rate', shape.net_rate)}: no rate-limiting qdisc on the link")
    if shape.net_loss and link.method == "relay":
        seen = sum(v or 0 for k, v in counters.items() if k.endswith("_all_packets"))
        dropped = sum(v or 0 for k, v in counters.items() if k.endswith("_dropped"))
        measured["loss"] = {"packets": seen, "dropped": dropped, "share": dropped / seen if seen else None}
        if seen * shape.net_loss >= 20 and dropped == 0:  # no drop at all is then under 1 in 10^8 by chance
            failures.append(f"net.loss={shown('net.loss', shape.net_loss)}: {seen:,} packets arrived, none dropped")
    measured["relay_cpu_seconds"] = link.relay_cpu_seconds()
    measured["relay"] = link.stop_relay()
    return measured, failures
