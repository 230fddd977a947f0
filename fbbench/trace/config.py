"""The trace session config fbbench writes: what a replay needs, and no truncation.

Firebird's defaults log nothing faster than ``time_threshold`` (100 ms) and cut SQL text at 300
characters, each argument at 80 and the argument list at 30 — a trace taken with them cannot be
replayed. Every limit is raised here explicitly, for every version (the defaults changed between
versions): 10 MiB of SQL (Firebird 4's largest statement), 64 KiB per argument (more than a
VARCHAR can hold) and 65,535 arguments, values 3.0, 4.0 and 5.0 were seen to accept, printing a
100,000-character statement with 1,500 arguments whole.

``print_perf`` is on: its per-table counts are what a replay compares rows changed against.
"""

from __future__ import annotations

import re

LIMITS = {"max_sql_length": 10_485_760, "max_arg_length": 65_535, "max_arg_count": 65_535}

_EVENTS = {
    "log_connections": True,  # attachments: their id, user, process — one replay attachment each
    "log_transactions": True,  # start / commit / rollback (and retaining) with the TPB
    "log_statement_prepare": True,
    "log_statement_free": True,
    "log_statement_start": True,  # with the parameters: when each statement began
    "log_statement_finish": True,  # parameters, records fetched, time, per-table counts
    "log_procedure_start": True,
    "log_procedure_finish": True,
    "log_function_start": True,
    "log_function_finish": True,
    # Triggers run because of the DML that fires them: a replay must not issue them again.
    "log_trigger_start": False,
    "log_trigger_finish": False,
    "log_context": False,
    "log_errors": True,
    "print_plan": False,
    "print_perf": True,
    "time_threshold": 0,
}


def database_pattern(path: str) -> str:
    """The ``database = …`` pattern of a session that traces one database: Firebird matches it as
    a SIMILAR TO expression against the name the attachment used (any directory before the file
    name). Its special characters are escaped; escaping any other one (``\\.``) is an error."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return "%[\\\\/]" + re.sub(r"([\[\]()|^\-+*%_?{}])", r"\\\1", name)


def session_config(database: str | None = None) -> str:
    """The text of a user trace session; ``database``: only attachments to a database of that
    file name (None: every database the server has open)."""
    lines = [f"database = {database_pattern(database)}" if database else "database", "{", "  enabled = true"]
    for key, value in {**_EVENTS, **LIMITS}.items():
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        lines.append(f"  {key} = {shown}")
    lines.append("}")
    return "\n".join(lines) + "\n"
