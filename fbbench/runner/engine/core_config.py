"""The native core's config (docs/core-api.md) for one run, built from the workload and settings."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from fbbench.workloads.generators import Constant
from fbbench.workloads.spec import Workload


def nurand_defaults(workload: Workload, seed: int) -> dict[int, int]:
    """C for each ``nurand(A, x, y)`` given without one: drawn in 0..A from the run's seed."""
    wanted = sorted({int(g.args[0]) for unit in workload.units for statement in unit.statements
                     for g in statement.params if g.kind == "nurand" and len(g.args) == 3})
    rng = random.Random(seed ^ 0x5EED_C0DE)
    return {a: rng.randint(0, a) for a in wanted}


def core_config(workload: Workload, settings: Mapping[str, Any], dsn: str, client_library: str,
                credentials: tuple[str, str | None], seed: int, exceptions: Mapping[str, int],
                constants: Mapping[str, float]) -> dict[str, Any]:
    defaults = nurand_defaults(workload, seed)

    def params(generators: Any) -> list[dict[str, Any]]:
        out = []
        for generator in generators:
            args = [constants[a] if isinstance(a, Constant) else a for a in generator.args]
            if generator.kind == "nurand" and len(args) == 3:
                args.append(defaults[int(args[0])])
            out.append({"kind": generator.kind, "args": [int(a) if isinstance(a, float) and a.is_integer() else a
                                                         for a in args]})
        return out

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
        "units": [
            {
                "name": unit.name,
                "weight": unit.weight,
                "isolation": unit.isolation,
                "read_only": unit.read_only,
                "lock_timeout": unit.lock_timeout,
                "keying_seconds": unit.keying_time,
                "think_seconds": unit.think_time,
                "rollback_on": [exceptions[name.upper()] for name in unit.rollback_on],
                "tally": list(unit.tally),
                "statements": [{"sql": s.sql, "repeat": s.repeat, "params": params(s.params)}
                               for s in unit.statements],
            }
            for unit in workload.units
        ],
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
