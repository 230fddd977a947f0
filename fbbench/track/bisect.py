"""``fbbench track bisect``: the first bad build between a good one and a bad one.

The builds are registered engines, named in their order (oldest first); the good and the bad one
are its ends. Before any step, the order is checked against the builds' own version and build
numbers (a build number going back is refused), and the ends are measured against each other:
ends that do not differ in the figure leave nothing to bisect, and it says so.

Each step takes the build halfway between the last good and the first bad one known, and measures
it as time-shared pair series (``compare --paired``) against both ends — so the machine's drift
divides out of every verdict. A build that differs from neither end, or from both, or whose pairs
do not resolve, cannot be placed: the bisection says so and stops, naming the range the first bad
build still lies in, never guessing. A build whose runs fail (it does not start) is skipped and
said, and the next one halfway is taken. About log2(N) steps for N builds.

"Differs" means: the 95 % interval of the pairs' median ratio excludes no change, and the ratio is
at least the suite's minimum magnitude away from 1 (``counter_min_magnitude`` for the engine's work
per unit, ``min_magnitude`` for the rest) — a counter that moves 0.1 % between two versions that
share the plan is not where the change lies.

A pair series already in the results store is used again, not measured again, when it was made by
a bisection of the same suite and benchmark on this host, between the same two builds (their
binaries and firebird.conf, whatever their names), on the same workload files, settings, turn and
fbbench version, with at least as many complete pairs: a bisection again with another figure, or
after a Ctrl-C, measures only what it has not got (``--remeasure`` measures everything anew). Every
pair ran time-shared, so its ratio is as free of the day's drift as a new one would be.
"""

from __future__ import annotations

import hashlib
import json
import math
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fbbench.analysis import stats
from fbbench.analysis import track as tracking
from fbbench.errors import FbbenchError
from fbbench.runner.run import UNTOLD, Notices
from fbbench.runner.settings import MAX_RUNS
from fbbench.store import ResultsStore
from fbbench.track.suite import Benchmark, Suite


@dataclass
class Verdict:
    """One pair series: the build against one end, on the figure."""

    build: str
    against: str
    ratio: float
    low: float
    high: float
    pairs: int
    differs: bool
    text: str


@dataclass
class Step:
    build: str
    index: int
    verdicts: list[Verdict] = field(default_factory=list)
    outcome: str = ""  # good / bad / undecided / skipped
    why: str = ""


@dataclass
class Bisection:
    figure: str
    builds: list[str]
    ends: Verdict | None = None
    steps: list[Step] = field(default_factory=list)
    first_bad: str | None = None
    stopped: str | None = None  # why it stopped without an answer
    interrupted: bool = False
    lo: int = 0
    hi: int = 0

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 0 if self.first_bad is not None else 1


def _build_order(names: list[str]) -> list[tuple[int, ...]]:
    """Each build's version and build number, as numbers (from its own files)."""
    from fbbench.engines import EmbeddedEngine, parse_engine
    from fbbench.engines.builds import build_number, find_files, read_version
    from fbbench.engines.runtime import engine_files

    keys = []
    for name in names:
        engine = parse_engine(name)
        if not isinstance(engine, EmbeddedEngine):
            raise FbbenchError(f"{name} is {engine.label}: a bisection time-shares embedded engines",
                               hint="register each build with fbbench engines add NAME PATH (embedded)")
        root = engine_files(engine)  # refused when a build's files are gone or changed since it was added
        mark = read_version(find_files(root), name)
        number = build_number(mark.build)
        keys.append((*(int(p) for p in mark.version.split(".")), int(number) if number else 0))
    return keys


def check_order(names: list[str]) -> None:
    """Refuse builds not in the order given (by version and build number, oldest first), and a
    build named twice."""
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise FbbenchError(f"a bisection names each build once: {', '.join(twice)} given more than once",
                           hint="name the builds between the ends once each, oldest first")
    keys = _build_order(names)
    for position in range(1, len(names)):
        if keys[position] < keys[position - 1]:
            earlier, later = (".".join(map(str, key)) for key in (keys[position - 1], keys[position]))
            raise FbbenchError(f"the builds are not in the order given: {names[position]} ({later}) comes after "
                               f"{names[position - 1]} ({earlier})",
                               hint="name them oldest first, from the good build to the bad one")


def plan(suite: Suite, benchmark: str | None, good: str, bad: str, builds: list[str], figure: str,
         pairs: int | None, results: Path | None, workdir: Path | None) -> tuple[Benchmark, list[str], str, int]:
    """Everything a bisection can be refused for, before its first pair: the benchmark, the
    builds (embedded, in order), the figure (one its workload produces), the pairs; and the ends
    as a time-shared pair. Returns the benchmark, the builds (good first, bad last), the figure's
    name and the pairs a comparison."""
    from dataclasses import replace

    from fbbench.runner.paired import check_counts, check_pair
    from fbbench.track.points import base_settings
    from fbbench.workloads.spec import load_workload

    chosen = suite.benchmark(benchmark) if benchmark else suite.benchmarks[0]
    middle = [name for name in builds if name]
    if middle and middle[0] == good:
        middle = middle[1:]
    if middle and middle[-1] == bad:
        middle = middle[:-1]
    names = [good, *middle, bad]
    count = pairs if pairs is not None else chosen.pairs
    check_counts(count, suite.turn or 0.1)
    if count > MAX_RUNS:
        raise FbbenchError(f"--pairs must be at most {MAX_RUNS:,} a comparison, got {count:,}")
    check_order(names)
    identity = _build_identity(good)
    if identity is not None and identity == _build_identity(bad):
        raise FbbenchError(f"{good} and {bad} are one build under two names (the same binaries and firebird.conf): "
                           "nothing to bisect",
                           hint="name as the bad end a build whose files differ from the good one's")
    ends = [base_settings(suite, chosen, name, results, workdir, 1) for name in (good, bad)]
    check_pair(replace(ends[0], origins=ends[0].origins), replace(ends[1], origins=ends[1].origins))
    workload = load_workload(ends[1].workload, ends[1].scale)
    fixed = ends[1].transactions is not None or workload.counted is not None
    name = tracking.resolve_figures([figure], workload, fixed, "--figure")[0]
    return chosen, names, name, count


def _differs(ratio: stats.Ratio, magnitude: float) -> bool:
    return ratio.resolved and abs(ratio.ratio - 1) >= magnitude


def _build_identity(name: str) -> dict[str, str] | None:
    """What makes a build the same build whatever its name: its binaries and its firebird.conf."""
    from fbbench.engines import EmbeddedEngine, parse_engine
    from fbbench.engines.binaries import engine_binaries
    from fbbench.engines.runtime import engine_files

    engine = parse_engine(name)
    binaries = engine_binaries(engine)
    if not binaries or not binaries.get("sha256") or not isinstance(engine, EmbeddedEngine):
        return None
    conf = engine_files(engine) / "firebird.conf"
    return {"binaries": str(binaries["sha256"]),
            "conf": hashlib.sha256(conf.read_bytes()).hexdigest() if conf.is_file() else ""}


def pairs_key(suite: Suite, benchmark: Benchmark, settings: Any, build: str, against: str, turn: float) -> str | None:
    """The tag of a bisection's pair series of ``build`` (B) against ``against`` (A): equal exactly
    when a stored series may stand for a new one (see the module's text); None when a build's
    files cannot be told (then nothing is used again)."""
    from fbbench import __version__
    from fbbench.workloads.spec import load_workload

    identities = {"A": _build_identity(against), "B": _build_identity(build)}
    if None in identities.values():
        return None
    recorded = {key: value for key, value in settings.recorded().items()
                if key not in ("engine", "results", "workdir", "tags", "timeshare")}
    files = load_workload(settings.workload, settings.scale).files
    material = {"suite": suite.name, "benchmark": benchmark.name, "host": socket.gethostname(), "turn": turn,
                "fbbench": __version__, "settings": recorded, "builds": identities,
                "workload": {name: hashlib.sha256(text.encode()).hexdigest() for name, text in sorted(files.items())}}
    digest = hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()
    return f"track-bisect-pairs:{digest[:24]}"


@dataclass
class StoredPairs:
    """A pair series a bisection made earlier: its complete pairs' runs, A's and B's in pair order."""

    runs_a: list[str]
    runs_b: list[str]
    made_at: float


def stored_pairs(store: ResultsStore, key: str, pairs: int) -> StoredPairs | None:
    """The latest pair series tagged ``key`` with at least ``pairs`` complete pairs; None when the
    store has none."""
    sides_of: dict[str, dict[str, tuple[str, float, str]]] = {}  # pair id → side → (run, started, series)
    for run_id, started, status, series_id, settings_json in store.db.execute(
            "select run_id, started_at, status, series_id, settings_json from runs where settings_json like ?",
            (f"%{key}%",)):
        settings = json.loads(settings_json or "{}")
        shared = settings.get("timeshare") or {}
        if key in (settings.get("tags") or []) and status == "completed" and shared.get("pair"):
            sides_of.setdefault(shared["pair"], {})[shared.get("side", "")] = (run_id, started, str(series_id))
    series: dict[str, list[tuple[float, str, str]]] = {}  # B's series → (B's start, A's run, B's run) a pair
    for sides in sides_of.values():
        if "A" in sides and "B" in sides:
            run_b, started_b, series_b = sides["B"]
            series.setdefault(series_b, []).append((started_b, sides["A"][0], run_b))
    long_enough = [sorted(found) for found in series.values() if len(found) >= pairs]
    if not long_enough:
        return None
    chosen = max(long_enough, key=lambda found: found[-1][0])[-pairs:]
    return StoredPairs([run_a for _, run_a, _ in chosen], [run_b for _, _, run_b in chosen], chosen[-1][0])


def _verdict(store: ResultsStore, build: str, against: str, figure: str, run_ids_a: list[str],
             run_ids_b: list[str], magnitude: float) -> Verdict:
    runs_a = [store.load_run(run_id) for run_id in run_ids_a]
    runs_b = [store.load_run(run_id) for run_id in run_ids_b]
    complete = len(run_ids_b)
    read = tracking.read_point([figure], runs_b, runs_a)[figure]
    samples = read.get("samples")
    if not samples:
        return Verdict(build, against, math.nan, math.nan, math.nan, complete, False,
                       f"{build} against {against}: no ratio ({read.get('missing', 'no value')})")
    ratio = stats.ratio_of_ratios(samples)
    differs = _differs(ratio, magnitude)
    interval = (f"95 % CI {ratio.low:.4f}–{ratio.high:.4f}" if ratio.has_interval
                else f"no interval: {ratio.note}")
    word = "differs" if differs else ("the same within the magnitude" if ratio.resolved else "no difference resolved")
    return Verdict(build, against, ratio.ratio, ratio.low, ratio.high, complete, differs,
                   f"{build} / {against} = {ratio.ratio:.4f} ({interval}, {complete} pair(s)): {word}")


def bisect(suite: Suite, benchmark: Benchmark, figure: str, names: list[str], pairs: int, results: Path | None,
           workdir: Path | None, notices: Notices = UNTOLD,
           on_step: Callable[[str], None] | None = None, remeasure: bool = False) -> Bisection:
    """Bisect ``names`` (good first, bad last) on ``figure`` of ``benchmark``; a pair series the
    store holds is used again unless ``remeasure``."""
    import time

    from fbbench import paths
    from fbbench.runner.paired import execute_pairs
    from fbbench.runner.timeshare import TURN_SECONDS

    counters = set(tracking.counter_names().values())
    magnitude = suite.counter_method.min_magnitude if figure in counters else suite.method.min_magnitude
    result = Bisection(figure, names, lo=0, hi=len(names) - 1)
    say = on_step or (lambda _text: None)

    turn = suite.turn or TURN_SECONDS

    def settings(engine: str, key: str | None = None) -> Any:
        tags = [f"track-bisect:{suite.name}:{benchmark.name}", *([key] if key else [])]
        overrides: dict[str, Any] = {"tags": tags}
        if results is not None:
            overrides["results"] = str(results)
        if workdir is not None:
            overrides["workdir"] = str(workdir)
        return benchmark.settings(engine, **overrides)

    def measure(build: str, against: str) -> Verdict | str:
        """A pair series of ``build`` (B) against ``against`` (A) — one the store holds, or a new
        one — or why it did not complete."""
        key = pairs_key(suite, benchmark, settings(build), build, against, turn)
        stored = Path(results or paths.default_results()).expanduser()
        if key is not None and not remeasure and stored.is_file():
            with ResultsStore(stored) as store:
                found = stored_pairs(store, key, pairs)
                if found is not None:
                    verdict = _verdict(store, build, against, figure, found.runs_a, found.runs_b, magnitude)
                    made = time.strftime("%Y-%m-%d %H:%M", time.localtime(found.made_at))
                    verdict.text += f" [pairs of {made}, used again]"
                    return verdict
        outcome = execute_pairs(settings(against, key), settings(build, key), pairs, turn=turn, notices=notices)
        if outcome.interrupted:
            raise KeyboardInterrupt
        if outcome.failure or not all(pair.complete for pair in outcome.pairs):
            return outcome.failure or "a pair did not complete"
        ids: dict[str, list[str]] = {"A": [], "B": []}
        for pair in outcome.pairs:
            for label, side in ids.items():
                run = pair.outcomes[label]
                assert run is not None  # every pair completed: both its runs are there
                side.append(run.run_id)
        with ResultsStore(outcome.results) as store:
            return _verdict(store, build, against, figure, ids["A"], ids["B"], magnitude)

    try:
        ends = measure(names[-1], names[0])
        if isinstance(ends, str):
            result.stopped = f"the ends could not be measured: {ends}"
            return result
        result.ends = ends
        say(f"ends: {ends.text}")
        if not ends.differs:
            result.stopped = f"the ends do not differ in {figure}: {ends.text} — nothing to bisect"
            return result
        candidates = list(range(1, len(names) - 1))
        while result.hi - result.lo > 1:
            inside = [i for i in candidates if result.lo < i < result.hi]
            if not inside:
                break  # every build between was skipped: the first bad one is the bad end of the range
            middle = inside[len(inside) // 2]
            step = Step(names[middle], middle)
            result.steps.append(step)
            verdicts = []
            for end in (names[result.lo], names[result.hi]):
                measured = measure(names[middle], end)
                if isinstance(measured, str):
                    step.outcome, step.why = "skipped", f"its runs failed: {measured}"
                    break
                verdicts.append(measured)
            step.verdicts = verdicts
            if step.outcome == "skipped":
                candidates.remove(middle)
                say(f"step {len(result.steps)}: {names[middle]} skipped — {step.why}")
                continue
            against_good, against_bad = verdicts
            if not against_good.differs and against_bad.differs:
                step.outcome, result.lo = "good", middle
            elif against_good.differs and not against_bad.differs:
                step.outcome, result.hi = "bad", middle
            else:
                step.outcome = "undecided"
                step.why = ("it differs from both ends: the change is not one step between them"
                            if against_good.differs else
                            "it differs from neither end: the pairs do not resolve where it lies")
                say(f"step {len(result.steps)}: {names[middle]}: {against_good.text}; {against_bad.text} — cannot "
                    f"decide: {step.why}")
                result.stopped = (f"cannot decide at {names[middle]}: {step.why}; the first bad build lies after "
                                  f"{names[result.lo]} and at or before {names[result.hi]}")
                return result
            say(f"step {len(result.steps)}: {names[middle]} is {step.outcome}: {against_good.text}; "
                f"{against_bad.text}")
        result.first_bad = names[result.hi]
    except KeyboardInterrupt:
        result.interrupted = True
        result.stopped = (f"interrupted: the first bad build lies after {names[result.lo]} and at or before "
                          f"{names[result.hi]}")
    return result
