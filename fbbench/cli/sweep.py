"""``fbbench sweep``: a matrix of run settings with repeats, run, resumed or only planned (--dry-run);
then the sweep's summary, JSON and HTML."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from fbbench import paths
from fbbench.cli.common import (
    OverwriteOption,
    PasswordFileOption,
    ResultsOption,
    WorkdirOption,
    _credentials,
    _notices,
    _print_error,
    check_output_files,
    console,
)
from fbbench.cli.lab import InsecureOption, TlsOption
from fbbench.errors import FbbenchError
from fbbench.sweep.spec import DEFAULT_REPEATS, MODES

HELP = f"""Run a matrix of run settings with repeats: one series per cell, repeats interleaved across cells.

The spec holds the run settings every cell shares (as `run --spec`), `repeats` (runs per cell, \
default {DEFAULT_REPEATS}), `mode` ({" or ".join(MODES)}) and a `[matrix]` of axes: run settings, \
`conf.KEY` or `scale.NAME`.

Examples:

* `fbbench sweep architectures.toml --dry-run`
* `fbbench sweep architectures.toml --report sweep.html`
* `fbbench sweep --resume last`
* `fbbench sweep hosts.toml --lab tcp://127.0.0.1:8786` (a lab: fbbench lab worker on each host)
"""


def sweep(
    spec: Annotated[Path | None, typer.Argument(help="Sweep spec (TOML): run settings and a [matrix] of axes.")] = None,
    resume: Annotated[str | None, typer.Option("--resume", help="Finish a sweep that was interrupted or killed "
                                               "(its id, a prefix, or 'last'): only the missing runs.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List the cells, the populations they need and the "
                                          "estimated time; run nothing.")] = False,
    results: ResultsOption = None,
    workdir: WorkdirOption = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write the sweep document (JSON) here.")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Write the sweep's HTML report here (default: "
                                                "next to the results store).")] = None,
    password_file: PasswordFileOption = None,
    lab: Annotated[str | None, typer.Option("--lab", help="Run the cells on a lab's hosts (its scheduler, e.g. "
                                            "tcp://127.0.0.1:8786): a host axis pins cells to hosts; without one, "
                                            "every cell runs on every host.")] = None,
    tls: TlsOption = None,
    insecure: InsecureOption = False,
    yes: Annotated[bool, typer.Option("--yes", help="Go ahead with a sweep planned to take more than 24 hours "
                                      "(and with each of its runs).")] = False,
    overwrite: OverwriteOption = False,
) -> None:
    """Run, resume or plan a sweep (its help text, with the defaults, is :data:`HELP`)."""
    from fbbench.analysis.sweep import sweep_document
    from fbbench.report import sweep as sweep_page
    from fbbench.report.outputs import write_outputs
    from fbbench.runner import limits
    from fbbench.runner.limits import duration_text
    from fbbench.runner.settings import lay_flags
    from fbbench.store import ResultsStore
    from fbbench.sweep import run as sweep_run
    from fbbench.sweep.spec import read_sweep

    if (spec is None) == (resume is None):
        raise FbbenchError("give a sweep spec file, or --resume SWEEP (not both)",
                           hint="e.g. fbbench sweep sweep.toml, or fbbench sweep --resume last")
    store_path = (results or paths.default_results()).expanduser().resolve()
    if resume is not None:
        sweep_id, parsed = sweep_run.resume_spec(store_path, resume)
        with ResultsStore(store_path, create=False) as store:
            began_on = (store.load_sweep(sweep_id)["spec"].get("lab") or {}).get("address")
        if began_on and lab is None:
            raise FbbenchError(f"sweep {sweep_id} ran on the lab at {began_on}: it resumes there",
                               hint=f"fbbench sweep --resume {sweep_id} --lab {began_on}")
    else:
        assert spec is not None
        parsed = read_sweep(spec)
    lay_flags(parsed.base, parsed.origins, {"results": str(store_path) if results is not None else None,
                                            "workdir": str(workdir) if workdir is not None else None})
    yes = yes or bool(parsed.base.get("yes"))  # the spec's run settings may say it too
    if yes:
        parsed.base["yes"] = True
    base = parsed.settings_for(parsed.cells[0])
    store_path = Path(base.results or paths.default_results()).expanduser().resolve()
    from fbbench.lab.sweep import host_axis

    if lab is None and host_axis(parsed):
        raise FbbenchError(f"{parsed.path}: a host axis places cells on a lab's hosts",
                           hint="give --lab SCHEDULER_ADDRESS (fbbench lab scheduler, fbbench lab worker --name HOST)")
    credentials = _credentials(base.user, password_file)
    done: set[tuple[int, int]] = set()
    if resume is not None:
        with ResultsStore(store_path, create=False) as store:
            done = sweep_run.done_steps(store.load_sweep(sweep_id))
    todo = sweep_run.steps(parsed, done)
    known = ResultsStore(store_path, create=False) if store_path.exists() else None
    try:
        if dry_run:
            hosts = _lab_hosts(parsed, lab, tls, insecure) if lab is not None else None
            for line in sweep_run.plan_text(parsed, todo, known, hosts):
                console.print(escape(line), highlight=False, soft_wrap=True)
            return
        planned = sweep_run.planned_seconds(parsed, todo, known)
    finally:
        if known is not None:
            known.close()
    plan = f"{len(todo):,} run(s) {planned.text()}; {len(parsed.cells):,} cell(s) × {parsed.repeats} repeat(s)"
    limits.check_planned(planned.seconds, "the sweep", plan, yes)
    from fbbench.runner.outputs import check_outputs

    check_outputs(base, store_path)
    paths.check_workdir(base.workdir)
    check_output_files(json_file, report, overwrite, {"the sweep file": spec, "the results store": store_path})

    about = f"about {duration_text(planned.seconds)} planned" if planned.per_run is not None else "time unknown"
    console.print(f"[bold]sweep[/]: {about} — {escape(plan)}", highlight=False, soft_wrap=True)

    def on_step(step: Any, position: int, total: int, elapsed: float, eta: float) -> None:
        console.print(f"[bold]sweep: run {position} of {total}[/] — cell {step.cell.index} of {len(parsed.cells)} "
                      f"({escape(step.cell.label)}), repeat {step.repeat} of {parsed.repeats}; elapsed "
                      f"{duration_text(elapsed)}, about {duration_text(eta)} left", highlight=False)

    def on_run(step: Any, outcome: Any) -> None:
        from fbbench.report.console import headline_text

        with ResultsStore(outcome.results, create=False) as store:
            summary = store.load_run(outcome.run_id).get("summary") or {}
        figure = headline_text(summary.get("headline"), summary.get("measured_seconds"))
        console.print(f"  run {outcome.run_id}: {outcome.status}; {escape(figure)}"
                      + (f" — {escape(outcome.failure)}" if outcome.failure and outcome.status != "completed" else ""),
                      highlight=False)

    if lab is not None:
        outcome = _on_lab(parsed, credentials.password, lab, tls, insecure, resume, on_run)
    else:
        outcome = sweep_run.execute_sweep(parsed, credentials.password, resume=resume, on_step=on_step,
                                          on_run=on_run, notices=_notices())
    with ResultsStore(outcome.results, create=False) as store:
        stored = store.load_sweep(outcome.sweep_id)
        document = sweep_document(stored, store.load_runs(r["run_id"] for r in stored["runs"]))
    sweep_page.print_sweep(document, console)
    target = report or paths.default_report(outcome.results, outcome.sweep_id)
    written, problems = write_outputs(document, json_file, target, write_report=sweep_page.write,
                                      overwrite=overwrite)
    for line in written:
        console.print(line, highlight=False, soft_wrap=True)
    again = f"fbbench sweep --resume {outcome.sweep_id}" + (
        f" --lab {lab}" + (f" --tls {tls}" if tls else "") if lab else "")
    if outcome.status == "interrupted":
        _print_error(f"the sweep was interrupted after {len(outcome.runs)} run(s)",
                     f"finish it with: {again}")
    failed = sum(1 for run in outcome.runs if run.status == "failed")
    if failed:  # the sweep went on; --resume runs again what did not complete
        _print_error(f"{failed} of {len(outcome.runs)} run(s) failed (each run's line above says why)",
                     f"once the cause is fixed, run them again: {again}")
    for problem in problems:
        _print_error(problem)
    code = outcome.exit_code or (1 if failed else 0) or (FbbenchError.exit_code if problems else 0)
    if code:
        raise typer.Exit(code)


def _refuse_builds_on_a_lab(parsed: Any) -> None:
    """A lab's workers offer the embedded engines from PyPI by version: a cell naming a build
    registered on this machine (fbbench engines add) would run that release on the hosts instead."""
    from fbbench.engines import EmbeddedEngine, parse_engine

    for cell in parsed.cells:
        engine = parse_engine(parsed.settings_for(cell).engine)
        if isinstance(engine, EmbeddedEngine) and engine.is_build:
            raise FbbenchError(f"cell {cell.label}: {engine.label} is a build registered on this machine; a lab's "
                               f"hosts offer the embedded engines from PyPI by version ({engine.version} would run "
                               "the release, not this build)", hint="run the sweep without --lab")


def _lab_hosts(parsed: Any, address: str, tls: Path | None, insecure: bool) -> dict[str, list[int]]:
    """The lab's hosts and the cells each runs: a host axis names them; otherwise every cell runs on
    every host that has joined (the lab is asked, nothing is run)."""
    from fbbench.lab.client import connect
    from fbbench.lab.sweep import HOST_AXIS, host_axis

    if host_axis(parsed):
        placed: dict[str, list[int]] = {}
        for cell in parsed.cells:
            placed.setdefault(str(cell.value(HOST_AXIS)), []).append(cell.index)
        return placed
    with connect(address, tls, insecure) as lab:
        joined = sorted(lab.workers())
    return {host: [cell.index for cell in parsed.cells] for host in joined}


def _on_lab(parsed: Any, password: str | None, address: str, tls: Path | None, insecure: bool, resume: str | None,
            on_run: Any) -> Any:
    """The sweep on a lab: a progress line per host while it runs (the cell it runs, for how long),
    the sweep's estimated time left, and each run's line as it arrives."""
    from fbbench.lab import security
    from fbbench.lab.client import connect
    from fbbench.lab.sweep import Progress, check_spec, execute_lab_sweep
    from fbbench.runner.limits import duration_text

    check_spec(parsed)
    _refuse_builds_on_a_lab(parsed)

    def on_progress(progress: Progress) -> None:
        now = time.monotonic()
        hosts = " · ".join(
            f"{escape(host)}: cell {state.step.cell.index} ({escape(state.step.cell.label)}) repeat "
            f"{state.step.repeat}, {duration_text(now - state.since)}" if state.step else f"{escape(host)}: idle"
            for host, state in progress.hosts.items())
        console.print(f"[bold]lab:[/] {hosts} — {progress.text()}, about {duration_text(progress.eta)} left",
                      highlight=False, soft_wrap=True)

    def on_note(text: str) -> None:
        console.print(f"lab: {escape(text)}", highlight=False, soft_wrap=True)

    from fbbench import signals
    from fbbench.lab.sweep import SchedulerLost

    try:
        # SIGTERM is Ctrl-C here: the hosts are told to stop and keep what they measured.
        with signals.stop_signals_interrupt(), connect(address, tls, insecure) as lab:
            if lab.insecure:
                console.print(security.INSECURE_WARNING, highlight=False, soft_wrap=True)
            return execute_lab_sweep(parsed, password, lab, resume=resume, on_progress=on_progress,
                                     on_run=on_run, on_note=on_note)
    except SchedulerLost as lost:
        again = f"fbbench sweep --resume {lost.sweep_id} --lab {address}" + (f" --tls {tls}" if tls else "")
        lost.hint = f"once the scheduler is back (its hosts rejoin by themselves): {again}"
        raise
