"""What a unit's SQL runs inside the engine: the PSQL routines it calls and the random values they draw.

A static reading of a workload's SQL scripts (no database): it finds ``create [or alter] |
recreate | alter`` ``procedure`` / ``function`` bodies and table triggers, then follows from a
unit's statements every routine it names (``execute procedure p``, ``select … from p(…)``,
``f(…)``), transitively, and the triggers on the tables those routines (or the unit's own
statements) change. Comments and string literals are blanked first, so ``-- rand()`` or
``'rand()'`` never count.

It reads names, not plans: a routine reached only through ``execute statement`` (dynamic SQL) or
inside a package is not followed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from fbbench.errors import FbbenchError
from fbbench.workloads.sqltext import split

RANDOM_CALLS = ("rand", "gen_uuid")

# Comments and literals, blanked (same length, newlines kept) so that positions and lines hold.
_NOISE = re.compile(r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'|[qQ]'([\[({<])?.*?[\])}>]?'", re.DOTALL)
_QUOTED_NAME = re.compile(r'"([^"]+)"')
_ROUTINE = re.compile(r"^\s*(?:create\s+or\s+alter|create|recreate|alter)\s+(procedure|function)\s+"
                      r"([A-Za-z_][\w$]*|\"[^\"]+\")", re.IGNORECASE)
_TRIGGER = re.compile(r"^\s*(?:create\s+or\s+alter|create|recreate|alter)\s+trigger\s+([A-Za-z_][\w$]*|\"[^\"]+\")"
                      r"(?:\s+for\s+([A-Za-z_][\w$]*|\"[^\"]+\")|.*?\bon\s+([A-Za-z_][\w$]*|\"[^\"]+\"))?",
                      re.IGNORECASE | re.DOTALL)
_WRITES = re.compile(r"\b(?:update\s+or\s+insert\s+into|insert\s+into|update|delete\s+from|merge\s+into)\s+"
                     r"([A-Za-z_][\w$]*|\"[^\"]+\")", re.IGNORECASE)
_WORD = re.compile(r"\"[^\"]+\"|[A-Za-z_][\w$]*")
_RANDOM = re.compile(r"\b(" + "|".join(RANDOM_CALLS) + r")\s*\(", re.IGNORECASE)


def blank_noise(text: str) -> str:
    """``text`` with comments and string literals replaced by spaces (newlines kept)."""
    return _NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _name(token: str) -> str:
    """Unquoted names are upper case in Firebird; quoted ones keep their case."""
    return token[1:-1] if token.startswith('"') else token.upper()


@dataclass(frozen=True)
class RandomUse:
    """A random call in a routine: ``rand`` at ``schema.sql:42``."""

    call: str
    where: str


@dataclass
class Routine:
    """A procedure, function or trigger: what it names and what random values it draws."""

    name: str
    kind: str  # procedure / function / trigger
    where: str  # file:line of its definition
    words: set[str] = field(default_factory=set)  # every name its body uses
    writes: set[str] = field(default_factory=set)  # tables it inserts into, updates, deletes from
    random: list[RandomUse] = field(default_factory=list)
    table: str | None = None  # triggers: the table they fire on


def _scan(code: str, source: str, line: int) -> tuple[set[str], set[str], list[RandomUse]]:
    words = {_name(w) for w in _WORD.findall(code)}
    writes = {_name(m.group(1)) for m in _WRITES.finditer(code)}
    random = [RandomUse(m.group(1).lower(), f"{source}:{line + code.count(chr(10), 0, m.start())}")
              for m in _RANDOM.finditer(code)]
    return words, writes, random


def routines(files: Mapping[str, str]) -> dict[str, Routine]:
    """The routines and triggers defined in a workload's SQL files (``name → text``), by name."""
    found: dict[str, Routine] = {}
    for source, text in files.items():
        if not source.lower().endswith(".sql"):
            continue
        try:
            statements = split(text, source)
        except FbbenchError:
            continue  # a script that does not split is reported when the workload runs
        for statement in statements:
            code = blank_noise(statement.text)
            where = f"{source}:{statement.line}"
            if match := _ROUTINE.match(code):
                kind, name = match.group(1).lower(), _name(match.group(2))
                body = code[match.end():]
                routine = Routine(name, kind, where)
            elif match := _TRIGGER.match(code):
                name = _name(match.group(1))
                table = match.group(2) or match.group(3)
                body = code[match.end():]
                routine = Routine(name, "trigger", where, table=_name(table) if table else None)
            else:
                continue
            routine.words, routine.writes, routine.random = _scan(body, source, statement.line
                                                                  + code.count("\n", 0, match.end()))
            found[name] = routine
    return found


@dataclass(frozen=True)
class Reach:
    """A random call a unit reaches: the chain of routines from the unit to it."""

    chain: tuple[str, ...]  # routine names, the unit's first; empty: in the unit's own SQL
    use: RandomUse


def random_reached(statements: Iterable[str], defined: Mapping[str, Routine], unit: str = "") -> list[Reach]:
    """Every random call a unit's statements reach, directly or through routines and triggers."""
    reached: list[Reach] = []
    code = "\n".join(blank_noise(text) for text in statements)
    words, writes, random = _scan(code, f"unit {unit}" if unit else "unit", 1)
    reached += [Reach((), use) for use in random]
    triggers: dict[str, list[Routine]] = {}
    for routine in defined.values():
        if routine.kind == "trigger" and routine.table:
            triggers.setdefault(routine.table, []).append(routine)
    queue: list[tuple[str, ...]] = [(name,) for name in sorted(words) if name in defined
                                    and defined[name].kind != "trigger"]
    queue += [(t.name,) for table in sorted(writes) for t in triggers.get(table, [])]
    seen = {chain[-1] for chain in queue}
    while queue:
        chain = queue.pop(0)
        routine = defined[chain[-1]]
        reached += [Reach(chain, use) for use in routine.random]
        following = [name for name in sorted(routine.words) if name in defined and name != routine.name
                     and defined[name].kind != "trigger"]
        following += [t.name for table in sorted(routine.writes) for t in triggers.get(table, [])]
        for name in following:
            if name not in seen:
                seen.add(name)
                queue.append((*chain, name))
    return reached
