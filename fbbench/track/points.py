"""``fbbench track run``: one point per benchmark of a suite, on one build.

Everything is checked before the first run: the suite, every benchmark's settings as ``fbbench
run`` checks them (on the build, and on the reference build), every figure against what its
workload produces, that the reference's pairs can be time-shared. Then each benchmark in turn:

- an **absolute** point: ``repeats`` runs of the build, one run series in the results store;
- a **relative** point (``--reference``): ``pairs`` time-shared pairs of the reference build (A)
  and the build (B), as ``fbbench compare --paired`` runs them: each pair measures the same
  seconds, so its ratio B / A is free of the machine's drift that day.

A point is recorded whole, once its runs all completed, with every tracked figure's samples, the
conditions its runs share, and the plans the build chose; then its series is looked at for
changes. A run that fails leaves no point (the failure is said, the next benchmark goes on);
Ctrl-C stops at once, keeping the points already made. Running the same command again makes only
the points still missing: a point is known by its suite, benchmark, label, engine and reference.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fbbench import paths
from fbbench.analysis import track as tracking
from fbbench.engines import template as engine_templates
from fbbench.errors import FbbenchError
from fbbench.runner.run import UNTOLD, Notices, RunOutcome, check, execute_series, new_run_id, run_workload
from fbbench.runner.settings import RunSettings
from fbbench.store import ResultsStore
from fbbench.store import track as stored
from fbbench.track import changes as found_changes
from fbbench.track.series import build_identity, point_conditions, series_for
from fbbench.track.suite import Benchmark, Suite


@dataclass(frozen=True)
class Planned:
    """One benchmark's point, checked: its settings on the build (and on the reference), the
    figures it tracks (canonical names, the counters last)."""

    benchmark: Benchmark
    settings: RunSettings
    reference: RunSettings | None
    figures: tuple[str, ...]


@dataclass
class PointOutcome:
    benchmark: str
    point: stored.PointRow | None = None
    skipped: str | None = None  # why no point was made now (it exists already)
    failure: str | None = None
    interrupted: bool = False
    new_series: str | None = None  # why the point began a new series (after others of its benchmark)
    changes: list[stored.ChangeRow] = field(default_factory=list)  # first found with this point


@dataclass
class TrackOutcome:
    results: Path
    points: list[PointOutcome] = field(default_factory=list)

    @property
    def interrupted(self) -> bool:
        return any(p.interrupted for p in self.points)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 1 if any(p.failure for p in self.points) else 0


def base_settings(suite: Suite, benchmark: Benchmark, engine: str, results: Path | None, workdir: Path | None,
          repeat: int) -> RunSettings:
    overrides: dict[str, Any] = {"repeat": repeat,
                                 "tags": [*benchmark.values.get("tags", []), f"track:{suite.name}:{benchmark.name}"]}
    if results is not None:
        overrides["results"] = str(results)
    if workdir is not None:
        overrides["workdir"] = str(workdir)
    return benchmark.settings(engine, **overrides)


def plan(suite: Suite, engine: str, reference: str | None, results: Path | None,
         workdir: Path | None) -> list[Planned]:
    """Every point of ``track run``, checked before anything runs (one line for the first problem)."""
    from fbbench.engines import EmbeddedEngine, parse_engine
    from fbbench.runner.paired import check_pair

    for name, text in (("--engine", engine), ("--reference", reference)):
        if text is not None:
            try:
                parsed = parse_engine(text)
            except FbbenchError as error:
                raise FbbenchError(f"{name} {text}: {error.message}", hint=error.hint) from None
            if reference is not None and not isinstance(parsed, EmbeddedEngine):
                raise FbbenchError(f"{name} {text} is {parsed.label}: a relative point (--reference) time-shares "
                                   "two engines fbbench runs itself, embedded ones",
                                   hint="register both builds embedded (fbbench engines add NAME PATH), or leave "
                                        "out --reference for absolute points")
    planned = []
    for benchmark in suite.benchmarks:
        settings = base_settings(suite, benchmark, engine, results, workdir, 1 if reference else benchmark.repeats)
        try:
            checked = check(replace(settings, origins=settings.origins))
        except FbbenchError as error:
            raise FbbenchError(f"benchmark {benchmark.name}: {error.message}", hint=error.hint) from None
        figures = _figures(benchmark, settings, checked.workload)
        other = None
        if reference is not None:
            other = base_settings(suite, benchmark, reference, results, workdir, 1)
            try:
                check_pair(replace(other, origins=other.origins), replace(settings, origins=settings.origins))
            except FbbenchError as error:
                raise FbbenchError(f"benchmark {benchmark.name} with --reference {reference}: {error.message}",
                                   hint=error.hint) from None
        planned.append(Planned(benchmark, settings, other, tuple(figures)))
    return planned


def check_benchmarks(suite: Suite) -> None:
    """What show and check verify without an engine, as run does before it runs: each benchmark's
    workload loads and produces the figures it tracks (a typo must not make a gate pass)."""
    for benchmark in suite.benchmarks:
        try:
            settings = benchmark.settings("5.0")  # the engine plays no part in what a workload produces
            workload = run_workload(settings)
        except FbbenchError as error:
            raise FbbenchError(f"benchmark {benchmark.name}: {error.message}", hint=error.hint) from None
        _figures(benchmark, settings, workload)


def _figures(benchmark: Benchmark, settings: RunSettings, workload: Any) -> list[str]:
    """The figures the benchmark tracks (tracking.resolve_figures), or one line naming one its
    workload does not produce."""
    fixed_work = settings.transactions is not None or workload.counted is not None
    return tracking.resolve_figures(benchmark.figures, workload, fixed_work,
                                    f"{benchmark.figures_where or benchmark.where}: benchmark {benchmark.name}")


def planned_seconds(planned: list[Planned], reference: str | None) -> tuple[float, list[str]]:
    """What the points are planned to take: warm-up, measurement and each run's set-up as the
    results store's recent runs took them (fixed work: its recent runs of the same spec), and
    the benchmarks whose time cannot be planned yet (fixed work never run here)."""
    from fbbench.runner import limits

    results = results_of(planned)
    store = ResultsStore(results, create=False) if results.exists() else None
    try:
        setup = limits.overhead_per_run(store) if store is not None else limits.STARTUP_GUESS
        total, unknown = 0.0, []
        for item in planned:
            runs = item.benchmark.pairs if reference else item.benchmark.repeats
            settings = item.settings
            if settings.transactions is None:
                total += runs * (settings.warmup + settings.duration + setup)
                continue
            known = limits.fixed_work_time(store, settings.recorded(), settings.transactions)
            if known is None:
                unknown.append(item.benchmark.name)
            else:
                total += runs * known.seconds
        return total, unknown
    finally:
        if store is not None:
            store.close()


def results_of(planned: list[Planned]) -> Path:
    first = planned[0].settings
    return Path(first.results or paths.default_results()).expanduser().resolve()


def existing(store: ResultsStore, suite: Suite, benchmark: str, label: str, engine: str,
             reference: str | None, host: str | None = None) -> stored.PointRow | None:
    """The point already made for these (on ``host``, for a lab's points), if any."""
    for point in stored.points_of_suite(store, suite.name):
        if (point.benchmark, point.label, point.engine, point.reference) == (benchmark, label, engine, reference) \
                and (host is None or point.conditions.get("data", {}).get("host.name") == host):
            return point
    return None


def run_suite(suite: Suite, planned: list[Planned], engine: str, label: str, reference: str | None,
              notices: Notices = UNTOLD, on_point: Callable[[PointOutcome], None] | None = None,
              on_run: Callable[[RunOutcome], None] | None = None,
              on_pair: Callable[[Any], None] | None = None) -> TrackOutcome:
    """A point per benchmark, in the suite's order; stops at a Ctrl-C (the points made are kept)."""
    results = results_of(planned)
    outcome = TrackOutcome(results)
    if len(planned) > 1:
        engine_templates.several()
    for item in planned:
        with ResultsStore(results) as store:
            made = existing(store, suite, item.benchmark.name, label, engine, reference)
        if made is not None:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(made.created_at))
            point = PointOutcome(item.benchmark.name, made,
                                 skipped=f"it has a point for {label} already ({made.point_id}, {when})")
        else:
            point = _make(suite, item, engine, label, reference, results, notices, on_run, on_pair)
        outcome.points.append(point)
        if on_point is not None:
            on_point(point)
        if point.interrupted:
            break
    return outcome


def _make(suite: Suite, item: Planned, engine: str, label: str, reference: str | None, results: Path,
          notices: Notices, on_run: Callable[[RunOutcome], None] | None,
          on_pair: Callable[[Any], None] | None) -> PointOutcome:
    outcome = PointOutcome(item.benchmark.name)
    try:
        if item.reference is None:
            series_b, runs = execute_series(replace(item.settings, origins=item.settings.origins), None, notices,
                                            on_run=on_run)
            ids_a: list[str] | None = None
            series_a = None
            ids_b = [run.run_id for run in runs]
            statuses = [run.status for run in runs]
            failures = [f"run {run.run_id}: {run.failure}" for run in runs if run.status == "failed"]
        else:
            from fbbench.runner.paired import execute_pairs
            from fbbench.runner.timeshare import TURN_SECONDS

            paired = execute_pairs(replace(item.reference, origins=item.reference.origins),
                                   replace(item.settings, origins=item.settings.origins), item.benchmark.pairs,
                                   turn=suite.turn or TURN_SECONDS, notices=notices, on_pair=on_pair)
            series_a, series_b = paired.series["A"], paired.series["B"]
            complete = [pair for pair in paired.pairs if pair.complete]
            ids_a = [pair.outcomes["A"].run_id for pair in complete]  # type: ignore[union-attr]
            ids_b = [pair.outcomes["B"].run_id for pair in complete]  # type: ignore[union-attr]
            statuses = ["interrupted"] if paired.interrupted else (["failed"] if paired.failure else ["completed"])
            failures = [paired.failure] if paired.failure else []
            if len(complete) < item.benchmark.pairs and not failures and not paired.interrupted:
                failures = [f"{len(complete)} of {item.benchmark.pairs} pairs completed"]
    except KeyboardInterrupt:
        outcome.interrupted = True
        return outcome
    if "interrupted" in statuses:
        outcome.interrupted = True
        return outcome
    if failures or any(status != "completed" for status in statuses):
        outcome.failure = "; ".join(failures) or "a run did not complete"
        return outcome
    return record_point(suite, item, engine, label, reference, results, {"B": ids_b, **({"A": ids_a} if ids_a else {})},
                        series_a, series_b)


def record_point(suite: Suite, item: Planned, engine: str, label: str, reference: str | None, results: Path,
                 runs: dict[str, list[str]], series_a: str | None, series_b: str | None) -> PointOutcome:
    """A point of completed runs (``runs``: "B" the build's, "A" the reference's, pair by pair),
    recorded whole: its figures, conditions and plans; then its series looked at for changes."""
    from fbbench.analysis import conditions as cond

    outcome = PointOutcome(item.benchmark.name)
    with ResultsStore(results) as store:
        runs_b = [store.load_run(run_id) for run_id in runs["B"]]
        runs_a = [store.load_run(run_id) for run_id in runs["A"]] if runs.get("A") else None
        record = point_conditions(runs_b)
        reference_build = build_identity(point_conditions(runs_a)) if runs_a else None
        kind = "relative" if runs_a is not None else "absolute"
        series_id, reason = series_for(store, suite, item.benchmark.name, kind, reference_build, record)
        point = stored.PointRow(
            "p" + new_run_id(), series_id, suite.name, item.benchmark.name, label, engine,
            record.get("engine.build"), record.get("engine.binaries"), reference, time.time(), series_a, series_b,
            cond.to_json(record), tracking.read_point(item.figures, runs_b, runs_a),
            (runs_b[0].get("engine") or {}).get("plans") or {}, runs)
        stored.add_point(store, point)
        series = next(s for s in stored.series_of(store, suite.name, item.benchmark.name) if s.series_id == series_id)
        outcome.changes = found_changes.evaluate(store, series, found_changes.methods_of(suite.method,
                                                                                         suite.counter_method))
    outcome.point, outcome.new_series = point, reason
    return outcome
