"""A delay line for Ethernet frames: netem's delay, where the kernel has no netem.

Two interfaces of one network namespace (ends of veth pairs: one towards a member of a segment,
one towards its bridge); every frame that arrives on either is sent out of the other ``delay``
seconds after it arrived. Frames, not a byte stream: every protocol, every connection in either
direction (TCP with its handshake, its windows and retransmissions, TLS, ARP) sees a link of that
round trip, as over a real one. The sockets carry the kernel's virtio-net header
(``PACKET_VNET_HDR``), so a segmentation-offloaded frame or one whose checksum the sender left to
the hardware passes through whole and is finished by the kernel on its way out.

    python -m fbbench.shape.delayline IF_A IF_B DELAY_SECONDS

It prints ``ready`` once both interfaces are open, and runs until it is killed (its namespace's
removal kills it). A hold ends by a sleep and, its last 0.3 ms, a spin (see
:mod:`fbbench.shape.relay`).
"""

from __future__ import annotations

import collections
import contextlib
import socket
import sys
import threading

from fbbench.shape.relay import fine_timers, hold_until, kernel_stamps, stamp_of

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_VNET_HDR = 15
PACKET_OUTGOING = 4  # a frame this host sent out of the interface: ours, not to be carried back
FRAME = 65536 + 64


def _open(interface: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    sock.bind((interface, 0))
    return sock


def _carry(source: socket.socket, target: socket.socket, delay: float) -> None:
    pending: collections.deque[tuple[float, bytes]] = collections.deque()
    ready = threading.Condition()

    def sender() -> None:
        while True:
            with ready:
                while not pending:
                    ready.wait()
                due, frame = pending.popleft()
            hold_until(due)
            # A frame the other side cannot take now (its link down) is lost, as on a wire.
            with contextlib.suppress(OSError):
                target.send(frame)

    threading.Thread(target=sender, daemon=True).start()
    kernel_stamps(source)
    while True:
        frame, ancillary, _, address = source.recvmsg(FRAME, 64)
        if address[2] == PACKET_OUTGOING:
            continue
        arrived = stamp_of(ancillary)
        with ready:
            pending.append((arrived + delay, frame))
            ready.notify()


def main(argv: list[str]) -> None:
    first, second, delay = argv[0], argv[1], float(argv[2])
    fine_timers()
    sys.setswitchinterval(0.0002)
    a, b = _open(first), _open(second)
    print("ready", flush=True)
    threading.Thread(target=_carry, args=(a, b, delay), daemon=True).start()
    _carry(b, a, delay)


if __name__ == "__main__":
    main(sys.argv[1:])
