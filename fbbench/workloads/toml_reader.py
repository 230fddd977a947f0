"""Reading a workload.toml with every mistake located: the keys each of its tables takes, the
line each key is on, and :class:`Reader`, which walks the parsed TOML and raises errors that say
file:line and what was expected (docs/workload-format.md).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from fbbench.errors import FbbenchError
from fbbench.workloads.expressions import ExpressionError, evaluate_int, evaluate_number
from fbbench.workloads.generators import Generator, parse_generator

_KEYS: dict[str, set[str]] = {
    "": {"name", "description", "scripts", "scale", "load", "units", "metrics", "checks", "audits", "constants",
         "headline", "figures", "page_size", "size_scale", "disk"},
    "load": {"name", "sql", "script", "params", "for_each"},
    "units": {"name", "description", "weight", "isolation", "lock_timeout", "read_only", "sql", "params",
              "statements", "rollback_on", "tally", "keying_time", "think_time", "let", "transaction",
              "units_per_transaction", "connect", "count", "only"},
    "statements": {"sql", "params", "repeat", "let"},
    "metrics": {"name", "sql", "per_minute", "description", "every", "only"},
    "checks": {"name", "names", "sql", "description", "only"},
    "audits": {"name", "value", "unit", "min", "max", "description", "only"},
    "headline": {"name", "value", "per", "better", "unit", "description", "when", "only"},
    "figures": {"name", "value", "per", "better", "unit", "description", "when", "only"},
}


class _Locator:
    """Line numbers of keys in a TOML text, so semantic errors can point at a line."""

    _ARRAY = re.compile(r"^\[\[\s*([A-Za-z0-9_.-]+)\s*\]\]")
    _TABLE = re.compile(r"^\[\s*([A-Za-z0-9_.-]+)\s*\]")
    _KEY = re.compile(r"^([A-Za-z0-9_-]+|\"[^\"]*\")\s*=")

    def __init__(self, text: str) -> None:
        self.text_lines = text.splitlines()
        self.lines: dict[tuple[Any, ...], int] = {}
        section: tuple[Any, ...] = ()
        counters: dict[str, int] = {}
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if match := self._ARRAY.match(line):
                name = match.group(1)
                counters[name] = counters.get(name, -1) + 1
                section = (name, counters[name])
            elif match := self._TABLE.match(line):
                section = (match.group(1),)
            elif match := self._KEY.match(line):
                self.lines.setdefault((*section, match.group(1).strip('"')), number)
                continue
            else:
                continue
            self.lines.setdefault(section, number)

    def line(self, *path: Any) -> int | None:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None


class Reader:
    """Walks the parsed TOML with the locator at hand, raising located errors."""

    def __init__(self, source: Path, text: str) -> None:
        self.source = source
        self.locator = _Locator(text)

    def where(self, path: Sequence[Any]) -> str:
        line = self.locator.line(*path)
        return f"{self.source}:{line}" if line else str(self.source)

    def fail(self, path: Sequence[Any], message: str, hint: str | None = None) -> FbbenchError:
        return FbbenchError(f"{self.where(path)}: {message}", hint)

    def check_keys(self, table: Mapping[str, Any], kind: str, path: Sequence[Any]) -> None:
        allowed = _KEYS[kind]
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, sorted(allowed), n=1)
                label = f"[[{kind}]] #{path[-1] + 1}" if kind and isinstance(path[-1], int) else (
                    f"[{kind}]" if kind else "the top level")
                raise self.fail(
                    [*path, key], f"unknown key '{key}' in {label}; expected one of: {', '.join(sorted(allowed))}",
                    hint=f"did you mean '{close[0]}'?" if close else None,
                )

    def text(self, table: Mapping[str, Any], key: str, path: Sequence[Any]) -> str:
        """A required, non-empty string."""
        value = table.get(key)
        if value is None:
            raise self.fail(path, f"missing required key '{key}'")
        if not isinstance(value, str) or not value.strip():
            raise self.fail([*path, key], f"'{key}' must be a non-empty string")
        return value

    def number(self, table: Mapping[str, Any], key: str, path: Sequence[Any], default: float | None,
               whole: bool = False) -> float | int | None:
        if key not in table:
            return default
        try:
            return evaluate_int(table[key]) if whole else evaluate_number(table[key])
        except ExpressionError as error:
            raise self.fail([*path, key], f"'{key}': {error}") from None

    def flag(self, table: Mapping[str, Any], key: str, path: Sequence[Any]) -> bool:
        value = table.get(key, False)
        if not isinstance(value, bool):
            raise self.fail([*path, key], f"'{key}' must be true or false")
        return value

    def names(self, table: Mapping[str, Any], key: str, path: Sequence[Any]) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail([*path, key], f"'{key}' must be a list of strings")
        return tuple(value)

    def array(self, data: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise self.fail([key], f"'{key}' must be an array of tables ([[{key}]])")
        return value

    def where_text(self, path: Sequence[Any], text: str) -> str:
        """file:line of the first line at or after ``path``'s that holds ``text`` (an inline
        statement of a multi-line array), else ``path``'s own."""
        start = self.locator.line(*path)
        if start is not None:
            for number, line in enumerate(self.locator.text_lines[start - 1:], start):
                if text and text in line:
                    return f"{self.source}:{number}"
        return self.where(path)

    def kept(self, table: Mapping[str, Any], path: Sequence[Any], scale: Mapping[str, Any],
             choices: Mapping[str, tuple[str, ...]]) -> bool:
        """``only = { mode = ["a", "b"] }``: whether the entry exists at this scale (every named
        word-valued scale parameter has one of the words listed)."""
        only = table.get("only")
        if only is None:
            return True
        if not isinstance(only, dict) or not only:
            raise self.fail([*path, "only"], "'only' must be a table such as only = { mode = [\"small\", \"large\"] }")
        kept = True
        for name, words in only.items():
            listed = [words] if isinstance(words, str) else words
            if name not in choices:
                raise self.fail([*path, "only"], f"'only' names '{name}', which is not a scale parameter with words "
                                                 f"(those are: {', '.join(sorted(choices)) or 'none'})")
            if not isinstance(listed, list) or not listed or not all(isinstance(w, str) for w in listed):
                raise self.fail([*path, "only"], f"'only': {name} must be a word or a list of words")
            unknown = [w for w in listed if w not in choices[name]]
            if unknown:
                raise self.fail([*path, "only"], f"'only': {', '.join(unknown)} is not one of {name}'s words "
                                                 f"({', '.join(choices[name])})")
            kept = kept and scale[name] in listed
        return kept

    def generators(self, table: Mapping[str, Any], path: Sequence[Any],
                   constants: Collection[str] = ()) -> tuple[Generator, ...]:
        value = table.get("params", [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            expected = "'params' must be a list of generator strings such as \"uniform(1, 10)\""
            raise self.fail([*path, "params"], expected)
        try:
            generators = tuple(parse_generator(item, constants) for item in value)
        except ValueError as error:
            raise self.fail([*path, "params"], str(error)) from None
        for generator in generators:
            if generator.kind == "sequence":
                raise self.fail([*path, "params"], "sequence() counts a unit's executions; a [[load]] step has none")
        return generators
