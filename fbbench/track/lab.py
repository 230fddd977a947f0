"""``fbbench track run --lab ADDRESS``: a point per host of a lab, each in the series of its host.

Each benchmark runs as a lab sweep (:mod:`fbbench.lab.sweep`) whose host axis is the lab's hosts
still missing their point: every host runs the benchmark's repeats on its own machine, each
finished run is imported into this store as it arrives, and each host's runs become that host's
point. The host is a condition (``host.name``, the worker's name), so each host's points form a
series of their own: hosts are never pooled. Relative points (time-shared pairs) run on one
machine only; a lab makes absolute points.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fbbench.errors import FbbenchError
from fbbench.lab.client import Lab
from fbbench.runner.run import UNTOLD, Notices
from fbbench.store import ResultsStore
from fbbench.sweep.spec import Axis, Cell, SweepSpec
from fbbench.track.points import Planned, PointOutcome, TrackOutcome, existing, record_point, results_of
from fbbench.track.suite import Suite

SPEC_TEXT = "# fbbench track run --lab made this sweep: run the same track run again to complete it\n"


def _spec(suite: Suite, item: Planned, hosts: list[str]) -> SweepSpec:
    base = {key: value for key, value in item.settings.recorded().items()
            if key not in ("seed_fixed", "timeshare", "repeat", "host_name")}
    cells = [Cell(index, (("host", host),)) for index, host in enumerate(hosts, 1)]
    axis = Axis("host", "host_name", None, tuple(hosts), f"{suite.path}: {item.benchmark.name}")
    return SweepSpec(suite.path, SPEC_TEXT, base, {}, [axis], item.benchmark.repeats, "matrix", cells)


def run_suite_on_lab(suite: Suite, planned: list[Planned], engine: str, label: str, lab: Lab,
                     notices: Notices = UNTOLD, on_point: Callable[[PointOutcome], None] | None = None,
                     on_note: Callable[[str], None] | None = None) -> TrackOutcome:
    """A point per benchmark and host; stops at a Ctrl-C (the points made are kept)."""
    from fbbench.lab.sweep import execute_lab_sweep

    results = results_of(planned)
    outcome = TrackOutcome(results)
    hosts = sorted(lab.workers())
    if not hosts:
        raise FbbenchError(f"the lab at {lab.address} has no host", hint="fbbench lab worker ADDRESS --name NAME")
    for item in planned:
        with ResultsStore(results) as store:
            made = {host: existing(store, suite, item.benchmark.name, label, engine, None, host) for host in hosts}
        for host, done in made.items():
            if done is not None:
                said = PointOutcome(item.benchmark.name, done, skipped=f"{host} has a point for {label} already "
                                    f"({done.point_id})")
                outcome.points.append(said)
                if on_point is not None:
                    on_point(said)
        missing = [host for host, done in made.items() if done is None]
        if not missing:
            continue
        spec = _spec(suite, item, missing)
        swept = execute_lab_sweep(spec, None, lab, on_note=on_note)
        with ResultsStore(results) as store:
            runs = store.load_sweep(swept.sweep_id)["runs"]
        stop = swept.status == "interrupted"
        for cell in spec.cells:
            host = str(cell.value("host"))
            mine = [run for run in runs if run.get("cell") == cell.index]
            point = _point_of(suite, item, engine, label, results, swept.sweep_id, cell.index, host, mine, stop)
            outcome.points.append(point)
            if on_point is not None:
                on_point(point)
        if stop:
            break
    return outcome


def _point_of(suite: Suite, item: Planned, engine: str, label: str, results: Any, sweep_id: str, cell: int,
              host: str, runs: list[dict[str, Any]], stopped: bool) -> PointOutcome:
    name = f"{item.benchmark.name} on {host}"
    completed = [run["run_id"] for run in sorted(runs, key=lambda r: r.get("repeat_index") or 0)
                 if run["status"] == "completed"]
    if stopped and len(completed) < item.benchmark.repeats:
        return PointOutcome(name, interrupted=True)
    if len(completed) < item.benchmark.repeats:
        failed = [f"run {run['run_id']}: {run['status']}" for run in runs if run["status"] != "completed"]
        return PointOutcome(name, failure=f"{len(completed)} of {item.benchmark.repeats} runs completed on {host}"
                                          + (f" ({'; '.join(failed[:3])})" if failed else ""))
    made = record_point(suite, item, engine, label, None, results, {"B": completed}, None, f"{sweep_id}:{cell}")
    made.benchmark = name
    return made
