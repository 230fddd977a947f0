"""The network part of a machine shape: a link of its own between the load and a managed server.

Two network namespaces made for the run — the server's and the client's (the engine child that
runs the load) — joined by one veth pair, ``169.254.77.1`` on the client's end and
``169.254.77.2`` on the server's. Link-local addresses, on interfaces that exist only inside
namespaces fbbench made: nothing is added to the host's own network, and nothing there can be
routed anywhere. Each namespace also has its own loopback.

- ``net.rate``: ``tbf`` on both ends of the veth (each direction's sender);
- ``net.rtt`` and ``net.loss``: ``netem`` on both ends where the kernel has it (half the round
  trip each way); otherwise the round trip comes from :mod:`fbbench.shape.relay`, a process in
  the server's namespace that holds each direction's bytes for half of it, and the loss from an
  nftables rule in each namespace that drops that share of the packets arriving on the veth
  (``numgen random``). Which one was used is recorded with the run.

The namespaces are named ``fbbench-<token>-srv`` / ``-cli`` and recorded in the run's files
(kind ``netns``) before they are made; removing a namespace removes its end of the veth (and
with it the pair and their qdiscs) and its nftables table. Processes still inside one (a killed
run's server) are killed first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fbbench.errors import FbbenchError

NETNS_DIR = Path("/run/netns")
PREFIX = "fbbench-"
CLIENT_ADDRESS, SERVER_ADDRESS = "169.254.77.1", "169.254.77.2"
NFT_TABLE = "fbbench_shape"
LOSS_SCALE = 1_000_000  # loss rules compare numgen random mod this against the share to drop


def run_tool(argv: list[str], what: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise FbbenchError(f"could not {what}: {argv[0]}: {error}") from None
    if check and done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise FbbenchError(f"could not {what}: {' '.join(argv)}: {detail[-1] if detail else done.returncode}")
    return done


def missing(needs_loss: bool) -> str | None:
    """Why a network shape cannot be made here (one line), or None."""
    if os.geteuid() != 0:
        return f"a network shape needs root (it makes network namespaces and a veth pair); this is uid {os.geteuid()}"
    for tool, package in (("ip", "iproute2"), ("tc", "iproute2"), ("unshare", "util-linux")):
        if shutil.which(tool) is None:
            return f"a network shape needs the '{tool}' command ({package})"
    if not Path("/proc/self/ns/net").exists():
        return "this kernel has no network namespaces"
    if needs_loss and not netem_available() and shutil.which("nft") is None:
        return "net.loss needs netem (not in this kernel) or nftables' 'nft' command (apt-get install nftables)"
    return None


_netem: bool | None = None


def netem_available() -> bool:
    """Whether this kernel has the netem qdisc: tried on the loopback of a namespace of its own
    (the kernel's config may not be readable, and a module may load on demand). The namespace has
    no name (``unshare --net``): the kernel removes it with the one process in it, so not even a
    ``kill -9`` of fbbench in that moment leaves one behind, and no later run must find it."""
    global _netem
    if _netem is None:
        tried = run_tool(["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                         "try netem in a network namespace of its own", check=False)
        _netem = tried.returncode == 0
    return _netem


def names_for(run_id: str) -> tuple[str, str]:
    """The server's and the client's namespace names of a run."""
    token = hashlib.sha256(run_id.encode()).hexdigest()[:10]
    return f"{PREFIX}{token}-srv", f"{PREFIX}{token}-cli"


def in_namespace(name: str, argv: list[str]) -> list[str]:
    """``argv`` run inside the network namespace ``name`` (the same process: ip execs it)."""
    return ["ip", "netns", "exec", name, *argv]


@dataclass
class Link:
    """A run's two namespaces and the link between them, shaped by ``rtt`` (s), ``rate`` (bit/s)
    and ``loss`` (a fraction)."""

    run_id: str
    rtt: float | None
    rate: int | None
    loss: float | None
    method: str = ""  # "netem" or "relay" (for the round trip and loss), once made
    relay_process: subprocess.Popen[str] | None = None
    ports: dict[str, int] = field(default_factory=dict)  # relay and echo ports

    @property
    def server_ns(self) -> str:
        return names_for(self.run_id)[0]

    @property
    def client_ns(self) -> str:
        return names_for(self.run_id)[1]

    @property
    def paths(self) -> list[Path]:
        return [NETNS_DIR / self.server_ns, NETNS_DIR / self.client_ns]

    def _veth(self) -> tuple[str, str]:
        token = self.server_ns[len(PREFIX):len(PREFIX) + 10]
        return f"fb{token}s", f"fb{token}c"  # 13 characters: interface names hold 15

    def create(self) -> None:
        server_if, client_if = self._veth()
        for name in (self.server_ns, self.client_ns):
            run_tool(["ip", "netns", "add", name], f"make the network namespace {name}")
            run_tool(in_namespace(name, ["ip", "link", "set", "lo", "up"]), "bring up a namespace's loopback")
        run_tool(["ip", "link", "add", server_if, "netns", self.server_ns, "type", "veth", "peer", "name", client_if,
              "netns", self.client_ns], "make the veth pair")
        for name, interface, address in ((self.server_ns, server_if, SERVER_ADDRESS),
                                         (self.client_ns, client_if, CLIENT_ADDRESS)):
            run_tool(in_namespace(name, ["ip", "addr", "add", f"{address}/30", "dev", interface]), "address the veth")
            run_tool(in_namespace(name, ["ip", "link", "set", interface, "up"]), "bring up the veth")
        self.method = "netem" if (self.rtt or self.loss) and netem_available() else "relay"
        for name, interface in ((self.server_ns, server_if), (self.client_ns, client_if)):
            self._shape(name, interface)

    def _shape(self, namespace: str, interface: str) -> None:
        if self.method == "netem" and (self.rtt or self.loss):
            argv = ["tc", "qdisc", "add", "dev", interface, "root", "netem"]
            if self.rtt:
                argv += ["delay", f"{self.rtt / 2 * 1e6:.0f}us"]
            if self.loss:
                argv += ["loss", f"{self.loss * 100:g}%"]
            if self.rate:
                argv += ["rate", f"{self.rate}bit"]
            run_tool(in_namespace(namespace, argv), "shape the link with netem")
            return
        if self.rate:
            # The bucket must hold the largest packet the veth hands over (GSO: up to 64 KiB)
            # and about 10 ms of traffic, or tbf shapes below its rate.
            burst = max(self.rate // 8 // 100, 131072)
            run_tool(in_namespace(namespace, ["tc", "qdisc", "add", "dev", interface, "root", "tbf", "rate",
                                          f"{self.rate}bit", "burst", str(burst), "latency", "100ms"]),
                 "limit the link's rate with tbf")
        if self.loss:
            # Counters referenced before they are declared are refused: declare them first.
            share = round(self.loss * LOSS_SCALE)
            rules = "\n".join([
                f"table inet {NFT_TABLE} {{", "  counter all_packets { }", "  counter dropped { }",
                "  chain arriving {", "    type filter hook input priority 0;",
                f'    iifname "{interface}" counter name "all_packets"',
                f'    iifname "{interface}" numgen random mod {LOSS_SCALE} < {share} counter name "dropped" drop',
                "  }", "}", ""])
            try:
                done = subprocess.run(in_namespace(namespace, ["nft", "-f", "-"]), input=rules, capture_output=True,
                                      text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired) as error:
                raise FbbenchError(f"could not drop packets with nftables: {error}") from None
            if done.returncode != 0:
                raise FbbenchError("nftables refused the loss rule: "
                                   + next((line for line in done.stderr.splitlines() if "Error" in line), done.stderr))

    def start_relay(self, server_port: int, launcher: list[str]) -> tuple[str, int]:
        """Start the relay in the server's namespace (forwarding to ``server_port`` there, with
        the half round trip held each way unless netem delays the link already); returns the
        address and port clients use. ``launcher``: the prefix that makes it die with fbbench."""
        delay = (self.rtt or 0.0) / 2 if self.method == "relay" else 0.0
        forward = server_port if self.method == "relay" else 0
        argv = [*launcher, sys.executable, "-m", "fbbench.shape.relay", "serve", SERVER_ADDRESS, str(forward),
                str(delay)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.relay_process = subprocess.Popen(in_namespace(self.server_ns, argv), stdout=subprocess.PIPE, text=True,
                                              env=env, start_new_session=True)
        assert self.relay_process.stdout is not None
        line = self.relay_process.stdout.readline()
        try:
            self.ports = json.loads(line)
        except ValueError:
            raise FbbenchError("the link's relay did not start", hint=f"it said: {line.strip()!r}") from None
        return SERVER_ADDRESS, self.ports["relay_port"] if self.method == "relay" else server_port

    def probe(self) -> dict[str, Any]:
        """The round trip through the link now, measured from the client's namespace against
        the relay's echo port (the same holds, veth, qdiscs and rules as the run's traffic)."""
        done = run_tool(in_namespace(self.client_ns, [sys.executable, "-m", "fbbench.shape.relay", "probe",
                                                  SERVER_ADDRESS, str(self.ports["echo_port"])]),
                    "measure the link's round trip")
        return dict(json.loads(done.stdout))

    def relay_cpu_seconds(self) -> float | None:
        import psutil

        if self.relay_process is None:
            return None
        try:
            process = psutil.Process(self.relay_process.pid)
            times = process.cpu_times()
            return float(times.user + times.system)
        except psutil.Error:
            return None

    def stop_relay(self) -> dict[str, Any]:
        """Stop the relay; what it carried (connections, bytes each way)."""
        process, self.relay_process = self.relay_process, None
        if process is None:
            return {}
        process.send_signal(signal.SIGTERM)
        try:
            out, _ = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
        lines = [line for line in out.splitlines() if line.strip()]
        with contextlib.suppress(ValueError, IndexError):
            return dict(json.loads(lines[-1]))
        return {}

    def counters(self) -> dict[str, Any]:
        """What the qdiscs and loss rules counted on each end: bytes and packets sent, drops,
        overlimits (tc -s), and the packets the loss rule saw and dropped (nft)."""
        found: dict[str, Any] = {}
        server_if, client_if = self._veth()
        for side, namespace, interface in (("server", self.server_ns, server_if),
                                           ("client", self.client_ns, client_if)):
            done = run_tool(in_namespace(namespace, ["tc", "-s", "-j", "qdisc", "show", "dev", interface]),
                        "read the link's counters", check=False)
            with contextlib.suppress(ValueError):
                for qdisc in json.loads(done.stdout or "[]"):
                    if qdisc.get("kind") in ("tbf", "netem"):
                        found[f"{side}_sent_bytes"] = qdisc.get("bytes")
                        found[f"{side}_overlimits"] = qdisc.get("overlimits")
                        found[f"{side}_qdisc_drops"] = qdisc.get("drops")
            if self.loss and self.method == "relay":
                done = run_tool(in_namespace(namespace, ["nft", "-j", "list", "counters"]),
                                "read the loss rule's counters", check=False)
                with contextlib.suppress(ValueError):
                    for item in json.loads(done.stdout or "{}").get("nftables", []):
                        counter = item.get("counter")
                        if counter:
                            found[f"{side}_{counter['name']}"] = counter.get("packets")
        return found

    def remove(self) -> None:
        if self.relay_process is not None:
            self.stop_relay()
        for path in self.paths:
            remove(path)


def remove(path: Path, timeout: float = 10.0) -> bool:
    """Remove a run's namespace (``/run/netns/fbbench-*`` only): the processes still in it are
    killed first. True when it is gone."""
    if path.parent != NETNS_DIR or not path.name.startswith(PREFIX):
        return False
    if not path.exists():
        return True
    deadline = time.monotonic() + timeout
    while True:
        pids = run_tool(["ip", "netns", "pids", path.name], "list a namespace's processes", check=False).stdout.split()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        if not pids or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    run_tool(["ip", "netns", "delete", path.name], f"remove the network namespace {path.name}", check=False)
    return not path.exists()
