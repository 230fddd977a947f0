"""``fbbench compare`` and ``fbbench lint``: what the user named, resolved in the results store, then
handed to :mod:`fbbench.analysis.comparison` (a comparison) or :mod:`fbbench.analysis.lint`.

An argument is a run id (or a unique prefix of one), a series id (``s…``, or a unique prefix; a
sweep's cell is the series ``SWEEP:CELL``),
``last`` or ``last~N`` (the N-th run before the latest). Input that cannot make a comparison is
refused here with one line saying why: an unknown id, a run on two sides, runs of different
workloads (unless forced).

``compare --paired`` first runs its two spec files as time-shared pairs
(:mod:`fbbench.runner.paired`), a line per pair, then compares the two series they made.
"""

from __future__ import annotations

import json
import string
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from fbbench import paths
from fbbench.cli.common import (
    LINT_FAILED,
    OverwriteOption,
    ResultsOption,
    check_output_files,
    console,
)
from fbbench.errors import FbbenchError

if TYPE_CHECKING:  # imported where used, so that every command starts without the analysis (numpy) or the store
    from fbbench.analysis.subjects import Subject
    from fbbench.store import ResultsStore

LABELS = string.ascii_uppercase


def resolve(store: ResultsStore, arguments: Sequence[str]) -> list[Subject]:
    """One :class:`Subject` per argument, labelled A, B, C … in the order given."""
    from fbbench.analysis.subjects import Subject

    if len(arguments) > len(LABELS):
        raise FbbenchError(f"at most {len(LABELS)} runs or series at once, got {len(arguments)}")
    subjects = []
    for label, text in zip(LABELS, arguments, strict=False):
        text = text.strip()
        if not text:
            raise FbbenchError("an empty run id", hint="name runs by id, a unique prefix, last or last~N")
        if (text.startswith("s") or ":" in text) and not text.startswith("last"):  # a series, or a sweep's cell
            series = store.resolve_series_id(text)
            if series is None:
                raise FbbenchError(f"no series '{text}' in {store.path}",
                                   hint="fbbench results list shows each run's series")
            runs = [store.load_run(run_id) for run_id in store.series_runs(series)]
            subjects.append(Subject(label, "series", series, text, runs))
        else:
            run = store.load_run(store.resolve_run_id(text))
            subjects.append(Subject(label, "run", str(run["run_id"]), text, [run]))
    seen: dict[str, str] = {}
    for subject in subjects:
        for run in subject.runs:
            run_id = str(run["run_id"])
            if run_id in seen:
                where = (f"{subject.label} ({subject.argument})" if seen[run_id] != subject.label
                         else f"{subject.label} twice")
                raise FbbenchError(f"run {run_id} is in {seen[run_id]} and {where}: a run compared with itself "
                                   "shows nothing", hint="name two different runs or series")
            seen[run_id] = subject.label
    return subjects


def check_workloads(subjects: Sequence[Subject], force: bool) -> None:
    """Runs of different workloads are refused unless forced: they compare the workloads."""
    names = {s.label: sorted({str(run.get("workload")) for run in s.runs}) for s in subjects}
    if len({tuple(n) for n in names.values()}) > 1 and not force:
        shown = ", ".join(f"{label} runs {' and '.join(n)}" for label, n in names.items())
        raise FbbenchError(f"different workloads: {shown} — their figures measure different work, not Firebird",
                           hint="--force compares them anyway (then name the axis, e.g. --axis workload)")


def baseline_label(subjects: Sequence[Subject], store: ResultsStore, baseline: str | None) -> str:
    """The label of the side ``--baseline`` names: as written on the command line, its letter, or
    any id that resolves to the same run or series."""
    if baseline is None:
        return subjects[0].label
    for subject in subjects:
        if baseline in (subject.argument, subject.label, subject.ident):
            return subject.label
    try:
        wanted = store.resolve_series_id(baseline) if baseline.startswith("s") else store.resolve_run_id(baseline)
    except FbbenchError:
        wanted = None
    for subject in subjects:
        if wanted is not None and wanted == subject.ident:
            return subject.label
    raise FbbenchError(f"--baseline {baseline} is not one of the compared runs or series",
                       hint="name one of them as written, or its letter: "
                       + ", ".join(f"{s.label} = {s.argument}" for s in subjects))


def build(store: ResultsStore, arguments: Sequence[str], *, baseline: str | None = None,
          axis: Sequence[str] | None = None, force: bool = False) -> dict[str, Any]:
    """The comparison document of the runs and series named (docs/compare-result.md)."""
    from fbbench.analysis import comparison

    if len(arguments) < 2:
        raise FbbenchError("compare needs at least two runs or series",
                           hint="e.g. fbbench compare last~1 last, or two series ids; fbbench lint RUN checks one")
    subjects = resolve(store, arguments)
    check_workloads(subjects, force)
    label = baseline_label(subjects, store, baseline)
    return comparison.compare(subjects, baseline=label, axis=axis or None, force=force)


def lint_findings(store: ResultsStore, arguments: Sequence[str],
                  axis: Sequence[str] | None = None) -> tuple[list[Subject], list[dict[str, Any]]]:
    """The credibility lint alone: each run's own findings, each series' uniformity and, for
    several runs or series, their comparison (an unclear axis is itself a finding, FB010)."""
    from fbbench.analysis.comparison import lint_all, records_of

    if not arguments:
        raise FbbenchError("which runs? e.g. fbbench lint last, or fbbench lint SERIES_A SERIES_B")
    subjects = resolve(store, arguments)
    records, _, per_run = records_of(subjects)
    return subjects, lint_all(subjects, records, per_run, axis or None, exclude_unused=False)


def compare(
    items: Annotated[list[str], typer.Argument(help="Runs or series: a run id (or unique prefix), a series id "
                                               "(s…), last, or last~N (the N-th run before the latest). With "
                                               "--paired: two run spec files.",
                                               show_default=False, metavar="RUN|SERIES|SPEC")],
    baseline: Annotated[str | None, typer.Option("--baseline", help="The side the others are divided by "
                                                 "(default: the first).")] = None,
    axis: Annotated[list[str] | None, typer.Option("--axis", help="The difference the comparison is about, e.g. "
                                                   "engine, page_size, conf.DefaultDbCachePages (repeatable).")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Write the HTML comparison here (default: next "
                                                "to the results store).")] = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write the comparison (JSON) here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Compare different workloads, and give the verdict even "
                                        "when the lint finds errors.")] = False,
    paired: Annotated[bool, typer.Option("--paired", help="Run A and B now, from two run spec files (as run --spec "
                                         "reads), at the same time in pairs, time-shared, and compare them pair by "
                                         "pair.")] = False,
    pairs: Annotated[int | None, typer.Option("--pairs", help="With --paired: how many pairs of runs (default 6); "
                                              "with --until-resolved, the most it may run.")] = None,
    until_resolved: Annotated[bool, typer.Option("--until-resolved", help="With --paired: run pairs until the "
                                                 "headline's comparison is resolved — its confidence sequence, "
                                                 "valid at every look, excludes no change or lies within "
                                                 "±--threshold — or --max-time is up.")] = False,
    max_time: Annotated[str | None, typer.Option("--max-time", metavar="DURATION", help="With --until-resolved: "
                                                 "start no pair that would not end within this, from the start "
                                                 "(e.g. 15m, 1h; default 1h).")] = None,
    threshold: Annotated[float | None, typer.Option("--threshold", metavar="PERCENT", help="With --until-resolved: "
                                                    "the smallest difference that matters (default 1): the pairs "
                                                    "also stop once the interval lies within ±this per cent.")] = None,
    turn: Annotated[float, typer.Option("--turn", help="With --paired: seconds each run's engine runs while the "
                                        "other is stopped.")] = 0.1,
    results: ResultsOption = None,
    yes: Annotated[bool, typer.Option("--yes", help="With --paired: go ahead with pairs planned to take more than "
                                      "24 hours.")] = False,
    workdir: Annotated[Path | None, typer.Option("--workdir", help="With --paired: fbbench's work directory for "
                                                 "the runs (as run takes it). Default: $FBBENCH_HOME/work.")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Compare runs or series: conditions side by side, every figure as a ratio to the baseline with its
    95 % interval, the engine's work per unit, the credibility lint, and a verdict only where the
    interval excludes no change. Exit code 0 once the comparison is made, valid or not (its JSON says
    `valid`; `fbbench lint` exits 1 on an error, for CI), 2 for input it cannot compare.

    With `--paired SPEC_A SPEC_B`, A and B are run first: N pairs, both runs of a pair at the same
    time on their own database copies, their engines taking turns of 0.1 s, recorded as two series;
    then compared pair by pair. With `--until-resolved`, pairs run until the headline's confidence
    sequence (valid at every look) excludes no change or lies within ±`--threshold` per cent, or
    until another pair would not end within `--max-time`. Exit code 1 when a run failed, 130 after
    Ctrl-C (what was measured is kept).

    Examples:

    * `fbbench compare S_BASE S_NEW` (two series from run --repeat)
    * `fbbench compare last~1 last --axis engine --report cmp.html`
    * `fbbench compare A B C --baseline B --axis conf.DefaultDbCachePages --json cmp.json`
    * `fbbench compare --paired base.toml new.toml --pairs 8`
    * `fbbench compare --paired base.toml new.toml --until-resolved --max-time 15m`
    """
    from fbbench.report import compare as shown
    from fbbench.report.outputs import write_outputs
    from fbbench.store import ResultsStore

    code = 0
    design = None
    if until_resolved or max_time is not None or threshold is not None:
        from fbbench.runner.until_resolved import design_of

        design = design_of(until_resolved, paired, max_time, threshold, pairs)
    if pairs is not None and not paired:
        raise FbbenchError("--pairs belongs to --paired, which was not given",
                           hint="e.g. fbbench compare --paired a.toml b.toml --pairs 8")
    check_output_files(json_file, report, overwrite, {"the results store": results or paths.default_results()})
    if paired:
        from fbbench.cli.paired import run_pairs

        items, store_path, code = run_pairs(items, pairs, turn, force, results, workdir, yes, design)
        if not items:
            raise typer.Exit(code)
    else:
        store_path = results or paths.default_results()
    with ResultsStore(store_path, create=False) as store:
        document = build(store, items, baseline=baseline, axis=axis, force=force)
    shown.print_comparison(document, console)
    target = report or paths.default_report(store_path.expanduser().resolve(),
                                            "compare-" + time.strftime("%Y%m%d-%H%M%S"))
    written, problems = write_outputs(document, json_file, target, write_report=shown.write, overwrite=overwrite)
    for line in written:
        console.print(line, highlight=False, soft_wrap=True)
    if problems:
        raise FbbenchError("; ".join(problems))
    if code:
        raise typer.Exit(code)


def lint_command(
    items: Annotated[list[str], typer.Argument(help="Runs or series, named as for compare.", show_default=False,
                                               metavar="RUN|SERIES")],
    axis: Annotated[list[str] | None, typer.Option("--axis", help="With several: the difference they are meant "
                                                   "to compare (repeatable).")] = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write the findings (JSON) here.")] = None,
    results: ResultsOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """The credibility lint alone: each run's findings (and, for several runs or series, their
    comparison's). Exit code 1 when a finding has severity error (for CI), 0 otherwise.

    Examples: `fbbench lint last` · `fbbench lint S_BASE S_NEW --axis engine`
    """
    from fbbench.report.compare import lint_lines
    from fbbench.report.console import lint_count
    from fbbench.store import ResultsStore

    check_output_files(json_file, None, overwrite, {"the results store": results or paths.default_results()})
    with ResultsStore(results or paths.default_results(), create=False) as store:
        subjects, findings = lint_findings(store, items, axis)
    sides = [{"label": s.label, "kind": s.kind, "runs": s.runs} for s in subjects]
    for subject in subjects:
        console.print(f"{subject.label} = {escape(subject.describe())}", highlight=False, soft_wrap=True)
    counted = [f for f in findings if not f["excluded"]]
    console.print(f"credibility lint: {lint_count(counted)}", highlight=False)
    for line in lint_lines(findings, sides):
        console.print(line, highlight=False, soft_wrap=True)
    if json_file is not None:
        try:
            paths.output_file(json_file, "--json", overwrite)
            paths.write_whole(json_file.expanduser(), json.dumps(
                {"format": "fbbench-lint", "schema_version": 1,
                 "subjects": [{"label": s.label, "kind": s.kind, "id": s.ident, "argument": s.argument,
                               "runs": [r["run_id"] for r in s.runs]} for s in subjects],
                 "lint": findings}, indent=2, default=str, allow_nan=False))
        except OSError as error:
            raise FbbenchError(f"cannot write the JSON file {json_file}: {error.strerror or error}") from None
    if any(f["severity"] == "error" for f in counted):
        raise typer.Exit(LINT_FAILED)
