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
    measured = a.warmup + a.duration
    setup = _setup_seconds(Path(a.results or paths.default_results()).expanduser())
    plan = (f"{pairs:,} pair(s) of {limits.duration_text(measured)} of warm-up and measurement and about "
            f"{limits.duration_text(setup)} to set up")
    limits.check_planned(pairs * (measured + setup), "compare --paired", plan, yes)
    for label, settings in zip("AB", sides, strict=True):
        findings = static_findings(settings)
        if findings:
            console.print(f"{label}:", highlight=False)
            _print_static_lint(findings)

    def on_pair(pair: Any) -> None:
        console.print(_pair_line(pair, pairs), highlight=False, soft_wrap=True)

    console.print(f"[bold]paired[/]: about {limits.duration_text(pairs * (measured + setup))} in all — {pairs:,} "
                  f"pair(s) of A ({escape(specs[0])}) and B ({escape(specs[1])}), each pair at the same time in turns "
                  f"of {turn:g} s: {limits.duration_text(measured)} of warm-up and measurement and about "
                  f"{limits.duration_text(setup)} to set up", highlight=False, soft_wrap=True)
    outcome = execute_pairs(a, b, pairs, turn=turn, force=force, notices=_notices(), on_pair=on_pair)
    if outcome.interrupted:
        _print_error(f"interrupted after {sum(p.complete for p in outcome.pairs)} complete pair(s); what was measured "
                     "is kept", f"compare them again with: fbbench compare {outcome.series['A']} {outcome.series['B']}")
    elif outcome.failure:
        _print_error(outcome.failure)
    begun = all(any(p.outcomes.get(label) is not None for p in outcome.pairs) for label in "AB")
    return ([outcome.series["A"], outcome.series["B"]] if begun else []), outcome.results, outcome.exit_code


def _setup_seconds(results: Path) -> float:
    """What a run costs besides its warm-up and measurement, as the results store's recent runs say."""
    from fbbench.runner import limits
    from fbbench.store import ResultsStore

    if not results.exists():
        return limits.STARTUP_GUESS
    with ResultsStore(results, create=False) as store:
        return limits.overhead_per_run(store)


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
