"""``fbbench track run | show | check``: series over builds, an application's commits or days,
their changes, and a gate for CI (:mod:`fbbench.track`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from fbbench import paths
from fbbench.cli.common import (
    INTERRUPTED,
    OverwriteOption,
    ResultsOption,
    WorkdirOption,
    _notices,
    _print_error,
    console,
)
from fbbench.cli.lab import InsecureOption, TlsOption
from fbbench.errors import FbbenchError

CHECK_FAILED = 1  # track check: a regression beyond the suite's threshold (for CI)

track_app = typer.Typer(help="Regression tracking: series of points over builds, commits or days, their changes "
                        "with their likely cause, and a CI gate.", no_args_is_help=True)

SuiteArgument = Annotated[Path, typer.Argument(help="The suite file (track.toml): benchmarks and the figures to "
                                               "track (docs/tracking.md).")]


@track_app.command("run")
def track_run(
    suite: SuiteArgument,
    engine: Annotated[str, typer.Option("--engine", "-e", help="The build a point measures: 5.0, a name from "
                                        "fbbench engines add, server:DIR …")],
    label: Annotated[str | None, typer.Option("--label", help="The point's label along the series: a build, a "
                                              "commit, a date (default: the engine's name).")] = None,
    reference: Annotated[str | None, typer.Option("--reference", help="Make each point time-shared pairs against "
                                                  "this build (embedded engines): ratios free of the machine's "
                                                  "drift.")] = None,
    results: ResultsOption = None,
    workdir: WorkdirOption = None,
    lab: Annotated[str | None, typer.Option("--lab", help="Make a point on every host of a lab (its scheduler, e.g. "
                                            "tcp://127.0.0.1:8786): each host's points a series of its own.")] = None,
    tls: TlsOption = None,
    insecure: InsecureOption = False,
) -> None:
    """Add one point to each series of the suite: every benchmark run on the build.

    Examples: `fbbench track run track.toml --engine 5.0 --label 5.0.4` ·
    `fbbench track run track.toml --engine fb5-snapshot --reference 5.0 --label 2026-11-28` ·
    `fbbench track run app-track.toml --engine 5.0 --label "$(git rev-parse --short HEAD)"`
    """
    from fbbench.track import points as making
    from fbbench.track.suite import read_suite

    parsed = read_suite(suite)
    label = _label(engine if label is None else label)
    if lab is not None and reference is not None:
        raise FbbenchError("--reference makes time-shared pairs on this machine; a lab makes a point on each host",
                           hint="give one of --lab and --reference")
    planned = making.plan(parsed, engine, reference, results, workdir)
    if lab is not None:
        _refuse_a_build_on_a_lab(engine)
    kind = (f"each {planned[0].benchmark.pairs} time-shared pair(s) against {reference}" if reference
            else "each its benchmark's repeats")
    from fbbench.runner.limits import duration_text

    seconds, unknown = making.planned_seconds(planned, reference)
    when = f"about {duration_text(seconds)}" + (f" and {', '.join(unknown)} (fixed work not yet run here: its time "
                                               "unknown)" if unknown else "")
    console.print(f"[bold]track[/] {escape(parsed.name)}: {len(planned)} point(s) labelled {escape(label)} on "
                  f"{escape(engine)}, {kind}: {escape(when)}" + (" on each host" if lab else ""), highlight=False,
                  soft_wrap=True)

    def on_point(point: Any) -> None:
        console.print(escape(_point_line(point, label)), highlight=False, soft_wrap=True)
        if point.new_series:
            console.print(f"  [yellow]{escape(point.new_series)}[/]", highlight=False, soft_wrap=True)
        for change in point.changes:
            console.print(f"  [bold]change[/]: {escape(_change_line(change, point))}", highlight=False,
                          soft_wrap=True)

    if lab is None:
        outcome = making.run_suite(parsed, planned, engine, label, reference, notices=_notices(), on_point=on_point,
                                   on_run=lambda run: console.print(f"  run {run.run_id}: {run.status}",
                                                                    highlight=False))
    else:
        outcome = _on_lab(parsed, planned, engine, label, lab, tls, insecure, on_point)
    made = sum(1 for p in outcome.points if p.point is not None and p.skipped is None)
    if outcome.interrupted:
        _print_error(f"interrupted: {made} point(s) made now are kept; none half-made was recorded",
                     f"run the same command again to make the rest: fbbench track run {suite} --engine {engine}"
                     + (f" --reference {reference}" if reference else "") + f" --label {label}")
        raise typer.Exit(INTERRUPTED)
    failed = [p for p in outcome.points if p.failure]
    for point in failed:
        _print_error(f"benchmark {point.benchmark}: no point: {point.failure}")
    console.print(f"results store: {outcome.results} (fbbench track show {suite}"
                  + (f" --results {outcome.results}" if results else "") + ")", highlight=False, soft_wrap=True)
    if failed:
        raise typer.Exit(1)


def _refuse_a_build_on_a_lab(engine: str) -> None:
    """A lab's hosts offer the embedded engines from PyPI by version (fbbench lab worker): a build
    registered on this machine would run the release there instead."""
    from fbbench.engines import EmbeddedEngine, parse_engine

    found = parse_engine(engine)
    if not isinstance(found, EmbeddedEngine) or found.is_build:
        raise FbbenchError(f"--lab runs the embedded engines the lab's hosts offer by version; {found.label} is not "
                           "one",
                           hint="give --engine 3.0, 4.0 or 5.0 (each host: fbbench engines install), or run it "
                                "without --lab")


def _on_lab(parsed: Any, planned: Any, engine: str, label: str, address: str, tls: Path | None, insecure: bool,
            on_point: Any) -> Any:
    from fbbench.lab import security
    from fbbench.lab.client import connect
    from fbbench.track.lab import run_suite_on_lab

    with connect(address, tls, insecure) as lab:
        if lab.insecure:
            console.print(security.INSECURE_WARNING, highlight=False, soft_wrap=True)
        return run_suite_on_lab(parsed, planned, engine, label, lab, notices=_notices(), on_point=on_point,
                                on_note=lambda text: console.print(f"lab: {escape(text)}", highlight=False,
                                                                   soft_wrap=True))


def _label(text: str) -> str:
    text = text.strip()
    if not text or "\n" in text or len(text) > 100:
        raise FbbenchError(f"--label must be a single line of 1 to 100 characters, got {text[:40]!r}")
    return text


def _point_line(point: Any, label: str) -> str:
    if point.skipped:
        return f"{point.benchmark}: skipped — {point.skipped}"
    if point.interrupted:
        return f"{point.benchmark}: interrupted — no point recorded"
    if point.failure:
        return f"{point.benchmark}: failed — {point.failure}"
    figures = point.point.figures
    first = next(iter(figures))
    shown = figures[first]
    value = f"{shown['value']:.4g}" if "value" in shown else "–"
    return (f"{point.benchmark}: point {point.point.point_id} ({label}) in series {point.point.series_id}: "
            f"{first} {value}")


def _change_line(change: Any, point: Any) -> str:
    detail = change.detail
    return (f"{change.figure} {(detail['ratio'] - 1) * 100:+.1f} % between points {change.before_point} and "
            f"{change.after_point} (p {detail['p_value']:.2g}, {detail['method']})")


@contextmanager
def _looked_at(parsed: Any, suite: Path, results: Path | None) -> Iterator[tuple[Any, Path]]:
    """The results store holding the suite's points, every series looked at for changes up to its
    last point (after an import, say): (the store, its path)."""
    from fbbench.store import ResultsStore
    from fbbench.track import changes as found_changes

    store_path = _store_path(results).expanduser().resolve()
    if not store_path.exists():
        raise FbbenchError(f"no results store at {store_path}: suite {parsed.name} has no points yet",
                           hint=f"make the first: fbbench track run {suite} --engine NAME")
    with ResultsStore(store_path) as store:
        found_changes.evaluate_suite(store, parsed.name, found_changes.methods_of(parsed.method, parsed.counter_method))
        yield store, store_path


def _document(suite: Path, results: Path | None) -> dict[str, Any]:
    from fbbench.track.points import check_benchmarks
    from fbbench.track.series import suite_document
    from fbbench.track.suite import read_suite

    parsed = read_suite(suite)
    check_benchmarks(parsed)
    with _looked_at(parsed, suite, results) as (store, _path):
        return suite_document(store, parsed)


def _store_path(results: Path | None) -> Path:
    return Path(results) if results is not None else paths.default_results()


def _write(path: Path, text: str, what: str, overwrite: bool) -> None:
    paths.output_file(path, what, overwrite)  # again: the file may have appeared meanwhile
    try:
        paths.write_whole(path, text)
    except OSError as error:
        raise FbbenchError(f"cannot write {what} {path}: {error.strerror or error}") from None


@track_app.command("show")
def track_show(
    suite: SuiteArgument,
    results: ResultsOption = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write the series, points and changes (JSON) "
                                                   "here.")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """The suite's series: their points, the changes found with what moved together, and why.

    Example: `fbbench track show track.toml`
    """
    from fbbench.report.track import print_document

    paths.distinct_outputs({"--json": json_file}, {"the suite": suite, "the results store": _store_path(results)})
    if json_file is not None:
        paths.output_file(json_file, "--json", overwrite)
    document = _document(suite, results)
    print_document(console, document)
    if json_file is not None:
        _write(json_file, json.dumps(document, indent=2, default=str) + "\n", "--json", overwrite)


@track_app.command("check")
def track_check(
    suite: SuiteArgument,
    results: ResultsOption = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write the verdict (JSON) here.")] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Write a Markdown summary a CI job can "
                                                  "publish here (an empty file, such as GitHub's "
                                                  "$GITHUB_STEP_SUMMARY, is written too).")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Exit 1 when the newest points brought a regression beyond the suite's threshold (its interval
    beyond it too), or a relative point lies that far beyond its reference; 0 otherwise.

    Example: `fbbench track check track.toml --markdown "$GITHUB_STEP_SUMMARY"`
    """
    from fbbench.report.track import check_json, print_document
    from fbbench.report.track import markdown as markdown_text

    # A CI runner makes the step-summary file empty before the step: an empty file loses nothing.
    markdown_empty = markdown is not None and markdown.is_file() and markdown.stat().st_size == 0
    paths.distinct_outputs({"--json": json_file, "--markdown": markdown},
                           {"the suite": suite, "the results store": _store_path(results)})
    for path, what in ((json_file, "--json"), (markdown, "--markdown")):
        if path is not None:
            paths.output_file(path, what, overwrite or (path is markdown and markdown_empty))
    document = _document(suite, results)
    if not document["series"]:
        raise FbbenchError(f"suite {document['suite']['name']} has no points yet in {_store_path(results)}: "
                           "there is nothing to check", hint=f"make the first: fbbench track run {suite} --engine NAME")
    print_document(console, document, check=True)
    if json_file is not None:
        _write(json_file, json.dumps(check_json(document), indent=2, default=str) + "\n", "--json", overwrite)
    if markdown is not None:
        _write(markdown, markdown_text(document), "--markdown", overwrite or markdown_empty)
    if not document["check"]["passed"]:
        raise typer.Exit(CHECK_FAILED)


@track_app.command("publish")
def track_publish(
    suite: SuiteArgument,
    output: Annotated[Path, typer.Option("--output", "-o", help="The site's directory: new, empty, or one an "
                                         "earlier track publish of this suite made.")],
    results: ResultsOption = None,
) -> None:
    """Publish the suite's series as a static site: an index with every series and its latest change,
    a page per series and per change, each run's report, regressions.json and an Atom feed.
    Publishing again rewrites only what changed.

    Example: `fbbench track publish track.toml -o /var/www/fbbench`
    """
    from fbbench.track.site import check_directory, publish
    from fbbench.track.suite import read_suite

    parsed = read_suite(suite)
    record = check_directory(output.expanduser().absolute(), parsed.name)  # before the store is read
    with _looked_at(parsed, suite, results) as (store, store_path):
        published = publish(store, parsed, output, store_path, record)
    console.print(f"published {parsed.name} in {published.directory} in {published.seconds:.1f} s: "
                  f"{len(published.written)} file(s) written, {published.unchanged} unchanged, "
                  f"{len(published.removed)} removed ({published.runs_rendered} run report(s) rendered); "
                  f"open {published.directory / 'index.html'}", highlight=False, soft_wrap=True)


@track_app.command("bisect")
def track_bisect(
    suite: SuiteArgument,
    good: Annotated[str, typer.Option("--good", help="A build without the change (a registered engine).")],
    bad: Annotated[str, typer.Option("--bad", help="A build with the change.")],
    builds: Annotated[list[str] | None, typer.Argument(help="The builds between them, oldest first (the ends may be "
                                                             "named too).")] = None,
    benchmark: Annotated[str | None, typer.Option("--benchmark", help="The suite's benchmark to measure (default: "
                                                  "its first).")] = None,
    figure: Annotated[str, typer.Option("--figure", help="The figure that changed: headline, page fetches per "
                                        "unit, NEW_ORDER p95 …")] = "headline",
    pairs: Annotated[int | None, typer.Option("--pairs", help="Time-shared pairs per comparison (default: the "
                                              "suite's pairs).")] = None,
    remeasure: Annotated[bool, typer.Option("--remeasure", help="Measure every comparison anew, even one whose "
                                            "pairs the results store holds from an earlier bisection.")] = False,
    results: ResultsOption = None,
    workdir: WorkdirOption = None,
) -> None:
    """Find the first bad build between a good and a bad one in about log2 N steps, each build
    measured as time-shared pairs against both ends; a step that cannot decide stops, and says so.
    Pairs an earlier bisection of the same builds, benchmark and settings made on this host are
    used again (another figure, or after a Ctrl-C, measures only what is missing).

    Example: `fbbench track bisect track.toml --good fb5-1700 --bad fb5-1812 fb5-1720 fb5-1760 fb5-1790
    --figure "page fetches per unit"`
    """
    from fbbench.track import bisect as bisecting
    from fbbench.track.suite import read_suite

    parsed = read_suite(suite)
    chosen, names, name, count = bisecting.plan(parsed, benchmark, good, bad, builds or [], figure, pairs, results,
                                                workdir)
    console.print(f"[bold]bisect[/] {escape(chosen.name)} on {escape(name)}: {len(names)} builds "
                  f"({escape(' → '.join(names))}), {count} time-shared pair(s) a comparison", highlight=False,
                  soft_wrap=True)
    outcome = bisecting.bisect(parsed, chosen, name, names, count, results, workdir, notices=_notices(),
                               on_step=lambda text: console.print(escape(text), highlight=False, soft_wrap=True),
                               remeasure=remeasure)
    if outcome.first_bad is not None:
        console.print(f"[bold]first bad build: {escape(outcome.first_bad)}[/] (after {escape(names[outcome.lo])}; "
                      f"{len(outcome.steps)} step(s))", highlight=False, soft_wrap=True)
        return
    _print_error(outcome.stopped or "the bisection stopped")
    raise typer.Exit(INTERRUPTED if outcome.interrupted else 1)
