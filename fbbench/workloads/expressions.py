"""Tiny, safe arithmetic for workload files: ``2 * 10``, ``100 * new_order.rolled_back / x``.

Only numbers, ``+ - * / // %``, parentheses and (where a caller allows them) dotted names.
Anything else — calls, attributes of objects, subscripts — is rejected, so a workload file can
never run code.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping

_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}
_UNARY: dict[type, Callable[[float], float]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


class ExpressionError(ValueError):
    pass


def dotted_name(node: ast.AST) -> str | None:
    """``new_order.ok`` of a Name or an Attribute chain; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def evaluate(text: str, names: Mapping[str, float] | None = None) -> float | int:
    """Evaluate ``text``; ``names`` maps dotted names (``new_order.ok``) to numbers."""
    try:
        tree = ast.parse(" ".join(text.split()), mode="eval")  # an expression may span lines
    except SyntaxError:
        raise ExpressionError(f"'{text}' is not an arithmetic expression") from None

    def walk(node: ast.AST) -> float | int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = walk(node.left), walk(node.right)
            try:
                return _BINARY[type(node.op)](left, right)
            except ZeroDivisionError:
                # Audits divide by a unit's count: name the divisor, so that the unit that never
                # completed is in the message.
                divisor = "" if isinstance(node.right, ast.Constant) else f": {ast.unparse(node.right)} is 0"
                raise ExpressionError(f"division by zero in '{text}'{divisor}") from None
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](walk(node.operand))
        name = dotted_name(node)
        if name is not None:
            if names is None:
                raise ExpressionError(f"'{text}' must be a number (names are not allowed here)")
            if name not in names:
                known = ", ".join(sorted(names)) or "none"
                raise ExpressionError(f"unknown name '{name}' in '{text}' (known: {known})")
            return names[name]
        raise ExpressionError(f"'{text}' may only use numbers, + - * / and parentheses")

    return walk(tree)


def evaluate_number(value: object) -> float | int:
    """A TOML number, or a string holding an arithmetic expression."""
    if isinstance(value, bool):
        raise ExpressionError(f"expected a number, got {str(value).lower()}")
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        return evaluate(value)
    raise ExpressionError(f"expected a number, got {value!r}")


def evaluate_int(value: object) -> int:
    number = evaluate_number(value)
    if isinstance(number, float):
        if not number.is_integer():
            raise ExpressionError(f"expected a whole number, got {number}")
        number = int(number)
    return number


def names_in(text: str) -> set[str]:
    """The dotted names an expression uses (empty if it is not an expression)."""
    try:
        tree = ast.parse(" ".join(text.split()), mode="eval")
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute | ast.Name):
            name = dotted_name(node)
            if name is not None:
                found.add(name)
    # "a.b.c" also yields "a.b" and "a" while walking: keep only the longest chains.
    return {name for name in found if not any(other.startswith(name + ".") for other in found)}
