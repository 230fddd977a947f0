"""What a trace recorded of an application, as :mod:`fbbench.trace.parser` reads it: attachments,
their transactions (with the TPB each ran under) and the statements each executed, with the
parameter values as the trace printed them, and what makes a value impossible to replay.

A value is either replayable exactly (an integer, a decimal, a string, a date …), replayable but
approximate (a double precision printed to 15 digits), or not replayable, with the reason (a
blob's content is never in a trace; Firebird 4's time zone types are printed as ``<unknown>``;
an argument or an argument list the trace cut short). Nothing is silently taken for what it is
not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

ValueKind = Literal["int", "float", "text", "null"]

_INTEGER = re.compile(r"^(smallint|integer|bigint|int128)$")
_SCALED = re.compile(r"^(smallint|integer|bigint|int128)\(\*, (-?\d+)\)$")
_TEXT = re.compile(r"^(char|varchar|cstring)\((\d+)\)$")
_UNKNOWN_TYPE = re.compile(r"^<type(\d+)>$")


@dataclass(frozen=True)
class Param:
    """One parameter as the trace printed it: its type and its value's text (None: NULL)."""

    index: int
    type: str
    text: str | None
    truncated: bool = False  # the trace cut the value (max_arg_length); known only with the limit

    def replay_value(self) -> tuple[ValueKind, int | float | str | None]:
        """The value to bind, as the native core binds values (Firebird converts them to the
        parameter's declared type as it would a literal). Raises NotReplayable."""
        if self.truncated:
            raise NotReplayable(f"parameter {self.index + 1} ({self.type}) was cut short by the trace "
                                "(max_arg_length)")
        kind = self.type
        if kind in ("blob", "array", "quad"):
            raise NotReplayable(f"parameter {self.index + 1} is a {kind}: the trace logs its id, never its content")
        if kind == "db_key":
            raise NotReplayable(f"parameter {self.index + 1} is a DB_KEY: it names a record version of the "
                                "traced database, not of the restored one")
        if _UNKNOWN_TYPE.match(kind) or self.text == "<unknown>":
            raise NotReplayable(f"parameter {self.index + 1}: the trace prints this type as {kind} with the value "
                                "<unknown> (Firebird 4+ time zone types)")
        if self.text is None:
            return "null", None
        if any("\udc80" <= ch <= "\udcff" for ch in self.text):
            raise NotReplayable(f"parameter {self.index + 1}: its bytes are not UTF-8 (an attachment character set "
                                "other than UTF8): it cannot be bound as the application sent it")
        if _INTEGER.match(kind):
            number = int(self.text)
            # INT128 beyond BIGINT binds as text: Firebird converts it exactly.
            return ("int", number) if -2**63 <= number < 2**63 else ("text", self.text)
        if _SCALED.match(kind) or kind.startswith("decfloat"):
            return "text", self.text  # exact as a literal: NUMERIC/DECIMAL and DECFLOAT from their digits
        if kind in ("double precision", "float"):
            return "float", float(self.text)
        if kind == "boolean":
            if self.text not in ("<true>", "<false>"):
                raise NotReplayable(f"parameter {self.index + 1}: boolean value {self.text!r} is not one the trace "
                                    "prints")
            return "text", "TRUE" if self.text == "<true>" else "FALSE"
        if kind == "timestamp":
            return "text", self.text.replace("T", " ", 1)
        if kind in ("date", "time") or _TEXT.match(kind):
            return "text", self.text
        raise NotReplayable(f"parameter {self.index + 1}: type {kind} is not one fbbench knows how to bind")

    @property
    def approximate(self) -> bool:
        """A floating-point value the trace printed to 7 (float) or 15 (double) significant digits."""
        return self.type in ("double precision", "float") and self.text is not None


class NotReplayable(Exception):
    """A statement execution whose parameters cannot be bound as they were traced."""


@dataclass
class Execution:
    """One execution of a statement (EXECUTE_STATEMENT_FINISH, with its START when logged)."""

    attachment: int
    transaction: int | None
    statement_id: int
    sql: str
    params: tuple[Param, ...]
    finished_at: float  # seconds since the trace's first event
    started_at: float | None = None  # from EXECUTE_STATEMENT_START, when logged
    elapsed_ms: int | None = None  # the trace's own figure (whole milliseconds)
    records: int | None = None  # "N records fetched"
    reads: int = 0
    writes: int = 0
    fetches: int = 0
    marks: int = 0
    tables: dict[str, dict[str, int]] = field(default_factory=dict)  # per-table counts (print_perf)
    failed: bool = False
    error: tuple[int, str] | None = None  # first gdscode and the whole message
    sql_truncated: bool = False
    arguments_skipped: int = 0  # "...N more arguments skipped..."
    # Positions of its START and FINISH events in the file: the order the engine logged them in,
    # finer than the time stamps (whole milliseconds on these engines).
    start_event: int | None = None
    finish_event: int = 0

    @property
    def changes(self) -> dict[str, int]:
        """Rows inserted, updated and deleted over every table (triggers and procedures included)."""
        totals = {"insert": 0, "update": 0, "delete": 0}
        for counts in self.tables.values():
            for key in totals:
                totals[key] += counts.get(key, 0)
        return totals

    @property
    def began_at(self) -> float:
        """When it began: its START event, else its end less the trace's elapsed time."""
        if self.started_at is not None:
            return self.started_at
        return self.finished_at - (self.elapsed_ms or 0) / 1000

    def problems(self) -> list[str]:
        """Why this execution cannot be replayed as traced (empty: it can)."""
        found = []
        if self.sql_truncated:
            found.append("its SQL text was cut short by the trace (max_sql_length)")
        if self.arguments_skipped:
            found.append(f"the trace skipped {self.arguments_skipped} of its arguments (max_arg_count)")
        for param in self.params:
            try:
                param.replay_value()
            except NotReplayable as error:
                found.append(str(error))
        return found


Isolation = Literal["snapshot", "read_committed", "read_committed_no_rec_version", "read_consistency",
                    "serializable"]


@dataclass(frozen=True)
class Tpb:
    """A transaction's parameters as the trace prints them: ``CONCURRENCY | WAIT 3 | READ_WRITE``."""

    isolation: Isolation
    lock_timeout: int | None  # None: wait for ever; 0: no wait
    read_only: bool
    text: str

    @classmethod
    def parse(cls, text: str) -> Tpb:
        parts = [part.strip() for part in text.split("|")]
        isolation: Isolation = "snapshot"
        if "CONSISTENCY" in parts:
            isolation = "serializable"
        elif "READ_COMMITTED" in parts:
            isolation = ("read_consistency" if "READ_CONSISTENCY" in parts else
                         "read_committed_no_rec_version" if "NO_REC_VERSION" in parts else "read_committed")
        lock_timeout: int | None = None
        for part in parts:
            if part == "NOWAIT":
                lock_timeout = 0
            elif match := re.fullmatch(r"WAIT (\d+)", part):
                lock_timeout = int(match.group(1))
        return cls(isolation, lock_timeout, "READ_ONLY" in parts, text)


TransactionEnd = Literal["commit", "rollback", "commit_retaining", "rollback_retaining", "open"]


@dataclass
class Transaction:
    id: int
    attachment: int
    tpb: Tpb
    started_at: float | None  # None: it was running when the trace began
    ended_at: float | None = None
    end: TransactionEnd = "open"
    follows: int | None = None  # the transaction whose commit/rollback retaining started this one
    statements: list[Execution] = field(default_factory=list)
    start_event: int | None = None  # positions of its START and its end in the file (see Execution)
    end_event: int | None = None


@dataclass
class Attachment:
    id: int
    database: str
    user: str
    role: str
    charset: str
    protocol: str  # "<internal>", "TCPv4:127.0.0.1/53562" …
    process: str = ""
    pid: int | None = None
    attached_at: float | None = None  # None: it was there when the trace began
    detached_at: float | None = None
    transactions: list[Transaction] = field(default_factory=list)


@dataclass
class Trace:
    """Everything a trace file held that a workload or a replay can use, and what it could not."""

    started: str | None = None  # the first event's time stamp as printed (local time, no zone)
    seconds: float = 0.0  # from the first event to the last
    attachments: dict[int, Attachment] = field(default_factory=dict)
    # fbbench's own preamble and closing lines (# fbbench: key = value), when fbbench recorded it.
    recorded: dict[str, object] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)  # every event name, counted
    # Executions with no transaction the trace saw start (it began before the trace), kept
    # apart; system attachments (garbage collector, cache writer) are skipped altogether.
    orphans: list[Execution] = field(default_factory=list)
    suspended: list[str] = field(default_factory=list)  # "--- Session N is suspended …" lines
    unreadable: list[str] = field(default_factory=list)  # events the parser could not read, why
    errors: list[tuple[int, str]] = field(default_factory=list)  # ERROR events not tied to a statement

    @property
    def transactions(self) -> list[Transaction]:
        return [t for a in self.attachments.values() for t in a.transactions]

    @property
    def executions(self) -> list[Execution]:
        return [s for t in self.transactions for s in t.statements]
