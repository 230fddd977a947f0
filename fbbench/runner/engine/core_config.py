"""The native core's config (docs/core-api.md) for one run, built from the workload and settings."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from fbbench.workloads.generators import (
    Arithmetic,
    Constant,
    Generator,
    Parameter,
    Reference,
    generators_in,
    references_in,
)
from fbbench.workloads.spec import Workload
from fbbench.workloads.units import Unit


def unit_parameters(unit: Unit) -> list[Parameter]:
    """Every parameter and let of a unit, in no particular order."""
    found = [parameter for _, parameter in unit.lets]
    for statement in unit.statements:
        found += [parameter for _, parameter in statement.lets]
        found += list(statement.params)
    return found


def nurand_defaults(workload: Workload, seed: int) -> dict[int, int]:
    """C for each ``nurand(A, x, y)`` given without one: drawn in 0..A from the run's seed."""
    wanted = sorted({int(g.args[0]) for unit in workload.units for parameter in unit_parameters(unit)
                     for g in generators_in(parameter) if g.kind == "nurand" and len(g.args) == 3})
    rng = random.Random(seed ^ 0x5EED_C0DE)
    return {a: rng.randint(0, a) for a in wanted}


class _UnitCompiler:
    """A unit's lets and parameters as the core takes them (docs/core-api.md, "Parameters"):
    values are kept in slots numbered in the order the core numbers them — the unit's let, then
    for each statement its let and then the parameters a later ``$n`` of it refers to."""

    def __init__(self, generator: Any) -> None:
        self.generator = generator  # Generator → the core's {"kind", "args"}, constants resolved
        self.slots: dict[str, int] = {}

    def lets(self, lets: Any) -> list[dict[str, Any]]:
        compiled = []
        for name, parameter in lets:
            compiled.append(self.parameter(parameter, {}))
            self.slots[name] = len(self.slots)
        return compiled

    def statement(self, params: Any) -> list[dict[str, Any]]:
        referred = {int(ref.name[1:]) for parameter in params for ref in references_in(parameter)
                    if ref.name.startswith("$")}
        positions: dict[str, int] = {}
        compiled = []
        for position, parameter in enumerate(params, start=1):
            core = self.parameter(parameter, positions)
            if position in referred:
                positions[f"${position}"] = len(self.slots)
                self.slots[f"${position}#{len(self.slots)}"] = len(self.slots)
                core["store"] = True
            compiled.append(core)
        return compiled

    def parameter(self, parameter: Parameter, positions: dict[str, int]) -> dict[str, Any]:
        if isinstance(parameter, Generator):
            return dict(self.generator(parameter))
        if isinstance(parameter, Reference):
            return {"kind": "slot", "args": [self.slot(parameter, positions)]}
        assert isinstance(parameter, Arithmetic)
        tokens: list[Any] = []
        for token in parameter.tokens:
            if isinstance(token, Reference):
                tokens.append({"slot": self.slot(token, positions)})
            elif isinstance(token, Generator):
                tokens.append(self.generator(token))
            elif isinstance(token, Constant):
                tokens.append(self.generator(Generator("const", (token,)))["args"][0])
            elif isinstance(token, tuple):
                tokens.append({"div" if token[0] == "/" else "rem": token[1]})
            else:
                tokens.append(token)
        return {"kind": "expr", "args": tokens}

    def slot(self, reference: Reference, positions: dict[str, int]) -> int:
        return positions[reference.name] if reference.name.startswith("$") else self.slots[reference.name]


def core_config(workload: Workload, settings: Mapping[str, Any], dsn: str, client_library: str,
                credentials: tuple[str, str | None], seed: int, exceptions: Mapping[str, int],
                constants: Mapping[str, float]) -> dict[str, Any]:
    defaults = nurand_defaults(workload, seed)

    def generator(generator: Generator) -> dict[str, Any]:
        args = [constants[a] if isinstance(a, Constant) else a for a in generator.args]
        if generator.kind == "nurand" and len(args) == 3:
            args.append(defaults[int(args[0])])
        return {"kind": generator.kind, "args": [int(a) if isinstance(a, float) and a.is_integer() else a
                                                 for a in args]}

    def unit_config(unit: Unit) -> dict[str, Any]:
        compiler = _UnitCompiler(generator)
        lets = compiler.lets(unit.lets)
        statements = []
        for s in unit.statements:
            statement_lets = compiler.lets(s.lets)
            statements.append({"sql": s.sql, "repeat": s.repeat, "let": statement_lets,
                               "params": compiler.statement(s.params)})
        return {
            "name": unit.name,
            "weight": unit.weight,
            "isolation": unit.isolation,
            "read_only": unit.read_only,
            "lock_timeout": unit.lock_timeout,
            "keying_seconds": unit.keying_time,
            "think_seconds": unit.think_time,
            "rollback_on": [exceptions[name.upper()] for name in unit.rollback_on],
            "tally": list(unit.tally),
            "let": lets,
            "transaction": unit.transaction,
            "units_per_transaction": unit.units_per_transaction if unit.transaction == "per_n_units" else None,
            "connect": unit.connect,
            "count": unit.count,
            "statements": statements,
        }

    fixed_work = settings["transactions"] is not None
    return {
        "client_library": client_library,
        "database": dsn,
        "user": credentials[0],
        "password": credentials[1],
        "role": None,
        "charset": "UTF8",
        "connections": settings["connections"],
        "connect_rate": settings["connect_rate"],
        "warmup_seconds": 0.0 if fixed_work else settings["warmup"],
        "measure_seconds": None if fixed_work else settings["duration"],
        "transactions": settings["transactions"],
        "interval_seconds": settings["interval"],
        "seed": seed,
        "target_rate": settings["target_rate"],
        "units": [unit_config(unit) for unit in workload.units],
    }


def replay_config(plan: Any, settings: Mapping[str, Any], dsn: str, client_library: str,
                  credentials: tuple[str, str | None], seed: int) -> dict[str, Any]:
    """The core's config for a replay (docs/core-api.md, "Replay"): one attachment per traced
    session; the units are the trace's transaction shapes, which only count its transactions."""
    from fbbench.trace.replay import core_replay

    return {
        "client_library": client_library,
        "database": dsn,
        "user": credentials[0],
        "password": credentials[1],
        "role": None,
        "charset": "UTF8",
        "connections": len(plan.sessions),
        "warmup_seconds": 0.0,
        "measure_seconds": None,
        "transactions": None,
        "interval_seconds": settings["interval"],
        "seed": seed,
        "units": [{"name": shape.name, "weight": len(shape.transactions), "statements": []}
                  for shape in plan.shapes],
        "replay": core_replay(plan, settings["order"], settings["speed"]),
    }
