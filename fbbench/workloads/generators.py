"""Parameter values in Python, for population steps (never on the measured path, which the
native core runs with its own generators of the same meaning)."""

from __future__ import annotations

import hashlib
import random
import string
from collections.abc import Mapping

from fbbench.workloads.spec import Constant, Generator

_ALPHANUMERIC = string.ascii_letters + string.digits


def derived_seed(*parts: object) -> int:
    """A stable 63-bit seed from any parts (workload name, step, iteration)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def nurand(rng: random.Random, a: int, x: int, y: int, c: int) -> int:
    """TPC-C 2.1.6: NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x."""
    return (((rng.randint(0, a) | rng.randint(x, y)) + c) % (y - x + 1)) + x


def value(generator: Generator, rng: random.Random, attachment: int, constants: Mapping[str, float]) -> object:
    """One value of ``generator``; arguments naming a run constant take it from ``constants``."""
    kind = generator.kind
    args = [constants[a] if isinstance(a, Constant) else a for a in generator.args]
    if kind == "uniform":
        return rng.randint(int(args[0]), int(args[1]))
    if kind == "nurand":
        c = int(args[3]) if len(args) == 4 else rng.randint(0, int(args[0]))
        return nurand(rng, int(args[0]), int(args[1]), int(args[2]), c)
    if kind == "home":
        return (attachment - 1) % args[0] + 1
    if kind == "seed":
        return rng.getrandbits(63)
    if kind == "const":
        return args[0]
    if kind == "string":
        return "".join(rng.choice(_ALPHANUMERIC) for _ in range(int(args[0])))
    if kind == "attachment":
        return attachment
    raise ValueError(f"unknown generator {kind}")
