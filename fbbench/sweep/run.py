"""Running a sweep: every cell's repeats, interleaved (round 1: A B C, round 2: A B C, …) so that
the machine's drift spreads over the cells instead of landing on one of them; populated
databases reused (cells that share a population run next to each other in each round); a sweep
killed at any point resumes with ``--resume`` and loses at most the run it was in.

Each run is an ordinary ``fbbench run`` (the same runner, the same store), tagged with its sweep
and cell; a cell's runs form a series. The store is the truth: what is done is read back from it,
never kept only in memory.
"""

from __future__ import annotations

import secrets
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fbbench import paths
from fbbench.engines import template as engine_templates
from fbbench.errors import FbbenchError, Interrupted
from fbbench.runner.limits import STARTUP_GUESS, duration_text, fixed_work_time, overhead_per_run
from fbbench.runner.run import UNTOLD, Notices, RunOutcome, execute
from fbbench.runner.settings import lay_flags
from fbbench.store import ResultsStore
from fbbench.sweep.spec import Cell, SweepSpec, read_sweep


@dataclass
class Step:
    cell: Cell
    repeat: int


@dataclass
class SweepOutcome:
    sweep_id: str
    status: str  # completed / interrupted / failed
    results: Path
    runs: list[RunOutcome] = field(default_factory=list)
    wall_seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        return {"completed": 0, "interrupted": Interrupted.exit_code}.get(self.status, 1)


def new_sweep_id() -> str:
    return "w" + time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def steps(spec: SweepSpec, done: set[tuple[int, int]]) -> list[Step]:
    """Round by round, every cell once per round; what the store says is done is skipped."""
    return [Step(cell, repeat) for repeat in range(1, spec.repeats + 1) for cell in spec.cells
            if (cell.index, repeat) not in done]


def done_steps(sweep: dict[str, Any]) -> set[tuple[int, int]]:
    return {(run["cell"], run["repeat_index"]) for run in sweep["runs"] if run["status"] == "completed"}


@dataclass(frozen=True)
class PlannedTime:
    """How long a sweep's runs will take, populations not included: ``seconds`` for the runs whose
    time is known, ``unknown`` runs of fixed work this results store has never seen run (their
    time is not guessed), and one typical run (None when no run's time is known)."""

    seconds: float
    per_run: float | None
    unknown: int = 0

    def text(self) -> str:
        """How the runs add up, after "N run(s) ": "of about 18.5 s each, populations not included"."""
        if self.per_run is None:
            return "of fixed work, its time unknown: this results store has no completed run of the same cells yet"
        said = f"of about {duration_text(self.per_run)} each"
        if self.unknown:
            said += f" ({self.unknown} of fixed work whose time is unknown, not counted)"
        return said + ", populations not included"


def run_seconds(spec: SweepSpec, store: ResultsStore | None) -> dict[int, float | None]:
    """One run of each cell: a timed run's warm-up and measured period plus what a run costs besides
    them; fixed work (--transactions, or a workload's own counts), what the store's recent runs of
    the cell's spec took, None when it has none — not the timed phases, which fixed work does not run."""
    from fbbench.runner.run import run_workload

    base = spec.settings_for(spec.cells[0])
    units = base.transactions or run_workload(base).counted
    if units is None:
        per_run = base.warmup + base.duration + (overhead_per_run(store) if store else STARTUP_GUESS)
        return dict.fromkeys((cell.index for cell in spec.cells), per_run)
    found = {}
    for cell in spec.cells:
        settings = spec.settings_for(cell)
        counted = settings.transactions or run_workload(settings).counted  # a scale axis may change the counts
        known = fixed_work_time(store, settings.recorded(), counted or units)
        found[cell.index] = known.seconds if known is not None else None
    return found


def planned_seconds(spec: SweepSpec, todo: list[Step], store: ResultsStore | None) -> PlannedTime:
    """How long ``todo`` will take, populations not included (:class:`PlannedTime`)."""
    per_cell = run_seconds(spec, store)
    known = [seconds for step in todo if (seconds := per_cell.get(step.cell.index)) is not None]
    typical = statistics.median(known) if known else (
        statistics.median(s for s in per_cell.values() if s is not None)
        if any(s is not None for s in per_cell.values()) else None)
    return PlannedTime(sum(known), typical, len(todo) - len(known))


def plan_text(spec: SweepSpec, todo: list[Step], store: ResultsStore | None,
              hosts: dict[str, list[int]] | None = None) -> list[str]:
    """What --dry-run prints: the cells, the populations they need, and the time it will take.
    ``hosts`` (a lab): each host and the cells it runs — the hosts run at the same time, each
    building its own populations, so the time is the busiest host's and the populations add up."""
    planned = planned_seconds(spec, todo, store)
    lines = [f"{len(spec.cells)} cell(s) × {spec.repeats} repeat(s) = {len(spec.cells) * spec.repeats} run(s), "
             f"{len(todo)} to do; mode {spec.mode}"]
    for cell in spec.cells:
        settings = spec.settings_for(cell)
        left = sum(1 for step in todo if step.cell.index == cell.index)
        scale = ", ".join(f"{name}={value}" for name, value in settings.scale.items()) or "default"
        lines.append(f"  cell {cell.index:>2}: {cell.label}  [{left} run(s) left; engine {settings.engine}; "
                     f"scale {scale}; page size {settings.page_size or 'default'}]")
    def populations(cells: list[int]) -> int:
        return len({(s.engine, tuple(sorted(s.scale.items())), s.page_size)
                    for s in (spec.settings_for(cell) for cell in spec.cells if cell.index in cells)})

    grow = spec.grow_axis
    growing = f"; {grow.key} grows one database step by step" if grow else ""
    if hosts is None:
        lines.append(f"populations needed: {populations([c.index for c in spec.cells])} (engine, scale, page size), "
                     f"each built once and then copied{growing}")
        said = duration_text(planned.seconds) if planned.per_run is not None else "unknown"
        lines.append(f"estimated time: {said} ({len(todo)} run(s) {planned.text()})")
        return lines
    each = {host: populations(cells) for host, cells in hosts.items()}
    lines.append(f"populations needed: {sum(each.values())} — each host builds its own (" + ", ".join(
        f"{host} {count}" for host, count in each.items()) + f"), once, then copies it{growing}")
    busiest = {host: [step for step in todo if step.cell.index in cells] for host, cells in hosts.items()}
    runs = sum(len(steps) for steps in busiest.values())
    if planned.per_run is None:
        lines.append(f"estimated time: unknown ({runs} run(s) on {len(hosts)} host(s) {planned.text()})")
        return lines
    slowest = max(busiest, key=lambda host: len(busiest[host]))
    lines.append(f"estimated time: {duration_text(len(busiest[slowest]) * planned.per_run)} — the hosts run at the "
                 f"same time: {runs} run(s) on {len(hosts)} host(s), the busiest ({slowest}) {len(busiest[slowest])} "
                 f"{planned.text()}")
    return lines


def execute_sweep(spec: SweepSpec, password: str | None, *, resume: str | None = None,
                  on_step: Callable[[Step, int, int, float, float], None] | None = None,
                  on_run: Callable[[Step, RunOutcome], None] | None = None,
                  notices: Notices = UNTOLD) -> SweepOutcome:
    """Run (or resume) a sweep; returns when every step is done, or at the first interruption."""
    base = spec.settings_for(spec.cells[0])
    results = Path(base.results or paths.default_results()).expanduser().resolve()
    with ResultsStore(results) as store:
        if resume is None:
            sweep_id = new_sweep_id()
            store.begin_sweep(sweep_id, str(spec.path), spec.text, spec.to_dict())
            done: set[tuple[int, int]] = set()
        else:
            sweep_id = store.resolve_sweep_id(resume)
            stored = store.load_sweep(sweep_id)
            if stored["status"] == "running":
                raise FbbenchError(f"sweep {sweep_id} is still running (process {stored.get('pid')})")
            store.claim_sweep(sweep_id)
            done = done_steps(stored)
        todo = steps(spec, done)
        per_run = planned_seconds(spec, todo, store).per_run or STARTUP_GUESS
    outcome = SweepOutcome(sweep_id, "completed", results)
    started = time.monotonic()
    try:
        _run_steps(spec, todo, sweep_id, password, outcome, started, per_run, on_step, on_run, notices)
        if spec.mode == "one_at_a_time" and outcome.status == "completed":
            extra = _best_combination(spec, results, sweep_id)
            if extra is not None:
                with ResultsStore(results) as store:
                    store.update_sweep_spec(sweep_id, spec.to_dict())
                extra_steps = [Step(extra, repeat) for repeat in range(1, spec.repeats + 1)
                               if (extra.index, repeat) not in done]
                _run_steps(spec, extra_steps, sweep_id, password, outcome, started, per_run, on_step, on_run,
                           notices)
    except KeyboardInterrupt:
        outcome.status = "interrupted"
    except FbbenchError:
        outcome.status = "failed"
        raise
    finally:
        outcome.wall_seconds = time.monotonic() - started
        with ResultsStore(results) as store:
            store.finish_sweep(sweep_id, outcome.status, {"wall_seconds": outcome.wall_seconds,
                                                          "runs_this_time": len(outcome.runs)})
    return outcome


def _run_steps(spec: SweepSpec, todo: list[Step], sweep_id: str, password: str | None, outcome: SweepOutcome,
               started: float, per_run: float, on_step: Callable[[Step, int, int, float, float], None] | None,
               on_run: Callable[[Step, RunOutcome], None] | None,
               notices: Notices) -> None:
    """Run ``todo`` in order; stops (status interrupted) at the first interrupted run."""
    if len(todo) > 1:
        engine_templates.several()
    for position, step in enumerate(todo, start=1):
        elapsed = time.monotonic() - started
        eta = (elapsed / (position - 1) if position > 1 else per_run) * (len(todo) - position + 1)
        if on_step is not None:
            on_step(step, position, len(todo), elapsed, eta)
        settings = replace(spec.settings_for(step.cell), origins={})
        run = execute(settings, password, notices,
                      series=(f"{sweep_id}:{step.cell.index}", step.repeat), sweep=(sweep_id, step.cell.index))
        run = replace(run, repeat_index=step.repeat)
        outcome.runs.append(run)
        if on_run is not None:
            on_run(step, run)
        if run.status == "interrupted":
            outcome.status = "interrupted"
            return


def _best_combination(spec: SweepSpec, results: Path, sweep_id: str) -> Cell | None:
    """One factor at a time: each axis's best value (by its cell's median, the others at their
    baseline); their combination becomes a new cell, unless it is one already."""
    from fbbench.analysis.sweep import sweep_document

    with ResultsStore(results) as store:
        sweep = store.load_sweep(sweep_id)
        document = sweep_document(sweep, store.load_runs(r["run_id"] for r in sweep["runs"]))
    lower = (document.get("headline") or {}).get("better") == "lower"
    medians = {cell["index"]: cell["summary"]["median"] for cell in document["cells"] if cell["summary"]}
    baseline = {axis.key: spec.baseline_value(axis) for axis in spec.axes}
    best: dict[str, Any] = {}
    for axis in spec.axes:
        options = [(medians[cell.index], cell.value(axis.key)) for cell in spec.cells if cell.index in medians
                   and all(cell.value(k) == v for k, v in baseline.items() if k != axis.key)]
        if not options:
            return None
        best[axis.key] = (min if lower else max)(options, key=lambda item: item[0])[1]
    combo = tuple((axis.key, best[axis.key]) for axis in spec.axes)
    if any(cell.values == combo for cell in spec.cells):
        return None
    cell = Cell(len(spec.cells) + 1, combo)
    spec.cells.append(cell)
    return cell


def resume_spec(results: Path, sweep: str) -> tuple[str, SweepSpec]:
    """The spec a sweep began with, from the store (the file may have changed since), in the work
    directory it began in (which ``sweep --workdir`` may have set)."""
    with ResultsStore(results, create=False) as store:
        stored = store.load_sweep(sweep)
    spec = read_sweep(Path(stored["spec_path"]), stored["spec_text"])
    lay_flags(spec.base, spec.origins, {"workdir": (stored["spec"].get("base") or {}).get("workdir")})
    return stored["sweep_id"], spec
