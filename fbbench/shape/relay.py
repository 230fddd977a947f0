"""A TCP relay that holds each direction's bytes for half a round trip: a link's delay where the
kernel has no netem.

Firebird's wire protocol is request and response: a client sends a packet and waits for the
answer. Holding every byte for ``rtt / 2`` on its way in and again on its way out delays each
exchange by ``rtt``, which is what a link of that round trip does to it. Each accepted
connection gets a thread per direction that reads and stamps what arrives, and one that sends
each piece when its time has come (``time.sleep`` to the moment, not a coarse event-loop timer:
a 1 ms hold must not become 2).

The relay runs as its own process inside the server's network namespace
(``python -m fbbench.shape.relay serve LISTEN_HOST FORWARD_PORT DELAY``): it listens on the
link's address, forwards to the server on the namespace's loopback, prints its two ports
(relay, echo) on its first line of output, and on SIGTERM prints what it carried (connections,
bytes each way) and exits. The echo port answers every byte back through the same holds: the
probe (``python -m fbbench.shape.relay probe HOST PORT``, run in the client's namespace) times a
small message's round trip through the link the run used, which is how a run verifies its
round trip. Its CPU is the runner's to measure (psutil), and it is said with the run.
"""

from __future__ import annotations

import collections
import contextlib
import json
import signal
import socket
import statistics
import struct
import sys
import threading
import time
from typing import Any

CHUNK = 65536
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # SCM_TIMESTAMPNS has the same number
# A sleep ends up to the timer slack (50 µs by default) and a scheduler's wake-up late: the last
# stretch of a hold is spun instead, which costs the relay CPU (measured with the run) but keeps a
# 1 ms hold from becoming 1.2.
SPIN = 0.0003


def hold_until(due: float) -> None:
    wait = due - time.monotonic()
    if wait > SPIN:
        time.sleep(wait - SPIN)
    while time.monotonic() < due:
        pass


def kernel_stamps(sock: socket.socket) -> bool:
    """Ask the kernel to stamp what arrives on ``sock`` (SO_TIMESTAMPNS): a hold then counts from
    the moment the bytes reached this host, not from when a busy machine woke the reading thread."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


def receive(sock: socket.socket, stamped: bool, size: int = CHUNK) -> tuple[bytes, float]:
    """What arrived on ``sock``, and when (time.monotonic's clock): the kernel's stamp where there is one."""
    if not stamped:
        return sock.recv(size), time.monotonic()
    data, ancillary, _, _ = sock.recvmsg(size, 64)
    return data, stamp_of(ancillary)


def stamp_of(ancillary: list[tuple[int, int, bytes]]) -> float:
    """The kernel's arrival stamp among a recvmsg's ancillary data, on time.monotonic's clock (now,
    when there is none)."""
    now_monotonic, now_real = time.monotonic(), time.time()
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(payload) >= 16:
            seconds, nanoseconds = struct.unpack("qq", payload[:16])
            # The stamp is wall-clock time: turned into the monotonic clock through the two clocks now.
            return min(now_monotonic, now_monotonic - (now_real - (seconds + nanoseconds / 1e9)))
    return now_monotonic


def fine_timers() -> None:
    """Timer slack of 1 ns for this process (PR_SET_TIMERSLACK), where the C library allows it."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)


class _Counters:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values = {"connections": 0, "bytes_to_server": 0, "bytes_to_client": 0, "echo_connections": 0}

    def add(self, name: str, amount: int) -> None:
        with self.lock:
            self.values[name] += amount


def _pump(source: socket.socket, target: socket.socket, delay: float, counters: _Counters, counter: str) -> None:
    """Carry ``source``'s bytes to ``target``, each piece ``delay`` seconds after it arrived."""
    pending: collections.deque[tuple[float, bytes]] = collections.deque()
    ready = threading.Condition()
    closed = [False]

    def sender() -> None:
        while True:
            with ready:
                while not pending and not closed[0]:
                    ready.wait()
                if not pending:
                    break
                due, data = pending.popleft()
            hold_until(due)
            try:
                target.sendall(data)
            except OSError:
                break
            counters.add(counter, len(data))
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    thread = threading.Thread(target=sender, daemon=True)
    thread.start()
    stamped = kernel_stamps(source)
    try:
        while True:
            data, arrived = receive(source, stamped)
            if not data:
                break
            with ready:
                pending.append((arrived + delay, data))
                ready.notify()
    except OSError:
        pass
    with ready:
        closed[0] = True
        ready.notify()
    thread.join()


def _carry(client: socket.socket, forward: tuple[str, int] | None, delay: float, counters: _Counters) -> None:
    """One accepted connection: to the server and back (``forward``), or echoed (None)."""
    with client:
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if forward is None:
            counters.add("echo_connections", 1)
            # Echo: the bytes go out and come back, held once each way like a forwarded exchange.
            inner_a, inner_b = socket.socketpair()
            with inner_a, inner_b:
                back = threading.Thread(target=_pump, args=(inner_b, client, delay, counters, "bytes_to_client"),
                                        daemon=True)
                back.start()
                echo = threading.Thread(target=_echo, args=(inner_a,), daemon=True)
                echo.start()
                _pump(client, inner_b, delay, counters, "bytes_to_server")
                back.join()
            return
        try:
            server = socket.create_connection(forward)
        except OSError:
            return
        with server:
            server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            counters.add("connections", 1)
            back = threading.Thread(target=_pump, args=(server, client, delay, counters, "bytes_to_client"),
                                    daemon=True)
            back.start()
            _pump(client, server, delay, counters, "bytes_to_server")
            back.join()


def _echo(sock: socket.socket) -> None:
    try:
        while data := sock.recv(CHUNK):
            sock.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)


def _listen(host: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen(128)
    return sock


def _accepting(listener: socket.socket, forward: tuple[str, int] | None, delay: float, counters: _Counters) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_carry, args=(client, forward, delay, counters), daemon=True).start()


def serve(listen_host: str, forward_port: int, delay: float) -> None:
    """Relay ``listen_host:<port>`` → ``127.0.0.1:forward_port`` and echo on a second port, each
    direction held ``delay`` seconds, until SIGTERM; then print the counters."""
    fine_timers()
    sys.setswitchinterval(0.0002)  # a spinning hold must not keep the other direction's thread waiting
    counters = _Counters()
    relay, echo = _listen(listen_host), _listen(listen_host)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    for listener, forward in ((relay, ("127.0.0.1", forward_port) if forward_port else None), (echo, None)):
        threading.Thread(target=_accepting, args=(listener, forward, delay, counters), daemon=True).start()
    print(json.dumps({"relay_port": relay.getsockname()[1], "echo_port": echo.getsockname()[1]}), flush=True)
    done.wait()
    with counters.lock:
        print(json.dumps(counters.values), flush=True)


def probe(host: str, port: int, exchanges: int = 60, size: int = 64) -> dict[str, Any]:
    """A small message's round trip through the link, ``exchanges`` times (the first 5 not
    counted): median, lowest and p90 in milliseconds."""
    message = b"x" * size
    seconds: list[float] = []
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for n in range(exchanges + 5):
            started = time.perf_counter()
            sock.sendall(message)
            received = 0
            while received < size:
                chunk = sock.recv(size - received)
                if not chunk:
                    raise OSError("the link closed during the probe")
                received += len(chunk)
            if n >= 5:
                seconds.append(time.perf_counter() - started)
    ordered = sorted(seconds)
    return {"exchanges": len(ordered), "median_ms": statistics.median(ordered) * 1000, "min_ms": ordered[0] * 1000,
            "p90_ms": ordered[int(0.9 * (len(ordered) - 1))] * 1000}


def main(argv: list[str]) -> None:
    if argv[:1] == ["serve"]:
        serve(argv[1], int(argv[2]), float(argv[3]))
    elif argv[:1] == ["probe"]:
        print(json.dumps(probe(argv[1], int(argv[2]))), flush=True)
    else:
        raise SystemExit("usage: relay serve LISTEN_HOST FORWARD_PORT DELAY | relay probe HOST PORT")


if __name__ == "__main__":
    main(sys.argv[1:])
