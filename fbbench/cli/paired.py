"""``fbbench compare --paired``: its two run spec files run as time-shared pairs
(:mod:`fbbench.runner.paired`), announced with their planned time, a line per pair; the two series
they made go back to ``compare``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from fbbench import paths
from fbbench.cli.common import _notices, _print_error, _print_static_lint, console
from fbbench.errors import FbbenchError

if TYPE_CHECKING:  # imported where used: every command starts without the analysis (numpy)
    from fbbench.analysis.sequential import Design, Look

DEFAULT_PAIRS = 6
UNLIMITED_PAIRS = 10**9  # --until-resolved without --pairs: the time limit ends the pairs


def run_pairs(specs: list[str], pairs: int | None, turn: float, force: bool, results: Path | None,
              workdir: Path | None, yes: bool, design: Design | None = None) -> tuple[list[str], Path, int]:
    """compare --paired: run the pairs — ``pairs`` of them, or with a ``design`` until resolved
    (``pairs`` then the most it may run); the two series to compare (none when no pair ran), the
    results store, and the exit code the command ends with."""
    from fbbench.analysis import sequential
    from fbbench.runner import limits, until_resolved
    from fbbench.runner.paired import check_counts, execute_pairs
    from fbbench.runner.run import static_findings
    from fbbench.runner.settings import from_sources

    check_counts(DEFAULT_PAIRS if pairs is None else pairs, turn)
    if len(specs) != 2:
        raise FbbenchError(f"--paired takes two run spec files, A and B; got {len(specs)}",
                           hint="e.g. fbbench compare --paired base.toml new.toml --pairs 8")
    sides = []
    for label, text in zip("AB", specs, strict=True):
        spec = Path(text)
        if not spec.is_file():
            raise FbbenchError(f"{label}: no run spec file {spec}" + (" (it is a directory)" if spec.is_dir() else ""),
                               hint="--paired compares two run spec files (TOML, as fbbench run --spec reads)")
        try:
            sides.append(from_sources(spec, {"results": str(results) if results else None,
                                             "workdir": str(workdir) if workdir else None}))
        except FbbenchError as error:
            message = error.message if str(spec) in error.message else f"{spec}: {error.message}"
            raise FbbenchError(f"{label}: {message}", hint=error.hint) from None
    a, b = sides
    yes = yes or (a.yes and b.yes)  # both specs may say it
    a.yes = b.yes = yes
    per_pair, how = _pair_seconds(a, b, Path(a.results or paths.default_results()).expanduser())
    if design is not None:
        assert design.max_seconds is not None  # design_of always sets one
        planned, plan = design.max_seconds, f"--max-time {limits.duration_text(design.max_seconds)}, pairs of {how}"
        if per_pair is not None and per_pair > design.max_seconds:
            raise FbbenchError(f"--max-time {limits.duration_text(design.max_seconds)} is shorter than one pair "
                               f"(about {limits.duration_text(per_pair)}: {how})",
                               hint="give a --max-time of several pairs, or shorter runs")
    else:
        pairs = DEFAULT_PAIRS if pairs is None else pairs
        planned, plan = pairs * (per_pair or 0.0), f"{pairs:,} pair(s) of {how}"
    limits.check_planned(planned, "compare --paired", plan, yes)
    for label, settings in zip("AB", sides, strict=True):
        findings = static_findings(settings)
        if findings:
            console.print(f"{label}:", highlight=False)
            _print_static_lint(findings)

    def on_pair(pair: Any) -> None:
        console.print(_pair_line(pair, pairs), highlight=False, soft_wrap=True)

    if design is not None:
        until = until_resolved.UntilResolved(design, on_look=lambda look: console.print(
            _look_line(look, design), highlight=False, soft_wrap=True))
        most = f", at most {pairs:,} pair(s)" if pairs is not None else ""
        console.print(f"[bold]paired[/]: until resolved, at most {limits.duration_text(planned)}{most} — pairs of A "
                      f"({escape(specs[0])}) and B ({escape(specs[1])}), each pair at the same time in turns of "
                      f"{turn:g} s: {escape(how)}; after each pair the headline's {design.confidence * 100:g} % "
                      f"confidence sequence (valid at every look) decides: a difference, or none as large as "
                      f"±{design.threshold * 100:g} %", highlight=False, soft_wrap=True)
        outcome = execute_pairs(a, b, pairs or UNLIMITED_PAIRS, turn=turn, force=force, notices=_notices(),
                                on_pair=on_pair, stop_after=until,
                                recorded={until_resolved.PHASE: design.to_dict()})
        reason = until.record(outcome)
        complete = sum(pair.complete for pair in outcome.pairs)
        console.print(f"[bold]until resolved[/]: {escape(sequential.stop_text(reason, design, complete))}; "
                      f"{len(until.looks)} look(s) in {limits.duration_text(time.monotonic() - until.started)}",
                      highlight=False, soft_wrap=True)
    else:
        assert pairs is not None
        total = f"about {limits.duration_text(pairs * per_pair)} in all" if per_pair is not None else "time unknown"
        console.print(f"[bold]paired[/]: {total} — {pairs:,} pair(s) of A ({escape(specs[0])}) and B "
                      f"({escape(specs[1])}), each pair at the same time in turns of {turn:g} s: {escape(how)}",
                      highlight=False, soft_wrap=True)
        outcome = execute_pairs(a, b, pairs, turn=turn, force=force, notices=_notices(), on_pair=on_pair)
    if outcome.interrupted:
        _print_error(f"interrupted after {sum(p.complete for p in outcome.pairs)} complete pair(s); what was measured "
                     "is kept", f"compare them again with: fbbench compare {outcome.series['A']} {outcome.series['B']}")
    elif outcome.failure:
        _print_error(outcome.failure)
    begun = all(any(p.outcomes.get(label) is not None for p in outcome.pairs) for label in "AB")
    return ([outcome.series["A"], outcome.series["B"]] if begun else []), outcome.results, outcome.exit_code


def _pair_seconds(a: Any, b: Any, results: Path) -> tuple[float | None, str]:
    """How long one pair will take (None: unknown), and how that was reckoned. Timed pairs
    measure the same seconds side by side, plus what a run costs besides them; fixed work takes
    what the store's recent runs of the same specs took, or an unknown time."""
    from fbbench.runner import limits
    from fbbench.runner.run import run_workload
    from fbbench.store import ResultsStore

    store = ResultsStore(results, create=False) if results.exists() else None
    try:
        units = [side.transactions or run_workload(side).counted for side in (a, b)]
        if units[0] is None or units[1] is None:
            measured = a.warmup + a.duration
            setup = limits.overhead_per_run(store) if store is not None else limits.STARTUP_GUESS
            return measured + setup, (f"{limits.duration_text(measured)} of warm-up and measurement and about "
                                      f"{limits.duration_text(setup)} to set up")
        first = limits.fixed_work_time(store, a.recorded(), units[0])
        second = limits.fixed_work_time(store, b.recorded(), units[1])
    finally:
        if store is not None:
            store.close()
    if first is None or second is None:
        return None, (f"fixed work ({units[0]:,} and {units[1]:,} units per attachment), its time unknown: this "
                      "results store has no completed run of both specs yet")
    # A time-shared run took as long as its pair; runs on their own take turns here, one after the other.
    seconds = max(first.seconds, second.seconds) if first.shared and second.shared else first.seconds + second.seconds
    return seconds, (f"fixed work, about {limits.duration_text(seconds)} a pair, as this results store's recent runs "
                     f"of the same specs took (A {limits.duration_text(first.seconds)}, median of {first.runs}; "
                     f"B {limits.duration_text(second.seconds)}, median of {second.runs})")


def _look_line(look: Look, design: Design) -> str:
    """After each pair of --until-resolved: the sequence's interval and whether the pairs stop."""
    from fbbench.analysis import sequential

    estimate = look.estimate
    if not estimate.has_interval:
        return f"  look {look.pairs}: B/A {estimate.ratio:.4f}, no interval yet ({estimate.note}): go on"
    said = {sequential.DIFFERENCE: "excludes no change: stop",
            sequential.WITHIN: f"lies within ±{design.threshold * 100:g} %: stop"}.get(look.decision or "", "go on")
    return (f"  look {look.pairs}: B/A {estimate.ratio:.4f}, {design.confidence * 100:g} % sequence "
            f"{estimate.low:.4f}–{estimate.high:.4f} — {said}")


def _pair_line(pair: Any, pairs: int | None) -> str:
    """One line per pair: each run's headline and the pair's ratio B/A."""
    from fbbench.report.console import headline_text
    from fbbench.store import ResultsStore

    parts = [f"pair {pair.index}" + (f" of {pairs}" if pairs is not None else "") + f" ({pair.first} first):"]
    values: dict[str, float | None] = {}
    for label, run in pair.outcomes.items():
        if run is None:
            parts.append(f"{label} did not start;")
            continue
        with ResultsStore(run.results, create=False) as store:
            summary = store.load_run(run.run_id).get("summary") or {}
        values[label] = ((summary.get("headline") or {}).get("result"))
        figure = headline_text(summary.get("headline"), summary.get("measured_seconds"))
        parts.append(f"{label} run {run.run_id} {run.status}, {escape(figure)};")
    a, b = values.get("A"), values.get("B")
    if pair.complete and a and b:
        parts.append(f"B/A {b / a:.4f}")
    if pair.shared:
        from fbbench.runner.timeshare import machine_share

        cpus = pair.shared.get("cpus")
        shares = ", ".join(f"{m['name']} {machine_share(m['cpu_seconds'], pair.shared['seconds'], cpus):.0%}"
                           for m in pair.shared["members"])
        parts.append(f"(CPU while shared, of the machine's {cpus or '?'} CPU(s): {shares})")
    return " ".join(parts)
