"""The fixture the SQL tests of the built-in workloads share: the workload's database built inside
an engine child (its ``build`` function), and calls into that child module on it or on copies."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fbbench.engines import prepare_runtime, run_in_engine
from fbbench.engines.runtime import Runtime


@dataclass
class EngineDatabase:
    runtime: Runtime
    path: Path
    build: dict[str, float]
    child: str

    def call(self, function: str, *args: Any) -> Any:
        return run_in_engine(self.runtime, f"{self.child}:{function}", *args)

    def copy(self, name: str) -> str:
        target = self.path.with_name(name)
        shutil.copyfile(self.path, target)
        return str(target)


def built(engine: str, workdir: Path, child: str, file_name: str, scale: dict[str, Any]) -> EngineDatabase:
    """The database built by ``child``'s ``build`` on two connections, in ``engine``'s runtime."""
    runtime = prepare_runtime(engine, workdir)
    path = workdir / file_name
    return EngineDatabase(runtime, path, run_in_engine(runtime, f"{child}:build", str(path), scale, 2), child)
