"""Read the text of a Firebird trace session (3.0, 4.0, 5.0) into :class:`fbbench.trace.model.Trace`.

Written from the engine's own output (src/utilities/ntrace/TracePluginImpl.cpp, and what 3.0.14,
4.0.7 and 5.0.4 print), not from firebird-lib's parser, whose known defects would make a replay
silently wrong: it strips every line (values lose their spaces and quotes), splits parameters at
" = " (a value holding one breaks it), drops continuation lines (a value with a newline), drops
"...N more arguments skipped..." (a cut argument list looks complete) and reads per-table counts
at fixed columns.

The trace prints parameter values raw: quotes, " = " and newlines inside a value are printed as
they are. A value therefore ends at the quote that closes a line followed by the next parameter's
``paramN = `` (or by the end of the parameter list), which holds unless a value itself contains a
line break followed by exactly that text. A value the trace may have cut is marked as such:
exactly when fbbench recorded the trace (its closing limits are in the file), and whenever it
ends in "..." otherwise.

fbbench's own lines in a trace file start with ``# fbbench:`` (before the first event and after
the last one): ``key = JSON value``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from fbbench.errors import FbbenchError
from fbbench.trace.model import Attachment, Execution, Param, Tpb, Trace, Transaction

HEADER = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+) \((\d+):(0x[0-9A-Fa-f]+)\) "
                    r"(?:(FAILED|UNAUTHORIZED) )?([A-Z][A-Z0-9_]*(?: AT \S+)?)\s*$")
SUSPENDED = re.compile(r"^--- Session \d+ is suspended as its log is full ---")
OWN = "# fbbench: "
_ATTACHMENT = re.compile(r"^\t(.*) \(ATT_(\d+), (.*)\)$")
_PROCESS = re.compile(r"^\t([^\t].*):(\d+)$")
_TRANSACTION = re.compile(r"^\t\t\(TRA_(\d+), (?:INIT_(\d+), )?(.*)\)$")
_STATEMENT = re.compile(r"^Statement (\d+):$")
_DASHES = "-" * 79
_PLAN = "^" * 79
_RECORDS = re.compile(r"^(\d+) records fetched$")
_PERF = re.compile(r"^\s*(\d+) ms(?:, (.*))?$")
_COUNTER = re.compile(r"(\d+) (read|write|fetch|mark)\(")
_SKIPPED = re.compile(r"^\.\.\.(\d+) more arguments skipped\.\.\.$")
_PARAM_HEAD = re.compile(r"param(\d+) = ([a-z<][a-z0-9 <>_]*(?:\([^)]*\))?), \"")
_ERROR_LINE = re.compile(r"^(\d+) : (.*)$")
_TEXT_TYPE = re.compile(r"^(char|varchar|cstring)\(\d+\)$")


@dataclass
class RawEvent:
    at: str
    name: str  # ATTACH_DATABASE, EXECUTE_STATEMENT_FINISH, ERROR AT JStatement::execute …
    failed: bool
    lines: list[str]


def _lines(source: Iterable[bytes]) -> Iterator[str]:
    """Lines split at \\n only (a value may hold \\r or other breaks); a trace written on Windows
    ends its lines with \\r\\n, which is taken off when the file's first line has it."""
    crlf: bool | None = None
    for raw in source:
        line = raw.decode("utf-8", errors="surrogateescape")  # bytes that are not UTF-8 stay recognisable
        if line.endswith("\n"):
            line = line[:-1]
            if crlf is None:
                crlf = line.endswith("\r")
            if crlf and line.endswith("\r"):
                line = line[:-1]
        yield line


def raw_events(lines: Iterable[str], own: dict[str, Any], suspended: list[str]) -> Iterator[RawEvent]:
    """The events of a trace's text; fbbench's own lines go to ``own``, suspension notices to
    ``suspended``. An event starts at a header line after a blank line (or at the top)."""
    current: RawEvent | None = None
    previous_blank = previous_own = True
    for line in lines:
        own_line = False
        if previous_blank and (match := HEADER.match(line)):
            if current is not None:
                yield current
            current = RawEvent(match.group(1), match.group(5), match.group(4) is not None, [])
        elif (previous_blank or previous_own) and line.startswith(OWN):
            own_line = True
            key, _, value = line[len(OWN):].partition(" = ")
            try:
                own[key.strip()] = json.loads(value)
            except ValueError:
                own[key.strip()] = value
        elif previous_blank and SUSPENDED.match(line):
            suspended.append(line.strip())
        elif current is not None:
            current.lines.append(line)
        previous_blank, previous_own = line.strip() == "", own_line
    if current is not None:
        yield current


def _seconds(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


class _Reader:
    def __init__(self, limits: dict[str, Any]) -> None:
        self.trace = Trace()
        self.limits = limits
        self.first: datetime | None = None
        self.transactions: dict[int, Transaction] = {}
        self.starts: dict[tuple[int, int], tuple[float, int]] = {}  # (attachment, statement) → its START
        self.position = 0  # events read so far: the next one's position in the file
        self.last_failed: dict[int, Execution] = {}  # attachment → its latest failed execution

    def offset(self, stamp: str) -> float:
        moment = _seconds(stamp)
        if self.first is None:
            self.first = moment
            self.trace.started = stamp
        seconds = (moment - self.first).total_seconds()
        self.trace.seconds = max(self.trace.seconds, seconds)
        return seconds

    def read(self, event: RawEvent) -> None:
        trace = self.trace
        trace.events[event.name] = trace.events.get(event.name, 0) + 1
        self.position += 1
        at = self.offset(event.at)
        lines = event.lines
        match = _ATTACHMENT.match(lines[0]) if lines else None
        if match is None:
            return  # a session's own event (TRACE_INIT), a service, …
        rest = lines[1:]
        attachment = self.attachment(match, rest, at, event.name)
        if attachment is None:
            return  # a system attachment (garbage collector, cache writer)
        if rest and _PROCESS.match(rest[0]) and not rest[0].startswith("\t\t"):
            process = _PROCESS.match(rest[0])
            assert process is not None
            attachment.process, attachment.pid = process.group(1), int(process.group(2))
            rest = rest[1:]
        transaction = None
        if rest and (found := _TRANSACTION.match(rest[0])):
            transaction = self.transaction(attachment, found, at, event.name)
            rest = rest[1:]
        name = event.name
        if name == "DETACH_DATABASE":
            attachment.detached_at = at
        elif name in ("COMMIT_TRANSACTION", "ROLLBACK_TRANSACTION", "COMMIT_RETAINING", "ROLLBACK_RETAINING"):
            if transaction is not None and not event.failed:
                transaction.ended_at, transaction.end_event = at, self.position
                transaction.end = {"COMMIT_TRANSACTION": "commit", "ROLLBACK_TRANSACTION": "rollback",
                                   "COMMIT_RETAINING": "commit_retaining",
                                   "ROLLBACK_RETAINING": "rollback_retaining"}[name]  # type: ignore[assignment]
        elif name == "EXECUTE_STATEMENT_START":
            statement = self.statement(rest, event)
            if statement is not None:
                self.starts[(attachment.id, statement[0])] = (at, self.position)
        elif name == "EXECUTE_STATEMENT_FINISH":
            self.finish(attachment, transaction, rest, event, at)
        elif name.startswith("ERROR AT"):
            self.error(attachment, rest, at)

    def attachment(self, match: re.Match[str], rest: list[str], at: float, name: str) -> Attachment | None:
        database, number, inside = match.group(1), int(match.group(2)), match.group(3)
        parts = inside.rsplit(", ", 2)
        if len(parts) != 3 or ":" not in parts[0]:
            return None  # "Garbage Collector, NONE, <internal>": no USER:ROLE
        user, _, role = parts[0].partition(":")
        attachments = self.trace.attachments
        if number not in attachments:
            attachments[number] = Attachment(number, database, user, role, parts[1], parts[2],
                                             attached_at=at if name == "ATTACH_DATABASE" else None)
        return attachments[number]

    def transaction(self, attachment: Attachment, match: re.Match[str], at: float, name: str) -> Transaction:
        number = int(match.group(1))
        known = self.transactions.get(number)
        if known is not None:
            return known
        follows = int(match.group(2)) if match.group(2) else None
        previous = self.transactions.get(follows) if follows is not None else None
        start_event = None
        if name == "START_TRANSACTION":
            started: float | None = at
            start_event = self.position
        elif previous is not None and previous.end in ("commit_retaining", "rollback_retaining"):
            started = previous.ended_at  # a retaining commit or rollback went straight on in this one
            start_event = previous.end_event
        else:
            started = None  # it was running when the trace began
        transaction = Transaction(number, attachment.id, Tpb.parse(match.group(3)), started, follows=follows,
                                  start_event=start_event)
        self.transactions[number] = transaction
        attachment.transactions.append(transaction)
        return transaction

    def statement(self, lines: list[str], event: RawEvent) -> tuple[int, str] | None:
        """The statement's id and the text after its SQL separator, if the event has one."""
        index = next((i for i, line in enumerate(lines) if _STATEMENT.match(line)), None)
        if index is None:
            return None
        number = int(_STATEMENT.match(lines[index]).group(1))  # type: ignore[union-attr]
        body = lines[index + 1:]
        if not body or body[0] != _DASHES:
            self.trace.unreadable.append(f"{event.at} {event.name}: statement {number} has no SQL text")
            return None
        return number, "\n".join(body[1:])

    def finish(self, attachment: Attachment, transaction: Transaction | None, lines: list[str], event: RawEvent,
               at: float) -> None:
        found = self.statement(lines, event)
        if found is None:
            return
        number, text = found
        try:
            execution = self.execution(attachment.id, transaction, number, text.split("\n"), at, event.failed)
        except ValueError as error:
            self.trace.unreadable.append(f"{event.at} {event.name} (attachment {attachment.id}, statement "
                                         f"{number}): {error}")
            return
        execution.finish_event = self.position
        start = self.starts.pop((attachment.id, number), None)
        if start is not None:
            execution.started_at, execution.start_event = start
        if event.failed:
            self.last_failed[attachment.id] = execution
        if transaction is None:
            self.trace.orphans.append(execution)
        else:
            transaction.statements.append(execution)

    def execution(self, attachment: int, transaction: Transaction | None, number: int, body: list[str], at: float,
                  failed: bool) -> Execution:
        rest = list(body)
        while rest and not rest[-1].strip():
            rest.pop()
        tables: dict[str, dict[str, int]] = {}
        stars = next((i for i in range(len(rest) - 1, -1, -1) if rest[i].startswith("*" * 20)), None)
        if stars is not None and stars > 0 and rest[stars - 1].startswith("Table"):
            tables = _tables(rest[stars - 1], rest[stars + 1:])
            rest = rest[:stars - 1]
            while rest and not rest[-1].strip():
                rest.pop()
        counters: dict[str, int] = {}
        elapsed = records = None
        if rest and (perf := _PERF.match(rest[-1])):
            elapsed = int(perf.group(1))
            counters = {kind: int(count) for count, kind in _COUNTER.findall(perf.group(2) or "")}
            rest.pop()
        if rest and (fetched := _RECORDS.match(rest[-1])):
            records = int(fetched.group(1))
            rest.pop()
        while rest and not rest[-1].strip():
            rest.pop()
        skipped = 0
        if rest and (cut := _SKIPPED.match(rest[-1])):
            skipped = int(cut.group(1))
            rest.pop()
        split = next((i for i in range(len(rest) - 1) if rest[i] == "" and rest[i + 1].startswith("param0 = ")),
                     None)
        sql_lines, params_lines = (rest, []) if split is None else (rest[:split], rest[split + 1:])
        if _PLAN in sql_lines:
            sql_lines = sql_lines[:sql_lines.index(_PLAN)]
        while sql_lines and not sql_lines[-1].strip():
            sql_lines.pop()
        sql = "\n".join(sql_lines)
        return Execution(
            attachment=attachment, transaction=transaction.id if transaction else None, statement_id=number,
            sql=sql, params=self.params("\n".join(params_lines)), finished_at=at, elapsed_ms=elapsed,
            records=records, reads=counters.get("read", 0), writes=counters.get("write", 0),
            fetches=counters.get("fetch", 0), marks=counters.get("mark", 0), tables=tables, failed=failed,
            sql_truncated=self.cut(sql, "max_sql_length"), arguments_skipped=skipped)

    def cut(self, text: str, limit: str) -> bool:
        """Whether the trace may have cut ``text`` at ``limit`` (it then ends with "...")."""
        if not text.endswith("..."):
            return False
        known = self.limits.get(limit)
        return not isinstance(known, int) or len(text.encode()) >= known - 3

    def params(self, text: str) -> tuple[Param, ...]:
        params: list[Param] = []
        position = 0
        while position < len(text):
            head = _PARAM_HEAD.match(text, position)
            if head is None or int(head.group(1)) != len(params):
                raise ValueError(f"cannot read parameter {len(params) + 1} in {text[position:position + 60]!r}")
            start = head.end()
            following = text.find(f'"\nparam{len(params) + 1} = ', start)
            if following < 0:
                if not text.endswith('"'):
                    raise ValueError(f"parameter {len(params) + 1}'s value does not end with a quote")
                end, position = len(text) - 1, len(text)
            else:
                end, position = following, following + 2
            value = text[start:end]
            kind = head.group(2)
            params.append(Param(len(params), kind, None if value == "<NULL>" else value,
                                truncated=bool(_TEXT_TYPE.match(kind)) and self.cut(value, "max_arg_length")))
        return tuple(params)

    def error(self, attachment: Attachment, lines: list[str], at: float) -> None:
        codes = [(int(m.group(1)), m.group(2)) for line in lines if (m := _ERROR_LINE.match(line))]
        if not codes:
            return
        error = (codes[0][0], "\n".join(text for _code, text in codes))
        failed = self.last_failed.pop(attachment.id, None)
        if failed is not None and failed.error is None and at - failed.finished_at < 1.0:
            failed.error = error
        else:
            self.trace.errors.append(error)


def _tables(header: str, rows: list[str]) -> dict[str, dict[str, int]]:
    """Per-table counts, each number right-aligned under its column's label; a row that a long
    table name pushed to the right is read shifted back by its excess width."""
    columns = [(m.group(0).lower(), m.end()) for m in re.finditer(r"\S+", header)][1:]
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        if not row.strip():
            continue
        name = row.split()[0]
        shift = max(0, len(row) - len(header))
        values: dict[str, int] = {}
        for number in re.finditer(r"\d+", row[len(name):]):
            end = number.end() + len(name) - shift
            column = min(columns, key=lambda c: abs(c[1] - end))
            values[column[0]] = int(number.group(0))
        counts[name] = values
    return counts


def parse_lines(lines: Iterable[str]) -> Trace:
    own: dict[str, Any] = {}
    suspended: list[str] = []
    reader = _Reader(own)
    for event in raw_events(lines, own, suspended):
        reader.read(event)
    reader.trace.recorded = own
    reader.trace.suspended = suspended
    return reader.trace


def parse_text(text: str) -> Trace:
    return parse_lines(_lines((line + "\n").encode() for line in text.split("\n")))


def parse_file(path: Path) -> Trace:
    """A trace file; a one-line error when it cannot be read or holds no trace event at all."""
    try:
        with open(path, "rb") as source:
            trace = parse_lines(_lines(source))
    except FileNotFoundError:
        raise FbbenchError(f"trace file {path}: no such file") from None
    except IsADirectoryError:
        raise FbbenchError(f"trace file {path} is a directory", hint="give the file a trace was recorded to") from None
    except OSError as error:
        raise FbbenchError(f"cannot read the trace file {path}: {error.strerror}") from None
    if not trace.events:
        raise FbbenchError(f"{path} holds no Firebird trace event",
                           hint="record one with fbbench trace record (or fbtracemgr) and give its output file")
    return trace
