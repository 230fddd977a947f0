"""Network namespaces on one segment of their own: a lab's hosts off loopback on one machine.

Each member (a lab's scheduler, each worker, the coordinator) gets a network namespace with one
interface, ``eth0``, addressed ``169.254.78.N/24``; its other end sits in a hub namespace, on a
bridge that joins them all. Link-local addresses on interfaces that exist only inside namespaces
fbbench made: nothing of the host's own network is touched, nothing is routed anywhere.

- :meth:`Segment.cut` / :meth:`Segment.mend` take a member's link down and up again (a
  partition: its packets go nowhere, no connection is told);
- a member's ``delay`` puts a delay line (:mod:`fbbench.shape.delayline`) between its link and
  the bridge: every frame each way is held that long, so its round trip to anyone is twice that.

The namespaces are listed in ``segment.json`` in a state directory before any of them is made;
:func:`remove_recorded` removes what a killed owner left there (by that record, never by names).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from fbbench.engines.platform import dying_with_owner
from fbbench.errors import FbbenchError
from fbbench.shape import network
from fbbench.shape.network import in_namespace, run_tool

LEDGER = "segment.json"
SUBNET = "169.254.78"
PREFIX = f"{network.PREFIX}seg-"  # every segment's namespaces: PREFIX + token + "-" + member (or "hub")


@dataclass
class Segment:
    members: list[str]
    state: Path  # where the record of the namespaces is kept
    delays: dict[str, float] = field(default_factory=dict)  # member → seconds each way
    token: str = field(default_factory=lambda: secrets.token_hex(3))
    _lines: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def namespace(self, member: str) -> str:
        return f"{PREFIX}{self.token}-{member}"

    @property
    def hub(self) -> str:
        return f"{PREFIX}{self.token}-hub"

    def address(self, member: str) -> str:
        return f"{SUBNET}.{self.members.index(member) + 1}"

    def command(self, member: str, argv: list[str]) -> list[str]:
        """``argv`` run inside ``member``'s namespace."""
        return in_namespace(self.namespace(member), argv)

    def _hub_side(self, member: str, suffix: str) -> str:
        return f"s{self.members.index(member)}{suffix}"

    def __enter__(self) -> Segment:
        names = [self.hub, *map(self.namespace, self.members)]
        self.state.mkdir(parents=True, exist_ok=True)
        record = self.state / LEDGER
        record.write_text(json.dumps({"owner": os.getpid(), "namespaces": names}) + "\n")
        try:
            self._make()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def _make(self) -> None:
        for name in [self.hub, *map(self.namespace, self.members)]:
            run_tool(["ip", "netns", "add", name], f"make the network namespace {name}")
            run_tool(in_namespace(name, ["ip", "link", "set", "lo", "up"]), "bring up a loopback")
        run_tool(in_namespace(self.hub, ["ip", "link", "add", "br0", "type", "bridge"]), "make the segment's bridge")
        run_tool(in_namespace(self.hub, ["ip", "link", "set", "br0", "up"]), "bring up the bridge")
        for member in self.members:
            outer = self._hub_side(member, "h")
            run_tool(["ip", "link", "add", "eth0", "netns", self.namespace(member), "type", "veth", "peer", "name",
                      outer, "netns", self.hub], f"link {member} to the segment")
            run_tool(self.command(member, ["ip", "addr", "add", f"{self.address(member)}/24", "dev", "eth0"]),
                 f"address {member}")
            run_tool(self.command(member, ["ip", "link", "set", "eth0", "up"]), f"bring up {member}'s link")
            run_tool(in_namespace(self.hub, ["ip", "link", "set", outer, "up"]), "bring up the hub's side")
            if member in self.delays:
                inner, bridged = self._hub_side(member, "d"), self._hub_side(member, "p")
                run_tool(in_namespace(self.hub, ["ip", "link", "add", inner, "type", "veth", "peer", "name", bridged]),
                     "make the delay line's link")
                for name in (inner, bridged):
                    run_tool(in_namespace(self.hub, ["ip", "link", "set", name, "up"]), "bring up the delay line")
                run_tool(in_namespace(self.hub, ["ip", "link", "set", bridged, "master", "br0"]),
                         "bridge the delay line")
                self._start_line(outer, inner, self.delays[member])
            else:
                run_tool(in_namespace(self.hub, ["ip", "link", "set", outer, "master", "br0"]), f"bridge {member}")

    def _start_line(self, first: str, second: str, delay: float) -> None:
        argv = dying_with_owner([sys.executable, "-m", "fbbench.shape.delayline", first, second, str(delay)])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        line = subprocess.Popen(in_namespace(self.hub, argv), stdout=subprocess.PIPE, env=env, start_new_session=True)
        self._lines.append(line)
        assert line.stdout is not None
        if line.stdout.readline().strip() != b"ready":
            raise FbbenchError("the segment's delay line did not start")

    def cut(self, member: str) -> None:
        """A partition: ``member``'s link goes down (packets to and from it are lost)."""
        run_tool(in_namespace(self.hub, ["ip", "link", "set", self._hub_side(member, "h"), "down"]), "cut a link")

    def mend(self, member: str) -> None:
        run_tool(in_namespace(self.hub, ["ip", "link", "set", self._hub_side(member, "h"), "up"]), "mend a link")

    def remove(self) -> None:
        for line in self._lines:
            line.kill()
            line.wait()
        self._lines.clear()
        for name in [*map(self.namespace, self.members), self.hub]:
            network.remove(network.NETNS_DIR / name)
        (self.state / LEDGER).unlink(missing_ok=True)


def remove_recorded(state: Path) -> list[str]:
    """The namespaces a killed segment's owner recorded in ``state`` and left; returns those removed."""
    record = state / LEDGER
    try:
        names = [str(name) for name in json.loads(record.read_text())["namespaces"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    removed = [name for name in names if (network.NETNS_DIR / name).exists()
               and network.remove(network.NETNS_DIR / name)]
    record.unlink(missing_ok=True)
    return removed
