"""A sweep's spec file: the run settings every cell shares, and a ``[matrix]`` of axes.

```toml
workload = "tpcc"
engine = "5.0"
warmup = "10s"
duration = "60s"
repeats = 3                     # runs per cell, interleaved across cells
mode = "matrix"                 # matrix (every combination) | one_at_a_time (from a baseline)
[scale]
warehouses = 1
[matrix]
connections = [4, 16, 32]
architecture = ["super", "superclassic", "classic"]
"conf.DefaultDbCachePages" = [2048, 8192]
"scale.warehouses" = { values = [1, 2, 4], grow = true }   # a size series: one database grows
```

Every setting of ``fbbench run --spec`` is allowed at the top level; an axis is any run setting
that describes the experiment (engine, architecture, page size, page buffers, forced writes,
connections, …), a firebird.conf key (``conf.KEY``) or a scale value (``scale.NAME``). Errors
name the file, the line and what is expected; every cell's settings are checked before the
first run starts.
"""

from __future__ import annotations

import difflib
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fbbench.errors import FbbenchError
from fbbench.runner.settings import (
    RunSettings,
    check_value,
    line_of,
    parse_settings,
    read_toml,
    setting_name,
    single_line,
    spec_keys,
)

MODES = ("matrix", "one_at_a_time")
# Above this, planning alone takes minutes (each cell's settings are checked), and the runs weeks.
MAX_SWEEP_RUNS = 100_000
DEFAULT_REPEATS = 3  # runs per cell when the spec does not say
# Settings that are not conditions of an experiment: outputs, where things live, who connects.
NOT_AXES = {"workload", "workdir", "results", "json", "report", "overwrite", "repeat", "tags", "user", "keep_database",
            "fresh", "grow", "fail_on_checks", "fail_on_audits", "allow_many_connections", "yes", "validation",
            "replication_conf"}
SWEEP_KEYS = {"matrix", "repeats", "mode"}


@dataclass(frozen=True)
class Axis:
    key: str  # as written: "connections", "conf.DefaultDbCachePages", "scale.warehouses"
    setting: str  # the RunSettings field it sets
    sub: str | None  # the firebird.conf key or scale name
    values: tuple[Any, ...]
    where: str  # file:line
    grow: bool = False  # a size series: the database grows from one value to the next

    @property
    def numeric(self) -> bool:
        return all(_number(value) is not None for value in self.values)

    def apply(self, values: dict[str, Any], value: Any) -> None:
        if self.sub is None:
            values[self.setting] = value
        else:
            values[self.setting] = {**values.get(self.setting, {}), self.sub: value}


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


@dataclass(frozen=True)
class Cell:
    index: int  # 1-based, in the order of the plan
    values: tuple[tuple[str, Any], ...]  # (axis key, value)

    @property
    def label(self) -> str:
        return ", ".join(f"{key}={value}" for key, value in self.values) or "baseline"

    def value(self, key: str) -> Any:
        return dict(self.values).get(key)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "values": dict(self.values)}


@dataclass
class SweepSpec:
    path: Path
    text: str
    base: dict[str, Any]
    origins: dict[str, str]
    axes: list[Axis]
    repeats: int = DEFAULT_REPEATS
    mode: str = "matrix"
    cells: list[Cell] = field(default_factory=list)

    @property
    def grow_axis(self) -> Axis | None:
        return next((axis for axis in self.axes if axis.grow), None)

    def baseline_value(self, axis: Axis) -> Any:
        """The value an axis keeps while another one varies (one-at-a-time): the base setting's,
        else the axis's first value."""
        current = self.base.get(axis.setting)
        if axis.sub is not None:
            current = (current or {}).get(axis.sub)
        return current if current is not None and current in axis.values else axis.values[0]

    def settings_for(self, cell: Cell) -> RunSettings:
        values: dict[str, Any] = {key: (dict(value) if isinstance(value, dict) else value)
                                  for key, value in self.base.items()}
        for axis in self.axes:
            key_value = dict(cell.values).get(axis.key)
            if key_value is not None:
                axis.apply(values, key_value)
        values["repeat"] = 1
        grow = self.grow_axis
        if grow is not None:  # a size series: each size extends the cached smaller one
            values["grow"] = grow.sub
        return RunSettings(**values, origins=dict(self.origins)).validate()

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "base": self.base, "repeats": self.repeats, "mode": self.mode,
                "axes": [{"key": a.key, "values": list(a.values), "grow": a.grow} for a in self.axes],
                "baseline": {axis.key: self.baseline_value(axis) for axis in self.axes},
                "cells": [cell.to_dict() for cell in self.cells]}


def _axis(key: str, raw: Any, text: str, path: Path) -> Axis:
    line = line_of(text, f'"{key}"', table="matrix") or line_of(text, key, table="matrix")
    where = f"{path}:{line}" if line else str(path)
    grow = False
    if isinstance(raw, dict):
        unknown = set(raw) - {"values", "grow"}
        if unknown:
            raise FbbenchError(f"{where}: axis '{key}' has unknown key(s) {', '.join(sorted(unknown))}",
                               hint="an axis is a list of values, or { values = [...], grow = true }")
        grow = raw.get("grow", False)
        if not isinstance(grow, bool):
            raise FbbenchError(f"{where}: axis '{key}': grow must be true or false")
        raw = raw.get("values")
    if not isinstance(raw, list):
        raise FbbenchError(f"{where}: axis '{key}' must be a list of values, got {type(raw).__name__}")
    if not raw:
        raise FbbenchError(f"{where}: axis '{key}' is empty", hint="give it at least one value")
    if len({repr(value) for value in raw}) != len(raw):
        raise FbbenchError(f"{where}: axis '{key}' lists a value twice")
    head, _, sub = key.partition(".")
    setting = setting_name(head) if head != "conf" else "conf"
    if head in ("conf", "set", "scale"):
        setting = "conf" if head in ("conf", "set") else "scale"
        if not sub:
            raise FbbenchError(f"{where}: axis '{key}' must name a key, e.g. conf.DefaultDbCachePages or "
                               "scale.warehouses")
        values = tuple(single_line(str(value).lower() if isinstance(value, bool) else str(value),
                                   f"{where}: axis '{key}'") for value in raw)
    elif setting is None or sub or setting in NOT_AXES:
        candidates = axis_keys()
        close = difflib.get_close_matches(key, candidates, n=1)
        said = (f"'{key}' is set once for the whole sweep, at the top of the spec; " if setting in NOT_AXES
                else f"did you mean '{close[0]}'? " if close else "")
        raise FbbenchError(f"{where}: '{key}' is not a sweep axis",
                           hint=said + "axes are run settings (" + ", ".join(candidates) + "), conf.KEY or scale.NAME")
    else:
        values = tuple(check_value(setting, value, f"{where}: axis '{key}'") for value in raw)
    if grow and setting != "scale":
        raise FbbenchError(f"{where}: only a scale axis can grow (a size series), not '{key}'")
    if grow and not all(_number(v) is not None for v in values):
        raise FbbenchError(f"{where}: a growing axis needs numbers, in increasing order")
    if grow and [_number(v) for v in values] != sorted(_number(v) for v in values):  # type: ignore[type-var]
        raise FbbenchError(f"{where}: a growing axis needs its sizes in increasing order")
    return Axis(key, setting, sub or None, values, where, grow)


def axis_keys() -> list[str]:
    """The run settings a ``[matrix]`` can vary, by the keys a spec sets them with; conf and scale
    take a key of their own (``conf.KEY``, ``scale.NAME``)."""
    return [key for key in spec_keys() if setting_name(key) not in NOT_AXES | {"conf", "scale"}]


def read_sweep(path: Path, text: str | None = None) -> SweepSpec:
    """The spec at ``path`` (or, for --resume, the text the sweep stored when it began)."""
    if text is None:
        data, text = read_toml(path, "sweep spec")
    else:
        import tomllib

        data = tomllib.loads(text)
    base, origins = parse_settings(data, text, path, extra=SWEEP_KEYS)

    def where(key: str) -> str:
        line = line_of(text, key)
        return f"{path}:{line}" if line else str(path)

    if "workload" not in base:
        raise FbbenchError(f"{path}: which workload? add e.g. workload = \"tpcc\"")
    if "repeat" in base:
        raise FbbenchError(f"{origins['repeat']}: a sweep says how often each cell runs with 'repeats'")
    repeats = data.get("repeats", DEFAULT_REPEATS)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise FbbenchError(f"{where('repeats')}: repeats must be a whole number of at least 1, got {repeats!r}")
    mode = data.get("mode", "matrix")
    if mode not in MODES:
        raise FbbenchError(f"{where('mode')}: mode must be \"matrix\" or \"one_at_a_time\", got {mode!r}")
    matrix = data.get("matrix")
    if not isinstance(matrix, dict) or not matrix:
        raise FbbenchError(f"{where('matrix')}: a sweep needs a [matrix] with at least one axis",
                           hint='e.g. [matrix]\\nconnections = [4, 16, 32]')
    axes = [_axis(key, raw, text, path) for key, raw in matrix.items()]
    if sum(axis.grow for axis in axes) > 1:
        raise FbbenchError(f"{where('matrix')}: only one axis can grow")
    cells = (1 + sum(len(axis.values) - 1 for axis in axes) if mode == "one_at_a_time"
             else math.prod(len(axis.values) for axis in axes))
    if cells * repeats > MAX_SWEEP_RUNS:
        # Counted before a cell is made: a matrix of five 100-value axes would be 10^10 cells in memory.
        raise FbbenchError(f"{where('matrix')}: the sweep has {cells:,} cell(s) × {repeats:,} repeat(s) = "
                           f"{cells * repeats:,} runs; a sweep makes at most {MAX_SWEEP_RUNS:,}",
                           hint="fewer values per axis, or several sweeps into one results store")
    spec = SweepSpec(path, text, base, origins, axes, repeats, mode)
    spec.cells = plan_cells(spec)
    check_cells(spec)
    return spec


def check_cells(spec: SweepSpec) -> None:
    """Every cell's settings, workload scale and firebird.conf checked now, not when its turn comes."""
    from fbbench.engines.catalog import parse_engine
    from fbbench.engines.runtime import check_conf, check_replication
    from fbbench.workloads.spec import load_workload

    # Each check once per distinct input: a 100 × 100 matrix of connections and a firebird.conf key
    # loads its workload once and checks its firebird.conf settings 100 times, not 10,000 times each.
    workloads: set[tuple[str, ...]] = set()
    confs: set[tuple[str, ...]] = set()
    replications: set[tuple[str, ...]] = set()
    for cell in spec.cells:
        try:
            settings = spec.settings_for(cell)
            workload = (settings.workload, repr(sorted(settings.scale.items())))
            if workload not in workloads:
                workloads.add(workload)
                load_workload(settings.workload, settings.scale)
            conf = (settings.engine, repr(sorted(settings.conf.items())))
            if conf not in confs:
                confs.add(conf)
                check_conf(parse_engine(settings.engine), settings.conf)
            replication = (settings.engine, repr(settings.replication), repr(settings.replication_conf))
            if replication not in replications:
                replications.add(replication)
                check_replication(parse_engine(settings.engine), settings.replication, settings.replication_conf,
                                  settings.where("replication_conf"), settings.where("replication"))
        except FbbenchError as error:
            raise FbbenchError(f"cell {cell.label}: {error.message}", hint=error.hint) from None


def plan_cells(spec: SweepSpec) -> list[Cell]:
    """The cells, in the order that reuses populated databases (cells sharing the population's
    key — workload scale, page size, engine — next to each other; a growing axis in increasing
    order)."""
    if spec.mode == "one_at_a_time":
        baseline = tuple((axis.key, spec.baseline_value(axis)) for axis in spec.axes)
        combos = [baseline]
        for position, axis in enumerate(spec.axes):
            for value in axis.values:
                if value != baseline[position][1]:
                    combos.append(tuple((key, value if key == axis.key else base) for key, base in baseline))
    else:
        combos = [tuple(zip([a.key for a in spec.axes], values, strict=True))
                  for values in itertools.product(*(axis.values for axis in spec.axes))]
    population_keys = [axis.key for axis in spec.axes
                       if axis.setting in ("engine", "page_size") or axis.key.startswith("scale.")]

    def order(combo: tuple[tuple[str, Any], ...]) -> tuple[tuple[int, float, str], ...]:
        values = dict(combo)
        keys = []
        for key in population_keys:
            number = _number(values[key])
            keys.append((0, number, "") if number is not None else (1, 0.0, str(values[key])))
        return tuple(keys)

    if population_keys:
        combos = sorted(combos, key=order)  # stable: the matrix order within a population
    return [Cell(index, combo) for index, combo in enumerate(combos, start=1)]
