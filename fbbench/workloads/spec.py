"""Read and check a workload directory (``workload.toml`` + SQL), the contract in
docs/workload-format.md.

Every mistake in a workload file is reported with the file, the line and what was expected:
users write their own workloads and should never need to read fbbench's code to fix one.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fbbench.errors import FbbenchError
from fbbench.workloads.expressions import ExpressionError, evaluate_int, evaluate_number, names_in
from fbbench.workloads.figures import OUTCOMES, PER_SECONDS, SCORE, Figure
from fbbench.workloads.generators import IDENTIFIER, Generator
from fbbench.workloads.scale import BOOLEAN_WORDS, parse_scale_choice, parse_scale_value
from fbbench.workloads.sqltext import PLACEHOLDER, substitute
from fbbench.workloads.toml_reader import Reader
from fbbench.workloads.units import Unit, read_unit

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"


@dataclass(frozen=True)
class LoadStep:
    index: int
    name: str
    sql: str | None = None
    script: Path | None = None
    params: tuple[Generator, ...] = ()
    for_each: tuple[tuple[int, int], ...] = ()  # inclusive ranges; the cartesian product is iterated

    def iterations(self) -> Iterator[tuple[int, ...]]:
        """The iterations one at a time: a scale's product can be far too large to list
        (``warehouses=1e9`` made a list that took the engine process to 24 GB)."""
        return _product(tuple(range(low, high + 1) for low, high in self.for_each))

    @property
    def count(self) -> int:
        """How many iterations there are (1 without ``for_each``), without making them."""
        return math.prod(max(high - low + 1, 0) for low, high in self.for_each)

    def covers(self, item: tuple[int, ...]) -> bool:
        """Whether ``item`` is one of this step's iterations."""
        return len(item) == len(self.for_each) and all(low <= value <= high
                                                       for value, (low, high) in zip(item, self.for_each, strict=True))

    def shared_count(self, other: LoadStep) -> int:
        """How many iterations this step and ``other`` have in common."""
        if len(other.for_each) != len(self.for_each):
            return 0
        return math.prod(max(min(high, other_high) - max(low, other_low) + 1, 0)
                         for (low, high), (other_low, other_high) in zip(self.for_each, other.for_each, strict=True))


def _product(ranges: tuple[range, ...]) -> Iterator[tuple[int, ...]]:
    """itertools.product's order, but lazy: product() first makes a tuple of each of its inputs."""
    if not ranges:
        yield ()
        return
    for value in ranges[0]:
        for rest in _product(ranges[1:]):
            yield (value, *rest)


@dataclass(frozen=True)
class Metric:
    name: str
    sql: str
    per_minute: bool = False
    description: str = ""
    where: str = ""  # workload.toml:line, for errors found later (the SQL does not prepare)
    every: str = "interval"  # interval: read at every interval boundary; end: only where the window starts and ends


@dataclass(frozen=True)
class Check:
    """One query after the run that judges one or more named conditions: its first
    ``len(names)`` columns are their numbers of violations, in order; further columns are shown
    as the detail of each. Several conditions in one query read the rows they share once (TPC-C's
    3.3.2.10 and 3.3.2.12 both add up every delivered order line per customer)."""

    names: tuple[str, ...]
    sql: str
    description: str = ""
    where: str = ""

    @property
    def label(self) -> str:
        """How errors name the query: its conditions' names."""
        return " + ".join(self.names)


@dataclass(frozen=True)
class Audit:
    name: str
    value: str
    unit: str = ""
    min: float | None = None
    max: float | None = None
    description: str = ""


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    directory: Path
    scale: dict[str, int | float | str]
    scale_defaults: dict[str, int | float | str]
    scripts: tuple[Path, ...]
    load: tuple[LoadStep, ...]
    units: tuple[Unit, ...]
    metrics: tuple[Metric, ...] = ()
    checks: tuple[Check, ...] = ()
    audits: tuple[Audit, ...] = ()
    constants: dict[str, str] = field(default_factory=dict)  # name → SQL, the run's seed bound to its ?
    headlines: tuple[Figure, ...] = (SCORE,)
    figures: tuple[Figure, ...] = ()
    builtin: bool = False
    files: dict[str, str] = field(default_factory=dict)  # relative name → text, for the results store
    scale_choices: dict[str, tuple[str, ...]] = field(default_factory=dict)  # word-valued scale → its words
    page_size: int | None = None  # the page size its database is created with unless the run says otherwise
    size_scale: str | None = None  # the scale parameter the population grows with (--target-size)
    disk: bool = False  # its figures are the storage's: the lint holds its runs to a disk test's conditions

    @property
    def source(self) -> Path:
        return self.directory / "workload.toml"

    def unit(self, name: str) -> Unit:
        return next(unit for unit in self.units if unit.name == name)

    def headline(self, fixed_work: bool) -> Figure:
        """The headline figure for this kind of run (the first that applies; the score otherwise)."""
        return next((figure for figure in self.headlines if figure.applies(fixed_work)), SCORE)

    def extra_figures(self, fixed_work: bool) -> tuple[Figure, ...]:
        return tuple(figure for figure in self.figures if figure.applies(fixed_work))

    @property
    def counted(self) -> int | None:
        """Units per attachment of a workload whose units have a ``count`` (fixed work in phases);
        None for a workload that runs timed or ``--transactions``."""
        if self.units[0].count is None:
            return None
        return sum(unit.count or 0 for unit in self.units)

    def population_shape(self) -> str:
        """What populating this workload does, except how often each load step runs: its scripts
        and load steps with the scale substituted, without their ``for_each`` ranges. Two scales
        with one shape build the same rows per iteration of each step, so the size and time of
        one scale's build tell those of the other (:func:`fbbench.runner.limits.estimate_population`).

        The parameters that set the ranges (``warehouses``) stay unsubstituted in the scripts: they
        are what such an estimate scales by, and a script naming them (TPC-C's transaction
        procedures pick remote warehouses) does not change what one iteration builds."""
        ranges = self.range_parameters()
        kept = {name: f"${{{name}}}" if name in ranges else value for name, value in self.scale.items()}

        def script(path: Path) -> str:
            name = str(path.relative_to(self.directory.resolve()))
            return substitute(self.files[name], kept, name)

        return json.dumps({
            "scripts": [script(path) for path in self.scripts],
            "load": [[step.name, step.sql, [str(g) for g in step.params], script(step.script) if step.script else None,
                      len(step.for_each)] for step in self.load],
        })

    def range_parameters(self) -> set[str]:
        """The scale parameters that the load steps' ``for_each`` ranges are written with."""
        steps = tomllib.loads(self.files["workload.toml"]).get("load", [])
        found: set[str] = set()
        for step in steps if isinstance(steps, list) else []:
            ranges = step.get("for_each", []) if isinstance(step, dict) else []
            for text in [ranges] if isinstance(ranges, str) else ranges:
                found |= set(PLACEHOLDER.findall(str(text)))
        return found


def _read_scale_choices(reader: Reader, name: str, table: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """``name = { default = "small", choices = ["small", "large"] }`` → (default, choices)."""
    path = ["scale", name]
    for key in table:
        if key not in ("default", "choices"):
            close = difflib.get_close_matches(key, ["choices", "default"], n=1)
            raise reader.fail(path, f"unknown key '{key}' in scale '{name}'; expected default and choices",
                              hint=f"did you mean '{close[0]}'?" if close else None)
    choices = table.get("choices")
    if (not isinstance(choices, list) or not choices
            or not all(isinstance(choice, str) and choice.strip() for choice in choices)):
        raise reader.fail(path, f"scale '{name}': 'choices' must be a non-empty list of words")
    default = table.get("default")
    if not isinstance(default, str) or default not in choices:
        raise reader.fail(path, f"scale '{name}': 'default' must be one of its choices ({', '.join(choices)})")
    return default, tuple(choices)


def _substitute(value: Any, scale: Mapping[str, int | float | str], reader: Reader, path: list[Any]) -> Any:
    if isinstance(value, str):
        def unknown(name: str, _line: int) -> Exception:
            return reader.fail(path, f"unknown scale parameter ${{{name}}}; known: {', '.join(sorted(scale))}")

        return substitute(value, scale, str(reader.source), unknown)
    if isinstance(value, list):
        return [_substitute(item, scale, reader, [*path, index]) for index, item in enumerate(value)]
    if isinstance(value, dict):
        return {key: _substitute(item, scale, reader, [*path, key]) for key, item in value.items()}
    return value


def find_workload(name_or_path: str) -> Path:
    candidate = Path(name_or_path).expanduser()
    if (candidate / "workload.toml").is_file():
        return candidate.resolve()
    if candidate.is_dir():
        raise FbbenchError(f"{candidate} has no workload.toml", hint="see docs/workload-format.md")
    builtin = BUILTIN_DIR / name_or_path
    if "/" not in name_or_path and (builtin / "workload.toml").is_file():
        return builtin
    raise FbbenchError(
        f"unknown workload '{name_or_path}'",
        hint=f"built-in workloads: {', '.join(builtin_workloads()) or 'none'}; or give a directory containing "
             "workload.toml",
    )


def builtin_workloads() -> list[str]:
    """The names of the workloads fbbench ships (fbbench/workloads/builtin), sorted."""
    candidates = BUILTIN_DIR.iterdir() if BUILTIN_DIR.is_dir() else ()
    return sorted(p.name for p in candidates if (p / "workload.toml").is_file())


@dataclass(frozen=True)
class _Source:
    """Where a workload's files come from: its directory, or the texts a run stored with itself
    (``stored``: relative name → text; nothing is read from disk then)."""

    directory: Path
    stored: Mapping[str, str] | None = None

    def script(self, reader: Reader, path: list[Any], name: str) -> Path:
        """A script of the workload: a file inside its directory (never ../ or an absolute path)."""
        script = (self.directory / name).resolve()
        if not script.is_relative_to(self.directory.resolve()):
            raise reader.fail(path, f"script '{name}' is outside the workload directory {self.directory}",
                              hint="a workload's scripts live in its own directory")
        if not (self.relative(script) in self.stored if self.stored is not None else script.is_file()):
            raise reader.fail(path, f"script '{name}' not found in {self.directory}")
        return script

    def relative(self, script: Path) -> str:
        return str(script.relative_to(self.directory.resolve()))

    def text(self, script: Path) -> str:
        return self.stored[self.relative(script)] if self.stored is not None else script.read_text()


def load_workload(name_or_path: str, scale_overrides: Mapping[str, object] | None = None) -> Workload:
    directory = find_workload(name_or_path)
    return _parse(_Source(directory), (directory / "workload.toml").read_text(), scale_overrides)


STORED_DIRECTORY = Path("/(stored with the run)")


def stored_workload(files: Mapping[str, str], scale_overrides: Mapping[str, object] | None = None) -> Workload:
    """The workload a run ran, from the files stored with it (``workload.toml`` and its scripts):
    judged by the same reader as a workload directory, with the run's scale."""
    if "workload.toml" not in files:
        raise FbbenchError("the run stored no workload.toml")
    return _parse(_Source(STORED_DIRECTORY, files), files["workload.toml"], scale_overrides)


# Workloads parsed in this process, by what their parse read: a run reads its workload several
# times over (its settings, conditions and lint in the CLI; its phases in the engine child), each
# parse of TPC-C's 12 ms of CPU (0.4 ms when kept). A workload is frozen and nothing changes its dicts.
_parsed: dict[tuple[Any, ...], Workload] = {}
PARSED_KEPT = 64


def _parse(files: _Source, text: str, scale_overrides: Mapping[str, object] | None) -> Workload:
    """The workload ``text`` and ``files`` describe: parsed again unless this process parsed the
    same texts with the same scale before (a directory's scripts are read again to tell)."""
    scale = tuple(sorted((name, repr(value)) for name, value in (scale_overrides or {}).items()))
    key = (str(files.directory), text, scale, None if files.stored is None else tuple(sorted(files.stored.items())))
    known = _parsed.get(key)
    if known is not None and (files.stored is not None or _same_scripts(files, known)):
        return known
    workload = _parse_text(files, text, scale_overrides)
    if len(_parsed) >= PARSED_KEPT:
        _parsed.clear()
    _parsed[key] = workload
    return workload


def _same_scripts(files: _Source, workload: Workload) -> bool:
    """Whether a directory's scripts still read as they did when ``workload`` was parsed."""
    try:
        return all(files.text(files.directory / name) == kept for name, kept in workload.files.items()
                   if name != "workload.toml")
    except OSError:  # gone since: parsed again, which says so
        return False


def _parse_text(files: _Source, text: str, scale_overrides: Mapping[str, object] | None) -> Workload:
    directory = files.directory
    source = directory / "workload.toml"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        match = re.search(r"line (\d+)", str(error))
        where = f"{source}:{match.group(1)}" if match else str(source)
        raise FbbenchError(f"{where}: invalid TOML: {error}") from None
    reader = Reader(source, text)
    reader.check_keys(data, "", [])

    scale_table = data.get("scale", {})
    if not isinstance(scale_table, dict):
        raise reader.fail(["scale"], "[scale] must be a table of name = value")
    defaults: dict[str, int | float | str] = {}
    choices: dict[str, tuple[str, ...]] = {}
    for name, value in scale_table.items():
        if isinstance(value, dict):
            defaults[name], choices[name] = _read_scale_choices(reader, name, value)
        else:
            defaults[name] = parse_scale_value(name, value)
    scale = dict(defaults)
    for name, value in (scale_overrides or {}).items():
        if name not in defaults:
            raise FbbenchError(f"unknown scale parameter '{name}' for workload {data.get('name', directory.name)}",
                               hint=f"known: {', '.join(sorted(defaults)) or 'none'}")
        if name in choices:
            scale[name] = parse_scale_choice(name, value, choices[name])
            continue
        number = scale[name] = parse_scale_value(name, value)
        if number < 0:
            raise FbbenchError(f"scale '{name}' cannot be negative")
        switch = isinstance(scale_table[name], bool) or str(scale_table[name]).strip().lower() in BOOLEAN_WORDS
        default = defaults[name]
        if number == 0 and isinstance(default, int | float) and default > 0 and not switch:
            # A size (warehouses, rows) of zero leaves nothing to run on; a switch that is on by default can be off.
            raise FbbenchError(f"scale '{name}' must be more than 0 (the workload's default is {defaults[name]:g})")

    resolved: dict[str, Any] = {key: _substitute(value, scale, reader, [key]) for key, value in data.items()
                                if key != "scale"}
    name = reader.text(resolved, "name", [])
    scripts = []
    raw_scripts = resolved.get("scripts", [])
    if not isinstance(raw_scripts, list) or not all(isinstance(item, str) for item in raw_scripts):
        raise reader.fail(["scripts"], "'scripts' must be a list of file names")
    for script in raw_scripts:
        scripts.append(files.script(reader, ["scripts"], script))

    constants = _read_constants(reader, resolved.get("constants", {}))
    units = tuple(read_unit(reader, table, index, set(constants))
                  for index, table in enumerate(reader.array(resolved, "units"))
                  if reader.kept(table, ["units", index], scale, choices))
    if not units:
        raise reader.fail([], "a workload needs at least one [[units]] table (at this scale: 'only' left none)"
                          if reader.array(resolved, "units") else "a workload needs at least one [[units]] table")
    seen: set[str] = set()
    for index, unit in enumerate(units):
        if unit.name in seen:
            raise reader.fail(["units", index, "name"], f"unit name '{unit.name}' is used twice")
        seen.add(unit.name)

    load_tables = reader.array(resolved, "load")
    load = tuple(_read_load(reader, table, index, files) for index, table in enumerate(load_tables))
    metrics = []
    for index, table in enumerate(reader.array(resolved, "metrics")):
        path = ["metrics", index]
        if not reader.kept(table, path, scale, choices):
            continue
        reader.check_keys(table, "metrics", path)
        every = table.get("every", "interval")
        if every not in ("interval", "end"):
            raise reader.fail([*path, "every"], f"'every' must be \"interval\" or \"end\"; got {every!r}")
        metrics.append(Metric(reader.text(table, "name", path), reader.text(table, "sql", path),
                              reader.flag(table, "per_minute", path), table.get("description", ""),
                              reader.where(path), every))
    checks: list[Check] = []
    for index, table in enumerate(reader.array(resolved, "checks")):
        path = ["checks", index]
        if not reader.kept(table, path, scale, choices):
            continue
        reader.check_keys(table, "checks", path)
        conditions = _condition_names(reader, table, path)
        for condition in conditions:
            if any(condition in check.names for check in checks):
                raise reader.fail([*path, "names" if "names" in table else "name"],
                                  f"check name '{condition}' is used twice")
        checks.append(Check(conditions, reader.text(table, "sql", path), table.get("description", ""),
                            reader.where(path)))
    known = _known_names(units, metrics)
    audits = []
    for index, table in enumerate(reader.array(resolved, "audits")):
        path = ["audits", index]
        if not reader.kept(table, path, scale, choices):
            continue
        reader.check_keys(table, "audits", path)
        _check_names(reader, [*path, "value"], reader.text(table, "value", path), known,
                     f"audit '{table.get('name', index + 1)}'")
        audits.append(Audit(reader.text(table, "name", path), reader.text(table, "value", path),
                            table.get("unit", ""), reader.number(table, "min", path, None),
                            reader.number(table, "max", path, None), table.get("description", "")))
    headlines = _read_figures(reader, resolved, "headline", known, scale, choices) or (SCORE,)
    figures = _read_figures(reader, resolved, "figures", known, scale, choices)
    page_size = reader.number(resolved, "page_size", ["page_size"], None, whole=True)
    if page_size is not None and page_size not in (4096, 8192, 16384, 32768):
        raise reader.fail(["page_size"], f"page_size must be 4096, 8192, 16384 or 32768, got {page_size}")
    size_scale = resolved.get("size_scale")
    if size_scale is not None and (not isinstance(size_scale, str) or size_scale not in defaults
                                   or size_scale in choices):
        raise reader.fail(["size_scale"], f"size_scale must name a numeric scale parameter "
                                          f"({', '.join(sorted(n for n in defaults if n not in choices)) or 'none'})")
    counted = [unit.count is not None for unit in units]
    if any(counted) and not all(counted):
        missing = next(unit.name for unit in units if unit.count is None)
        raise reader.fail(["units", counted.index(False)], f"unit '{missing}' has no count, but other units do: "
                                                            "the units of a fixed-work workload all have one")

    texts = {"workload.toml": text}
    for script_path in [*scripts, *(step.script for step in load if step.script)]:
        texts[files.relative(script_path)] = files.text(script_path)
    return Workload(
        name=name, description=resolved.get("description", ""), directory=directory, scale=scale,
        scale_defaults=defaults, scripts=tuple(scripts), load=load, units=units, metrics=tuple(metrics),
        checks=tuple(checks), audits=tuple(audits), constants=constants, headlines=headlines, figures=figures,
        builtin=directory.is_relative_to(BUILTIN_DIR), files=texts, scale_choices=choices,
        page_size=None if page_size is None else int(page_size), size_scale=size_scale,
        disk=reader.flag(resolved, "disk", ["disk"]),
    )


def _read_constants(reader: Reader, table: Any) -> dict[str, str]:
    """``[constants]``: NAME = "SQL returning one value; the run's seed is bound to its ? if it has one"."""
    if not isinstance(table, dict):
        raise reader.fail(["constants"], "[constants] must be a table of NAME = \"SQL\"")
    constants = {}
    for name, sql in table.items():
        if not IDENTIFIER.match(name):
            raise reader.fail(["constants", name], f"constant name '{name}' must be a plain identifier")
        if not isinstance(sql, str) or not sql.strip():
            raise reader.fail(["constants", name], f"constant '{name}' must be the SQL that reads it, as a string")
        if sql.count("?") > 1:
            raise reader.fail(["constants", name], f"constant '{name}': at most one ? (the run's seed)")
        constants[name] = sql
    return constants


def _read_figures(reader: Reader, data: Mapping[str, Any], key: str, known: set[str],
                  scale: Mapping[str, Any], choices: Mapping[str, tuple[str, ...]]) -> tuple[Figure, ...]:
    """``[headline]`` (a table, or an array of tables with ``when``) and ``[[figures]]``."""
    raw = data.get(key)
    if raw is None:
        return ()
    tables = [raw] if isinstance(raw, dict) else raw
    if not isinstance(tables, list) or not all(isinstance(item, dict) for item in tables):
        raise reader.fail([key], f"[{key}] must be a table (or [[{key}]] tables) with name, value, per and better")
    found = []
    for index, table in enumerate(tables):
        path: list[Any] = [key, index] if isinstance(raw, list) else [key]
        reader.check_keys(table, key, path)
        if not reader.kept(table, path, scale, choices):
            continue
        name = reader.text(table, "name", path)
        expression = reader.text(table, "value", path)
        per = table.get("per", "minute")
        if per not in PER_SECONDS:
            raise reader.fail([*path, "per"], f"'per' must be one of: {', '.join(PER_SECONDS)}; got {per!r}")
        better = table.get("better", "higher")
        if better not in ("higher", "lower"):
            raise reader.fail([*path, "better"], f"'better' must be \"higher\" or \"lower\"; got {better!r}")
        when = table.get("when", "always")
        if when not in ("always", "timed", "fixed_work"):
            raise reader.fail([*path, "when"], f"'when' must be \"always\", \"timed\" or \"fixed_work\"; got {when!r}")
        unit = table.get("unit", {"minute": "/min", "second": "/s", "run": ""}[per])
        if not isinstance(unit, str):
            raise reader.fail([*path, "unit"], "'unit' must be a string")
        _check_names(reader, [*path, "value"], expression, known, f"[{key}] '{name}'")
        found.append(Figure(name, expression, per, better, unit, str(table.get("description", "")), when))
    return tuple(found)


def _check_names(reader: Reader, path: list[Any], expression: str, known: set[str], what: str) -> None:
    """Every name in an audit or headline must be one the run will have (spelled as the core reports it)."""
    used = names_in(expression)
    if not used:  # a constant, or not an expression at all: evaluating it says which
        try:
            evaluate_number(expression)
        except ExpressionError as error:
            raise reader.fail(path, f"{what}: {error}") from None
    for name in sorted(used):
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            raise reader.fail(path, f"{what} uses unknown name '{name}'",
                              hint=f"did you mean '{close[0]}'?" if close else
                              "names are <unit>.ok / .rolled_back / .conflicts / .errors / .total, "
                              "<unit>.tally.<COLUMN>, <unit>.seconds, metrics.<name>, ok, total, seconds")


def _condition_names(reader: Reader, table: Mapping[str, Any], path: list[Any]) -> tuple[str, ...]:
    """A check's conditions: ``name`` (one) or ``names`` (one query judging several)."""
    if ("name" in table) == ("names" in table):
        raise reader.fail(path, "a check needs either 'name' or 'names' (a list: one query, several conditions)")
    if "name" in table:
        return (reader.text(table, "name", path),)
    names = reader.names(table, "names", path)
    if not names or not all(name.strip() for name in names):
        raise reader.fail([*path, "names"], "'names' must list at least one non-empty name")
    if len(set(names)) != len(names):
        raise reader.fail([*path, "names"], "'names' lists a name twice")
    return names


def _known_names(units: Sequence[Unit], metrics: Sequence[Metric]) -> set[str]:
    known = {*OUTCOMES, "total", "seconds"}
    for unit in units:
        known |= {f"{unit.name}.{key}" for key in (*OUTCOMES, "total", "seconds")}
        # The core reports tally columns in upper case, as Firebird names unquoted columns.
        known |= {f"{unit.name}.tally.{column.strip().upper()}" for column in unit.tally}
    known |= {f"metrics.{metric.name}" for metric in metrics}
    return known


def _read_load(reader: Reader, table: dict[str, Any], index: int, files: _Source) -> LoadStep:
    path: list[Any] = ["load", index]
    reader.check_keys(table, "load", path)
    if ("sql" in table) == ("script" in table):
        raise reader.fail(path, "a [[load]] step needs exactly one of 'sql' or 'script'")
    script = None
    if "script" in table:
        script = files.script(reader, [*path, "script"], reader.text(table, "script", path))
    ranges: list[tuple[int, int]] = []
    raw = table.get("for_each", [])
    for item in [raw] if isinstance(raw, str) else raw:
        match = re.fullmatch(r"\s*(.+?)\s*\.\.\s*(.+?)\s*", str(item))
        try:
            if not match:
                raise ExpressionError(f"'{item}' is not a range like 1..10")
            low, high = evaluate_int(match.group(1)), evaluate_int(match.group(2))
        except ExpressionError as error:
            raise reader.fail([*path, "for_each"], f"for_each: {error}") from None
        ranges.append((low, high))
    name = table.get("name") or (f"script {script.name}" if script else str(table["sql"]).split("(")[0].strip())
    return LoadStep(index, name, table.get("sql"), script, reader.generators(table, path) if "sql" in table else (),
                    tuple(ranges))
