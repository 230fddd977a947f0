"""Parameter values in Python, for population steps (never on the measured path, which the
native core runs with its own generators of the same meaning)."""

from __future__ import annotations

import hashlib
import random
import string
from collections.abc import Mapping

from fbbench.workloads.spec import Generator

_ALPHANUMERIC = string.ascii_letters + string.digits


def derived_seed(*parts: object) -> int:
    """A stable 63-bit seed from any parts (workload name, step, iteration)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def nurand(rng: random.Random, a: int, x: int, y: int, c: int) -> int:
    """TPC-C 2.1.6: NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x."""
    return (((rng.randint(0, a) | rng.randint(x, y)) + c) % (y - x + 1)) + x


def value(generator: Generator, rng: random.Random, attachment: int, nurand_c: Mapping[int, int]) -> object:
    kind, args = generator.kind, generator.args
    if kind == "uniform":
        return rng.randint(args[0], args[1])
    if kind == "nurand":
        return nurand(rng, args[0], args[1], args[2], nurand_c.get(args[0], 0))
    if kind == "home":
        return (attachment - 1) % args[0] + 1
    if kind == "seed":
        return rng.getrandbits(63)
    if kind == "const":
        return args[0]
    if kind == "string":
        return "".join(rng.choice(_ALPHANUMERIC) for _ in range(args[0]))
    if kind == "attachment":
        return attachment
    raise ValueError(f"unknown generator {kind}")


def choose_c_run(a: int, c_load: int | None, rng: random.Random) -> int:
    """TPC-C 2.1.6.1: C-Run for A = 255 differs from C-Load by 65..119, but not 96 or 112."""
    if a != 255 or c_load is None:
        return rng.randint(0, a)
    while True:
        candidate = rng.randint(0, 255)
        delta = abs(candidate - c_load)
        if 65 <= delta <= 119 and delta not in (96, 112):
            return candidate
