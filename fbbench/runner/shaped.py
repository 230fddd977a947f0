"""A run under a machine shape (``--machine``), the runner's side: planned before anything runs,
verified after the engine ended. The shape itself — the kernel's objects, their watching and
removal — is :mod:`fbbench.shape`'s; this module only fits it into a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fbbench.engines import EmbeddedEngine, ManagedEngine
from fbbench.engines.firebird_conf import key_of
from fbbench.errors import FbbenchError
from fbbench.runner import cleanup
from fbbench.runner.settings import RunSettings
from fbbench.shape import Shape, Shaping, parse, plan


def engine_kind(engine: Any) -> str:
    if isinstance(engine, EmbeddedEngine):
        return "embedded"
    return "managed" if isinstance(engine, ManagedEngine) else "server"


def _temp_dir(conf: dict[str, str], workdir: Path) -> Path:
    """The engine's temp directory as the conf names it (its first TempDirectories), else the
    work directory, where the runtime root and its temp directory are made."""
    key = key_of(conf, "TempDirectories")
    first = conf[key].split(";")[0].strip() if key else ""
    return Path(first) if first else workdir


def checked(settings: RunSettings, engine: Any, workdir: Path, conf: dict[str, str]) -> Shape | None:
    """The run's shape, refused in one line before anything is built when this machine (or the
    engine) cannot take it; None without --machine."""
    if not settings.machine:
        return None
    shape = parse(settings.machine, settings.where("machine"))
    if shape.empty:
        return None
    plan(shape, "check", engine_kind(engine), cleanup.databases_dir(workdir), _temp_dir(conf, workdir),
         settings.where("machine"))
    return shape


def for_run(shape: Shape, settings: RunSettings, engine: Any, workdir: Path, conf: dict[str, str],
            run_id: str) -> Shaping:
    return plan(shape, run_id, engine_kind(engine), cleanup.databases_dir(workdir), _temp_dir(conf, workdir),
                settings.where("machine"))


def explained(shaping: Shaping, error: FbbenchError) -> FbbenchError:
    """The engine's death told as what it was when the shape's OOM killer did it."""
    why = shaping.out_of_memory()
    if why is None:
        return error
    return FbbenchError(why, hint="give the shape more memory, or fewer attachments / page buffers")


def verified(shaping: Shaping, host: dict[str, Any], outcome: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The host record with the shape as measured, and why the run fails when a limit did not
    take effect (None when each one did, or the run ended otherwise anyway)."""
    record, failures = shaping.verify()
    host = {**host, "shape": record}
    if failures and outcome.get("status") == "completed":
        return host, "the machine shape did not take effect: " + "; ".join(failures)
    return host, None
