"""The credibility lint's rules and findings: each rule's id, severity, title and one-sentence
*why* (:data:`RULES`, the rules of every lint module), a :class:`Finding` (what was found and the
values it was found in, ``evidence``), the worst severity of some findings, and the findings of a
comparison or a sweep grouped one line per rule and side (:func:`grouped`). Severities:

- ``error``: the comparison (or the run, as evidence) is invalid;
- ``warning``: the conclusion is weak;
- ``note``: worth knowing; fbbench cannot tell whether it matters (e.g. it cannot know whether
  the user means to claim something about the disk).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

ERROR, WARNING, NOTE = "error", "warning", "note"
SEVERITIES = (ERROR, WARNING, NOTE)


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
         "firebird.conf, a run that stopped before its engine was read recorded neither the engine's nor "
         "the database's conditions, and a run recorded by an older fbbench lacks what it did not record yet "
         "(engine.binaries)."),
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


def finding(rule_id: str, message: str, evidence: dict[str, Any] | None = None, subject: str = "",
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
