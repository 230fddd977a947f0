"""``fbbench compare --paired SPEC_A SPEC_B``: A and B run at the same time, in pairs, time-shared.

Each pair is one run of A and one of B, started together, each on its own copy of the
database, each in its own engine process. Once both are connected they meet at a start barrier
and measure the same seconds, their engine processes taking turns of 0.1 s (the other one
stopped): :mod:`fbbench.runner.timeshare`. Whatever the machine does during those seconds, it
does to both, so the ratio B/A of one pair is free of the drift between runs that a 2-core VM
shows (±20 % from one run to the next). Who takes the first turn alternates from pair to pair;
both runs of a pair draw the same seed (the same units in the same order) unless a spec fixes
one. The pairs run one after another and are recorded as two series in the results store, each
run with its pair (``settings.timeshare``): :func:`fbbench.analysis.subjects.pairs_of` finds
them again, so ``fbbench compare SERIES_A SERIES_B`` later compares them pair by pair too.

Ending: Ctrl-C (or SIGTERM) stops both runs of the pair in progress — each keeps what it
measured, as a run does — and no further pair starts. A run that fails (its engine process
died, its workload failed) stops the other run of its pair, which records why, and no further
pair starts. The parent waits for each run on a thread of its own; this module's main-thread
code forwards the stop signals, since only the main thread can handle them — counted by a
handler that raises nothing, and acted on by every wait of the coordinator.
"""

from __future__ import annotations

import contextlib
import secrets
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any

from fbbench import signals
from fbbench.engines import EmbeddedEngine, platform
from fbbench.engines import template as engine_templates
from fbbench.engines.child import EngineProcess
from fbbench.errors import FbbenchError, Interrupted
from fbbench.runner import barrier, timeshare
from fbbench.runner.run import UNTOLD, Checked, Notices, RunOutcome, check, execute, new_run_id, new_series_id
from fbbench.runner.settings import RunSettings
from fbbench.store import ResultsStore

LABELS = ("A", "B")
# The common zero lies this far ahead of the moment both runs hold at the barrier: each must
# have had a turn to read it before it comes (two turns, and a margin for a busy machine).
START_TURNS_AHEAD = 2
START_MARGIN = 0.05
POLL_SECONDS = 0.01


@dataclass
class PairResult:
    """One pair: its runs (a side's run is None when it never began), what the turns measured."""

    index: int
    pair_id: str
    first: str  # the side that took the first turn
    outcomes: dict[str, RunOutcome | None]
    shared: dict[str, Any] | None = None  # Turns.facts(): None when the pair never reached its start
    failure: str | None = None  # why the pair did not complete, naming the run
    interrupted: bool = False

    @property
    def complete(self) -> bool:
        return all(o is not None and o.status == "completed" for o in self.outcomes.values())


@dataclass
class PairedOutcome:
    series: dict[str, str]  # label → series id
    results: Path
    pairs: list[PairResult] = field(default_factory=list)
    stopped: bool = False  # the user stopped the pairs (Ctrl-C, SIGTERM), perhaps between two of them
    stopped_because: str | None = None  # what ``stop_after`` said when it ended the pairs

    @property
    def interrupted(self) -> bool:
        return self.stopped or any(p.interrupted for p in self.pairs)

    @property
    def failure(self) -> str | None:
        return next((p.failure for p in self.pairs if p.failure and not p.interrupted), None)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return Interrupted.exit_code
        return 1 if self.failure else 0


def check_pair(a: RunSettings, b: RunSettings, *, force: bool = False) -> tuple[Checked, Checked]:
    """Everything that can be refused before a pair runs, with one line saying why."""
    checked = {}
    for label, settings in zip(LABELS, (a, b), strict=True):
        try:
            checked[label] = check(settings)
        except FbbenchError as error:
            raise FbbenchError(f"{label}: {error.message}", hint=error.hint) from None
        engine = checked[label].engine
        if not isinstance(engine, EmbeddedEngine):
            raise FbbenchError(f"{label}: --paired time-shares the engine processes fbbench runs itself, which only an "
                               f"embedded engine is; {settings.where('engine')} is {engine.label}",
                               hint="use an embedded engine (5.0, 4.0, 3.0), or compare servers with run --repeat")
        if settings.repeat != 1:
            raise FbbenchError(f"{label}: {settings.where('repeat')} {settings.repeat}: with --paired the number of "
                               "pairs is --pairs N", hint="remove repeat from the spec")
        for name in ("json", "report"):
            if getattr(settings, name):
                raise FbbenchError(f"{label}: {settings.where(name)}: --paired writes one comparison, not a file per "
                                   "run", hint="give compare's own --json / --report")
    if (a.transactions is None) != (b.transactions is None):
        fixed, timed = (a, b) if a.transactions is not None else (b, a)
        raise FbbenchError(f"A and B must both be fixed work or both timed: {fixed.where('transactions')} is "
                           f"{fixed.transactions} per attachment, the other side runs {timed.duration:g} s",
                           hint="fixed work is judged by the seconds it took, a timed run by its rate")
    # Fixed work ends when its work is done, each side timed by its own turns (timeshare.py).
    same = ("interval",) if a.transactions is not None else ("warmup", "duration", "interval")
    for name in same:
        if getattr(a, name) != getattr(b, name):
            raise FbbenchError(f"A and B must measure the same seconds: {name} is {getattr(a, name):g} s in A "
                               f"({a.where(name)}) and {getattr(b, name):g} s in B ({b.where(name)})",
                               hint="give both specs the same warm-up, duration and interval")
    if checked["A"].results != checked["B"].results:
        raise FbbenchError(f"A and B name different results stores ({checked['A'].results} and "
                           f"{checked['B'].results}): both series go into one",
                           hint="give the same results in both specs, or compare's --results")
    names = {label: c.workload.name for label, c in checked.items()}
    if names["A"] != names["B"] and not force:
        raise FbbenchError(f"different workloads: A runs {names['A']} and B runs {names['B']} — their figures "
                           "measure different work, not Firebird",
                           hint="--force compares them anyway (then name the axis, e.g. --axis workload)")
    return checked["A"], checked["B"]


class _StopRequest:
    """Ctrl-C / SIGTERM while pairs run, counted by a handler that raises nothing.

    A KeyboardInterrupt raised wherever the coordinator happens to be could land halfway through
    a turn, a lock, or a wait for a run's thread (which CPython before 3.13 then takes for ended:
    see :class:`fbbench.signals.Thread`). Counting is all the handler does; the coordinator's
    waits (none longer than 0.2 s) act on the count.
    """

    def __init__(self) -> None:
        self.signals = 0

    def handle(self, _signum: int, _frame: FrameType | None) -> None:
        self.signals += 1

    @property
    def requested(self) -> bool:
        return self.signals > 0


class _Stop:
    """One pair's runs, stopped together: on a Ctrl-C (each one forwarded to every engine child)
    or when one of the two ended first."""

    def __init__(self, request: _StopRequest) -> None:
        self.request = request
        self.forwarded = 0  # how many of the request's signals went to the runs
        self.stopping = False
        self.processes: dict[str, EngineProcess] = {}
        self.lock = threading.Lock()

    def started(self, label: str, process: EngineProcess) -> None:
        """A run's engine child is running (called on the run's thread)."""
        with self.lock:
            self.processes[label] = process
            if self.stopping or self.request.requested:
                stop_run(process)

    def all(self) -> None:
        self.stopping = True
        with self.lock:
            for process in self.processes.values():
                stop_run(process)

    def forward(self) -> bool:
        """Main thread, in every wait: a new Ctrl-C goes to both runs; once stopping, a stopped
        run is continued again. True once the user asked to stop.

        Continued again, because a run about to stop itself at the start barrier
        (:func:`barrier.arrive`) may take our SIGCONT first and its own SIGSTOP after it, with
        the SIGINT still pending: stopped for good unless continued again."""
        signals_seen = self.request.signals
        if signals_seen > self.forwarded:
            self.forwarded = signals_seen
            self.all()
        elif self.stopping:
            with self.lock:
                for process in self.processes.values():
                    platform.continue_group(process.pid)
        return self.request.requested


def stop_run(process: EngineProcess) -> None:
    """Stop one run as Ctrl-C would: SIGINT to its engine child, then continue its process group
    in case it is stopped (a stopped process acts on a signal only once continued)."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGINT)
    platform.continue_group(process.pid)


def check_counts(pairs: int, turn: float) -> None:
    """--pairs and --turn, refused before anything is said or run."""
    if pairs < 1:
        raise FbbenchError(f"--pairs must be at least 1, got {pairs}")
    if turn <= 0:
        raise FbbenchError(f"--turn must be longer than 0 seconds, got {turn:g}")


def execute_pairs(a: RunSettings, b: RunSettings, pairs: int, *, turn: float = timeshare.TURN_SECONDS,
                  force: bool = False, notices: Notices = UNTOLD,
                  on_pair: Callable[[PairResult], None] | None = None,
                  stop_after: Callable[[PairedOutcome], str | None] | None = None,
                  recorded: dict[str, Any] | None = None) -> PairedOutcome:
    """At most ``pairs`` pairs of A and B, time-shared; stops at the first pair that does not
    complete, or once ``stop_after`` (asked after each complete pair) gives a reason to.
    ``recorded`` goes into every run's ``settings.timeshare`` (what the pairs ran under)."""
    engine_templates.several()
    check_counts(pairs, turn)
    checked_a, _ = check_pair(a, b, force=force)
    outcome = PairedOutcome({label: new_series_id() for label in LABELS}, checked_a.results)
    request = _StopRequest()
    with signals.handled_by(request.handle):
        for index in range(1, pairs + 1):
            if request.requested:
                break  # a Ctrl-C between pairs: no further pair starts
            first = LABELS[(index - 1) % 2]  # alternates, so that neither side always follows the other
            result = _run_pair(index, {"A": a, "B": b}, outcome.series, first, turn, checked_a.workdir.path,
                               notices, request, recorded or {})
            outcome.pairs.append(result)
            if on_pair is not None:
                on_pair(result)
            if not result.complete:
                break
            if stop_after is not None and (reason := stop_after(outcome)) is not None:
                outcome.stopped_because = reason
                break
        outcome.stopped = request.requested
    return outcome


def _run_pair(index: int, sides: dict[str, RunSettings], series: dict[str, str], first: str, turn: float,
              workdir: Path, notices: Notices, request: _StopRequest, recorded: dict[str, Any]) -> PairResult:
    pair_id = "p" + new_run_id()
    seed = secrets.randbits(63)  # both runs draw the same units, unless a spec fixes the seed
    result = PairResult(index, pair_id, first, dict.fromkeys(LABELS))
    stop = _Stop(request)
    errors: dict[str, str] = {}
    began: dict[str, threading.Event] = {label: threading.Event() for label in LABELS}
    with tempfile.TemporaryDirectory(prefix="pair-", dir=workdir) as directory:
        barriers = {label: barrier.Barrier.in_directory(Path(directory), label) for label in LABELS}

        def work(label: str) -> None:
            settings = replace(sides[label], origins=sides[label].origins,
                               timeshare={"turn": turn, "runs": len(LABELS), "pair": pair_id, "side": label,
                                          "first": label == first, **recorded})

            def engine_started(process: EngineProcess) -> None:
                stop.started(label, process)
                began[label].set()

            try:
                run = execute(settings, None, notices, series=(series[label], index), drawn_seed=seed,
                              on_engine=engine_started, barrier=barriers[label].to_json())
                result.outcomes[label] = replace(run, repeat_index=index)
            except FbbenchError as error:  # refused before its engine ran (checked before: rare)
                errors[label] = error.message
            except BaseException as error:  # a bug: the pair must still end
                errors[label] = f"{type(error).__name__}: {error}"
            finally:
                began[label].set()

        threads = {label: signals.Thread(target=work, args=(label,), name=f"fbbench-pair-{label}", daemon=True)
                   for label in LABELS}
        # One after the other up to their engine children: the parent side of a run (the
        # clean-up of what killed runs left, the runtime root) is not meant to run twice at once.
        for label in LABELS:
            if stop.forward():
                break
            threads[label].start()
            while not began[label].wait(0.1):
                stop.forward()
            if threads[label].ended.is_set():
                break  # it ended before its engine ran: the other is not started
        if not stop.forward() and _meet(stop, barriers, threads):
            fixed_work = sides["A"].transactions is not None
            _share(result, stop, barriers, first, turn, None if fixed_work else sides["A"].warmup + sides["A"].duration)
        _join(threads, stop)
    result.interrupted = request.requested
    _conclude(result, errors)
    return result


def _share(result: PairResult, stop: _Stop, barriers: dict[str, barrier.Barrier], first: str, turn: float,
           seconds: float | None) -> None:
    """The common zero, then turns until the measured period's end — ``seconds`` after the zero,
    or (None: fixed work) once both runs said theirs ended; the turns' facts in ``result``."""
    zero = timeshare.start_in(START_TURNS_AHEAD * turn + START_MARGIN)
    barrier.write_go(list(barriers.values()), zero)
    turns = timeshare.Turns.of([(label, stop.processes[label].pid) for label in LABELS], turn,
                               logs={label: barriers[label].turns for label in LABELS})
    finished = False
    try:
        def measured(label: str) -> bool:
            return barriers[label].measured_until() is not None

        # A run may end once its measured period has (fixed work: the other's may go on).
        finished = turns.share(None if seconds is None else zero + seconds, first=LABELS.index(first),
                               abort=lambda: stop.forward() or _any_gone(stop, measured),
                               done=lambda member: measured(member.name))
    finally:
        turns.release()
        result.shared = turns.facts() | {"zero_wall": time.time() + (zero - time.monotonic()), "complete": finished}


def _meet(stop: _Stop, barriers: dict[str, barrier.Barrier], threads: dict[str, signals.Thread]) -> bool:
    """Wait until both runs hold at the start barrier (True); False when one ended first (it
    failed, or was refused), and the other is then stopped, or when the user stopped them."""
    while not stop.forward():
        if all(label in stop.processes and barriers[label].reached(stop.processes[label].pid) for label in LABELS):
            return True
        if any(threads[label].ended.is_set() or (label in stop.processes and
                                                  not platform.process_alive(stop.processes[label].pid))
               for label in LABELS):
            stop.all()
            return False
        time.sleep(POLL_SECONDS)
    return False


def _any_gone(stop: _Stop, measured: Callable[[str], bool]) -> bool:
    """A run's engine process ended before its measured period did: it failed."""
    return any(not platform.process_alive(process.pid) and not measured(label)
               for label, process in stop.processes.items())


def _join(threads: dict[str, signals.Thread], stop: _Stop) -> None:
    """Wait for both runs to end; a Ctrl-C meanwhile stops them (again), as a run's parent does."""
    for thread in threads.values():
        if thread.ident is None:
            continue  # never started
        while not thread.ended.wait(0.2):
            stop.forward()


def _conclude(result: PairResult, errors: dict[str, str]) -> None:
    """Why the pair did not complete, naming the run; a run stopped because its partner failed says so."""
    if result.complete:
        _record_turns(result)
        return
    if result.interrupted:
        result.failure = "interrupted by the user"
        _record_turns(result)
        return
    failed = next((label for label in LABELS if errors.get(label) or (result.outcomes[label] is not None and
                  result.outcomes[label].status == "failed")), None)  # type: ignore[union-attr]
    if failed is None:  # neither failed, and no Ctrl-C here: one was stopped from outside
        failed = next(label for label in LABELS if result.outcomes[label] is None or
                      result.outcomes[label].status != "completed")  # type: ignore[union-attr]
    run = result.outcomes[failed]
    why = errors.get(failed) or (run.failure if run is not None else None) or "no reason recorded"
    named = f"run {run.run_id} ({failed})" if run is not None else f"{failed}"
    result.failure = f"pair {result.index}: {named} failed: {why}"
    for label in LABELS:
        other = result.outcomes[label]
        if label != failed and other is not None and other.status != "completed":
            with ResultsStore(other.results) as store:
                store.finish_run(other.run_id, other.status, f"stopped: the other run of its pair ({named}) "
                                 f"failed: {why}")
            result.outcomes[label] = replace(other, failure=f"stopped: the other run of its pair ({named}) failed")
    _record_turns(result)


def _record_turns(result: PairResult) -> None:
    """Each run's share of the turns, with its partner: evidence that the runs alternated."""
    runs = {label: o for label, o in result.outcomes.items() if o is not None}
    if not runs or result.shared is None:
        return
    members = {m["name"]: m for m in result.shared["members"]}
    with ResultsStore(next(iter(runs.values())).results) as store:
        for label, run in runs.items():
            partner = runs.get(LABELS[1 - LABELS.index(label)])
            store.record_phase(run.run_id, "timeshare", result.shared["started_at"] or time.time(),
                               result.shared["seconds"],
                               {"pair": result.pair_id, "side": label, "first": label == result.first,
                                "partner": partner.run_id if partner else None, "turn": result.shared["turn"],
                                "zero_at": result.shared["zero_wall"], "complete": result.shared["complete"],
                                **{k: v for k, v in members.get(label, {}).items() if k != "name"}})

