"""Where a Firebird engine comes from: embedded runtimes from PyPI, a build the user registered
(an official tarball, an installation or a build's output directory) run embedded from its own
files, a local installation whose server fbbench starts itself (managed), or an external server.

The names below are imported when first asked for (PEP 562): a process that needs one module of
the package (a Classic run's attachment processes need :mod:`fbbench.engines.platform`, one per
attachment) does not pay for the whole catalogue."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fbbench.engines.catalog import EmbeddedEngine, Engine, ManagedEngine, ServerEngine, parse_engine
    from fbbench.engines.child import current_runtime, run_in_engine
    from fbbench.engines.runtime import Runtime, prepare_runtime

_HOMES = {
    "EmbeddedEngine": "catalog", "Engine": "catalog", "ManagedEngine": "catalog", "ServerEngine": "catalog",
    "parse_engine": "catalog", "current_runtime": "child", "run_in_engine": "child", "Runtime": "runtime",
    "prepare_runtime": "runtime",
}

__all__ = ["EmbeddedEngine", "Engine", "ManagedEngine", "Runtime", "ServerEngine", "current_runtime", "parse_engine",
           "prepare_runtime", "run_in_engine"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
