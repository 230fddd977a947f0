"""``fbbench compare --paired``: its two run spec files run as time-shared pairs
(:mod:`fbbench.runner.paired`), announced with their planned time, a line per pair; the two series
they made go back to ``compare``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape

from fbbench import paths
from fbbench.cli.common import _notices, _print_error, _print_static_lint, console
from fbbench.errors import FbbenchError


def run_pairs(specs: list[str], pairs: int, turn: float, force: bool, results: Path | None, workdir: Path | None,
              yes: bool) -> tuple[list[str], Path, int]:
    """compare --paired: run the pairs; the two series to compare (none when no pair ran), the
    results store, and the exit code the command ends with."""
    from fbbench.runner import limits
    from fbbench.runner.paired import check_counts, execute_pairs
    from fbbench.runner.run import static_findings
    from fbbench.runner.settings import from_sources

    check_counts(pairs, turn)
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
    plan = f"{pairs:,} pair(s) of {how}"
    limits.check_planned(pairs * (per_pair or 0.0), "compare --paired", plan, yes)
    for label, settings in zip("AB", sides, strict=True):
        findings = static_findings(settings)
        if findings:
            console.print(f"{label}:", highlight=False)
            _print_static_lint(findings)

    def on_pair(pair: Any) -> None:
        console.print(_pair_line(pair, pairs), highlight=False, soft_wrap=True)

    total = f"about {limits.duration_text(pairs * per_pair)} in all" if per_pair is not None else "time unknown"
    console.print(f"[bold]paired[/]: {total} — {pairs:,} pair(s) of A ({escape(specs[0])}) and B ({escape(specs[1])}), "
                  f"each pair at the same time in turns of {turn:g} s: {escape(how)}", highlight=False, soft_wrap=True)
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


def _pair_line(pair: Any, pairs: int) -> str:
    """One line per pair: each run's headline and the pair's ratio B/A."""
    from fbbench.report.console import headline_text
    from fbbench.store import ResultsStore

    parts = [f"pair {pair.index} of {pairs} ({pair.first} first):"]
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
