"""The settings of one run: flags, an optional TOML spec file, and their validation.

``fbbench run --spec run.toml`` reads the same settings as the flags (flags win). Everything here
is recorded with the run, so every number can be traced back to the conditions that produced it.
Passwords are never part of the settings.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from fbbench.errors import FbbenchError

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(h|m|s|ms)?")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, None: 1.0}


def parse_duration(text: str | float | int, what: str) -> float:
    """``90``, ``30s``, ``5m``, ``1h``, ``1m30s`` → seconds."""
    if isinstance(text, bool):
        raise FbbenchError(f"{what} must be a duration such as 30s or 5m")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        value = text.strip().lower()
        if value.startswith("-"):
            raise FbbenchError(f"{what} cannot be negative: '{text}'")
        parts = _DURATION.findall(value)
        if not parts or "".join(number + (unit or "") for number, unit in parts) != value.replace(" ", ""):
            raise FbbenchError(f"{what} must be a duration such as 30s, 5m or 1h30m, got '{text}'")
        seconds = sum(float(number) * _UNIT_SECONDS[unit or None] for number, unit in parts)
    if seconds < 0:
        raise FbbenchError(f"{what} cannot be negative: '{text}'")
    return seconds


@dataclass
class RunSettings:
    workload: str = "tpcc"
    engine: str = "5.0"
    scale: dict[str, str] = field(default_factory=dict)
    connections: int = 4
    warmup: float = 30.0
    duration: float = 300.0
    transactions: int | None = None
    interval: float = 10.0
    seed: int | None = None
    conf: dict[str, str] = field(default_factory=dict)  # --set Key=Value for firebird.conf
    page_size: int | None = None
    page_buffers: int | None = None
    forced_writes: bool | None = None
    sweep: bool = True
    fresh: bool = False
    load_connections: int = field(default_factory=lambda: os.cpu_count() or 2)
    connect_rate: float = 0.0
    target_rate: float | None = None
    keep_database: bool = False
    user: str | None = None
    tags: list[str] = field(default_factory=list)
    workdir: str | None = None
    results: str | None = None
    json: str | None = None
    report: str | None = None

    def validate(self) -> RunSettings:
        if self.connections < 1:
            raise FbbenchError(f"--connections must be at least 1, got {self.connections}")
        if self.load_connections < 1:
            raise FbbenchError(f"--load-connections must be at least 1, got {self.load_connections}")
        if self.transactions is not None and self.transactions < 1:
            raise FbbenchError(f"--transactions must be at least 1, got {self.transactions}")
        if self.transactions is None and self.duration <= 0:
            raise FbbenchError("--duration must be longer than 0 seconds")
        if self.interval <= 0:
            raise FbbenchError("--interval must be longer than 0 seconds")
        if self.seed is not None and not 0 <= self.seed < 2**63:
            raise FbbenchError("--seed must be between 0 and 2^63 - 1")
        if self.target_rate is not None and self.target_rate <= 0:
            raise FbbenchError("--rate must be positive")
        if self.connect_rate < 0:
            raise FbbenchError("--connect-rate cannot be negative")
        return self

    def recorded(self) -> dict[str, Any]:
        """What the results store keeps (no paths of output files, no secrets)."""
        return {k: v for k, v in asdict(self).items() if k not in ("json", "report")}


_SPEC_DURATIONS = {"warmup", "duration", "interval"}


def read_spec(path: Path) -> dict[str, Any]:
    """Settings from a TOML spec file; unknown keys are errors with their line."""
    try:
        text = path.read_text()
    except OSError as error:
        raise FbbenchError(f"cannot read the spec file {path}: {error.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise FbbenchError(f"{path}: invalid TOML: {error}") from None
    known = {f.name for f in fields(RunSettings)} | {"set", "rate"}
    values: dict[str, Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        if name not in known or name == "conf":
            line = next((n for n, raw in enumerate(text.splitlines(), 1) if raw.strip().startswith(key)), None)
            raise FbbenchError(f"{path}:{line}: unknown setting '{key}'",
                               hint="expected one of: " + ", ".join(sorted(known - {"conf"})))
        if name == "set":
            name = "conf"
        elif name == "rate":
            name = "target_rate"
        if name in _SPEC_DURATIONS:
            value = parse_duration(value, f"{path}: {key}")
        if name in ("scale", "conf"):
            if not isinstance(value, dict):
                raise FbbenchError(f"{path}: [{key}] must be a table of name = value")
            value = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
        values[name] = value
    return values


def parse_pairs(items: list[str], option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise FbbenchError(f"{option} '{item}' must look like Key=Value")
        pairs[key.strip()] = value.strip()
    return pairs
