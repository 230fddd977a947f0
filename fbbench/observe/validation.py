"""Is the database still sound after the stress? Firebird's own validation, through the services API.

OLTP-EMUL's first purpose is a stress test of Firebird's stability, and its authors found crashes
that left a database broken with nothing in firebird.log: only a validation tells. Firebird 3.0,
4.0 and 5.0 offer two (the same in each; measured on the embedded 3.0.14, 4.0.7, 5.0.4 and on
Debian's 3.0.11 server):

- **full**: the repair service with ``validate_db | full | check_db`` — ``gfix -v -full -n``:
  every page of the database, record structures and blobs included, read-only (``-n``: it reports,
  it never mends). It needs the database to itself: while another attachment exists the engine
  refuses ("secondary server attachments cannot validate databases"). Its findings go to
  firebird.log, one entry per error or warning and a last one "Validation finished: N errors,
  M warnings, 0 fixed"; the service itself only fails with "Summary of validation errors" (3.0
  and 5.0 add the counts by kind, 4.0 does not). A sound database gives no output at all.
- **online** (``isc_action_svc_validate``): data, pointer and index pages, relation by relation,
  while other attachments work (it takes each table's lock for a moment). Its output is its
  report: "Relation 129 (BRANCH) : 2 ERRORS found" and the "Error: …" lines before it. A table
  whose lock it cannot get within its lock timeout (an attachment writing it, or one left behind
  by a failed run) is not checked, yet counted as "1 ERRORS found" after "Acquire relation lock
  failed": that is no damage, and it is reported as a table not checked.

:func:`validate` runs the full one and falls back to the online one only where the engine
refuses it or it ends with an error of its own instead of its findings (a data page damaged
enough sends it reading a page past the end of the file: "I/O error … File size is less than
expected", where the online one reports the damaged records); which was done, and why, is part
of the result. Only ever on a database fbbench owns (a run's own copy): read-only as both are,
they still take it for themselves while they run.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from fbbench.database import driver
from fbbench.observe.firebird_log import LogWatch, entries

SHOWN_LINES = 40  # of Firebird's own report: errors first, then warnings and the rest
_SUMMARY_COUNT = re.compile(r"Number of (?P<what>[a-z ]+?) (?P<kind>errors|warnings)\s*:\s*(?P<count>\d+)",
                            re.IGNORECASE)
_FINISHED = re.compile(r"Validation finished: (?P<errors>\d+) errors?, (?P<warnings>\d+) warnings?", re.IGNORECASE)
_ONLINE_FOUND = re.compile(r"Relation \d+ \((?P<table>[^)]*)\)\s*:\s*(?P<count>\d+) (?P<kind>ERRORS|WARNINGS) found",
                           re.IGNORECASE)
_LOCK_FAILED = "Acquire relation lock failed"
ONLINE_LOCK_TIMEOUT = 2  # seconds the online validation waits for each table's lock
_CLOCK = re.compile(r"^\d\d:\d\d:\d\d\.\d+\s+")  # the online report's time of day on every line


@dataclass
class Validation:
    """What a validation found. ``errors``/``warnings`` None: Firebird reported problems without
    counting them where fbbench could read it (4.0's service summary, a log out of reach)."""

    method: str  # full | online
    seconds: float
    errors: int | None
    warnings: int | None
    output: list[str] = field(default_factory=list)  # Firebird's own lines, errors first
    by_kind: dict[str, int] = field(default_factory=dict)  # full: "pointer page errors" → 1 (3.0, 5.0)
    refused: str | None = None  # why the full one was refused or ended without findings (the online one was done)
    unchecked: list[str] = field(default_factory=list)  # online: tables it could not lock, so did not check

    @property
    def sound(self) -> bool:
        return self.errors == 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sound": self.sound}

    def failure(self) -> str:
        """The run's failure when the database is not sound: the counts and Firebird's own lines."""
        counted = (f"{self.errors} error(s)" if self.errors is not None else "errors it did not count") + (
            f", {self.warnings} warning(s)" if self.warnings else "")
        kinds = ", ".join(f"{what}: {count}" for what, count in self.by_kind.items() if count and "error" in what)
        head = f"the database is corrupt after the run: {self.method} validation found {counted}"
        return head + (f" ({kinds})" if kinds else "") + ":\n" + "\n".join(self.output[:15])


def validate(services_host: str, database: str, log: LogWatch) -> Validation:
    """Validate ``database`` (the server's path; ``services_host`` "" for the embedded engine).
    ``log`` was started just before: a full validation's findings are what it adds."""
    started = time.monotonic()
    summary = ""
    try:
        with driver.server(services_host, database) as server:
            from firebird.driver import SrvRepairFlag

            server.database.repair(database=database,
                                   flags=SrvRepairFlag.VALIDATE_DB | SrvRepairFlag.FULL | SrvRepairFlag.CHECK_DB)
    except Exception as error:
        if not type(error).__module__.startswith("firebird.driver"):  # the services manager was out of reach
            raise
        summary = str(error)
        if "validation" not in summary.lower():  # refused, or ended by an error of its own: no summary
            return _online(services_host, database, started, refused=" ".join(summary.split()))
    return _full(database, started, summary, log.added_or_reason())


def _full(database: str, started: float, summary: str, log_text: str) -> Validation:
    seconds = time.monotonic() - started
    by_kind = {match["what"].strip().lower() + " " + match["kind"].lower(): int(match["count"])
               for match in _SUMMARY_COUNT.finditer(summary)}
    lines: list[str] = []
    errors = warnings = None
    for entry in entries(log_text):
        if entry.lines and any(line.startswith("Database:") and database not in line for line in entry.lines):
            continue  # another database's entry in a server's shared log
        for line in entry.lines:
            if finished := _FINISHED.search(line):
                errors, warnings = int(finished["errors"]), int(finished["warnings"])
            elif line and not line.startswith(("Database:", "Validation started")):
                lines.append(line)
    if errors is None and by_kind:
        errors = sum(count for what, count in by_kind.items() if what.endswith("errors"))
        warnings = sum(count for what, count in by_kind.items() if what.endswith("warnings"))
    if errors is None and not summary:
        errors, warnings = 0, 0  # the service said nothing: nothing was found
    if summary and not lines:
        lines = [" ".join(part.strip("-\t ") for part in summary.splitlines() if part.strip("-\t "))]
    return Validation("full", seconds, errors, warnings, _errors_first(lines), by_kind)


def _online(services_host: str, database: str, started: float, refused: str) -> Validation:
    output: list[str] = []
    with driver.server(services_host, database) as server:
        try:
            server.database.validate(database=database, callback=output.append, lock_timeout=ONLINE_LOCK_TIMEOUT)
        except Exception as error:
            if not type(error).__module__.startswith("firebird.driver"):
                raise
            raise driver.explain(error, database) from None
    seconds = time.monotonic() - started
    lines = [_CLOCK.sub("", line).strip() for line in output if line.strip()]
    errors = warnings = 0
    unchecked: list[str] = []
    problems: list[str] = []
    lock_failed = False
    for line in lines:
        if line.startswith(_LOCK_FAILED):
            lock_failed = True
        elif found := _ONLINE_FOUND.search(line):
            count = int(found["count"])
            if found["kind"].upper() == "WARNINGS":
                warnings += count
            else:
                if lock_failed:  # the table it could not lock, counted as an error
                    unchecked.append(found["table"])
                    count -= 1
                errors += count
            if count:
                problems.append(line)
            lock_failed = False
        elif line.startswith(("Error", "Warning")):
            problems.append(line)
    return Validation("online", seconds, errors, warnings, _errors_first(problems), refused=refused,
                      unchecked=unchecked)


def _errors_first(lines: list[str]) -> list[str]:
    ordered = sorted(lines, key=lambda line: 0 if "error" in line.lower() else 1)
    return ordered[:SHOWN_LINES] + ([f"… and {len(ordered) - SHOWN_LINES} more line(s)"]
                                   if len(ordered) > SHOWN_LINES else [])
