"""Parameters of the workload format: generators (``uniform(1, 10)``, parsed by
:func:`parse_generator`), the values drawn earlier in a unit (a ``let``'s name, ``$n``) and integer
arithmetic over them (:func:`parse_parameter`), as the native core takes them (docs/core-api.md);
and, for population steps only, the values generators draw in Python (never on the measured
path, which the native core runs with its own generators of the same meaning)."""

from __future__ import annotations

import ast
import hashlib
import random
import re
import string
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fbbench.workloads.expressions import ExpressionError, evaluate_int, evaluate_number

_ALPHANUMERIC = string.ascii_letters + string.digits
# Generator → how many arguments it takes; nurand's fourth is its C (a number or a run constant);
# choice takes one or more values (CHOICE_MAX at most).
_GENERATORS: dict[str, tuple[int, ...]] = {"uniform": (2,), "nurand": (3, 4), "home": (1,), "seed": (0,),
                                           "const": (1,), "string": (1,), "attachment": (0,), "choice": (),
                                           "sequence": (0,), "special": (2,), "template": (1,)}
CHOICE_MAX = 10_000
_VALUES = ("const", "choice")  # generators whose arguments are values: numbers, 'strings' or null
_QUOTED = (*_VALUES, "template")  # generators whose arguments may be quoted strings
TEXT_KINDS = ("string", "template")  # generators that always draw text
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
        if kind in _QUOTED and len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
            args.append(raw[1:-1].replace(raw[0] * 2, raw[0]))  # a doubled quote is the quote itself
            continue
        if kind in _VALUES and raw.lower() == "null":
            args.append(None)
            continue
        if kind == "template":
            raise ValueError(f"'{text}': the template must be a quoted string such as '###-@@@'")
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
    if kind in ("uniform", "special") and None not in numbers and args[0] > args[1]:
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
def is_text(generator: Generator) -> bool:
    """Whether the generator draws text (bound as VARCHAR), not a number."""
    return generator.kind in TEXT_KINDS or (generator.kind in _VALUES and any(
        isinstance(a, str) and not isinstance(a, Constant) for a in generator.args))


def not_whole(generator: Generator) -> str | None:
    """Why the values a generator draws cannot take part in arithmetic ("is text", "is a float",
    "may be null" …); None when every one is a whole number (or a run constant's)."""
    if is_text(generator):
        return "is text"
    if generator.kind not in _VALUES:
        return None
    values = generator.args
    if all(value is None for value in values):
        return "is null"
    if None in values:
        return "may be null"
    if any(isinstance(value, float) for value in values):
        return "is a float" if len(set(values)) == 1 else "may be a float"
    return None


# ---------------------------------------------------------------- the same value again: let, $n, arithmetic


@dataclass(frozen=True)
class Reference:
    """A value drawn earlier in the unit: a ``let``'s name, or ``$n`` (the n-th parameter of the
    same statement in the same execution)."""

    name: str

    def __str__(self) -> str:
        return self.name


# A token of an arithmetic parameter, in reverse Polish order: a whole number, a Reference, a
# Generator (an integer one), a run Constant, an operator ("+", "-", "*", "neg") or a division
# by a constant: ("/", c) rounds down, ("%", c) is the remainder with c's sign.
Token = int | Reference | Generator | Constant | str | tuple[str, int]


@dataclass(frozen=True)
class Arithmetic:
    """Integer arithmetic over whole numbers, names, ``$n`` and integer generators."""

    text: str
    tokens: tuple[Token, ...]

    def __str__(self) -> str:
        return self.text


Parameter = Generator | Reference | Arithmetic
MAX_STACK = 16  # the core evaluates an expression on a stack of this many values
_POSITIONAL = re.compile(r"\$(\d+)")
_POSITIONAL_NAME = "__fbbench_p"


def parse_parameter(text: str, constants: Collection[str] = (), names: Collection[str] = (),
                    not_whole_names: Mapping[str, str] | None = None, position: int | None = None) -> Parameter:
    """One parameter of a unit: a generator, a name a ``let`` defined (``names``), ``$n`` (allowed
    when ``position``, the parameter's own 1-based place in its statement, is given and n is
    smaller), or integer arithmetic over them. ``not_whole_names``: the names (and ``$n``) whose
    value is not always a whole number (text, a float, null), with why (:func:`not_whole`): they
    only stand alone. Raises ValueError saying what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("a parameter must be a non-empty string such as \"uniform(1, 10)\" or \"id + 99\"")
    source = _POSITIONAL.sub(lambda m: f"{_POSITIONAL_NAME}{m.group(1)}", text.strip())
    try:
        tree = ast.parse(" ".join(source.split()), mode="eval").body
    except SyntaxError:
        if re.fullmatch(r"\s*[a-z_]+\s*\(.*\)\s*", text, re.DOTALL):
            return parse_generator(text, constants)  # a generator with a quoted string argument
        raise ValueError(f"'{text}' is neither a generator nor integer arithmetic over names") from None
    if isinstance(tree, ast.Call):
        return parse_generator(text, constants)
    reader = _ArithmeticReader(text, " ".join(source.split()), constants, names, not_whole_names or {}, position)
    if isinstance(tree, ast.Name):
        reference = reader.reference(tree.id)
        if isinstance(reference, Constant):
            return Generator("const", (reference,))
        return reference
    tokens = tuple(reader.tokens(tree))
    if reader.depth(tokens) > MAX_STACK:
        raise ValueError(f"'{text}' is nested too deeply (the core evaluates at most {MAX_STACK} values at once)")
    if all(isinstance(token, int) or token in ("+", "-", "*", "neg") or isinstance(token, tuple) for token in tokens):
        return Generator("const", (_fold(tokens),))  # plain numbers: a constant
    return Arithmetic(text.strip(), tokens)


class _ArithmeticReader:
    def __init__(self, text: str, source: str, constants: Collection[str], names: Collection[str],
                 not_whole_names: Mapping[str, str], position: int | None) -> None:
        self.text, self.source = text, source
        self.constants, self.names, self.not_whole, self.position = constants, names, not_whole_names, position

    def fail(self, message: str) -> ValueError:
        return ValueError(f"'{self.text}': {message}")

    def reference(self, identifier: str) -> Reference | Constant:
        if identifier.startswith(_POSITIONAL_NAME):
            number = int(identifier[len(_POSITIONAL_NAME):])
            if self.position is None:
                raise self.fail(f"${number} refers to a parameter of the same statement; a let has none")
            if not 1 <= number < self.position:
                raise self.fail(f"${number} must name an earlier parameter of this statement "
                                f"(this is parameter {self.position})")
            return Reference(f"${number}")
        if identifier in self.names:
            return Reference(identifier)
        if identifier in self.constants:
            return Constant(identifier)
        known = ", ".join(sorted(self.names)) or "none"
        raise self.fail(f"'{identifier}' is not defined here (defined: {known}); a name needs a let before it is used")

    def tokens(self, node: ast.AST) -> Iterator[Token]:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            yield node.value
        elif isinstance(node, ast.Constant) and isinstance(node.value, float) and node.value.is_integer():
            yield int(node.value)  # a scale value given as 1e6 or 2000.0
        elif isinstance(node, ast.Constant):
            raise self.fail(f"{node.value!r} is not a whole number (arithmetic is on integers)")
        elif isinstance(node, ast.Name):
            reference = self.reference(node.id)
            if isinstance(reference, Reference) and reference.name in self.not_whole:
                raise self.fail(f"{reference.name} {self.not_whole[reference.name]}: it can be a parameter on its "
                                "own, not take part in arithmetic")
            yield reference
        elif isinstance(node, ast.Call):
            segment = ast.get_source_segment(self.source, node) or ""
            generator = parse_generator(segment, self.constants)
            if is_text(generator):
                raise self.fail(f"{generator.kind}(…) draws text, which cannot take part in arithmetic")
            if generator.kind in _VALUES and not all(isinstance(a, int) for a in generator.args):
                raise self.fail(f"{segment} is not a whole number" if generator.kind == "const"
                                else f"{segment} {not_whole(generator)}, which cannot take part in arithmetic")
            yield generator
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            yield from self.tokens(node.operand)
            if isinstance(node.op, ast.USub):
                yield "neg"
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
            yield from self.tokens(node.left)
            yield from self.tokens(node.right)
            yield {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}[type(node.op)]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod):
            divisor_tokens = list(self.tokens(node.right))
            if not all(isinstance(t, int) or t in ("+", "-", "*", "neg") or isinstance(t, tuple)
                       for t in divisor_tokens):
                raise self.fail("a divisor must be a whole number (after ${…} substitution), so that no "
                                "execution can divide by zero")
            divisor = _fold(tuple(divisor_tokens))
            if divisor == 0:
                raise self.fail("division by zero")
            yield from self.tokens(node.left)
            yield ("%" if isinstance(node.op, ast.Mod) else "/", divisor)
        else:
            raise self.fail("a parameter is a generator, a name, $n, or + - * / % and parentheses over them")

    @staticmethod
    def depth(tokens: tuple[Token, ...]) -> int:
        depth = deepest = 0
        for token in tokens:
            if token in ("+", "-", "*"):
                depth -= 1
            elif token == "neg" or isinstance(token, tuple):
                pass
            else:
                depth += 1
            deepest = max(deepest, depth)
        return deepest


def _fold(tokens: tuple[Token, ...]) -> int:
    """The value of tokens that hold only numbers and operators (the core's arithmetic)."""
    stack: list[int] = []
    for token in tokens:
        if isinstance(token, int):
            stack.append(token)
        elif token == "neg":
            stack.append(-stack.pop())
        elif isinstance(token, tuple):
            operator, divisor = token
            left = stack.pop()
            stack.append(left // divisor if operator == "/" else left % divisor)
        else:
            right, left = stack.pop(), stack.pop()
            stack.append({"+": left + right, "-": left - right, "*": left * right}[str(token)])
    return stack[0]


def generators_in(parameter: Parameter) -> Iterator[Generator]:
    """Every generator a parameter draws (itself, or those inside its arithmetic)."""
    if isinstance(parameter, Generator):
        yield parameter
    elif isinstance(parameter, Arithmetic):
        yield from (token for token in parameter.tokens if isinstance(token, Generator))


def references_in(parameter: Parameter) -> Iterator[Reference]:
    if isinstance(parameter, Reference):
        yield parameter
    elif isinstance(parameter, Arithmetic):
        yield from (token for token in parameter.tokens if isinstance(token, Reference))


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
    if kind == "special":
        return special(rng, int(args[0]), int(args[1]))
    if kind == "template":
        return "".join(rng.choice(string.digits) if ch == "#" else rng.choice(string.ascii_lowercase) if ch == "@"
                       else ch for ch in str(args[0]))
    raise ValueError(f"{kind}() is not available in a [[load]] step")


def special(rng: random.Random, a: int, b: int) -> int:
    """sysbench 1.0's default distribution (--rand-type=special with its defaults: 12 iterations,
    1 % of the range, 75 % of the values): three in four values fall in the middle 1 % of a..b,
    the others are the mean of 12 uniform draws over it. The native core draws the same way."""
    span = b - a
    draw = rng.random()
    if draw * span * 4.0 < span:
        return a + int(sum(rng.random() for _ in range(12)) * span / 12.0)
    return a + int(draw * (span * 0.01 + 1.0) + span / 2.0 - span * 0.005)
