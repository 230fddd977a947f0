"""A track suite file: the benchmarks a series follows, the figures tracked for each, and how
their changes are judged.

```toml
# track.toml
name = "nightly"            # the suite's name in the results store (default: the file's stem)
threshold = "5%"            # track check: a regression beyond this, its interval beyond it too, fails
repeats = 3                 # an absolute point: runs of the build (median with its interval)
pairs = 6                   # a relative point (track run --reference): time-shared pairs against it
axis = "engine"             # what changes along a series: engine (builds) or workload (your commits)
p_value = 0.001             # a change is reported at this p-value or below …
min_magnitude = "0%"        # … and at least this large (time and throughput figures)
counter_min_magnitude = "2%"  # the engine's work per unit: it repeats almost exactly, but not quite
long_series = 10            # from this many points on, change points (Otava) instead of point against point
window = 50                 # Otava's window

[[benchmark]]
name = "orders"
spec = "orders.toml"        # a run spec file, as fbbench run --spec reads it (relative to this file)
transactions = 100          # any run setting, as in a spec file (it wins over the spec's)
connections = 1
seed = 1
figures = ["headline", "generate_orders p95"]   # the engine's work per unit is always tracked beside them
```

The engine is never a benchmark's setting: it is the build ``track run --engine`` measures (and
``--reference``, the build each relative point is paired with). Workload directories, spec files
and backups named here are found relative to the suite file. Every benchmark's settings are
checked as ``fbbench run`` checks them, and every figure against what its workload produces, before
anything runs; errors name the file and line.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fbbench.analysis.changepoints import Method
from fbbench.errors import FbbenchError
from fbbench.runner.settings import MAX_RUNS, RunSettings, parse_settings, read_spec, read_toml

AXES = ("engine", "workload")
SUITE_KEYS = ("name", "threshold", "repeats", "pairs", "axis", "p_value", "min_magnitude", "counter_min_magnitude",
              "long_series", "window", "turn", "benchmark")
BENCHMARK_KEYS = ("name", "spec", "figures", "repeats", "pairs")
# Run settings a benchmark cannot have: the point decides them (its engine, its repeats), or they
# name one run's outputs where a point is many runs.
NOT_BENCHMARK_SETTINGS = {
    "engine": "the engine is the build a point measures: fbbench track run SUITE --engine NAME",
    "repeat": "a point's runs are the suite's repeats (or pairs with --reference)",
    "json": "a point is several runs: fbbench track show --json writes the series",
    "report": "a point is several runs: each run's report is in the results store (fbbench results show)",
    "results": "the series live in the results store track run is given (--results)",
    "workdir": "track run's --workdir is used for every benchmark",
    "trace": "a point is several runs: trace one run with fbbench run --trace",
}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,62}$")
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
DEFAULT_REPEATS = 3
DEFAULT_PAIRS = 6
DEFAULT_THRESHOLD = 0.05
DEFAULT_COUNTER_MAGNITUDE = 0.02


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of a suite: its run settings (spec file, then the table's own), the figures
    tracked, and how many runs or pairs make a point."""

    name: str
    values: dict[str, Any]  # run settings as a spec file gives them, checked, without the engine
    origins: dict[str, str]
    figures: tuple[str, ...]
    repeats: int
    pairs: int
    where: str  # file:line of its [[benchmark]] table
    figures_where: str = ""  # file:line of its figures key, where it has one

    def settings(self, engine: str, **overrides: Any) -> RunSettings:
        """The run settings of one run of this benchmark on ``engine``."""
        values = {**self.values, "engine": engine, **overrides}
        origins = {**self.origins, "engine": "--engine"}
        try:
            return RunSettings(**values, origins=origins).validate()
        except FbbenchError as error:
            message = error.message if self.where.split(":")[0] in error.message else f"{self.where}: {error.message}"
            raise FbbenchError(f"benchmark {self.name}: {message}", hint=error.hint) from None


@dataclass(frozen=True)
class Suite:
    path: Path
    name: str
    benchmarks: tuple[Benchmark, ...]
    threshold: float = DEFAULT_THRESHOLD
    axis: str = "engine"
    method: Method = field(default_factory=Method)  # time and throughput figures
    counter_method: Method = field(default_factory=lambda: Method(min_magnitude=DEFAULT_COUNTER_MAGNITUDE))
    turn: float | None = None  # relative points: the time-sharing turn (default: compare --paired's)

    def benchmark(self, name: str) -> Benchmark:
        for benchmark in self.benchmarks:
            if benchmark.name == name:
                return benchmark
        raise FbbenchError(f"suite {self.name} has no benchmark '{name}'",
                           hint="its benchmarks: " + ", ".join(b.name for b in self.benchmarks))

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "threshold": self.threshold, "axis": self.axis,
                "method": self.method.to_dict(), "counter_method": self.counter_method.to_dict(),
                "benchmarks": [{"name": b.name, "figures": list(b.figures), "repeats": b.repeats, "pairs": b.pairs}
                               for b in self.benchmarks]}


def _benchmark_lines(text: str) -> list[tuple[int, int]]:
    """(first, last) line of each ``[[benchmark]]`` table, in order."""
    lines = text.splitlines()
    starts = [n for n, raw in enumerate(lines, 1) if re.match(r"^\s*\[\[\s*benchmark\s*\]\]", raw)]
    ends = []
    for start in starts:
        following = next((n for n, raw in enumerate(lines[start:], start + 1) if re.match(r"^\s*\[", raw)),
                         len(lines) + 1)
        ends.append(following - 1)
    return list(zip(starts, ends, strict=True))


def _line_in(text: str, span: tuple[int, int] | None, key: str) -> int | None:
    lines = text.splitlines()
    first, last = span or (1, len(lines))
    pattern = re.compile(rf'^\s*"?{re.escape(key)}"?\s*=')
    if span is None:  # a top-level key: before the first table
        last = next((n - 1 for n, raw in enumerate(lines, 1) if re.match(r"^\s*\[", raw)), len(lines))
    return next((n for n in range(first, last + 1) if pattern.match(lines[n - 1])), None)


def percent(value: Any, what: str) -> float:
    """``"5%"`` → 0.05."""
    match = _PERCENT.match(value) if isinstance(value, str) else None
    if match is None:
        raise FbbenchError(f'{what} must be a percentage such as "5%", got {value!r}')
    return float(match.group(1)) / 100


def _whole(value: Any, what: str, minimum: int, maximum: int = MAX_RUNS) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        shown = str(value).lower() if isinstance(value, bool) else repr(value)  # as TOML writes it
        raise FbbenchError(f"{what} must be a whole number, got {shown}")
    if value < minimum:
        raise FbbenchError(f"{what} must be at least {minimum}, got {value}")
    if value > maximum:
        raise FbbenchError(f"{what} must be at most {maximum:,}, got {value:,}")
    return value


def _local(value: str, base: Path) -> str:
    """A path named in the suite, found relative to the suite file (a built-in workload's name stays)."""
    candidate = Path(value).expanduser()
    if candidate.is_absolute():
        return str(candidate)
    beside = base / candidate
    return str(beside.resolve()) if beside.exists() or "/" in value else value


def read_suite(path: Path) -> Suite:
    """The suite in ``path``, every value checked (errors name the file and line)."""
    if not path.exists():
        raise FbbenchError(f"no suite file {path}", hint="a track suite is a TOML file: see docs/tracking.md")
    if path.is_dir():
        raise FbbenchError(f"{path} is a directory, not a suite file", hint="name the track.toml in it")
    data, text = read_toml(path, "suite file")
    base = path.resolve().parent

    def where(key: str, span: tuple[int, int] | None = None) -> str:
        line = _line_in(text, span, key)
        return f"{path}:{line}: {key}" if line else f"{path}: {key}"

    for key in data:
        if key not in SUITE_KEYS:
            close = difflib.get_close_matches(key, SUITE_KEYS, n=1)
            raise FbbenchError(f"{where(key)}: unknown suite setting '{key}'",
                               hint=(f"did you mean '{close[0]}'? " if close else "") + "a suite has: "
                               + ", ".join(SUITE_KEYS) + " (run settings go into a [[benchmark]] table)")
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not _NAME.match(name):
        raise FbbenchError(f"{where('name')} must be a name of letters, digits, '.', '_' or '-', got {name!r}")
    axis = data.get("axis", "engine")
    if axis not in AXES:
        raise FbbenchError(f"{where('axis')} must be engine or workload, got {axis!r}",
                           hint="engine: a series over builds; workload: over an application's commits on one build")
    p_value = data.get("p_value", Method.p_value)
    if isinstance(p_value, bool) or not isinstance(p_value, int | float) or not 0 < p_value < 1:
        raise FbbenchError(f"{where('p_value')} must be a number between 0 and 1, got {p_value!r}")
    window = _whole(data.get("window", Method.window), where("window"), 4)
    long_series = _whole(data.get("long_series", Method.long_series), where("long_series"), 3)
    magnitude = percent(data.get("min_magnitude", "0%"), where("min_magnitude"))
    counter_magnitude = percent(data.get("counter_min_magnitude", f"{DEFAULT_COUNTER_MAGNITUDE * 100:g}%"),
                                where("counter_min_magnitude"))
    threshold = percent(data.get("threshold", f"{DEFAULT_THRESHOLD * 100:g}%"), where("threshold"))
    if not 0 < threshold < 1:
        raise FbbenchError(f"{where('threshold')} must lie between 0% and 100%, got {threshold * 100:g}%")
    repeats = _whole(data.get("repeats", DEFAULT_REPEATS), where("repeats"), 1)
    pairs = _whole(data.get("pairs", DEFAULT_PAIRS), where("pairs"), 1)
    turn = data.get("turn")
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int | float) or turn <= 0):
        raise FbbenchError(f"{where('turn')} must be a number of seconds above 0, got {turn!r}")
    tables = data.get("benchmark")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise FbbenchError(f"{path}: a suite needs at least one [[benchmark]] table",
                           hint='e.g. [[benchmark]] name = "orders" workload = "orders" transactions = 100')
    spans = _benchmark_lines(text)
    benchmarks: list[Benchmark] = []
    for index, table in enumerate(tables):
        span = spans[index] if index < len(spans) else None
        benchmarks.append(_benchmark(path, text, base, table, span, repeats, pairs,
                                     lambda key, span=span: where(key, span)))
    names = [b.name for b in benchmarks]
    for name_ in names:
        if names.count(name_) > 1:
            raise FbbenchError(f"{path}: two benchmarks are named '{name_}'", hint="give each its own name")
    time_method = Method(float(p_value), magnitude, window, long_series)
    counter_method = Method(float(p_value), counter_magnitude, window, long_series)
    return Suite(path.resolve(), name, tuple(benchmarks), threshold, axis, time_method, counter_method,
                 None if turn is None else float(turn))


def _benchmark(path: Path, text: str, base: Path, table: dict[str, Any], span: tuple[int, int] | None,
               repeats: int, pairs: int, where: Any) -> Benchmark:
    at = f"{path}:{span[0]}" if span else str(path)
    name = table.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise FbbenchError(f"{at}: a benchmark needs a name of letters, digits, '.', '_' or '-', got {name!r}")
    for key, reason in NOT_BENCHMARK_SETTINGS.items():
        if key in table:
            raise FbbenchError(f"{where(key)}: benchmark {name} cannot set {key}", hint=reason)
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    spec = table.get("spec")
    if spec is not None:
        if not isinstance(spec, str) or not spec.strip():
            raise FbbenchError(f"{where('spec')} must be the path of a run spec file, got {spec!r}")
        spec_path = Path(_local(spec, base))
        if not spec_path.is_file():
            raise FbbenchError(f"{where('spec')}: no run spec file {spec_path}",
                               hint="a run spec is a TOML file of run settings, as fbbench run --spec reads")
        values, origins = read_spec(spec_path)
        for key, reason in NOT_BENCHMARK_SETTINGS.items():
            if key in values:
                raise FbbenchError(f"{origins[key]}: benchmark {name} cannot set {key}", hint=reason)
        base_of_spec = spec_path.resolve().parent
        for key in ("workload", "database_from"):
            if isinstance(values.get(key), str):
                values[key] = _local(values[key], base_of_spec)
    own = {key: value for key, value in table.items() if key not in BENCHMARK_KEYS}
    parsed, parsed_origins = _table_settings(own, text, path, span)
    for key in ("workload", "database_from"):
        if isinstance(parsed.get(key), str):
            parsed[key] = _local(parsed[key], base)
    values.update(parsed)
    origins.update(parsed_origins)
    if "workload" not in values:
        raise FbbenchError(f"{at}: benchmark {name} names no workload",
                           hint='e.g. workload = "tpcc" (or a workload directory, relative to the suite)')
    figures = table.get("figures", ["headline"])
    if not isinstance(figures, list) or not figures or not all(isinstance(f, str) and f.strip() for f in figures):
        raise FbbenchError(f'{where("figures")} must be a list of figure names such as ["headline", "NEW_ORDER p95"]')
    own_repeats = _whole(table.get("repeats", repeats), where("repeats"), 1)
    own_pairs = _whole(table.get("pairs", pairs), where("pairs"), 1)
    return Benchmark(name, values, origins, tuple(f.strip() for f in figures), own_repeats, own_pairs, at,
                     where("figures") if "figures" in table else at)


def _table_settings(own: dict[str, Any], text: str, path: Path,
                    span: tuple[int, int] | None) -> tuple[dict[str, Any], dict[str, str]]:
    """A benchmark table's run settings, checked, each error and origin naming the file and the
    line within that table (the text outside it blanked, so that lines keep their numbers)."""
    if span is not None:
        lines = text.splitlines()
        text = "\n".join([""] * (span[0] - 1) + lines[span[0] - 1:span[1]])
    return parse_settings(own, text, path)
