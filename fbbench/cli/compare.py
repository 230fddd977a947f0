"""``fbbench compare`` and ``fbbench lint``: what the user named, resolved in the results store, then
handed to :mod:`fbbench.analysis.comparison` (a comparison) or :mod:`fbbench.analysis.lint`.

An argument is a run id (or a unique prefix of one), a series id (``s…``, or a unique prefix),
``last`` or ``last~N`` (the N-th run before the latest). Input that cannot make a comparison is
refused here with one line saying why: an unknown id, a run on two sides, runs of different
workloads (unless forced).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

from fbbench.analysis.comparison import Subject
from fbbench.errors import FbbenchError
from fbbench.store import ResultsStore

LABELS = string.ascii_uppercase


def resolve(store: ResultsStore, arguments: Sequence[str]) -> list[Subject]:
    """One :class:`Subject` per argument, labelled A, B, C … in the order given."""
    if len(arguments) > len(LABELS):
        raise FbbenchError(f"at most {len(LABELS)} runs or series at once, got {len(arguments)}")
    subjects = []
    for label, text in zip(LABELS, arguments, strict=False):
        text = text.strip()
        if not text:
            raise FbbenchError("an empty run id", hint="name runs by id, a unique prefix, last or last~N")
        if text.startswith("s") and not text.startswith("last"):
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
    from fbbench.analysis.comparison import compare

    if len(arguments) < 2:
        raise FbbenchError("compare needs at least two runs or series",
                           hint="e.g. fbbench compare last~1 last, or two series ids; fbbench lint RUN checks one")
    subjects = resolve(store, arguments)
    check_workloads(subjects, force)
    label = baseline_label(subjects, store, baseline)
    return compare(subjects, baseline=label, axis=axis or None, force=force)


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
