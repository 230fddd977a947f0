"""The credibility lint: the field's lessons (DESIGN.md, "What the field taught us") as rules.

Each rule has an id, a severity and a one-sentence *why*; a finding adds what was found and the
values it was found in (``evidence``). The rule table, the findings and their grouping are in
:mod:`fbbench.analysis.lint_rules`; the rules on caches and the disk (FB020–FB028) in
:mod:`fbbench.analysis.lint_disk`.

Entry points: :func:`lint_run` (one stored run, ``ResultsStore.load_run``),
:func:`lint_comparison` (the conditions of the runs compared, and the axis),
:func:`lint_series` (the runs of one series), :func:`lint_workload` (static, before a run).
:data:`~fbbench.analysis.lint_rules.RULES` lists every rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from fbbench.analysis import conditions as cond
from fbbench.analysis import figures, psql, stats, steady
from fbbench.analysis.lint_disk import (
    MIN_BUFFERS,
    cache_findings,
    conf_of,
    large_cache_per_attachment,
    os_cache_findings,
    run_workload,
)
from fbbench.analysis.lint_rules import WARNING, Finding, finding
from fbbench.analysis.stats import readable
from fbbench.engines.firebird_conf import boolean, integer, lookup
from fbbench.store.model import StoredRun
from fbbench.workloads.spec import Workload
from fbbench.workloads.units import Unit

MAX_CONFLICT_SHARE = 0.05
MAX_ERROR_SHARE = 0.001
MAX_HARNESS_SHARE = 0.20
MIN_HARNESS_CPU = 1.0  # seconds of process CPU: below, fbbench's fixed costs (threads, a reading) decide the share


# ---------------------------------------------------------------------------------- comparison

_RULE_OF_KEY = (
    (("engine.bits", "client.bits"), "FB001"),
    (("protocol",), "FB002"),
    (("database.page_size",), "FB003"),
    (("database.forced_writes",), "FB004"),
    (("engine.version", "engine.build", "engine.binaries"), "FB005"),
)
# Keys whose rule is their factor's: every replication.conf key is replication's.
_RULE_OF_FACTOR = {"replication": "FB012"}


def _rule_of(row: cond.DiffRow) -> str:
    for keys, rule in _RULE_OF_KEY:
        if row.key in keys:
            return rule
    if row.factor in _RULE_OF_FACTOR:
        return _RULE_OF_FACTOR[row.factor]
    if row.key.startswith("host."):
        return "FB006"
    if row.key.startswith("conf."):
        return "FB007"
    return "FB008"


def lint_comparison(records: Mapping[str, Mapping[str, str]], axis: Sequence[str] | None = None) -> list[Finding]:
    """Every difference between the compared runs' conditions that is not the axis.

    ``records``: label → :class:`~fbbench.analysis.conditions.Conditions` (one per run, or per
    series: :func:`conditions.series_record`). ``axis``: what the user named (see
    :func:`conditions.axis`); None: the one difference there is. An axis that cannot be decided
    is itself a finding (FB010).
    """
    rows = cond.diff(records)
    keys = list(dict.fromkeys(k for r in records.values() for k in r))
    try:
        _, others = cond.axis(rows, axis, keys)
    except cond.AxisError as error:
        return [finding("FB010", error.message + (f"; {error.hint}" if error.hint else ""),
                        {"differences": {row.key: row.values for row in rows}})]
    findings = []
    consequences: dict[str, list[cond.DiffRow]] = {}
    for row in others:
        if row.follows is not None:
            consequences.setdefault(row.follows, []).append(row)
    for row in others:
        if row.follows is not None:
            continue  # reported with the difference it follows from
        if row.unknown:
            findings.append(finding("FB009", f"{row.key} cannot be compared ({row.shown()})",
                                    {"key": row.key, "values": row.values}))
            continue
        rule = _rule_of(row)
        severity = None
        if rule == "FB008" and row.key.startswith("fbbench."):
            severity = WARNING  # the harness's own version: measured at parity, still worth naming
        elif rule == "FB007" and row.defaults:
            severity = WARNING  # defaults of two engines differ, and the engine is not the axis
        following = consequences.get(row.factor, [])
        also = "".join(f"; with it {r.key}: {r.shown()}" for r in following)
        findings.append(finding(rule, f"{row.key} differs outside the axis: {row.shown()}{also}",
                                {"key": row.key, "values": row.values,
                                 "follows": {r.key: r.values for r in following}}, severity=severity))
    return findings


def lint_series(records: Sequence[cond.Conditions], label: str = "") -> list[Finding]:
    """Conditions in which the runs of one series differ (there should be none)."""
    _, rows = cond.series_record(records)
    return [finding("FB011", f"the runs of the series differ in {row.key}: {row.shown()}",
                    {"key": row.key, "values": row.values}, label) for row in rows if not row.unknown]


# ------------------------------------------------------------------------------------- one run


def _engine_major(text: Any) -> int | None:
    match = re.search(r"(\d+)\.\d+", str(text or ""))
    return int(match.group(1)) if match else None


def lint_pairs(pairs: Sequence[tuple[StoredRun, StoredRun]]) -> list[Finding]:
    """FB045: the per-pair ratios of the headline (second over first) of a compare --paired series
    trend over the pair index: a fitted slope whose interval excludes 0."""
    ratios = []
    for first, second in pairs:
        a = ((first.get("summary") or {}).get("headline") or {}).get("result")
        b = ((second.get("summary") or {}).get("headline") or {}).get("result")
        ratios.append(b / a if isinstance(a, int | float) and isinstance(b, int | float) and a else None)
    found = stats.trend([r for r in ratios if r is not None])
    if found is None:
        return []
    slope, low, high = found
    if low <= 0 <= high:
        return []
    known = [r for r in ratios if r is not None]
    message = (f"the per-pair ratios trend by {slope:+.3f} per pair (95 % interval {low:+.3f} to {high:+.3f}) from "
               f"{known[0]:.3f} to {known[-1]:.3f}: the environment changed for one side more than for the other")
    return [finding("FB045", message, {"ratios": ratios, "slope": slope, "low": low, "high": high})]


def _load_findings(run: StoredRun, subject: str) -> list[Finding]:
    units = run.get("units") or {}
    counts = {key: sum(int(u.get(key) or 0) for u in units.values())
              for key in figures.OUTCOMES}
    total = sum(counts.values())
    findings = []
    if total:
        share = counts["conflicts"] / total
        if share > MAX_CONFLICT_SHARE:
            findings.append(finding("FB030", f"{counts['conflicts']:,} update conflicts in {total:,} units "
                                    f"({share:.1%} > {MAX_CONFLICT_SHARE:.0%})", counts | {"total": total}, subject))
        share = counts["errors"] / total
        if share > MAX_ERROR_SHARE:
            findings.append(finding("FB031", f"{counts['errors']:,} errors in {total:,} units "
                                    f"({share:.2%} > {MAX_ERROR_SHARE:.1%})", counts | {"total": total}, subject))
    restarts = [f for f in run.get("findings") or [] if f.get("kind") == "read_consistency_restarts"]
    unstable = [(name, e) for name, u in units.items() for e in u.get("errors_by_code") or []
                if "stable set of rows" in str(e.get("message", "")).lower()]
    if restarts or unstable:
        count = sum(int(f.get("count") or 0) for f in restarts) + sum(int(e.get("count") or 0) for _, e in unstable)
        example = (restarts[0].get("example") if restarts else unstable[0][1].get("message")) or ""
        findings.append(finding("FB032", f"{count} statement(s) gave up after repeated read-consistency restarts: "
                                f"{' '.join(str(example).split())[:200]}",
                                {"count": count, "example": example, "units": sorted({n for n, _ in unstable})},
                                subject))
    fatal = [f for f in run.get("findings") or [] if f.get("severity") == "fatal"]
    if fatal:
        findings.append(finding("FB055", f"firebird.log: {fatal[0].get('kind')}: "
                                f"{' '.join(str(fatal[0].get('example') or '').split())[:200]}",
                                {"findings": [{k: f.get(k) for k in ("kind", "count", "example")} for f in fatal]},
                                subject))
    return findings


def _steady_findings(run: StoredRun, subject: str) -> list[Finding]:
    series = steady.interval_series(run)
    if series is None:
        return [finding("FB040", "no measured interval was stored", {"intervals": 0}, subject)]
    state = steady.steady_state(series)
    evidence = {"figure": series.figure, "intervals": state.n_measured, "warmup_intervals": state.n_warmup,
                "cv": state.cv, "change": state.change, "change_low": state.change_low,
                "change_high": state.change_high, "collapsed": state.collapsed, "start_level": state.start_level,
                "slope_per_hour": state.slope, "slope_low": state.slope_low,
                "slope_high": state.slope_high, "settled_after": state.settled_after,
                "warmup_seconds": state.warmup_seconds}
    if state.verdict == "too short":
        return [finding("FB040", f"too short to judge its steady state: {state.text}", evidence, subject)]
    findings = []
    if state.verdict == "never settled":
        findings.append(finding("FB043", state.text, evidence, subject))
    elif state.warmup_too_short:
        findings.append(finding("FB044", f"warm-up {readable(state.warmup_seconds)} s, but the {series.figure} "
                                f"settled only after {readable(state.settled_after or 0.0)} s", evidence, subject))
    if state.trend != "none":
        verb = "" if state.collapsed else "is "
        findings.append(finding("FB041", f"the {series.figure} {verb}{state.trend_text}", evidence, subject))
    if math.isfinite(state.cv) and state.cv > steady.MAX_CV:
        findings.append(finding("FB042", f"the {series.figure}'s intervals vary by CV {state.cv:.1%} "
                                f"(> {steady.MAX_CV:.0%})", evidence, subject))
    return findings


def harness_share(run: StoredRun) -> float | None:
    """fbbench's own CPU (core + Python) as a share of its process's CPU; None when not known, or
    when the process used less than a second of CPU (its fixed costs would decide the share).

    Only for embedded runs, where the process's CPU includes the engine: a server's own CPU is
    not in the process, so the share there says nothing about who the bottleneck is.
    """
    summary = run.get("summary") or {}
    process = summary.get("process_cpu_seconds")
    if not process or summary.get("client_cpu_seconds") is None or cond.protocol_of(run) != "embedded":
        return None
    if process < MIN_HARNESS_CPU:
        return None  # a few dozen units: the sampler's start-up alone would be a large share
    # The core's figure is wall time (an upper bound of its CPU): the share never exceeds all of it.
    own = (summary.get("client_cpu_seconds") or 0.0) + (summary.get("python_cpu_seconds") or 0.0)
    return min(own, process) / process


def _run_findings(run: StoredRun, subject: str) -> list[Finding]:
    findings = []
    status = run.get("status")
    if status != "completed":
        failure = f": {run['failure']}" if run.get("failure") else ""
        findings.append(finding("FB051", f"the run is {status}{failure}", {"status": status,
                                                                         "failure": run.get("failure")}, subject))
    checks = run.get("checks") or []
    failed = [c for c in checks if c.get("kind") == "check" and c.get("passed") is False]
    if failed:
        findings.append(finding("FB052", "failed: " + "; ".join(f"{c['name']} ({c.get('detail') or ''})"
                                                                 for c in failed),
                                {"checks": [c["name"] for c in failed]}, subject))
    audits = [c for c in checks if c.get("kind") == "audit"]
    failed = [a for a in audits if a.get("passed") is False]
    if failed:
        findings.append(finding("FB053", "outside their bounds: " + "; ".join(f"{a['name']} ({a.get('detail') or ''})"
                                                                               for a in failed),
                                {"audits": [a["name"] for a in failed]}, subject))
    unjudged = [a for a in audits if a.get("passed") is None and "too few" in str(a.get("detail") or "")]
    if unjudged:
        findings.append(finding("FB054", "too few transactions to judge: " + ", ".join(a["name"] for a in unjudged),
                                {"audits": [a["name"] for a in unjudged]}, subject))
    share = harness_share(run)
    if share is not None and share > MAX_HARNESS_SHARE:
        findings.append(finding("FB050", f"fbbench itself used {share:.1%} of its process's CPU "
                                f"(> {MAX_HARNESS_SHARE:.0%})", {"share": share}, subject))
    return findings


def lint_run(run: StoredRun) -> list[Finding]:
    """The findings on one stored run (``ResultsStore.load_run``): its status, checks and audits,
    cache and disk, conflicts and errors, firebird.log, steadiness, the harness's share, and the
    static rules on the workload files it stored."""
    subject = str(run.get("run_id") or "")
    findings = _run_findings(run, subject)
    findings += cache_findings(run, subject)
    findings += os_cache_findings(run, subject)
    findings += _load_findings(run, subject)
    if run.get("status") in ("completed", "interrupted"):
        findings += _steady_findings(run, subject)
    workload = run_workload(run)
    if workload is not None:
        conf, _ = conf_of(run)
        engine = run.get("engine") or {}
        findings += _random_findings(workload.units, workload.files, _engine_major(engine.get("engine_version")
                                                                                   or run.get("engine_version")), conf)
    return findings


# -------------------------------------------------------------------------------- static rules


def reads_consistently(isolation: str, engine_major: int | None, conf: Mapping[str, str]) -> bool:
    """Whether a unit's statements restart on update conflicts (Firebird 4+ read consistency).

    ``read_consistency`` always does; ``read_committed`` does on Firebird 4+ while
    ReadConsistency = 1 (the default). An unknown engine is taken as 4+ (a workload runs on all).
    """
    if engine_major is not None and engine_major < 4:
        return False
    if isolation == "read_consistency":
        return True
    return isolation == "read_committed" and boolean(lookup(conf, "ReadConsistency")) is not False


def _random_findings(units: Sequence[Unit], files: Mapping[str, str], engine_major: int | None,
                     conf: Mapping[str, str]) -> list[Finding]:
    defined = psql.routines(files)
    findings = []
    for unit in units:
        if not reads_consistently(unit.isolation, engine_major, conf):
            continue
        reached = psql.random_reached(tuple(statement.sql for statement in unit.statements), defined, unit.name)
        if not reached:
            continue
        paths = []
        for reach in reached:
            chain = " → ".join((f"unit {unit.name}", *reach.chain))
            paths.append(f"{chain}: {reach.use.call}() at {reach.use.where}")
        isolation = unit.isolation + ("" if unit.isolation == "read_consistency" else " (ReadConsistency = 1)")
        findings.append(finding(
            "FB033", f"unit {unit.name} runs under {isolation} and draws random values inside the engine: "
            + "; ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
            + "; pass a seed() parameter and derive the choices from it",
            {"unit": unit.name, "isolation": unit.isolation, "paths": paths}, unit.name))
    return findings


def lint_workload(workload: Workload, engine_major: int | str | None = None, conf: Mapping[str, str] | None = None,
                  *, page_buffers: int | None = None, connections: int | None = None,
                  page_size: int | None = None) -> list[Finding]:
    """Static findings before a run, from the workload (:class:`~fbbench.workloads.spec.Workload`),
    the engine's major version (5, "5.0", None for unknown) and the run's firebird.conf settings
    (``--set`` with the ServerMode of ``--architecture``; ``page_buffers``: ``--page-buffers``;
    ``connections`` and ``page_size``, when given, say what per-attachment caches cost)."""
    conf = dict(conf or {})
    major = engine_major if isinstance(engine_major, int) or engine_major is None else _engine_major(
        f"{engine_major}.0" if "." not in str(engine_major) else engine_major)
    findings = _random_findings(workload.units, workload.files, major, conf)
    buffers = page_buffers if page_buffers is not None else integer(lookup(conf, "DefaultDbCachePages"))
    if buffers is not None and buffers < MIN_BUFFERS:
        findings.append(finding("FB020", f"page buffers {buffers} (< {MIN_BUFFERS}): the run would measure copying "
                                "pages between Firebird's cache and the OS file cache rather than the engine",
                                {"page_buffers": buffers}, workload.name))
    mode = str(lookup(conf, "ServerMode") or "")
    return findings + large_cache_per_attachment(mode, buffers, workload.name, f"ServerMode {mode}",
                                                 ran=(connections, page_size) if connections else None)
