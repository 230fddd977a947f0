"""What a replay of a trace runs (``fbbench replay``): one session per traced attachment of the
application, each transaction with its traced parameters, every statement with its traced values
and what the trace saw it do, at the traced times — the plan the native core replays
(docs/core-api.md, "Replay").

A statement whose values the trace cannot give back exactly (:meth:`Execution.problems`) is not
replayed: it is listed, up front, as a divergence of the replay. A transaction that began before
the trace is replayed from its first traced statement; one still open when the trace ended is
rolled back at the end of what the trace saw of it. A commit or rollback retaining is replayed as
a commit or rollback followed by a new transaction with the same parameters (open cursors are not
kept). Every one of these is counted in the plan's notes.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from fbbench.errors import FbbenchError
from fbbench.trace.model import Execution, Trace, Transaction
from fbbench.trace.shapes import Shape, group, select

ORDERS = ("timed", "strict")
ANY_ERROR = -1  # the trace says the statement failed but logged no error event: any error is expected


@dataclass
class Template:
    sql: str
    executions: int = 0
    failed: int = 0  # executions the trace saw fail
    traced_ms: list[float] = field(default_factory=list)

    def traced(self) -> dict[str, Any]:
        """The traced latency of its executions (ms: the trace's START and FINISH time stamps,
        100 µs apart at best, or its own whole-millisecond figure)."""
        values = sorted(self.traced_ms)
        if not values:
            return {"count": 0, "failed": self.failed}

        def at(quantile: float) -> float:
            return round(values[min(len(values) - 1, int(quantile * len(values)))], 1)

        return {"count": len(values), "failed": self.failed, "p50": at(0.5), "p95": at(0.95), "p99": at(0.99),
                "max": round(values[-1], 1), "mean": round(statistics.fmean(values), 2)}


@dataclass
class Plan:
    shapes: list[Shape]
    templates: list[Template]
    sessions: list[list[dict[str, Any]]]  # the core's sessions (docs/core-api.md)
    attachments: list[int]  # the traced attachment of each session
    skipped: list[dict[str, Any]]  # executions not replayed, with why
    notes: Counter[str]
    seconds: float  # from the first action to the last, as traced
    actions: int


def _traced_ms(execution: Execution) -> float:
    if execution.started_at is not None:
        return max(0.0, (execution.finished_at - execution.started_at) * 1000)
    return float(execution.elapsed_ms or 0)


def plan(trace: Trace) -> Plan:
    """Every replayable action of the application's attachments, in sessions."""
    selection = select(trace)
    notes: Counter[str] = Counter()
    chosen: list[tuple[int, list[Transaction]]] = []
    for traced in selection.attachments:
        transactions = []
        for transaction in traced.transactions:
            if not transaction.statements:
                notes["transactions without a statement (not replayed)"] += 1
                continue
            transactions.append(transaction)
        if transactions:
            chosen.append((traced.id, sorted(transactions, key=_began)))
    if not chosen:
        raise FbbenchError("the trace holds no statement of an application to replay",
                           hint="record the trace while the application works (fbbench trace record)")
    shapes = group([t for _attachment, ts in chosen for t in ts])
    unit_of = {id(t): index for index, shape in enumerate(shapes) for t in shape.transactions}
    with_perf = any(e.tables for _a, ts in chosen for t in ts for e in t.statements)
    templates: dict[str, int] = {}
    listed: list[Template] = []
    skipped: list[dict[str, Any]] = []
    # Strict order is the order the engine logged the events in (the file's): time stamps are whole
    # milliseconds, and many actions share one. (position, attachment, local order, item, key)
    actions: list[tuple[float, int, int, dict[str, Any], str]] = []
    origin = min(_began(ts[0]) for _a, ts in chosen)
    sessions: list[list[dict[str, Any]]] = []
    for attachment, transactions in chosen:
        session = []
        local = 0
        for transaction in transactions:
            if transaction.started_at is None:
                notes["transactions that began before the trace (replayed from their first traced statement)"] += 1
            end = transaction.end
            if end == "open":
                notes["transactions still open when the trace ended (rolled back after their last traced "
                      "statement)"] += 1
            if end.endswith("retaining"):
                notes["commits or rollbacks retaining (replayed as a commit or rollback and a new "
                      "transaction)"] += 1
            began = _began(transaction)
            ended = transaction.ended_at if transaction.ended_at is not None else \
                transaction.statements[-1].finished_at
            isolation = transaction.tpb.isolation
            if isolation == "read_consistency":
                # Firebird 4+ prints this for every read-committed transaction under ReadConsistency
                # = 1 (its default), whatever the application asked: read committed it is, and the
                # engine replayed on decides (Firebird 3 has no read consistency).
                isolation = "read_committed"
                notes["read-committed transactions traced as READ_CONSISTENCY (replayed as read committed: "
                      "the engine decides)"] += 1
            item: dict[str, Any] = {
                "unit": unit_of[id(transaction)], "trace_id": transaction.id, "at": began - origin,
                "end_at": max(ended, began) - origin, "isolation": isolation,
                "read_only": transaction.tpb.read_only, "lock_timeout": transaction.tpb.lock_timeout,
                "end": "commit" if end in ("commit", "commit_retaining") else "rollback", "statements": [],
            }
            first = transaction.statements[0]
            start_at = transaction.start_event if transaction.start_event is not None else \
                (first.start_event if first.start_event is not None else first.finish_event) - 0.5
            actions.append((start_at, attachment, local, item, "start_seq"))
            local += 1
            for execution in transaction.statements:
                problems = execution.problems()
                if problems:
                    skipped.append({"attachment": attachment, "transaction": transaction.id,
                                    "sql": execution.sql, "why": "; ".join(problems)})
                    continue
                index = templates.setdefault(execution.sql, len(listed))
                if index == len(listed):
                    listed.append(Template(execution.sql))
                template = listed[index]
                template.executions += 1
                template.failed += execution.failed
                template.traced_ms.append(_traced_ms(execution))
                changes = execution.changes
                statement: dict[str, Any] = {
                    "template": index, "at": execution.began_at - origin,
                    # int, float, str or None: JSON carries the kind, and the core binds by it.
                    "params": [param.replay_value()[1] for param in execution.params],
                    "rows": execution.records,
                    "changes": [changes["insert"], changes["update"], changes["delete"]] if with_perf else None,
                    "error": (execution.error[0] if execution.error else ANY_ERROR) if execution.failed else None,
                    # The trace logged its START: what it logged next happened while this one ran.
                    "ordered_at_start": execution.start_event is not None,
                }
                item["statements"].append(statement)
                actions.append((execution.start_event if execution.start_event is not None else
                                execution.finish_event - 0.5, attachment, local, statement, "seq"))
                local += 1
            actions.append((transaction.end_event if transaction.end_event is not None else
                            transaction.statements[-1].finish_event + 0.5, attachment, local, item, "end_seq"))
            local += 1
            session.append(item)
        sessions.append(session)
    for seq, (_at, _attachment, _local, item, key) in enumerate(sorted(actions, key=lambda a: a[:3]), start=1):
        item[key] = seq
    last = max(max(item["end_at"] for item in session) for session in sessions) + origin
    if skipped:
        notes["statement executions not replayable (listed as divergences)"] += len(skipped)
    return Plan(shapes, listed, sessions, [a for a, _ts in chosen], skipped, notes, last - origin, len(actions))


def _began(transaction: Transaction) -> float:
    if transaction.started_at is not None:
        return transaction.started_at
    return transaction.statements[0].began_at


def core_replay(plan: Plan, order: str, speed: float, stall_seconds: float = 10.0) -> dict[str, Any]:
    """The ``replay`` object of the core's config."""
    if order not in ORDERS:
        raise FbbenchError(f"--order must be timed or strict, got '{order}'")
    return {"order": order, "speed": speed, "stall_seconds": stall_seconds,
            "templates": [template.sql for template in plan.templates], "sessions": plan.sessions}
