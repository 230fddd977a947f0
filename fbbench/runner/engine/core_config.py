"""The native core's config (docs/core-api.md) for one run, built from the workload and settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fbbench.workloads.spec import Workload


def core_config(workload: Workload, settings: Mapping[str, Any], dsn: str, client_library: str,
                credentials: tuple[str, str | None], seed: int, exceptions: Mapping[str, int],
                nurand: Mapping[int, Mapping[str, int | None]]) -> dict[str, Any]:
    def params(generators: Any) -> list[dict[str, Any]]:
        out = []
        for generator in generators:
            spec = generator.to_core()
            if generator.kind == "nurand":
                spec["args"] = [*spec["args"], nurand[int(generator.args[0])]["c_run"]]
            out.append(spec)
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
