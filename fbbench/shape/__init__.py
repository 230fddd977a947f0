"""Machine shapes: one host made to behave like a smaller one (``--machine``), as root.

A memory cgroup caps the page cache the engine's processes use, a blkio (v1) or io (v2)
throttle caps a device's IOPS and bandwidth, a cpuset limits cores, and for a managed server a
network namespace of its own joined to the load's by a veth pair gives the link a rate (tbf), a
round trip and a loss (netem, or fbbench's relay and nftables where the kernel has no netem).
docs/machine-shapes.md tells the whole story; ``presets.toml`` the named shapes and their sources.

- :mod:`~fbbench.shape.spec` reads ``--machine`` text and the presets;
- :mod:`~fbbench.shape.cgroups` and :mod:`~fbbench.shape.network` make, read and remove the
  kernel's objects (nothing else in fbbench touches them);
- :mod:`~fbbench.shape.relay` is the delaying relay and the round-trip probe;
- :mod:`~fbbench.shape.shaping` is the one object the runner holds; :mod:`~fbbench.shape.verify`
  says whether each limit took effect.
"""

from __future__ import annotations

from pathlib import Path

from fbbench.shape import cgroups, network
from fbbench.shape.shaping import CGROUP, NETNS, Shaping, plan
from fbbench.shape.spec import Shape, parse, presets

KERNEL_KINDS = (CGROUP, NETNS)

__all__ = ["CGROUP", "KERNEL_KINDS", "NETNS", "Shape", "Shaping", "parse", "plan", "presets", "remove_recorded"]


def remove_recorded(kind: str, path: str) -> bool | None:
    """Remove one kernel object a run recorded (a killed run's cgroup or namespace): True when it
    was removed, False when it was already gone, None when it is still there."""
    target = Path(path)
    ours = (target.name.startswith(cgroups.PREFIX) if kind == CGROUP
            else target.parent == network.NETNS_DIR and target.name.startswith(network.PREFIX))
    if not ours:
        return False  # never a kernel object fbbench did not name itself
    existed = target.exists()
    gone = cgroups.remove(target) if kind == CGROUP else network.remove(target)
    if not gone:
        return None
    return existed
