"""A workload's units: what one is (its statements, transaction, isolation, pacing) and how a
``[[units]]`` table of workload.toml is read into one, its ``let`` names and parameters checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fbbench.errors import FbbenchError
from fbbench.workloads.generators import (
    _GENERATORS,
    IDENTIFIER,
    Generator,
    Parameter,
    Reference,
    not_whole,
    parse_parameter,
)
from fbbench.workloads.toml_reader import Reader

ISOLATIONS = ("snapshot", "read_committed", "read_consistency", "serializable")
TRANSACTIONS = ("per_unit", "per_n_units", "none")
CONNECTS = ("once", "per_unit")


@dataclass(frozen=True)
class Statement:
    sql: str
    params: tuple[Parameter, ...] = ()
    repeat: int = 1
    # Values drawn before each execution, by name (docs/workload-format.md, "The same value again").
    lets: tuple[tuple[str, Parameter], ...] = ()


@dataclass(frozen=True)
class Unit:
    name: str
    weight: float
    statements: tuple[Statement, ...]
    isolation: str = "read_committed"
    lock_timeout: int | None = None
    read_only: bool = False
    rollback_on: tuple[str, ...] = ()
    tally: tuple[str, ...] = ()
    keying_time: float = 0.0
    think_time: float = 0.0
    description: str = ""
    lets: tuple[tuple[str, Parameter], ...] = ()  # drawn once per execution, before the first statement
    transaction: str = "per_unit"  # per_unit | per_n_units | none
    units_per_transaction: int = 1  # per_n_units: the executions one transaction spans
    connect: str = "once"  # once | per_unit: attach and detach in every execution
    count: int | None = None  # fixed work: each attachment runs the unit this often, units in order


class _Names:
    """The names a unit's ``let``s define, in order, and which of them hold values that are not
    always whole numbers (text, a float, null), with why."""

    def __init__(self, reader: Reader, constants: set[str]) -> None:
        self.reader, self.constants = reader, constants
        self.defined: list[str] = []
        self.not_whole: dict[str, str] = {}

    def read(self, raw: Any, path: list[Any]) -> tuple[tuple[str, Parameter], ...]:
        """``let = { name = "parameter", … }``: each defined in order, seen by the next."""
        if raw is None:
            return ()
        if not isinstance(raw, dict):
            raise self.reader.fail(path, "'let' must be a table of name = \"parameter\", e.g. "
                                         "let = { id = \"uniform(1, 100)\" }")
        lets = []
        for name, text in raw.items():
            if not IDENTIFIER.match(name) or name.startswith("__"):
                raise self.reader.fail(path, f"let name '{name}' must be a plain identifier")
            if name in self.defined:
                raise self.reader.fail(path, f"let '{name}' is defined twice in this unit")
            if name in self.constants or name in _GENERATORS:
                what = "a run constant" if name in self.constants else "a generator"
                raise self.reader.fail(path, f"let '{name}' has the name of {what}; choose another")
            parameter = self.parameter(text, path, f"let {name}")
            lets.append((name, parameter))
            self.defined.append(name)
            why = self.why_not_whole(parameter, {})
            if why is not None:
                self.not_whole[name] = why
        return tuple(lets)

    def parameter(self, text: Any, path: list[Any], what: str, position: int | None = None,
                  earlier: dict[str, str | None] | None = None) -> Parameter:
        if not isinstance(text, str):
            raise self.reader.fail(path, f"{what} must be a string such as \"uniform(1, 10)\" or \"id + 99\"")
        not_whole_names = self.not_whole | {name: why for name, why in (earlier or {}).items() if why is not None}
        try:
            return parse_parameter(text, self.constants, self.defined, not_whole_names, position)
        except ValueError as error:
            location = self.reader.where_text(path, text)
            raise FbbenchError(f"{location}: {what}: {error}") from None

    def why_not_whole(self, parameter: Parameter, earlier: dict[str, str | None]) -> str | None:
        if isinstance(parameter, Generator):
            return not_whole(parameter)
        if isinstance(parameter, Reference):
            return self.not_whole.get(parameter.name) or earlier.get(parameter.name)
        return None

    def params(self, raw: Any, path: list[Any]) -> tuple[Parameter, ...]:
        if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
            raise self.reader.fail(path, "'params' must be a list of strings such as \"uniform(1, 10)\" or \"id + 99\"")
        found: list[Parameter] = []
        earlier: dict[str, str | None] = {}
        for position, text in enumerate(raw, start=1):
            parameter = self.parameter(text, path, f"parameter {position}", position, earlier)
            found.append(parameter)
            earlier[f"${position}"] = self.why_not_whole(parameter, earlier)
        return tuple(found)


def read_unit(reader: Reader, table: dict[str, Any], index: int, constants: set[str]) -> Unit:
    path: list[Any] = ["units", index]
    reader.check_keys(table, "units", path)
    name = reader.text(table, "name", path)
    names = _Names(reader, constants)
    lets = names.read(table.get("let"), [*path, "let"])
    if "sql" in table and "statements" in table:
        raise reader.fail(path, f"unit '{name}' has both 'sql' and 'statements'; use one")
    if "sql" in table:
        statements: tuple[Statement, ...] = (Statement(reader.text(table, "sql", path),
                                                       names.params(table.get("params", []), [*path, "params"])),)
    elif "statements" in table:
        raw = table["statements"]
        if not isinstance(raw, list) or not raw or not all(isinstance(item, dict) for item in raw):
            raise reader.fail([*path, "statements"], "'statements' must be a list of { sql = ..., params = [...] }")
        statements = ()
        for item in raw:
            reader.check_keys(item, "statements", [*path, "statements"])
            repeat = reader.number(item, "repeat", [*path, "statements"], 1, whole=True)
            if repeat is None or repeat < 1:
                raise reader.fail([*path, "statements"], "'repeat' must be at least 1")
            statement_lets = names.read(item.get("let"), [*path, "statements"])
            params = names.params(item.get("params", []), [*path, "statements"])
            statements += (Statement(reader.text(item, "sql", [*path, "statements"]), params, int(repeat),
                                     statement_lets),)
    else:
        raise reader.fail(path, f"unit '{name}' needs 'sql' (with 'params') or 'statements'")
    if "params" in table and "statements" in table:
        raise reader.fail([*path, "params"], "'params' belongs inside each of 'statements'")
    weight = reader.number(table, "weight", path, None)
    try:
        count = reader.number(table, "count", path, None, whole=True)
    except FbbenchError:
        shown = reader.number(table, "count", path, None)
        raise reader.fail([*path, "count"], f"unit '{name}': its count is {shown:g} at this scale, not a whole "
                                            "number of executions") from None
    if count is not None and count < 1:
        raise reader.fail([*path, "count"], f"unit '{name}': 'count' must be at least 1, got {count}")
    if weight is None and count is not None:
        weight = 1  # a counted unit runs in its phase: its weight is not used
    if weight is None or weight <= 0:
        raise reader.fail([*path, "weight"], f"unit '{name}' needs a positive 'weight'")
    isolation = table.get("isolation", "read_committed")
    if isolation not in ISOLATIONS:
        raise reader.fail([*path, "isolation"], f"isolation '{isolation}' is not one of: {', '.join(ISOLATIONS)}")
    lock_timeout = reader.number(table, "lock_timeout", path, None, whole=True)
    if lock_timeout is not None and lock_timeout < 0:
        raise reader.fail([*path, "lock_timeout"], "'lock_timeout' cannot be negative (0 = no wait)")
    keying = reader.number(table, "keying_time", path, 0.0) or 0.0
    think = reader.number(table, "think_time", path, 0.0) or 0.0
    if keying < 0 or think < 0:
        raise reader.fail(path, "keying_time and think_time cannot be negative")
    transaction = table.get("transaction", "per_unit")
    if transaction not in TRANSACTIONS:
        raise reader.fail([*path, "transaction"], f"transaction '{transaction}' is not one of: "
                                                  f"{', '.join(TRANSACTIONS)}")
    per_transaction = reader.number(table, "units_per_transaction", path, None, whole=True)
    if transaction == "per_n_units":
        if per_transaction is None or per_transaction < 1:
            raise reader.fail([*path, "transaction"], f"unit '{name}': transaction = \"per_n_units\" needs "
                                                      "units_per_transaction = N (at least 1)")
    elif per_transaction is not None:
        raise reader.fail([*path, "units_per_transaction"], f"unit '{name}': units_per_transaction needs "
                                                            "transaction = \"per_n_units\"")
    connect = table.get("connect", "once")
    if connect not in CONNECTS:
        raise reader.fail([*path, "connect"], f"connect '{connect}' is not one of: {', '.join(CONNECTS)}")
    if connect == "per_unit" and transaction == "per_n_units":
        raise reader.fail([*path, "connect"], f"unit '{name}': a transaction cannot span units that each attach "
                                              "anew (connect = \"per_unit\" with transaction = \"per_n_units\")")
    return Unit(
        name=name, weight=float(weight), statements=statements, isolation=isolation,
        lock_timeout=None if lock_timeout is None else int(lock_timeout),
        read_only=reader.flag(table, "read_only", path),
        rollback_on=reader.names(table, "rollback_on", path), tally=reader.names(table, "tally", path),
        keying_time=float(keying), think_time=float(think), description=table.get("description", ""),
        lets=lets, transaction=transaction, units_per_transaction=int(per_transaction or 1), connect=connect,
        count=None if count is None else int(count),
    )
