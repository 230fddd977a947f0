"""A comparison of stored runs and series: their conditions side by side, every figure as a ratio to
the baseline with its 95 % interval, the engine's work per unit, the credibility lint, and the
verdicts all this allows. One pure function, :func:`compare`, over runs as the store gives them
(``ResultsStore.load_run``); :mod:`fbbench.cli.compare` resolves what the user named.

Each figure is read from the store through its one definition: the headline, the extra figures,
the score and TPM as each run stored them (:mod:`~fbbench.analysis.figures`, computed once when
the run ended); a unit's throughput and the conflicts and errors per minute by
:func:`figures.value` over the stored unit totals; latency percentiles as the core's HDR
histograms gave them; the workload's metrics as stored; the engine's work per unit by
:func:`fbbench.analysis.engine.per_unit`. Ratios and verdicts come from
:mod:`~fbbench.analysis.stats` — over the repeats when a side is a series, over the measured
intervals of each run when both sides are single runs (weaker: the drift between runs is not in
it), pair by pair when two series ran as time-shared pairs (``fbbench compare --paired``: each
run records its pair, :mod:`fbbench.analysis.subjects`) — and when they ran until resolved, the
headline by the confidence sequence they stopped by (:mod:`fbbench.analysis.sequential`). Only
completed runs are used; a failed, interrupted or incomplete one is shown and flagged (and in
pairs, so is its partner).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fbbench.analysis import conditions as cond
from fbbench.analysis import engine, figures, lint, lint_disk, lint_rules, sequential, stats, steady
from fbbench.analysis.finite import finite
from fbbench.analysis.host_conditions import host_name
from fbbench.analysis.profile import compare_profiles
from fbbench.analysis.subjects import Subject, paired
from fbbench.store.model import MetricRow, StoredRun

SCHEMA_VERSION = 1  # of the comparison document: docs/compare-result.md

# A figure of one run in each measured interval: (value, seconds), None where it has none.
RunValue = Callable[[StoredRun], float | None]  # one figure of one run
PerInterval = Callable[[StoredRun], list[tuple[float | None, float]] | None]


@dataclass(frozen=True)
class FigureDef:
    """A figure compared across the sides: how to read it from one run, whole and per interval."""

    name: str
    kind: str  # headline / figure / metric / score / tpm / unit / latency / outcomes / engine
    unit: str
    better: str  # higher / lower
    rate: bool  # a rate (per minute / second): higher is "faster"
    value: RunValue
    per_interval: PerInterval = lambda run: None
    definition: str = ""
    group: str = ""  # the unit a per-unit figure belongs to


# ------------------------------------------------------------------------------- reading runs


def _summary(run: StoredRun) -> Mapping[str, Any]:
    return run.get("summary") or {}


def _seconds(run: StoredRun) -> float | None:
    return _summary(run).get("measured_seconds")


def _stored_figure(run: StoredRun, name: str, headline: bool) -> Mapping[str, Any] | None:
    summary = _summary(run)
    if headline:
        stored = summary.get("headline") or {}
        return stored if stored.get("name") == name else None
    return next((f for f in summary.get("figures") or [] if f.get("name") == name), None)


def _as_figure(stored: Mapping[str, Any]) -> figures.Figure:
    known = set(figures.Figure.__dataclass_fields__)
    return figures.Figure.from_dict({k: v for k, v in stored.items() if k in known})


def _measured(rows: list[tuple[float | None, float, bool]]) -> list[tuple[float | None, float]] | None:
    found = [(value, seconds) for value, seconds, measured in rows if measured]
    return found or None


def _by_definition(figure: figures.Figure) -> RunValue:
    def read(run: StoredRun) -> float | None:
        units = {name: {k: totals.get(k) for k in figures.OUTCOMES}
                 for name, totals in (run.get("units") or {}).items()}
        seconds = _seconds(run)
        return figures.value(figure, figures.names(units, None, seconds), seconds)
    return read


def _intervals_of(figure: figures.Figure) -> PerInterval:
    return lambda run: _measured(steady.interval_values(run, figure))


def _metric_intervals(name: str, per_minute: bool) -> PerInterval:
    def read(run: StoredRun) -> list[tuple[float | None, float]] | None:
        found = engine.metric_per_interval(run.get("engine_samples") or {}, run.get("intervals") or [], name,
                                           per_minute)
        return [(value, seconds) for value, seconds in found] or None
    return read


def figure_defs(runs: Sequence[StoredRun]) -> list[FigureDef]:
    """The figures the runs have, in the order a report shows them: the headline, the workload's
    other figures and metrics, the score (when it is not the headline), TPM, each unit's
    throughput and latency, conflicts and errors."""
    defs: list[FigureDef] = []
    metrics: dict[str, MetricRow] = {}
    for run in runs:
        for name, metric in (run.get("metrics") or {}).items():
            metrics.setdefault(name, metric)
    stored_headline = next((_summary(r).get("headline") for r in runs if _summary(r).get("headline")), None)
    if stored_headline:
        headline = _as_figure(stored_headline)
        rate, per_interval = _basis(headline, metrics)
        defs.append(FigureDef(headline.name, "headline", headline.unit, headline.better, rate,
                              _stored_value(headline.name, headline=True), per_interval, headline.value))
    seen = {d.name for d in defs}
    for run in runs:
        for stored in _summary(run).get("figures") or []:
            if stored.get("name") in seen:
                continue
            figure = _as_figure(stored)
            seen.add(figure.name)
            rate, per_interval = _basis(figure, metrics)
            defs.append(FigureDef(figure.name, "figure", figure.unit, figure.better, rate,
                                  _stored_value(figure.name, headline=False), per_interval, figure.value))
    for name, metric in metrics.items():
        if name in seen:
            continue
        per_minute = bool(metric.get("per_minute"))
        defs.append(FigureDef(name, "metric", figures.metric_unit(per_minute), "higher", per_minute,
                              _metric_value(name),
                              _metric_intervals(name, per_minute), "counted by the database"))
    if not stored_headline or stored_headline.get("name") != figures.SCORE.name:
        defs.append(FigureDef(figures.SCORE.name, "score", figures.SCORE.unit, "higher", True,
                              lambda run: _summary(run).get("score_per_minute"), _intervals_of(figures.SCORE),
                              figures.SCORE.value))
    tpm = figures.Figure("TPM", "ok + rolled_back")
    defs.append(FigureDef("TPM", "tpm", "/min", "higher", True, lambda run: _summary(run).get("tpm"),
                          _intervals_of(tpm), tpm.value))
    units = sorted({name for run in runs for name in (run.get("units") or {})})
    for unit in units:
        throughput = figures.Figure(f"{unit} ok", f"{unit}.ok")
        defs.append(FigureDef(f"{unit} ok", "unit", "/min", "higher", True, _by_definition(throughput),
                              _intervals_of(throughput), throughput.value, unit))
    for unit in units:
        for key in ("p50", "p95", "p99"):
            # No per-interval basis: a percentile of a run is not an average of its intervals'
            # percentiles, and the batch means of two single runs assume it is.
            defs.append(FigureDef(f"{unit} {key}", "latency", " ms", "lower", False,
                                  _latency_value(unit, key),
                                  definition=f"{key} latency of {unit}", group=unit))
    for outcome, meaning in (("conflicts", "units ended by an update conflict, per minute"),
                             ("errors", "units ended by an error, per minute")):
        figure = figures.Figure(outcome, outcome, better="lower")
        defs.append(FigureDef(outcome, "outcomes", "/min", "lower", True, _by_definition(figure),
                              _intervals_of(figure), meaning))
    return defs


def _basis(figure: figures.Figure, metrics: Mapping[str, Mapping[str, Any]]) -> tuple[bool, PerInterval]:
    """Whether a workload's figure is a rate, and how to read it per interval. A figure that is one
    DB-side metric as it stands (TPC-C's headline ``metrics.NOPM``) is the metric's: a rate when the
    metric is per minute, read per interval from the sampler's readings as the metric is."""
    name = figure.value.strip().removeprefix("metrics.")
    metric = metrics.get(name) if figure.value.strip().startswith("metrics.") and figure.per == "run" else None
    if metric is not None:
        per_minute = bool(metric.get("per_minute"))
        return per_minute, _metric_intervals(name, per_minute)
    return figure.per in ("minute", "second"), _intervals_of(figure)


def _value_of(stored: Mapping[str, Any] | None) -> float | None:
    return None if stored is None else stored.get("result")



def _stored_value(name: str, *, headline: bool) -> RunValue:
    return lambda run: _value_of(_stored_figure(run, name, headline))


def _metric_value(name: str) -> RunValue:
    def read(run: StoredRun) -> float | None:
        metric = run.get("metrics", {}).get(name)
        return None if metric is None else metric.get("value")

    return read


def _latency_value(unit: str, key: str) -> RunValue:
    def read(run: StoredRun) -> float | None:
        totals = run.get("units", {}).get(unit)
        return None if totals is None else totals.get("latency_ms", {}).get(key)

    return read


def _engine_value(name: str) -> RunValue:
    return lambda run: (_engine_per_unit(run) or {}).get(name)


def engine_defs() -> list[FigureDef]:
    labels = {"page_reads": "page reads", "page_writes": "page writes", "page_fetches": "page fetches",
              "page_marks": "page marks", "seq_reads": "records read naturally",
              "idx_reads": "records read by index", "backouts": "backouts", "purges": "purges",
              "expunges": "expunges", "conflicts": "record conflicts"}
    defs = [FigureDef(f"{label} per unit", "engine", "", "lower", False,
                      _engine_value(name), definition=name)
            for name, label in labels.items()]
    defs.append(FigureDef("largest Next − OIT", "engine", "", "lower", False,
                          _engine_value("largest_next_minus_oit"),
                          definition="largest_next_minus_oit"))
    return defs


def _engine_per_unit(run: StoredRun) -> dict[str, float | None] | None:
    return engine.per_unit(run.get("engine_samples") or {}, run.get("intervals") or [])


# ------------------------------------------------------------------------------- comparing


def _side(subject: Subject, figure: FigureDef) -> tuple[stats.Side | None, list[float | None]]:
    """The figure of each used run, and the stats side (None when a run lacks it)."""
    values = [figure.value(run) for run in subject.used]
    if not values or any(v is None for v in values):
        return None, values
    numbers = tuple(float(v) for v in values)  # type: ignore[arg-type]
    if len(subject.used) == 1:
        rows = figure.per_interval(subject.used[0])
        if rows and all(v is not None for v, _ in rows):
            return stats.Side(numbers, tuple(float(v) for v, _ in rows),  # type: ignore[arg-type]
                              tuple(s for _, s in rows), subject.label), values
    return stats.Side(numbers, label=subject.label), values


def _shown_value(values: Sequence[float | None], n_other: int) -> tuple[float | None, str | None]:
    """The side's figure as its ratio uses it (:func:`stats.center`), and what it is."""
    present = [v for v in values if v is not None and math.isfinite(v)]
    if not present or len(present) != len(values):
        return None, None
    if all(v == 0 for v in present):
        return 0.0, "value" if len(present) == 1 else "all zero"
    value, kind = stats.center(present, n_other)
    return (value if math.isfinite(value) else None), kind


def _ratio(base: stats.Side | None, other: stats.Side | None, paired: bool = False) -> stats.Ratio | None:
    if base is None or other is None:
        return None
    if all(v == 0 for v in base.values) and all(v == 0 for v in other.values):
        return None  # none on either side (conflicts, errors): nothing to divide
    return stats.compare(base, other, paired=paired, seed=0)


def _series_spread(values: Sequence[float | None]) -> dict[str, Any] | None:
    present = [float(v) for v in values if v is not None]
    if len(present) < 2 or len(present) != len(values):
        return None
    summary = stats.summarize(present)
    return {"n": summary.n, "median": summary.median, "low": summary.low, "high": summary.high, "cv": summary.cv,
            "minimum": summary.minimum, "maximum": summary.maximum, "spread": summary.spread, "text": summary.text}


def _rows(rows: Sequence[cond.DiffRow]) -> list[dict[str, Any]]:
    return [{"key": r.key, "values": r.values, "follows": r.follows, "defaults": r.defaults,
             "factor": r.factor} for r in rows]


def block_hosts(subjects: Sequence[Subject]) -> list[str] | None:
    """The hosts that are blocks of this comparison: every side is a series whose used runs ran on
    the same two or more hosts (a lab's sweep without a host axis). Each figure is then compared
    within each host and the hosts' ratios combined; None otherwise."""
    if len(subjects) < 2 or any(subject.kind != "series" for subject in subjects):
        return None
    sets = [frozenset(host_name(run) for run in subject.used) for subject in subjects]
    if len(set(sets)) != 1 or len(sets[0]) < 2 or None in sets[0]:
        return None
    return sorted(str(host) for host in sets[0])


def _on_host(subject: Subject, host: str) -> Subject:
    return Subject(subject.label, subject.kind, subject.ident, subject.argument,
                   [run for run in subject.runs if host_name(run) == host])


def records_of(subjects: Sequence[Subject], blocks: bool = False) -> tuple[
        dict[str, cond.Conditions], dict[str, list[cond.DiffRow]], dict[str, list[cond.Conditions]]]:
    """Each side's conditions (a series': what its used runs share), the rows in which a series'
    runs differ, and the per-run records of each series. ``blocks``: the hosts are blocks, so
    their keys are left out (they differ within each side by design; the document lists them)."""
    records: dict[str, cond.Conditions] = {}
    within: dict[str, list[cond.DiffRow]] = {}
    per_run: dict[str, list[cond.Conditions]] = {}
    for subject in subjects:
        runs = subject.used or subject.runs
        if subject.kind == "run":
            records[subject.label] = cond.record(runs[0])
            continue
        per_run[subject.label] = [cond.without_host(cond.record(run)) if blocks else cond.record(run)
                                  for run in runs]
        records[subject.label], within[subject.label] = cond.series_record(per_run[subject.label])
    return records, within, per_run


def axis_labels(subjects: Sequence[Subject], on_axis: Sequence[cond.DiffRow]) -> dict[str, str]:
    """Each side's label with its value on the axis: ``B (5.0.4)``."""
    primary = [row for row in on_axis if row.follows is None]
    chosen: list[cond.DiffRow] = []
    for row in primary:  # one row per factor: engine.version stands for the engine
        if row.factor not in {c.factor for c in chosen}:
            chosen.append(row)
    def shown(row: cond.DiffRow, value: str) -> str:
        # An engine's version or a host's name says what it is; a setting's number needs its name.
        if row.key == "engine.binaries":  # two builds of one version: their digests' first digits tell them apart
            return f"binaries {value[:12]}"
        return value if row.factor in ("engine", "host") else f"{row.key.rsplit('.', 1)[-1]} {value}"

    labels = {}
    for subject in subjects:
        values = [shown(row, str(row.values[subject.label])) for row in chosen
                  if row.values.get(subject.label) is not None]
        labels[subject.label] = f"{subject.label} ({', '.join(values)})" if values else subject.label
    return labels


def lint_all(subjects: Sequence[Subject], records: Mapping[str, cond.Conditions],
             per_run: Mapping[str, list[cond.Conditions]], axis: Sequence[str] | None,
             exclude_unused: bool = True) -> list[dict[str, Any]]:
    """Every finding: the comparison's conditions, each series' uniformity, each run's own lint.
    A run that is not used (not completed) has its findings marked ``excluded`` — in a
    comparison, which leaves it out; ``exclude_unused`` False when the runs are linted for
    themselves (``fbbench lint``), where a failed run is the finding."""
    found: list[dict[str, Any]] = []
    if len(records) > 1:
        found += [{**f.to_dict(), "scope": "comparison", "side": None, "excluded": False}
                  for f in lint.lint_comparison(records, axis)]
    used = [run for subject in subjects for run in (subject.used or subject.runs)]
    if len(records) > 1:
        found += [{**f.to_dict(), "scope": "comparison", "side": None, "excluded": False}
                  for f in lint_disk.lint_disk_comparison(used)]
    if len(subjects) == 2 and all(subject.paired for subject in subjects):
        found += [{**f.to_dict(), "scope": "comparison", "side": None, "excluded": False}
                  for f in lint.lint_pairs(list(zip(subjects[0].used, subjects[1].used, strict=False)))]
    for subject in subjects:
        if subject.kind == "series":
            found += [{**f.to_dict(), "scope": "series", "side": subject.label, "excluded": False}
                      for f in [*lint.lint_series(per_run[subject.label], subject.ident),
                                *lint_disk.lint_os_cache_series(subject.used or subject.runs, subject.ident)]]
        for run in subject.runs:
            excluded = exclude_unused and run.get("status") != "completed"
            found += [{**f.to_dict(), "scope": "run", "side": subject.label, "excluded": excluded}
                      for f in lint.lint_run(run)]
    return finite(found)


def compare(subjects: Sequence[Subject], *, baseline: str | None = None, axis: Sequence[str] | None = None,
            force: bool = False) -> dict[str, Any]:
    """The comparison document (docs/compare-result.md) of ``subjects`` against ``baseline`` (a
    label; default the first). Raises :class:`fbbench.analysis.conditions.AxisError` when the
    axis is not a difference, or none is named among several differences."""
    base = next(s for s in subjects if s.label == (baseline or subjects[0].label))
    others = [s for s in subjects if s is not base]
    pairing = paired(base, others[0]) if len(others) == 1 else None
    if pairing is not None:
        base, other, _info = pairing
        subjects = [base, other] if subjects[0].label == base.label else [other, base]
        others = [other]
    hosts = block_hosts(subjects)
    records, within, per_run = records_of(subjects, blocks=hosts is not None)
    split = cond.split(records, axis)
    names = axis_labels(subjects, split.axis)
    findings = lint_all(subjects, records, per_run, axis)
    errors = [f for f in findings if f["severity"] == "error" and not f["excluded"]]
    withheld = bool(errors) and not force

    all_runs = [run for s in subjects for run in (s.used or s.runs)]
    defs = figure_defs(all_runs)
    figure_rows = [_figure_row(figure, base, others, names, withheld, hosts=hosts) for figure in defs]
    engine_rows = [_figure_row(figure, base, others, names, withheld, verdicts=False, hosts=hosts)
                   for figure in engine_defs()]
    engine_rows = [row for row in engine_rows if any(v is not None for v in row["values"].values())]

    headline = next((row for row in figure_rows if row["kind"] == "headline"), figure_rows[0] if figure_rows else None)
    until = _until_resolved(headline, base, others[0], names, withheld) if pairing is not None else None
    verdicts = {other.label: _verdict(headline, base, other, names, errors, force) for other in others}
    keys = list(dict.fromkeys(k for r in records.values() for k in r))
    differing = {row.key for row in [*split.axis, *split.others]}
    equal = {k: records[base.label][k] for k in keys if k not in differing and k in records[base.label]}
    return finite({
        "format": "fbbench-comparison",
        "schema_version": SCHEMA_VERSION,
        "created_at": time.time(),
        "workload": sorted({str(r.get("workload")) for r in all_runs}),
        "baseline": base.label,
        "sides": [_side_document(s, names[s.label], headline) for s in subjects],
        "conditions": {
            "axis_requested": list(axis) if axis else None,
            "axis": _rows(split.axis),
            "differences": _rows(split.others),
            "equal": equal,
            "series_differences": {label: _rows(rows) for label, rows in within.items() if rows},
        },
        "figures": figure_rows,
        "pairing": pairing[2] if pairing is not None else None,
        "sequential": until,
        "blocks": _blocks_document(subjects, hosts) if hosts else None,
        "verdicts": verdicts,
        "engine": {"available": bool(engine_rows), "figures": engine_rows},
        "profile": compare_profiles({s.label: s.used for s in subjects}, base.label),
        "lint": findings,
        "lint_groups": lint_rules.grouped(findings, {s.label: (s.kind, len(s.runs)) for s in subjects}),
        "valid": not errors,
        "forced": bool(force and errors),
        "invalid_because": [f"{f['rule']} {f['message']}" for f in errors],
        "intervals": [_intervals(s, run) for s in subjects for run in s.runs],
    })


def _blocks_document(subjects: Sequence[Subject], hosts: Sequence[str]) -> dict[str, Any]:
    """The hosts a blocked comparison ran on, each side's runs on each, and each host's record."""
    runs = [run for subject in subjects for run in subject.used]
    first = {host: next(run for run in runs if host_name(run) == host) for host in hosts}
    return {"hosts": list(hosts),
            "runs": {s.label: {host: len(_on_host(s, host).used) for host in hosts} for s in subjects},
            "conditions": {host: {key: value for key, value in cond.record(run).items()
                                  if cond.factor_of(key) == "host"} for host, run in first.items()}}


def _host_ratios(base: Subject, other: Subject, figure: FigureDef,
                 hosts: Sequence[str]) -> tuple[stats.Ratio | None, dict[str, Any]]:
    """The figure's ratio within each host, and their combination (:func:`stats.combine_hosts`)."""
    per_host: dict[str, stats.Ratio] = {}
    for host in hosts:
        estimate = _ratio(_side(_on_host(base, host), figure)[0], _side(_on_host(other, host), figure)[0])
        if estimate is None:
            return None, {}
        per_host[host] = estimate
    return stats.combine_hosts(per_host), {host: ratio.to_dict() for host, ratio in per_host.items()}


def _figure_row(figure: FigureDef, base: Subject, others: Sequence[Subject], names: Mapping[str, str],
                withheld: bool, verdicts: bool = True, hosts: Sequence[str] | None = None) -> dict[str, Any]:
    base_side, base_values = _side(base, figure)
    base_value, base_centre = _shown_value(base_values, min((len(o.used) for o in others), default=1))
    row: dict[str, Any] = {"name": figure.name, "kind": figure.kind, "unit": figure.unit, "better": figure.better,
                           "rate": figure.rate, "definition": figure.definition, "group": figure.group,
                           "values": {base.label: base_value}, "centres": {base.label: base_centre},
                           "runs": {base.label: base_values},
                           "spread": {base.label: _series_spread(base_values)},
                           "ratios": {}, "verdicts": {}, "hosts": {} if hosts else None}
    for other in others:
        side, values = _side(other, figure)
        row["values"][other.label], row["centres"][other.label] = _shown_value(values, len(base.used))
        row["runs"][other.label] = values
        row["spread"][other.label] = _series_spread(values)
        if hosts:
            estimate, row["hosts"][other.label] = _host_ratios(base, other, figure, hosts)
        else:
            estimate = _ratio(base_side, side, paired=other.paired)
        if estimate is None:
            row["ratios"][other.label] = None
            row["verdicts"][other.label] = None
            continue
        row["ratios"][other.label] = estimate.to_dict()
        if verdicts:
            row["verdicts"][other.label] = _said(estimate, row, names[base.label], names[other.label], withheld)
    return row


def _said(estimate: stats.Ratio, row: Mapping[str, Any], a: str, b: str, withheld: bool) -> dict[str, Any]:
    """A figure's verdict on one ratio (an invalid comparison gets no verdict word, only its interval)."""
    said = stats.verdict(estimate, row["better"], rate=row["rate"], a=a, b=b)
    hidden = withheld and said.resolved
    return {"resolved": said.resolved, "word": None if hidden else said.word, "better": None if hidden else said.better,
            "change": said.change, "low": said.low, "high": said.high, "spread": said.spread,
            "text": "verdict withheld: the comparison is invalid" if hidden else said.text, "withheld": hidden}


def _until_resolved(headline: dict[str, Any] | None, base: Subject, other: Subject, names: Mapping[str, str],
                    withheld: bool) -> dict[str, Any] | None:
    """Pairs run until resolved (compare --paired --until-resolved): the headline's ratio is the
    confidence sequence's, valid at the look the pairs stopped at (a fixed-sample interval is not,
    after looking at every pair); the document's ``sequential`` says how it got there."""
    design = sequential.design_of_runs([*base.runs, *other.runs])
    if design is None or headline is None:
        return None
    pairs = zip(headline["runs"][base.label], headline["runs"][other.label], strict=True)
    ratios = [b / a if a and b else math.nan for a, b in pairs]
    estimate = sequential.interval(ratios, design)
    headline["ratios"][other.label] = estimate.to_dict()
    headline["verdicts"][other.label] = _said(estimate, headline, names[base.label], names[other.label], withheld)
    return sequential.document(headline["name"], ratios, design, sequential.recorded_stop([*base.runs, *other.runs]))


def _verdict(headline: Mapping[str, Any] | None, base: Subject, other: Subject, names: Mapping[str, str],
             errors: Sequence[Mapping[str, Any]], force: bool) -> dict[str, Any]:
    """The comparison's verdict for one side against the baseline: its headline's."""
    missing = [s for s in (base, other) if not s.used]
    if headline is None or missing:
        why = (f"{' and '.join(s.label for s in missing)} has no completed run "
               f"({'; '.join(str(r.get('status')) for s in missing for r in s.runs)})" if missing
               else "the runs have no headline figure")
        return {"figure": None, "resolved": False, "withheld": False, "text": f"no verdict: {why}", "word": None}
    said = headline["verdicts"].get(other.label)
    ratio = headline["ratios"].get(other.label)
    if said is None or ratio is None:
        return {"figure": headline["name"], "resolved": False, "withheld": False, "word": None,
                "text": f"no verdict: {names[other.label]} or {names[base.label]} has no {headline['name']}"}
    text = said["text"]
    if errors and not force:
        rules = ", ".join(sorted({f["rule"] for f in errors}))
        return {"figure": headline["name"], "resolved": said["resolved"], "withheld": True, "word": None,
                "text": f"verdict withheld: the comparison is invalid ({rules}): {errors[0]['message']}"
                        + (f"; and {len(errors) - 1} more error(s)" if len(errors) > 1 else "")}
    if errors:
        text += f" — forced: the comparison has {len(errors)} error(s) in its lint"
    if ratio["basis"] == "intervals" and math.isfinite(ratio["low"]):
        text += " (single runs: the intervals of each run; repeat with --repeat for a verdict across runs)"
    return {"figure": headline["name"], "resolved": said["resolved"], "withheld": False,
            "word": said["word"], "text": text}


def _side_document(subject: Subject, name: str, headline: Mapping[str, Any] | None) -> dict[str, Any]:
    used = {id(run) for run in subject.used}
    head = headline["name"] if headline else None
    return {
        "label": subject.label, "name": name, "kind": subject.kind, "id": subject.ident,
        "argument": subject.argument, "description": subject.describe(),
        "runs": [{"run_id": run.get("run_id"), "status": run.get("status"), "failure": run.get("failure"),
                  "repeat_index": run.get("repeat_index"), "used": id(run) in used,
                  "partner_incomplete": str(run.get("run_id")) in subject.unpaired,
                  "started_at": run.get("started_at"),
                  "headline": _value_of(_stored_figure(run, head, True)) if head else None}
                 for run in subject.runs],
        "summary": headline["spread"].get(subject.label) if headline else None,
    }


def _intervals(subject: Subject, run: StoredRun) -> dict[str, Any]:
    """A run's figure per interval for the chart of every run: x = the interval's middle."""
    series = steady.interval_series(run)
    position = subject.runs.index(run) + 1
    label = subject.label if subject.kind == "run" else f"{subject.label}·{position}"
    found: dict[str, Any] = {"side": subject.label, "label": label, "run_id": run.get("run_id"),
                             "status": run.get("status"), "used": run.get("status") == "completed",
                             "figure": None, "unit": None, "at": [], "values": [], "measured": []}
    if series is not None:
        found.update(figure=series.figure, unit=series.unit,
                     at=[start + seconds / 2 for start, seconds in zip(series.starts, series.seconds, strict=True)],
                     values=list(series.values), measured=list(series.measured))
    return found
