"""``fbbench sweep SPEC --lab ADDRESS``: a sweep's runs on a lab's hosts.

- **Placement.** A ``host = ["ssd-box", "hdd-box"]`` axis pins each cell to its host (a Dask
  worker restriction, never loosened). Without one, host is a *block*: every cell runs the same
  number of repeats on every host of the lab (the hosts joined when the sweep began), so that the
  statistics compare cells within each host and never pool machines. Every run asks for the
  worker resource :data:`fbbench.lab.RESOURCE`, of which a worker has one: two runs never share a
  host. Runs are submitted round by round (A B C, A B C …), each host's in that order.
- **Results.** Each finished run comes back as a bundle of its stored rows and is imported into
  the coordinator's store as it arrives: that store is the one place to query. The host keeps
  its own copy.
- **Failure.** A task whose worker died fails at once (the scheduler's allowed-failures must be
  0, which is checked): the run is recorded here as failed on that host, never run elsewhere.
- **Resume.** ``sweep --resume`` first asks every host for the sweep's runs that ended there
  meanwhile (a coordinator that crashed never got them), waits for those still running, imports
  them, and only then runs what is missing — on the host it belongs to, once that host is back.
- **Ctrl-C** (or SIGTERM). A Dask Event tells the hosts to stop their runs (each keeps what it
  measured and comes back interrupted); runs not yet started are cancelled.
- **A lost scheduler.** The coordinator stops with one line (:class:`SchedulerLost`): the runs in
  flight go on on their hosts, which keep them (their workers wait for the scheduler and rejoin),
  and ``sweep --resume`` collects them once it is back.
"""

from __future__ import annotations

import secrets
import statistics
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fbbench import paths
from fbbench.errors import FbbenchError
from fbbench.lab import RESOURCE, tasks
from fbbench.lab.client import Lab
from fbbench.runner.limits import STARTUP_GUESS
from fbbench.runner.run import RunOutcome, new_run_id
from fbbench.store import ResultsStore, bundle, exchange
from fbbench.store.model import RecordedSettings
from fbbench.sweep.run import SweepOutcome, new_sweep_id, planned_seconds, steps
from fbbench.sweep.spec import Cell, SweepSpec

HOST_AXIS = "host"
PROGRESS_EVERY = 30.0  # seconds between progress lines while nothing changes
STOP_GRACE = 120.0  # after Ctrl-C: how long the hosts' runs get to stop and report
RESUME_WAIT = 2.0  # seconds between asking the hosts whether their runs of the sweep have ended


class SchedulerLost(FbbenchError):
    """The coordinator lost the lab's scheduler mid-sweep; ``sweep_id`` resumes once it is back."""

    exit_code = 1

    def __init__(self, message: str, sweep_id: str) -> None:
        super().__init__(message)
        self.sweep_id = sweep_id


@dataclass(frozen=True)
class LabStep:
    cell: Cell
    repeat: int
    host: str

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.cell.index, self.repeat, self.host)


@dataclass
class HostState:
    """What one host does now, for the progress lines."""

    step: LabStep | None = None
    since: float = 0.0


@dataclass
class Progress:
    """What the coordinator knows while the lab works: per host, the run it does and for how long;
    the runs done and left; the sweep's estimated time left."""

    hosts: dict[str, HostState] = field(default_factory=dict)
    done: int = 0  # came back completed
    total: int = 0
    eta: float = 0.0
    failed: int = 0  # came back failed or interrupted, or never came back
    left: int = 0  # never started (a host that left): for sweep --resume

    @property
    def settled(self) -> int:
        return self.done + self.failed + self.left

    def text(self) -> str:
        """``2 of 6 run(s) completed, 1 failed, 1 left for --resume``."""
        return (f"{self.done} of {self.total} run(s) completed" + (f", {self.failed} failed" if self.failed else "")
                + (f", {self.left} left for --resume" if self.left else ""))


def host_axis(spec: SweepSpec) -> bool:
    return any(axis.key == HOST_AXIS for axis in spec.axes)


def lab_steps(spec: SweepSpec, hosts: list[str], done: set[tuple[int, int, str]]) -> list[LabStep]:
    """Round by round, every cell once per round — on its own host (a host axis) or on every host
    (host as a block); what the store says is done is skipped."""
    found = []
    for repeat in range(1, spec.repeats + 1):
        for cell in spec.cells:
            for host in ([str(cell.value(HOST_AXIS))] if host_axis(spec) else hosts):
                if (cell.index, repeat, host) not in done:
                    found.append(LabStep(cell, repeat, host))
    return found


def done_lab_steps(sweep: dict[str, Any]) -> set[tuple[int, int, str]]:
    return {(run["cell"], run["repeat_index"], str(run.get("host_name"))) for run in sweep["runs"]
            if run["status"] == "completed"}


def _check_lab(spec: SweepSpec, lab: Lab, hosts: list[str]) -> None:
    """The scheduler fails a task whose worker died (never runs it elsewhere), every host the sweep
    needs has joined, and each offers the embedded engines its cells use."""
    from fbbench.engines import EmbeddedEngine, parse_engine

    allowed = lab.allowed_failures()
    if allowed != 0:
        raise FbbenchError(f"the lab's scheduler at {lab.address} would run a task again on another host after its "
                           f"host died (allowed-failures = {allowed}): a run must never silently move",
                           hint="start it with fbbench lab scheduler, or dask scheduler with "
                                "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=0")
    joined = lab.workers()
    missing = [host for host in hosts if host not in joined]
    if missing:
        raise FbbenchError(f"host(s) {', '.join(missing)} not in the lab at {lab.address} (it has: "
                           f"{', '.join(sorted(joined)) or 'no host'})",
                           hint="start each with: fbbench lab worker ADDRESS --name NAME")
    records = lab.records()
    for cell in spec.cells:
        engine = parse_engine(spec.settings_for(cell).engine)
        if not isinstance(engine, EmbeddedEngine):
            continue
        for host in ([str(cell.value(HOST_AXIS))] if host_axis(spec) else hosts):
            offered = (records.get(host) or {}).get("engines") or []
            if engine.version not in offered:
                raise FbbenchError(f"cell {cell.label}: host {host} does not offer engine {engine.version} "
                                   f"(it offers {', '.join(offered) or 'none'})",
                                   hint=f"on {host}: fbbench engines install {engine.major}, then restart its worker")


def check_spec(spec: SweepSpec) -> None:
    """What a lab cannot run, refused before anything connects."""
    if spec.mode != "matrix":
        raise FbbenchError("a sweep on a lab runs a matrix: one factor at a time (mode one_at_a_time) needs its "
                           "best combination decided between the runs", hint="run it without --lab")


def execute_lab_sweep(spec: SweepSpec, password: str | None, lab: Lab, *, resume: str | None = None,
                      on_progress: Callable[[Progress], None] | None = None,
                      on_run: Callable[[LabStep, RunOutcome], None] | None = None,
                      on_note: Callable[[str], None] | None = None) -> SweepOutcome:
    """Run (or resume) a sweep on the lab; returns when every run is done, or after Ctrl-C."""
    check_spec(spec)
    base = spec.settings_for(spec.cells[0])
    results = Path(base.results or paths.default_results()).expanduser().resolve()
    note = on_note or (lambda text: None)
    with ResultsStore(results) as store:
        if resume is None:
            hosts = sorted(str(value) for value in next(a for a in spec.axes if a.key == HOST_AXIS).values) \
                if host_axis(spec) else sorted(lab.workers())
            if not hosts:
                raise FbbenchError(f"the lab at {lab.address} has no host",
                                   hint="fbbench lab worker ADDRESS --name NAME")
            _check_lab(spec, lab, hosts)
            sweep_id = new_sweep_id()
            store.begin_sweep(sweep_id, str(spec.path), spec.text,
                              {**spec.to_dict(), "lab": {"address": lab.address, "hosts": hosts,
                                                         "blocks": not host_axis(spec), "insecure": lab.insecure}})
        else:
            sweep_id = store.resolve_sweep_id(resume)
            stored = store.load_sweep(sweep_id)
            if stored["status"] == "running":
                raise FbbenchError(f"sweep {sweep_id} is still running (process {stored.get('pid')})")
            hosts = list((stored["spec"].get("lab") or {}).get("hosts") or [])
            if not hosts:
                raise FbbenchError(f"sweep {sweep_id} did not run on a lab", hint=f"fbbench sweep --resume {sweep_id}")
            _check_lab(spec, lab, hosts)
            store.claim_sweep(sweep_id)
        per_run = planned_seconds(spec, steps(spec, set()), store).per_run or STARTUP_GUESS
    outcome = SweepOutcome(sweep_id, "completed", results)
    started = time.monotonic()
    try:
        if resume is not None:
            _collect_finished(lab, sweep_id, results, note)
        with ResultsStore(results) as store:
            todo = lab_steps(spec, hosts, done_lab_steps(store.load_sweep(sweep_id)))
        _run_on_lab(spec, todo, sweep_id, password, lab, results, outcome, per_run, on_progress, on_run, note)
    except KeyboardInterrupt:
        outcome.status = "interrupted"
    except Exception:
        outcome.status = "failed"
        raise
    finally:
        outcome.wall_seconds = time.monotonic() - started
        with ResultsStore(results) as store:
            store.finish_sweep(sweep_id, outcome.status, {"wall_seconds": outcome.wall_seconds,
                                                          "runs_this_time": len(outcome.runs)})
    return outcome


def _collect_finished(lab: Lab, sweep_id: str, results: Path, note: Callable[[str], None]) -> None:
    """Import the sweep's runs that ended on the hosts while no coordinator was there; wait for
    those still running (they would otherwise run twice)."""
    waited = False
    while True:
        answers = lab.client.run(tasks.finished_runs, sweep_id)
        running: dict[str, list[str]] = {}
        with ResultsStore(results) as store:
            for answer in answers.values():
                if answer["bundle"] is not None:
                    document = bundle.decode(answer["bundle"], f"the runs from host {answer['host']}")
                    added, _ = exchange.import_bundle(store, document, f"the runs from host {answer['host']}",
                                                      only_new=True)
                    if added:
                        note(f"host {answer['host']}: {len(added)} run(s) of the sweep that ended meanwhile imported")
                if answer["running"]:
                    running[answer["host"]] = answer["running"]
        if not running:
            return
        if not waited:
            note("waiting for runs of this sweep still running on " + "; ".join(
                f"{host}: {', '.join(ids)}" for host, ids in sorted(running.items())))
            waited = True
        time.sleep(RESUME_WAIT)


def _recorded(spec: SweepSpec, step: LabStep, lab: Lab) -> RecordedSettings:
    """The run's settings: its cell's, on its host, tagged with the lab it ran in."""
    recorded = replace(spec.settings_for(step.cell), origins={}, host_name=step.host).recorded()
    recorded["tags"] = [*recorded.get("tags", []), *lab.tags()]
    return recorded


def _request(spec: SweepSpec, step: LabStep, sweep_id: str, run_id: str, password: str | None, lab: Lab,
             stop_event: str) -> dict[str, Any]:
    return {"run_id": run_id, "settings": _recorded(spec, step, lab),
            "series": [f"{sweep_id}:{step.cell.index}", step.repeat],
            "sweep": [sweep_id, step.cell.index], "password": password, "stop_event": stop_event}


def _run_on_lab(spec: SweepSpec, todo: list[LabStep], sweep_id: str, password: str | None, lab: Lab, results: Path,
                outcome: SweepOutcome, per_run: float, on_progress: Callable[[Progress], None] | None,
                on_run: Callable[[LabStep, RunOutcome], None] | None, note: Callable[[str], None]) -> None:
    from distributed import Event, Queue, wait

    client = lab.client
    token = secrets.token_hex(4)
    stop_event, started_queue = f"fbbench-stop-{sweep_id}-{token}", f"fbbench-started-{sweep_id}-{token}"
    queue = Queue(started_queue, client=client)
    futures: dict[Any, tuple[LabStep, str]] = {}
    by_run: dict[str, Any] = {}
    for position, step in enumerate(todo):
        run_id = new_run_id()
        while run_id in by_run:
            run_id = new_run_id()
        request = _request(spec, step, sweep_id, run_id, password, lab, stop_event) | {"started_queue": started_queue}
        future = client.submit(tasks.run, request, key=f"fbbench-run-{run_id}-{step.host}", workers=[step.host],
                               allow_other_workers=False, resources={RESOURCE: 1}, priority=len(todo) - position,
                               pure=False)
        futures[future] = (step, run_id)
        by_run[run_id] = future
    progress = Progress({host: HostState() for host in sorted({s.host for s in todo})}, 0, len(todo), 0.0)
    started: set[str] = set()  # run ids their host said it started (a task queued on a worker has not)
    durations: list[float] = []
    pending = set(futures)

    def hear_starts() -> None:
        for message in queue.get(batch=True):
            started.add(message["run_id"])
            future = by_run.get(message["run_id"])
            if future is not None and future in pending:
                step = futures[future][0]
                progress.hosts[step.host] = HostState(step, time.monotonic())

    def settle(future: Any) -> None:
        step, run_id = futures[future]
        run = _settle(future, step, run_id, spec, sweep_id, results, lab, run_id in started)
        if run is None:  # never started: its host went away first
            note(f"host {step.host} went away before run {run_id} (cell {step.cell.index}, repeat {step.repeat}) "
                 "started: left for fbbench sweep --resume")
            outcome.status = "failed"
            progress.left += 1
        else:
            outcome.runs.append(run)
            if on_run is not None:
                on_run(step, run)
            if run.status == "completed":
                progress.done += 1
            else:
                progress.failed += 1
        state = progress.hosts[step.host]
        if state.step == step:
            durations.append(time.monotonic() - state.since)
            progress.hosts[step.host] = HostState()

    shown: tuple[Any, ...] = ()
    last_shown = 0.0

    def lost(error: BaseException) -> SchedulerLost:
        flight = sorted(f"{futures[f][0].host}: cell {futures[f][0].cell.index} repeat {futures[f][0].repeat}"
                        for f in pending if futures[f][1] in started)
        # A run its host began may not have been heard of yet: the hosts know, and keep it either way.
        return SchedulerLost(f"lost the lab's scheduler at {lab.address} ({type(error).__name__}): the runs in flight "
                             "go on on their hosts, which keep them" + (f" ({'; '.join(flight)})" if flight else "")
                             + f"; {progress.text()}", sweep_id)

    try:
        while pending:
            try:
                finished, rest = wait(list(pending), timeout=1.0, return_when="FIRST_COMPLETED")
            except TimeoutError:
                finished, rest = set(), pending
            hear_starts()
            pending = set(rest)
            for future in finished:
                settle(future)
            given_up = _abandon_gone_hosts(lab, pending, futures, started)
            if given_up:
                pending -= given_up
                outcome.status = "failed"  # not every run could be made: --resume finishes it
                progress.left += len(given_up)
                for host in sorted({futures[f][0].host for f in given_up}):
                    count = sum(1 for f in given_up if futures[f][0].host == host)
                    note(f"host {host} left the lab: its {count} run(s) not yet started are left for "
                         "fbbench sweep --resume (once it is back)")
            now = time.monotonic()
            progress.eta = _eta(progress, [futures[f][0] for f in pending], statistics.median(durations)
                                if durations else per_run, now)
            key = (*((h, s.step.key if s.step else None) for h, s in progress.hosts.items()), progress.settled)
            if on_progress is not None and pending and (key != shown or now - last_shown > PROGRESS_EVERY):
                on_progress(progress)
                shown, last_shown = key, now
    except Exception as error:
        if _scheduler_gone(lab):
            raise lost(error) from None
        raise
    except KeyboardInterrupt:
        outcome.status = "interrupted"
        if _scheduler_gone(lab):  # nothing to tell the hosts through: their runs go on and are kept
            raise lost(KeyboardInterrupt()) from None
        note("stopping: the hosts' runs keep what they measured; runs not started are cancelled")
        Event(stop_event, client=client).set()
        hear_starts()
        queued = [f for f in pending if futures[f][1] not in started]
        client.cancel(queued)
        deadline = time.monotonic() + STOP_GRACE
        rest_list = [f for f in pending if f not in queued]
        while rest_list and time.monotonic() < deadline:
            try:
                finished, rest = wait(rest_list, timeout=1.0, return_when="FIRST_COMPLETED")
            except TimeoutError:
                continue
            rest_list = list(rest)
            for future in finished:
                settle(future)


def _scheduler_gone(lab: Lab) -> bool:
    """Whether the client lost its scheduler (Dask cancels every future with
    "scheduler-connection-lost" once its reconnection gives up)."""
    return str(getattr(lab.client, "status", "running")) not in ("running", "Status.running")


def _abandon_gone_hosts(lab: Lab, pending: set[Any], futures: dict[Any, tuple[LabStep, str]],
                        started: set[str]) -> set[Any]:
    """The runs not yet started on a host that left the lab: Dask would hold them for a worker
    that is not coming back under that address, so they are cancelled here and left for
    ``sweep --resume`` (nothing is recorded: they never ran). A run the host had started fails
    by itself (allowed-failures 0). Returns the futures given up."""
    gone = {futures[f][0].host for f in pending} - set(lab.workers())
    left = [f for f in pending if futures[f][0].host in gone and futures[f][1] not in started]
    if left:
        lab.client.cancel(left)
    return set(left)


def _eta(progress: Progress, pending: list[LabStep], per_run: float, now: float) -> float:
    """The sweep's time left: the busiest host's runs left, each as long as a run took so far."""
    left: dict[str, float] = {}
    for step in pending:
        state = progress.hosts.get(step.host)
        running = state is not None and state.step == step
        left[step.host] = left.get(step.host, 0.0) + (max(per_run - (now - state.since), 0.0) if running and state
                                                      else per_run)
    return max(left.values(), default=0.0)


def _settle(future: Any, step: LabStep, run_id: str, spec: SweepSpec, sweep_id: str, results: Path,
            lab: Lab, started: bool) -> RunOutcome | None:
    """One finished task: its bundle imported, or the run recorded as failed here (its host
    refused it, or went away during it); None when it never started (nothing to record)."""
    answer: dict[str, Any] | None = None
    problem = None
    if future.status == "finished":
        answer = future.result()
    elif not started:
        return None
    else:
        error = future.exception()
        problem = "failed", (f"lab: host {step.host} went away during the run ({type(error).__name__}: "
                             f"{said_shortly(error)}); fbbench sweep --resume runs it there again once it is back")
    with ResultsStore(results) as store:
        if answer is not None and answer.get("bundle") is not None:
            document = bundle.decode(answer["bundle"], f"run {run_id} from host {step.host}")
            exchange.import_bundle(store, document, f"run {run_id} from host {step.host}", only_new=True)
            return RunOutcome(run_id, answer["status"], answer.get("failure"), results, answer.get("hint"),
                              repeat_index=step.repeat)
        if answer is not None:
            tail = (answer.get("log_tail") or "").strip().splitlines()[-3:]
            problem = answer["status"], f"lab: on host {step.host}: {answer.get('failure') or 'no reason given'}" + (
                f" ({' / '.join(tail)})" if tail and not answer.get("failure") else "")
        assert problem is not None
        status, failure = problem
        _record_here(store, spec, step, sweep_id, run_id, lab, status, failure)
    return RunOutcome(run_id, status, failure, results, repeat_index=step.repeat)


def said_shortly(error: BaseException, width: int = 300) -> str:
    """Dask's message on one line, at most ``width`` characters, never cut inside a word."""
    return textwrap.shorten(" ".join(str(error).split()), width, placeholder=" …")


def _record_here(store: ResultsStore, spec: SweepSpec, step: LabStep, sweep_id: str, run_id: str, lab: Lab,
                 status: str, failure: str) -> None:
    """A run the host never recorded (it died, refused the run, or it was cancelled): recorded in
    the coordinator's store under its id, on its host, so that the sweep shows it and resumes it."""
    from fbbench.workloads.spec import load_workload

    recorded = _recorded(spec, step, lab)
    workload = load_workload(recorded["workload"], recorded["scale"]).name
    store.begin_run(run_id, workload, recorded, {"name": step.host},
                    f"{sweep_id}:{step.cell.index}", step.repeat, sweep_id, step.cell.index)
    store.finish_run(run_id, status, failure)

