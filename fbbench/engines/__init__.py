"""Where a Firebird engine comes from: embedded runtimes from PyPI, a build the user registered
(an official tarball, an installation or a build's output directory) run embedded from its own
files, a local installation whose server fbbench starts itself (managed), or an external server."""

from fbbench.engines.catalog import EmbeddedEngine, Engine, ManagedEngine, ServerEngine, parse_engine
from fbbench.engines.child import current_runtime, run_in_engine
from fbbench.engines.runtime import Runtime, prepare_runtime

__all__ = ["EmbeddedEngine", "Engine", "ManagedEngine", "Runtime", "ServerEngine", "current_runtime", "parse_engine",
           "prepare_runtime", "run_in_engine"]
