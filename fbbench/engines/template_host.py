"""Engine templates kept across fbbench commands, for a process that starts many of them (a test
suite, a CI harness)::

    python -m fbbench.engines.template_host SOCKET    # prints "listening" once it does
    FBBENCH_ENGINE_TEMPLATES=SOCKET fbbench run …     # the commands started while it runs

A command forks its engine children from a template (:mod:`fbbench.engines.template`) only when
it makes several; one that makes a single child starts it as a new interpreter, whose start and
imports cost 0.35–0.5 s of CPU (2-core VM) — most of a short run's cost, and, over the ~700
commands of fbbench's test suite, a fifth of its CPU. With ``FBBENCH_ENGINE_TEMPLATES`` naming a
host's socket, every engine child of a command is forked from a template the host keeps for its
engine, started by the first command that needed it and kept until the host ends.

A forked child is the child a new interpreter would be (see :mod:`fbbench.engines.template`): the
asking command's environment, stdio, working directory, resource limits, file mode mask, CPUs and
niceness. What a fork cannot give it is the asking process's cgroup and namespaces, so the host
serves only processes of its own user in its own cgroup and namespaces; any other is told no and
starts its children as new interpreters. The children of a command that ends, or is killed, are
killed by the template (the command's connection closes), as are all of them when the host ends.

A template runs the fbbench code that was there when it started: the host serves only commands of
the same interpreter and fbbench directory, and a harness starts a new host when the code changes.
The host ends when its standard input is closed (the harness that started it ended) or on SIGTERM
or SIGINT; it removes its socket.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fbbench.engines.template import Template

_NAMESPACES = ("cgroup", "ipc", "mnt", "net", "pid", "user", "uts")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m fbbench.engines.template_host SOCKET", file=sys.stderr)
        return 2
    address = Path(argv[0])
    if os.path.lexists(address):
        print(f"error: {address} exists: the host makes its socket there itself", file=sys.stderr)
        return 1
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        old_mask = os.umask(0o177)  # the socket: its user's alone
        try:
            listener.bind(str(address))
        finally:
            os.umask(old_mask)
    except OSError as error:  # no such directory, not writable, a path too long for a socket
        print(f"error: cannot listen at {address}: {error.strerror or error}", file=sys.stderr)
        listener.close()
        return 1
    try:
        listener.listen(64)
        print("listening", flush=True)
        host(listener, sys.stdin.fileno())
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            address.unlink()
    return 0


def host(listener: socket.socket, stdin: int) -> None:
    """Hands each asking process a connection to its engine's template until ``stdin`` ends or a
    stop signal comes; then closes every template, which stops their children."""
    from fbbench.engines.template import code_identity
    templates: dict[str, Template] = {}
    stopped = os.pipe()
    for stop in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop, lambda _signum, _frame: os.write(stopped[1], b"x"))
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(stdin, selectors.EVENT_READ)
    selector.register(stopped[0], selectors.EVENT_READ)
    mine = _identity(os.getpid())
    code = code_identity()
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj == stopped[0] or (key.fileobj == stdin and not os.read(stdin, 4096)):
                    return
                if key.fileobj is listener:
                    connection, _ = listener.accept()
                    with connection:
                        _serve(connection, templates, mine, code)
    finally:
        for template in templates.values():
            template.close()


def _serve(connection: socket.socket, templates: dict[str, Template], mine: list[str], code: list[str]) -> None:
    from fbbench.engines.template import MESSAGE_BYTES, Template

    connection.settimeout(10)
    try:
        pid, uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                                struct.calcsize("3i")))
        request = json.loads(connection.recv(MESSAGE_BYTES))
        if uid != os.getuid() or _identity(pid) != mine:
            return _refuse(connection, "a template host serves only its user's processes in its cgroup and namespaces")
        if request.get("code") != code:
            return _refuse(connection, "the template host runs another interpreter or another fbbench")
        env = request["env"]
        key = json.dumps(sorted(env.items()))
        template = templates.get(key)
        if template is None or not template.alive():
            if template is not None:
                template.close()
            template = templates[key] = Template.start(env)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with ours, theirs:
            socket.send_fds(template.socket, [json.dumps({"client": True}).encode()], [ours.fileno()])
            socket.send_fds(connection, [b"{}"], [theirs.fileno()])
    except (OSError, ValueError, KeyError, TypeError) as error:  # the asking process is gone, or not one of ours
        with contextlib.suppress(OSError):
            _refuse(connection, f"the template host could not serve it: {error}")


def _refuse(connection: socket.socket, why: str) -> None:
    connection.send(json.dumps({"error": why}).encode())


def _identity(pid: int) -> list[str]:
    """The cgroup and namespaces of process ``pid``: a forked child has its template's, not its
    asking process's."""
    with open(f"/proc/{pid}/cgroup") as cgroup:
        identity = [cgroup.read()]
    for name in _NAMESPACES:
        try:
            identity.append(os.readlink(f"/proc/{pid}/ns/{name}"))
        except FileNotFoundError:  # a kernel without that namespace type
            identity.append("")
    return identity


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # before its handlers (fbbench's imports): nothing was served yet
        sys.exit(130)
