"""The application's transactions in a trace, grouped by shape: the sequence of statements
between start and commit or rollback, with the transaction's parameters. A workload's units and a
replay's units are these shapes, so a generated workload and a replay of the same trace name
their units alike.

Which attachments are the application's: not the engine's own (garbage collector, cache writer:
the parser skips them) and not fbbench's (its monitoring, population and checks attach under the
process name ``fbbench``; a run that recorded the trace also lists its own attachments in the
file).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

from fbbench.database.driver import OWN_PROCESS
from fbbench.trace.model import Attachment, Execution, Tpb, Trace, Transaction

_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_TARGETS = (
    (re.compile(r"^\s*execute\s+procedure\s+\"?([\w$]+)", re.I), "{}"),
    (re.compile(r"^\s*update\s+or\s+insert\s+into\s+\"?([\w$]+)", re.I), "upsert_{}"),
    (re.compile(r"^\s*insert\s+into\s+\"?([\w$]+)", re.I), "insert_{}"),
    (re.compile(r"^\s*update\s+\"?([\w$]+)", re.I), "update_{}"),
    (re.compile(r"^\s*delete\s+from\s+\"?([\w$]+)", re.I), "delete_{}"),
    (re.compile(r"^\s*merge\s+into\s+\"?([\w$]+)", re.I), "merge_{}"),
    (re.compile(r"^\s*select\b.*?\bfrom\s+\"?([\w$]+)", re.I | re.DOTALL), "select_{}"),
    (re.compile(r"^\s*execute\s+block\b", re.I), "block"),
)
DDL = frozenset({"CREATE", "ALTER", "DROP", "RECREATE", "DECLARE", "GRANT", "REVOKE", "COMMENT"})
TRANSACTION_CONTROL = frozenset({"SET", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"})


def first_word(sql: str) -> str:
    found = _WORD.search(_COMMENTS.sub(" ", sql))
    return found.group(0).upper() if found else ""


def unit_name(sql: str) -> str:
    """A name for a unit from its first statement: the procedure, or the verb and the table."""
    text = _COMMENTS.sub(" ", sql)
    for pattern, shape in _TARGETS:
        if match := pattern.match(text):
            return _identifier(shape.format(*match.groups()))
    return _identifier(first_word(sql).lower() or "statement")


def _identifier(text: str) -> str:
    cleaned = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")
    return cleaned if cleaned and not cleaned[0].isdigit() else f"u_{cleaned}"


def steps(transaction: Transaction) -> tuple[tuple[str, int], ...]:
    """The transaction's statements, consecutive executions of one SQL text folded: (sql, count)."""
    folded: list[tuple[str, int]] = []
    for execution in transaction.statements:
        if folded and folded[-1][0] == execution.sql:
            folded[-1] = (execution.sql, folded[-1][1] + 1)
        else:
            folded.append((execution.sql, 1))
    return tuple(folded)


@dataclass
class Shape:
    name: str
    sqls: tuple[str, ...]  # the statements in order, each once (runs of one folded)
    tpb: Tpb
    transactions: list[Transaction] = field(default_factory=list)

    @property
    def repeats(self) -> tuple[int, ...]:
        """How many times each statement ran in a row: the median over the shape's transactions
        (those cut short by a failure not counted)."""
        counts: list[list[int]] = [[] for _ in self.sqls]
        for transaction in self.transactions:
            folded = steps(transaction)
            if len(folded) == len(self.sqls):
                for index, (_sql, count) in enumerate(folded):
                    counts[index].append(count)
        return tuple(max(1, round(statistics.median(c))) if c else 1 for c in counts)

    def slot(self, index: int) -> list[list[Execution]]:
        """Per transaction, the executions of statement ``index`` (in order)."""
        found = []
        for transaction in self.transactions:
            position = -1
            runs: list[list[Execution]] = []
            for execution in transaction.statements:
                if not runs or runs[-1][0].sql != execution.sql:
                    runs.append([])
                    position += 1
                runs[-1].append(execution)
            if index < len(runs):
                found.append(runs[index])
        return found


@dataclass
class Selection:
    """The application's attachments and transactions, and what was left out of them, with why."""

    attachments: list[Attachment]
    complete: list[Transaction]  # started and ended within the trace, with at least one statement
    left_out: dict[str, int]  # reason → transactions
    own_attachments: list[int]


def select(trace: Trace) -> Selection:
    own_ids = {int(a) for a in trace.recorded.get("own_attachments") or []}  # type: ignore[attr-defined]
    attachments, own = [], []
    for attachment in trace.attachments.values():
        if attachment.id in own_ids or attachment.process == OWN_PROCESS:
            own.append(attachment.id)
        else:
            attachments.append(attachment)
    left_out: Counter[str] = Counter()
    complete = []
    for attachment in attachments:
        for transaction in attachment.transactions:
            if transaction.started_at is None:
                left_out["began before the trace"] += 1
            elif transaction.end == "open":
                left_out["still open when the trace ended"] += 1
            elif not transaction.statements:
                left_out["no statement (only started and ended)"] += 1
            else:
                complete.append(transaction)
    return Selection(attachments, complete, dict(left_out), sorted(own))


def key_of(transaction: Transaction) -> tuple[tuple[str, ...], Tpb]:
    tpb = transaction.tpb
    return tuple(sql for sql, _count in steps(transaction)), Tpb(tpb.isolation, tpb.lock_timeout, tpb.read_only, "")


def group(transactions: list[Transaction]) -> list[Shape]:
    """Shapes, most frequent first, each with a unique name. A transaction that failed part-way
    (its last statement failed) is counted with the longest shape of the same parameters it
    begins, when there is one: it is that shape, cut short by its failure."""
    by_key: dict[tuple[tuple[str, ...], Tpb], list[Transaction]] = {}
    for transaction in transactions:
        by_key.setdefault(key_of(transaction), []).append(transaction)
    for key in sorted(by_key, key=lambda k: len(k[0])):
        members = by_key[key]
        if not all(t.statements[-1].failed for t in members):
            continue
        longer = [other for other in by_key if other[1] == key[1] and len(other[0]) > len(key[0])
                  and other[0][:len(key[0])] == key[0] and by_key[other]]
        if longer:
            target = max(longer, key=lambda k: len(by_key[k]))
            by_key[target].extend(members)
            by_key[key] = []
    shapes = []
    used: Counter[str] = Counter()
    for (sqls, tpb), members in sorted(by_key.items(), key=lambda item: -len(item[1])):
        if not members:
            continue
        base = unit_name(sqls[0])
        used[base] += 1
        name = base if used[base] == 1 else f"{base}_{used[base]}"
        text = members[0].tpb.text
        shapes.append(Shape(name, sqls, Tpb(tpb.isolation, tpb.lock_timeout, tpb.read_only, text),
                            sorted(members, key=lambda t: t.started_at or 0.0)))
    return shapes
