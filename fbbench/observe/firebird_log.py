"""What firebird.log gained during a run, turned into findings.

:class:`LogWatch` remembers where the log ends before the run and :meth:`LogWatch.added` returns
only what came after. An embedded engine writes the runtime's own firebird.log, a file; a
server's log is read through the services API, which always returns the whole log. Either way
the mark is the log's length plus its last few hundred bytes, so that a log rotated or truncated
meanwhile is noticed (then everything in it counts as new).

:func:`findings` splits the text into entries, reads each with firebird-lib's ``LogParser``
(which identifies the message and its parameters) and counts them by kind. Substring rules catch
what firebird-lib does not know or files as UNKNOWN:

- a crash, a bugcheck, "terminate(d) abnormally" or an "internal Firebird consistency check" is
  ``fatal``: the run is not to be trusted (firebird-lib files a 5.0 "Access violation ...
  terminate abnormally" block as UNKNOWN, and the consistency check as nothing it knows);
- firebird-lib's own CRITICAL messages (disk full, a broken listener, ...) are ``critical``;
- "unable to get a stable set of rows in the source tables after N attempts of restart"
  (4.0+, read consistency) becomes ``read_consistency_restarts``, one finding per statement, with
  the attempts and the statement text.

firebird-lib 2.1.0's ``LogParser.parse`` is not used as is: it raises on empty input, on text that
does not begin with an entry header (a diff can), and (IndexError) on an entry with a header and
no text; so the entries are split here, each is given to its ``parse_entry`` alone, and an entry
it cannot read is still counted, by its first line.
"""

from __future__ import annotations

import functools
import re
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from fbbench.database import driver

SEVERITIES = ("fatal", "critical", "error", "warning", "info", "unknown")  # worst first
TAIL_MARK = 512  # bytes at the end of the log that must still be there for it to count as the same log

_FATAL = re.compile(r"terminated? abnormally|bugcheck|consistency check|\bcrash", re.IGNORECASE)
_RESTARTS = re.compile(
    r"unable to get a stable set of rows in the source tables\s+after (?P<attempts>\d+) attempts of restart\.?"
    r"(?:\s*Query:\s*(?P<query>.*))?", re.IGNORECASE | re.DOTALL)
_DATE_FORMAT = "%a %b %d %H:%M:%S %Y"
# Many messages begin with the database they are about: 'Database "/x.fdb"' or "Database: /x.fdb".
_DATABASE_LINE = re.compile(r'^\s*Database:?\s+(".*"|\S+)\s*$')


@dataclass
class Finding:
    kind: str  # what the entries say, their parameters as <name>: the same kind whatever the values
    severity: str  # one of SEVERITIES
    count: int
    first: datetime | None
    last: datetime | None
    example: str  # the text of the first entry of this kind
    statement: str | None = None  # read_consistency_restarts: the statement that kept restarting
    attempts: int | None = None  # read_consistency_restarts: the most attempts logged for it
    # The kind as the first entry wrote it, with its values ("Operating system call fsync failed.
    # Error code 5"), and whether later entries of the kind had other values.
    text: str = ""
    values_vary: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["first"] = self.first.isoformat() if self.first else None
        data["last"] = self.last.isoformat() if self.last else None
        return data


@dataclass
class Entry:
    """One firebird.log entry: the header line (origin and time) and the message lines."""

    origin: str
    timestamp: datetime | None
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip()


def _header(line: str) -> tuple[str, datetime] | None:
    """(origin, time) if ``line`` opens an entry: "host<TAB>Mon Nov 23 21:05:15 2026"."""
    words = line.split()
    if len(words) < 6:
        return None
    try:
        when = datetime.strptime(" ".join(words[-5:]), _DATE_FORMAT)  # local time, as the log has it
    except ValueError:
        return None
    return " ".join(words[:-5]), when


def entries(text: str) -> list[Entry]:
    """Split log text into entries; lines before the first header form an entry of their own."""
    found: list[Entry] = []
    current: Entry | None = None
    for raw in text.splitlines():
        line = raw.strip()
        header = _header(line) if line else None
        if header is not None:
            current = Entry(header[0], header[1], [])
            found.append(current)
        elif current is None:
            if line:
                current = Entry("", None, [line])
                found.append(current)
        else:
            current.lines.append(line)
    return [entry for entry in found if entry.text or entry.timestamp]


def _classify(entry: Entry) -> tuple[str, str, dict[str, Any]]:
    """(kind, severity, extra) of one entry; extra["text"] is the kind with the entry's own values."""
    text = entry.text
    if match := _RESTARTS.search(text):
        statement = " ".join((match["query"] or "").split()) or None
        return "read_consistency_restarts", "warning", {"attempts": int(match["attempts"]), "statement": statement,
                                                        "text": _head(entry.lines)}
    kind, severity, shown = _identify(entry)
    if _FATAL.search(text):
        severity = "fatal"
    return kind, severity, {"text": shown}


def _head(lines: list[str]) -> str:
    """The line that names a message: the first one, unless it only names the database."""
    meaningful = [line for line in lines if line.strip() and not _DATABASE_LINE.match(line)]
    return (meaningful or [line for line in lines if line.strip()] or ["(empty entry)"])[0].strip()


def _identify(entry: Entry) -> tuple[str, str, str]:
    """(kind, severity, the kind as this entry wrote it) by firebird-lib's message catalogue; kinds
    do not depend on parameters, the third has the entry's values in their place."""
    from firebird.lib.log import LogParser
    from firebird.lib.logmsgs import Severity

    head = _head(entry.lines)
    message = None
    if entry.timestamp is not None and entry.text:
        header = f"{entry.origin}\t{entry.timestamp.strftime(_DATE_FORMAT)}"
        try:
            message = LogParser().parse_entry([header, *entry.lines])
        except Exception:
            message = None
    if message is None or message.level is Severity.UNKNOWN:
        # A known message with lines firebird-lib does not expect (5.0 adds "1 workers, time
        # 0.032 sec" to "Sweep is finished") still has a known head.
        known = _known_heads().get(head)
        kind = f"{known[0]}: {head}" if known else f"unknown: {head}"
        return kind, known[1] if known else "unknown", kind
    pattern_head = _head(message.message.splitlines())
    if not re.sub(r"\{\w+\}", "", pattern_head).strip():
        # A catch-all such as 'Database: {database}\n{err_msg}' (any database error): the
        # error itself is the kind.
        pattern_head = head
    # The message's parameters as <name>: "Sweep is started by <user>" is the kind, whoever started
    # it; what is shown is the entry's own line, with the values the log had.
    facility = message.facility.name.lower()
    kind = re.sub(r"\{(\w+)\}", r"<\1>", pattern_head)
    filled = re.sub(r"\{(\w+)\}", lambda name: str(message.params.get(name[1], f"<{name[1]}>")), pattern_head)
    return f"{facility}: {kind}", message.level.name.lower(), f"{facility}: {filled}"


@functools.cache
def _known_heads() -> dict[str, tuple[str, str]]:
    """Heads of firebird-lib's messages that have no parameters → (facility, severity)."""
    from firebird.lib.logmsgs import messages

    heads: dict[str, tuple[str, str]] = {}
    for message in messages:
        head = _head(message.get_pattern(without_optional=True).splitlines())
        if "{" not in head:
            heads.setdefault(head, (message.facility.name.lower(), message.severity.name.lower()))
    return heads


def findings(text: str) -> list[Finding]:
    """Findings in log text, worst severity first, then by count."""
    by_kind: dict[tuple[str, str | None], Finding] = {}
    for entry in entries(text):
        kind, severity, extra = _classify(entry)
        statement = extra.get("statement")
        key = (kind, statement)
        finding = by_kind.get(key)
        if finding is None:
            by_kind[key] = Finding(kind, severity, 1, entry.timestamp, entry.timestamp, entry.text,
                                   statement=statement, attempts=extra.get("attempts"), text=extra["text"])
            continue
        finding.count += 1
        finding.values_vary = finding.values_vary or extra["text"] != finding.text
        if SEVERITIES.index(severity) < SEVERITIES.index(finding.severity):
            finding.severity = severity
        if entry.timestamp is not None:
            finding.first = min(filter(None, (finding.first, entry.timestamp)))
            finding.last = max(filter(None, (finding.last, entry.timestamp)))
        if extra.get("attempts") is not None:
            finding.attempts = max(finding.attempts or 0, extra["attempts"])
    return sorted(by_kind.values(), key=lambda f: (SEVERITIES.index(f.severity), -f.count, f.kind))


def fatal(found: list[Finding]) -> list[Finding]:
    return [finding for finding in found if finding.severity == "fatal"]


class LogWatch:
    """Remembers where firebird.log ends now; :meth:`added` returns what was written since.

    ``services_host`` "" means the embedded engine: ``log_file`` is then the runtime's
    firebird.log (by default the one of this engine child's runtime). Any other value is a
    server ("host[/port]") whose log is read through the services API.

    The mark is the log's length and its last ``TAIL_MARK`` characters: when the log no longer
    has those at that place (rotated, truncated, rewritten), everything in it is new and
    ``rotated`` says so.
    """

    def __init__(self, services_host: str = "", log_file: Path | None = None) -> None:
        self.services_host = services_host
        self.rotated = False
        self.log_file: Path | None = None
        if not services_host:
            if log_file is None:
                from fbbench.engines import current_runtime

                log_file = current_runtime().firebird_log
            self.log_file = Path(log_file)
        text = self._read()
        self._length, self._tail = len(text), text[-TAIL_MARK:]

    def _read(self) -> bytes:
        if self.log_file is not None:
            try:
                return self.log_file.read_bytes()
            except FileNotFoundError:
                return b""
        with driver.server(self.services_host) as server:
            server.info.get_log()
            return "".join(server.readlines()).encode()

    def added(self) -> str:
        text = self._read()
        start = self._length - len(self._tail)
        self.rotated = not (len(text) >= self._length and text[start:self._length] == self._tail)
        new = text if self.rotated else text[self._length:]
        return new.decode("utf-8", "replace")

    def added_or_reason(self) -> str:
        """:meth:`added`, or a line saying why the log could not be read: it is evidence, never a
        reason to lose a run."""
        try:
            return self.added()
        except Exception as error:
            return f"(firebird.log could not be read: {error})"
