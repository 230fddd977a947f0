"""Parameter generators of the workload format: how a workload writes one (``uniform(1, 10)``,
parsed by :func:`parse_generator` into what the native core takes, docs/core-api.md) and, for
population steps only, the values it draws in Python (never on the measured path, which the
native core runs with its own generators of the same meaning)."""

from __future__ import annotations

import hashlib
import random
import re
import string
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from fbbench.workloads.expressions import ExpressionError, evaluate_int, evaluate_number

_ALPHANUMERIC = string.ascii_letters + string.digits
# Generator → how many arguments it takes; nurand's fourth is its C (a number or a run constant);
# choice takes one or more values (CHOICE_MAX at most).
_GENERATORS: dict[str, tuple[int, ...]] = {"uniform": (2,), "nurand": (3, 4), "home": (1,), "seed": (0,),
                                           "const": (1,), "string": (1,), "attachment": (0,), "choice": ()}
CHOICE_MAX = 10_000
_VALUES = ("const", "choice")  # generators whose arguments are values: numbers, 'strings' or null
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a run constant's name


class Constant(str):
    """A generator argument naming a run constant (``[constants]``), resolved before measuring."""


@dataclass(frozen=True)
class Generator:
    """A parameter generator as the native core takes it (see docs/core-api.md)."""

    kind: str
    args: tuple[Any, ...] = ()

    def to_core(self) -> dict[str, Any]:
        return {"kind": self.kind, "args": list(self.args)}

    def __str__(self) -> str:
        """As a workload writes it: strings in single quotes (a quote inside doubled), null."""

        def shown(arg: Any) -> str:
            if arg is None:
                return "null"
            if isinstance(arg, str) and not isinstance(arg, Constant):
                return "'" + arg.replace("'", "''") + "'"
            return repr(arg) if isinstance(arg, float) else str(arg)

        return f"{self.kind}({', '.join(shown(a) for a in self.args)})"


def parse_generator(text: str, constants: Collection[str] = ()) -> Generator:
    """``uniform(1, 10)`` → Generator("uniform", (1, 10)); arguments may be expressions, or the name
    of a run constant (``nurand(255, 0, 999, C_LAST)``) when ``constants`` defines it."""
    match = re.fullmatch(r"\s*([a-z_]+)\s*\((.*)\)\s*", text, re.DOTALL)
    if not match or match.group(1) not in _GENERATORS:
        known = ", ".join(f"{name}(…)" for name in _GENERATORS)
        raise ValueError(f"unknown parameter generator '{text}'; expected one of: {known}")
    kind, body = match.group(1), match.group(2).strip()
    raw_args = _split_arguments(body) if body else []
    if kind == "choice":
        if not 1 <= len(raw_args) <= CHOICE_MAX:
            raise ValueError(f"'{_short(text)}': choice takes 1 to {CHOICE_MAX:,} values, got {len(raw_args)}")
    elif len(raw_args) not in _GENERATORS[kind]:
        takes = " or ".join(str(n) for n in _GENERATORS[kind])
        raise ValueError(f"'{text}': {kind} takes {takes} argument(s), got {len(raw_args)}")
    args: list[Any] = []
    for raw in raw_args:
        if kind in _VALUES and len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
            args.append(raw[1:-1].replace(raw[0] * 2, raw[0]))  # a doubled quote is the quote itself
            continue
        if kind in _VALUES and raw.lower() == "null":
            args.append(None)
            continue
        if IDENTIFIER.match(raw):
            if raw not in constants:
                known = ", ".join(sorted(constants)) or "none (a [[load]] step runs before they are read)"
                raise ValueError(f"'{text}': '{raw}' is not a run constant; [constants] defines: {known}")
            args.append(Constant(raw))
            continue
        try:
            number = evaluate_number(raw) if kind in _VALUES else evaluate_int(raw)
            args.append(int(number) if isinstance(number, float) and number.is_integer() else number)
        except ExpressionError as error:
            raise ValueError(f"'{text}': {error}") from None
    numbers = [a if not isinstance(a, Constant) else None for a in args]
    if kind == "uniform" and None not in numbers and args[0] > args[1]:
        raise ValueError(f"'{text}': the lower bound is above the upper bound")
    if kind == "nurand" and None not in numbers[1:3] and args[1] > args[2]:
        raise ValueError(f"'{text}': x is above y")
    if kind in ("home", "string") and numbers[0] is not None and args[0] < 1:
        raise ValueError(f"'{text}': the argument must be at least 1")
    if kind == "choice":
        if any(isinstance(a, Constant) for a in args):
            raise ValueError(f"'{_short(text)}': choice takes values (numbers, 'strings', null), not run constants")
        if {isinstance(a, str) for a in args if a is not None} == {True, False}:
            raise ValueError(f"'{_short(text)}': choice's values must be all numbers or all strings (null allowed)")
    return Generator(kind, tuple(args))


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _split_arguments(body: str) -> list[str]:
    parts, current, quote = [], "", ""
    for ch in body:
        if quote:
            current += ch
            if ch == quote:
                quote = ""  # a doubled quote closes and reopens: the value keeps one of them
        elif ch in "'\"":
            quote = ch
            current += ch
        elif ch == ",":
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    parts.append(current.strip())
    return parts




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
    if kind == "choice":
        return rng.choice(args)
    if kind == "string":
        return "".join(rng.choice(_ALPHANUMERIC) for _ in range(int(args[0])))
    if kind == "attachment":
        return attachment
    raise ValueError(f"unknown generator {kind}")
