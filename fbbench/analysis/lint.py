"""The credibility lint: the field's lessons (DESIGN.md, "What the field taught us") as rules.

Each rule has an id, a severity and a one-sentence *why*; a :class:`Finding` adds what was found
and the values it was found in (``evidence``). Severities:

- ``error``: the comparison (or the run, as evidence) is invalid;
- ``warning``: the conclusion is weak;
- ``note``: worth knowing; fbbench cannot tell whether it matters (e.g. it cannot know whether
  the user means to claim something about the disk).

Entry points: :func:`lint_run` (one stored run, ``ResultsStore.load_run``),
:func:`lint_comparison` (the conditions of the runs compared, and the axis),
:func:`lint_series` (the runs of one series), :func:`lint_workload` (static, before a run).
:data:`RULES` lists every rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from fbbench.analysis import conditions as cond
from fbbench.analysis import engine as engine_figures
from fbbench.analysis import figures, psql, stats, steady
from fbbench.analysis.stats import readable
from fbbench.engines.firebird_conf import (
    CACHE_PER_ATTACHMENT,
    architecture_of_mode,
    boolean,
    integer,
    lookup,
    os_cache_in_play,
    parse_conf_text,
)
from fbbench.errors import FbbenchError
from fbbench.store.model import StoredRun
from fbbench.workloads.spec import Workload, stored_workload
from fbbench.workloads.units import Unit

ERROR, WARNING, NOTE = "error", "warning", "note"
SEVERITIES = (ERROR, WARNING, NOTE)

MIN_BUFFERS = 256
MAX_CLASSIC_BUFFERS = 2048
MAX_CONFLICT_SHARE = 0.05
MAX_ERROR_SHARE = 0.001
MAX_HARNESS_SHARE = 0.20
MIN_HARNESS_CPU = 1.0  # seconds of process CPU: below, fbbench's fixed costs (threads, a reading) decide the share
# The share of the engine's reads that reached the storage: a run whose readings span from at most
# the first to at least the second read from the OS cache at times and from the disk at others.
CACHED_SHARE, STORAGE_SHARE = 0.2, 0.5
MOVED_SHARE = 0.3  # between runs: their shares differ by this much


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    title: str
    why: str


RULES: dict[str, Rule] = {rule.id: rule for rule in (
    # Comparisons: conditions that differ outside the axis.
    Rule("FB001", ERROR, "bitness differs",
         "A published \"Firebird 4 is slower than 3\" compared a 32-bit 3.0 with a 64-bit 4.0: bitness changes the "
         "engine's memory and arithmetic, so it must be the same or be the axis."),
    Rule("FB002", ERROR, "protocol differs",
         "Embedded, TCP and XNET put different layers between client and engine; Firebird maintainers reject "
         "comparisons that do not state the same protocol."),
    Rule("FB003", ERROR, "page size differs",
         "Page size changes index depth, records per page and what a cache of N pages holds (the 16K-against-32K "
         "comparison measured that, not the versions)."),
    Rule("FB004", ERROR, "forced writes differ",
         "Forced writes decide whether every page write waits for the disk: on against off compares fsync with "
         "none."),
    Rule("FB005", ERROR, "engine build differs",
         "Builds of one version differ in fixes and defaults; a comparison names the exact builds or compares "
         "them on purpose."),
    Rule("FB006", ERROR, "host differs",
         "Optimal settings do not transfer between machines (the TPC-C-on-Firebird study): runs on different "
         "hosts compare the hosts."),
    Rule("FB007", ERROR, "firebird.conf differs",
         "Firebird maintainers reject any comparison that does not state the same full firebird.conf: one key "
         "(a cache, a lock table, ReadConsistency) can decide the result."),
    Rule("FB008", ERROR, "another condition differs",
         "A comparison changes one thing at a time (the TPC-C-on-Firebird study): every other difference is a "
         "second, unmeasured axis."),
    Rule("FB009", NOTE, "condition not visible",
         "What a run did not record cannot be shown to be equal: a Firebird 3 server does not show its "
         "firebird.conf, and a run that stopped before its engine was read recorded neither the engine's nor "
         "the database's conditions."),
    Rule("FB010", ERROR, "axis unclear",
         "A comparison must say which difference it measures; with several, any one may explain the result."),
    Rule("FB011", ERROR, "series not uniform",
         "The repeats of a series must share their conditions, or their spread mixes noise with a change."),
    Rule("FB012", ERROR, "replication differs",
         "Replication writes every change a second time — into a journal, or through a replica's commit — and the "
         "published 4.0 comparison reported a further hit with it on: on one side only, it is a second axis."),
    # One run: the cache, the disk, the architecture.
    Rule("FB020", WARNING, "page cache too small",
         "With a cache of a few dozen pages (the published 50-page \"drive test\") a run measures copying pages "
         "between Firebird's cache and the OS file cache, not the engine and not the disk."),
    Rule("FB021", WARNING, "large cache per attachment",
         "SuperClassic and Classic give every attachment its own cache: more than 2048 buffers each multiplies "
         "memory and page traffic, and is known to hurt."),
    Rule("FB022", NOTE, "disk not measured",
         "A disk test needs a database larger than every cache in the way: Firebird's page cache and the OS file "
         "cache."),
    Rule("FB023", WARNING, "file cache off, database in the page cache",
         "Turning the OS file cache off makes a test of the disk only when the database does not fit in Firebird's "
         "own page cache: after its first reads it never goes to the disk again."),
    Rule("FB024", WARNING, "disk test inside the OS cache",
         "A disk test whose database fits in the memory the OS can cache, with the file cache on, reads from "
         "memory after the first pass: the published 50-page \"drive test\" measured copying between two caches."),
    Rule("FB025", WARNING, "forced writes off in a disk comparison",
         "Without forced writes a commit does not wait for the disk: a comparison of disk tests then compares how "
         "the OS buffers writes (a user's 1,400 against 9,500 updates/s on one VM was traced to forced writes and "
         "write barriers)."),
    Rule("FB026", WARNING, "page cache below the working set",
         "The engine keeps its working set in the page cache — the header, the TIP pages from OIT to Next, the "
         "pointer and index-root pages of the tables in use — or rereads it for every operation; fewer buffers "
         "measure that thrashing."),
    Rule("FB027", WARNING, "OS cache moved during the run",
         "A database read through the OS file cache is as fast as the memory the host has free for it: when that "
         "moves during a run, the figure moves with the environment, not with Firebird."),
    Rule("FB028", WARNING, "OS cache differed between runs",
         "Runs whose reads came from the OS cache in one and from the disk in another compare the host's memory at "
         "the time, not the conditions they name."),
    # One run: what the load did.
    Rule("FB030", WARNING, "many update conflicts",
         "A benchmark of update conflicts is not a benchmark of the engine: above 5 % of units the result "
         "measures the workload's contention."),
    Rule("FB031", WARNING, "errors",
         "Units that fail with errors are work not done: above 0.1 % the figure measures the failures."),
    Rule("FB032", WARNING, "read-consistency restarts",
         "Statement restarts under ReadConsistency (\"unable to get a stable set of rows ... after 10 attempts of "
         "restart\") made throughput collapse in the published 4.0 comparison."),
    Rule("FB033", ERROR, "random values under read consistency",
         "A restarted statement must repeat the same work; a procedure that draws rand() or gen_uuid() touches "
         "different rows on each restart, and conflicts snowball (the published 4.0 comparison)."),
    # One run: how long and how steady.
    Rule("FB040", WARNING, "measured period too short",
         "Fewer than 5 measured intervals cannot show whether the run was steady."),
    Rule("FB041", WARNING, "trend",
         "A figure that rises or falls during the measured period depends on how long the run was (\"how Firebird "
         "gets tired\"): state the trend, or measure longer."),
    Rule("FB042", WARNING, "unsteady",
         "Intervals that scatter by more than 10 % make one run's figure a draw from a wide range."),
    Rule("FB043", WARNING, "never settled",
         "A run whose throughput never settled reports a point on a curve, not a level."),
    Rule("FB044", WARNING, "warm-up too short",
         "Measuring before throughput settles mixes the warm-up into the figure."),
    Rule("FB045", WARNING, "paired ratios trend",
         "Pairing removes drift that hits both sides alike, not a change of the environment that hits one "
         "configuration only: 50 against 2,048 page buffers drifted from 0.60 to 1.00 pair by pair while another "
         "process pushed the host into memory pressure, and gave 1.004 (0.971–1.024) on a quiet host."),
    # One run: the harness and the run itself.
    Rule("FB050", WARNING, "harness CPU",
         "When the load generator takes a large share of the CPU, the figure measures the client; one client "
         "saturating is why harnesses grow multi-client loads."),
    Rule("FB051", ERROR, "run not completed",
         "An interrupted or failed run measured part of what it set out to."),
    Rule("FB052", ERROR, "consistency checks failed",
         "A run that leaves the database inconsistent did not do the work it counted."),
    Rule("FB053", WARNING, "audits failed",
         "Audits check that the run submitted the mix the workload defines; outside the bounds it measured a "
         "different workload."),
    Rule("FB054", NOTE, "audits not judged",
         "An audit judged on too few transactions cannot say whether the mix was right."),
    Rule("FB055", ERROR, "engine failure logged",
         "A crash, bugcheck or consistency check in firebird.log means the engine did not run normally."),
)}


@dataclass(frozen=True)
class Finding:
    """One rule broken: ``message`` says what was found with the values, ``evidence`` holds them."""

    rule: str
    severity: str
    title: str
    message: str
    why: str
    evidence: dict[str, Any] = field(default_factory=dict)
    subject: str = ""  # the run, series or unit it is about

    @property
    def text(self) -> str:
        subject = f"{self.subject}: " if self.subject else ""
        return f"{self.rule} {self.severity}: {subject}{self.message}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _finding(rule_id: str, message: str, evidence: dict[str, Any] | None = None, subject: str = "",
             severity: str | None = None) -> Finding:
    rule = RULES[rule_id]
    return Finding(rule.id, severity or rule.severity, rule.title, message, rule.why, evidence or {}, subject)


def worst(findings: Iterable[Finding]) -> str | None:
    """The most severe severity among ``findings`` (None when there are none)."""
    found = {f.severity for f in findings}
    return next((s for s in SEVERITIES if s in found), None)


# Where a grouped finding is, by its scope (a run's findings name their side and how many runs).
_SCOPE_WORDS = {"comparison": "the comparison", "sweep": "across the cells", "series": "the series"}


def grouped(findings: Sequence[Mapping[str, Any]], sides: Mapping[str, tuple[str, int]]) -> list[dict[str, Any]]:
    """The findings of a comparison or a sweep, one group per rule and side: a series' repeats
    mostly say the same thing, and ten runs saying it are one line with a count, not ten.

    ``findings`` carry ``scope`` (comparison / sweep / series / run), ``side`` and ``excluded`` (a
    run not used); ``sides`` gives each side's kind (run / series) and its number of runs. Each
    group: the rule, severity, title and why; scope, side, excluded; ``about`` in words
    (``B (6 of 10 runs)``); ``count``; ``message`` (the first finding's) and ``same_message``
    (all say it alike); ``findings`` (each one's subject and message). Most severe first, the
    findings of runs not used last within a severity."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for finding in findings:
        scope = finding.get("scope") or "run"
        key = (finding["rule"], finding["severity"], scope, finding.get("side"), bool(finding.get("excluded")),
               finding["message"] if scope != "run" else None)
        groups.setdefault(key, []).append(finding)
    found = []
    for (rule, severity, scope, side, excluded, _), items in groups.items():
        first = items[0]
        if scope == "run" and side in sides:
            kind, runs = sides[side]
            about = f"{side} (the run)" if kind == "run" else f"{side} ({len(items)} of {runs} runs)"
        elif scope == "run":
            about = ", ".join(dict.fromkeys(str(f.get("subject") or "") for f in items))
        else:
            about = f"{side} ({_SCOPE_WORDS[scope]})" if side else _SCOPE_WORDS.get(scope, scope)
        found.append({"rule": rule, "severity": severity, "title": first["title"], "why": first["why"],
                      "scope": scope, "side": side, "excluded": excluded, "about": about, "count": len(items),
                      "message": first["message"], "same_message": len({f["message"] for f in items}) == 1,
                      "findings": [{"subject": f.get("subject"), "message": f["message"]} for f in items]})
    order = {severity: i for i, severity in enumerate(SEVERITIES)}
    return sorted(found, key=lambda g: (order.get(g["severity"], 9), g["excluded"], g["rule"], str(g["side"])))


# ---------------------------------------------------------------------------------- comparison

_RULE_OF_KEY = (
    (("engine.bits", "client.bits"), "FB001"),
    (("protocol",), "FB002"),
    (("database.page_size",), "FB003"),
    (("database.forced_writes",), "FB004"),
    (("engine.version", "engine.build"), "FB005"),
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
        return [_finding("FB010", error.message + (f"; {error.hint}" if error.hint else ""),
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
            findings.append(_finding("FB009", f"{row.key} cannot be compared ({row.shown()})",
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
        findings.append(_finding(rule, f"{row.key} differs outside the axis: {row.shown()}{also}",
                                 {"key": row.key, "values": row.values,
                                  "follows": {r.key: r.values for r in following}}, severity=severity))
    return findings


def lint_series(records: Sequence[cond.Conditions], label: str = "") -> list[Finding]:
    """Conditions in which the runs of one series differ (there should be none)."""
    _, rows = cond.series_record(records)
    return [_finding("FB011", f"the runs of the series differ in {row.key}: {row.shown()}",
                     {"key": row.key, "values": row.values}, label) for row in rows if not row.unknown]


# ------------------------------------------------------------------------------------- one run


def _conf_of(run: StoredRun) -> tuple[dict[str, str], set[str]]:
    """Effective firebird.conf (name → value) and the names explicitly set."""
    engine = run.get("engine") or {}
    rows = engine.get("firebird_conf") or []
    if rows:
        return ({r["name"]: "" if r.get("value") is None else str(r["value"]) for r in rows},
                {r["name"] for r in rows if r.get("is_set")})
    pairs = parse_conf_text(engine.get("firebird_conf_text") or "")
    return pairs, set(pairs)


def _mib(value: float) -> str:
    return f"{value / 2**20:,.1f} MiB"


def _engine_major(text: Any) -> int | None:
    match = re.search(r"(\d+)\.\d+", str(text or ""))
    return int(match.group(1)) if match else None


def _large_cache_per_attachment(mode: str, buffers: int | None, subject: str, shown: str,
                                ran: tuple[int | None, int | None] | None = None) -> list[Finding]:
    """FB021 for a ServerMode (any of Firebird's spellings) and the page buffers of each
    attachment; ``ran``: the (connections, page size) of a run, to say what the caches cost (the
    page size may not be known before the run: then only how many caches)."""
    if architecture_of_mode(mode) not in CACHE_PER_ATTACHMENT or buffers is None or buffers <= MAX_CLASSIC_BUFFERS:
        return []
    message = f"{shown} with {buffers} page buffers per attachment (> {MAX_CLASSIC_BUFFERS})"
    evidence: dict[str, Any] = {"architecture": mode, "page_buffers": buffers}
    if ran is not None:
        connections, page_size = ran
        if page_size:
            each = buffers * page_size
            message += f": {connections} attachment(s) × {_mib(each)} of cache = {_mib(each * (connections or 1))}"
        else:
            message += f": {connections} attachment(s), a cache each"
        evidence["connections"] = connections
    return [_finding("FB021", message, evidence, subject)]


def _cache_findings(run: StoredRun, subject: str) -> list[Finding]:
    database = run.get("database") or {}
    before, after = database.get("before") or {}, database.get("after") or {}
    buffers, page_size = before.get("page_buffers"), before.get("page_size")
    conf, set_keys = _conf_of(run)
    architecture = str((run.get("engine") or {}).get("server_mode") or run.get("architecture") or "")
    connections = (run.get("settings") or {}).get("connections")
    findings = []
    in_play = os_cache_in_play(conf, set_keys, buffers)
    if buffers is not None and buffers < MIN_BUFFERS:
        where = ("the OS file cache" if in_play else "the disk")
        findings.append(_finding(
            "FB020", f"page buffers {buffers} (< {MIN_BUFFERS}): the run measures copying pages between Firebird's "
            f"cache and {where} rather than the engine", {"page_buffers": buffers, "os_cache": in_play}, subject))
    findings += _large_cache_per_attachment(architecture, buffers, subject, architecture,
                                            ran=(connections, page_size))
    size = max(before.get("size_bytes") or 0, after.get("size_bytes") or 0)
    memory = (run.get("host") or {}).get("memory_bytes")
    forced = before.get("forced_writes")
    findings += _working_set_findings(run, subject)
    if size and buffers and page_size:
        cache = buffers * page_size
        evidence = {"database_bytes": size, "page_cache_bytes": cache, "host_memory_bytes": memory,
                    "os_cache": in_play, "forced_writes": forced}
        observed = engine_figures.os_cache(run.get("engine_samples") or {}, run.get("intervals", []), page_size)
        available = ((observed or {}).get("host") or {}).get("mem_available", {}).get("max") or memory
        if not in_play and size <= cache:
            return [*findings, _finding(
                "FB023", f"the OS file cache is off, but the database ({_mib(size)}) fits in Firebird's page cache "
                f"({buffers} buffers × {page_size} bytes = {_mib(cache)}): after its first reads the run does not go "
                "to the disk", evidence, subject)]
        if in_play and _is_disk_test(run) and available and size <= available:
            return [*findings, _finding(
                "FB024", f"a disk test with the OS file cache on, whose database ({_mib(size)}) fits in the memory the "
                f"host had available ({available / 2**30:.1f} GiB): its reads come from memory; turn the file cache "
                "off (--file-cache off), drop it first (--drop-caches) or make the database larger than memory "
                "(--target-size)", {**evidence, "available_bytes": available}, subject)]
        reason = None
        if size <= cache:
            reason = (f"the database ({_mib(size)}) fits in Firebird's page cache ({buffers} buffers × {page_size} "
                      f"bytes = {_mib(cache)})")
        elif in_play and memory and size <= memory:
            reason = (f"the database ({_mib(size)}) fits in the OS file cache (host memory {memory / 2**30:.1f} GiB), "
                      "which firebird.conf leaves in play (UseFileSystemCache / FileSystemCacheThreshold)")
        if reason:
            what = "does not measure disk reads"
            if forced is False:
                what = "does not measure the disk"
                reason += "; and forced writes are off, so writes end in the OS cache too"
            findings.append(_finding("FB022", f"this run {what}: {reason}", evidence, subject))
    return findings


def _is_disk_test(run: StoredRun) -> bool:
    """Whether the run's workload says its figures are the storage's (``disk = true``)."""
    workload = _stored(run)
    return bool(workload and workload.disk)


def _stored(run: StoredRun) -> Workload | None:
    """The workload the run ran, at its scale, from the files it stored (None if it stored none
    or this fbbench no longer reads them)."""
    files = run.get("workload_files") or {}
    if not files.get("workload.toml"):
        return None
    try:
        # The units the run ran, with its scale (a unit may call orders_generate_${variant}).
        return stored_workload(files, (run.get("settings") or {}).get("scale") or {})
    except FbbenchError:
        return None


def working_set(run: StoredRun) -> dict[str, Any] | None:
    """The pages the engine needs in its cache to work without rereading them (the rebuttal's
    list): the header page, the TIP pages from OIT to Next, and the pointer and index-root pages
    of the tables the run used (their data pages from gstat before the run). None when the run
    did not record enough to tell (no gstat, no per-table activity)."""
    database = run.get("database") or {}
    before, after = database.get("before") or {}, database.get("after") or database.get("before") or {}
    page_size = before.get("page_size")
    gstat: Mapping[str, Any] = (run.get("gstat") or {}).get("before") or {}
    snapshot = gstat.get("snapshot") or {}
    tables = snapshot.get("tables") or {}
    used = [row["table"] for row in engine_figures.busiest_tables(run.get("engine_samples") or {},
                                                                  run.get("intervals", []), top=10_000)]
    if not page_size or not tables or not used:
        return None
    headers = [h for h in (before, after) if h.get("next_transaction") is not None]
    oit = min((h.get("oldest_transaction") or 0 for h in headers), default=0)
    next_ = max((h.get("next_transaction") or 0 for h in headers), default=0)
    per_tip = (page_size - 20) * 4  # two bits per transaction
    tip = next_ // per_tip - oit // per_tip + 1
    per_pointer = (page_size - 32) // 5  # a page number and a byte of flags per data page
    pointers = sum(max(1, -(-int((tables.get(name) or {}).get("data_pages") or 0) // per_pointer)) for name in used)
    index_roots = len(used)
    return {"header": 1, "tip": tip, "pointer": pointers, "index_root": index_roots,
            "total": 1 + tip + pointers + index_roots, "tables": len(used), "oit": oit, "next": next_}


def _working_set_findings(run: StoredRun, subject: str) -> list[Finding]:
    buffers = ((run.get("database") or {}).get("before") or {}).get("page_buffers")
    need = working_set(run)
    if not buffers or need is None or buffers >= need["total"]:
        return []
    message = (f"page buffers {buffers} (per attachment where each has its own cache) are fewer than the "
               f"{need['total']:,} pages of the engine's working set: the header, {need['tip']:,} TIP page(s) for "
               f"OIT {need['oit']:,} .. Next {need['next']:,}, {need['pointer']:,} pointer and "
               f"{need['index_root']:,} index-root page(s) of the {need['tables']} table(s) in use")
    return [_finding("FB026", message, {"page_buffers": buffers, **need}, subject)]


def _os_cache_findings(run: StoredRun, subject: str) -> list[Finding]:
    """FB027: the OS cache's part in the engine's reads changed during the run, or the database
    fit in the host's available memory at some readings and not at others."""
    before = (run.get("database") or {}).get("before") or {}
    page_size, buffers = before.get("page_size"), before.get("page_buffers")
    conf, set_keys = _conf_of(run)
    if not os_cache_in_play(conf, set_keys, buffers):
        return []
    observed = engine_figures.os_cache(run.get("engine_samples") or {}, run.get("intervals", []), page_size)
    if not observed:
        return []
    low, high = observed.get("storage_share_min"), observed.get("storage_share_max")
    available = (observed.get("host") or {}).get("mem_available") or {}
    size = max(before.get("size_bytes") or 0, ((run.get("database") or {}).get("after") or {}).get("size_bytes") or 0)
    evidence = {"storage_share_min": low, "storage_share_max": high, "available_min": available.get("min"),
                "available_max": available.get("max"), "database_bytes": size,
                "page_cache": (observed.get("host") or {}).get("page_cache")}
    if low is not None and high is not None and low <= CACHED_SHARE and high >= STORAGE_SHARE:
        return [_finding("FB027", f"the share of the engine's reads that reached the storage moved from {low:.0%} to "
                                  f"{high:.0%} between readings: the OS cache held the database at times and not at "
                                  "others", evidence, subject)]
    if size and available.get("min") is not None and available["min"] < size <= available["max"]:
        return [_finding("FB027", f"the host's available memory moved between {available['min'] / 2**30:.1f} and "
                                  f"{available['max'] / 2**30:.1f} GiB, across the database's {_mib(size)}: it fit in "
                                  "the OS cache at times and not at others", evidence, subject)]
    return []


def lint_os_cache_series(runs: Sequence[StoredRun], label: str = "") -> list[Finding]:
    """FB028: runs of one series (or one side of a comparison) whose engine read from the OS cache
    in one run and from the storage in another."""
    shares = {}
    for run in runs:
        before = (run.get("database") or {}).get("before") or {}
        observed = engine_figures.os_cache(run.get("engine_samples") or {}, run.get("intervals", []),
                                           before.get("page_size"))
        if observed and observed.get("storage_share") is not None:
            shares[str(run.get("run_id"))] = float(observed["storage_share"])
    if len(shares) < 2 or max(shares.values()) - min(shares.values()) < MOVED_SHARE:
        return []
    low, high = min(shares.values()), max(shares.values())
    return [_finding("FB028", f"the share of the engine's reads that reached the storage was {low:.0%} in one run and "
                              f"{high:.0%} in another", {"storage_share": shares}, label)]


def lint_disk_comparison(runs: Sequence[StoredRun]) -> list[Finding]:
    """FB025: a comparison of disk tests with forced writes off (on any side)."""
    off = [str(run.get("run_id")) for run in runs
           if ((run.get("database") or {}).get("before") or {}).get("forced_writes") is False and _is_disk_test(run)]
    if not off:
        return []
    return [_finding("FB025", f"forced writes were off in {len(off)} of the {len(runs)} disk-test run(s) compared: "
                              "their commits did not wait for the disk", {"runs": off})]


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
    return [_finding("FB045", message, {"ratios": ratios, "slope": slope, "low": low, "high": high})]


def _load_findings(run: StoredRun, subject: str) -> list[Finding]:
    units = run.get("units") or {}
    counts = {key: sum(int(u.get(key) or 0) for u in units.values())
              for key in figures.OUTCOMES}
    total = sum(counts.values())
    findings = []
    if total:
        share = counts["conflicts"] / total
        if share > MAX_CONFLICT_SHARE:
            findings.append(_finding("FB030", f"{counts['conflicts']:,} update conflicts in {total:,} units "
                                     f"({share:.1%} > {MAX_CONFLICT_SHARE:.0%})", counts | {"total": total}, subject))
        share = counts["errors"] / total
        if share > MAX_ERROR_SHARE:
            findings.append(_finding("FB031", f"{counts['errors']:,} errors in {total:,} units "
                                     f"({share:.2%} > {MAX_ERROR_SHARE:.1%})", counts | {"total": total}, subject))
    restarts = [f for f in run.get("findings") or [] if f.get("kind") == "read_consistency_restarts"]
    unstable = [(name, e) for name, u in units.items() for e in u.get("errors_by_code") or []
                if "stable set of rows" in str(e.get("message", "")).lower()]
    if restarts or unstable:
        count = sum(int(f.get("count") or 0) for f in restarts) + sum(int(e.get("count") or 0) for _, e in unstable)
        example = (restarts[0].get("example") if restarts else unstable[0][1].get("message")) or ""
        findings.append(_finding("FB032", f"{count} statement(s) gave up after repeated read-consistency restarts: "
                                 f"{' '.join(str(example).split())[:200]}",
                                 {"count": count, "example": example, "units": sorted({n for n, _ in unstable})},
                                 subject))
    fatal = [f for f in run.get("findings") or [] if f.get("severity") == "fatal"]
    if fatal:
        findings.append(_finding("FB055", f"firebird.log: {fatal[0].get('kind')}: "
                                 f"{' '.join(str(fatal[0].get('example') or '').split())[:200]}",
                                 {"findings": [{k: f.get(k) for k in ("kind", "count", "example")} for f in fatal]},
                                 subject))
    return findings


def _steady_findings(run: StoredRun, subject: str) -> list[Finding]:
    series = steady.interval_series(run)
    if series is None:
        return [_finding("FB040", "no measured interval was stored", {"intervals": 0}, subject)]
    state = steady.steady_state(series)
    evidence = {"figure": series.figure, "intervals": state.n_measured, "warmup_intervals": state.n_warmup,
                "cv": state.cv, "change": state.change, "change_low": state.change_low,
                "change_high": state.change_high, "collapsed": state.collapsed, "start_level": state.start_level,
                "slope_per_hour": state.slope, "slope_low": state.slope_low,
                "slope_high": state.slope_high, "settled_after": state.settled_after,
                "warmup_seconds": state.warmup_seconds}
    if state.verdict == "too short":
        return [_finding("FB040", state.text, evidence, subject)]
    findings = []
    if state.verdict == "never settled":
        findings.append(_finding("FB043", state.text, evidence, subject))
    elif state.warmup_too_short:
        findings.append(_finding("FB044", f"warm-up {readable(state.warmup_seconds)} s, but the {series.figure} "
                                 f"settled only after {readable(state.settled_after or 0.0)} s", evidence, subject))
    if state.trend != "none":
        verb = "" if state.collapsed else "is "
        findings.append(_finding("FB041", f"the {series.figure} {verb}{state.trend_text}", evidence, subject))
    if math.isfinite(state.cv) and state.cv > steady.MAX_CV:
        findings.append(_finding("FB042", f"the {series.figure}'s intervals vary by CV {state.cv:.1%} "
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
    return ((summary.get("client_cpu_seconds") or 0.0) + (summary.get("python_cpu_seconds") or 0.0)) / process


def _run_findings(run: StoredRun, subject: str) -> list[Finding]:
    findings = []
    status = run.get("status")
    if status != "completed":
        failure = f": {run['failure']}" if run.get("failure") else ""
        findings.append(_finding("FB051", f"the run is {status}{failure}", {"status": status,
                                                                          "failure": run.get("failure")}, subject))
    checks = run.get("checks") or []
    failed = [c for c in checks if c.get("kind") == "check" and c.get("passed") is False]
    if failed:
        findings.append(_finding("FB052", "failed: " + "; ".join(f"{c['name']} ({c.get('detail') or ''})"
                                                                  for c in failed),
                                 {"checks": [c["name"] for c in failed]}, subject))
    audits = [c for c in checks if c.get("kind") == "audit"]
    failed = [a for a in audits if a.get("passed") is False]
    if failed:
        findings.append(_finding("FB053", "outside their bounds: " + "; ".join(f"{a['name']} ({a.get('detail') or ''})"
                                                                                for a in failed),
                                 {"audits": [a["name"] for a in failed]}, subject))
    unjudged = [a for a in audits if a.get("passed") is None and "too few" in str(a.get("detail") or "")]
    if unjudged:
        findings.append(_finding("FB054", "too few transactions to judge: " + ", ".join(a["name"] for a in unjudged),
                                 {"audits": [a["name"] for a in unjudged]}, subject))
    share = harness_share(run)
    if share is not None and share > MAX_HARNESS_SHARE:
        findings.append(_finding("FB050", f"fbbench itself used {share:.1%} of its process's CPU "
                                 f"(> {MAX_HARNESS_SHARE:.0%})", {"share": share}, subject))
    return findings


def lint_run(run: StoredRun) -> list[Finding]:
    """The findings on one stored run (``ResultsStore.load_run``): its status, checks and audits,
    cache and disk, conflicts and errors, firebird.log, steadiness, the harness's share, and the
    static rules on the workload files it stored."""
    subject = str(run.get("run_id") or "")
    findings = _run_findings(run, subject)
    findings += _cache_findings(run, subject)
    findings += _os_cache_findings(run, subject)
    findings += _load_findings(run, subject)
    if run.get("status") in ("completed", "interrupted"):
        findings += _steady_findings(run, subject)
    workload = _stored(run)
    if workload is not None:
        conf, _ = _conf_of(run)
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
        findings.append(_finding(
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
        findings.append(_finding("FB020", f"page buffers {buffers} (< {MIN_BUFFERS}): the run would measure copying "
                                 "pages between Firebird's cache and the OS file cache rather than the engine",
                                 {"page_buffers": buffers}, workload.name))
    mode = str(lookup(conf, "ServerMode") or "")
    return findings + _large_cache_per_attachment(mode, buffers, workload.name, f"ServerMode {mode}",
                                                  ran=(connections, page_size) if connections else None)
