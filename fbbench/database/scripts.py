"""Run isql-style SQL scripts unchanged.

What isql accepts, this runner accepts: ``;`` terminators, ``SET TERM`` for PSQL bodies, ``--``
and ``/* */`` comments, quoted strings and identifiers, ``q'{...}'`` literals, ``COMMIT`` /
``ROLLBACK``, ``INPUT 'file'`` and isql's own client settings (``SET AUTODDL``, ``SET NAMES``,
``SET LIST``...), which only matter to isql and are skipped. DDL commits as it runs (isql's
AUTODDL ON); other work commits at ``COMMIT`` and at the end of the script.

``${name}`` is replaced by the script's parameters (a workload's scale) before anything runs.
Every error names the script, the line in the script and Firebird's own message. How the text is
read — substitution and statement splitting — is the workload format's
(:mod:`fbbench.workloads.sqltext`); this module runs it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from fbbench.errors import FbbenchError, FirebirdError
from fbbench.workloads.sqltext import Statement, split, substitute

if TYPE_CHECKING:
    from firebird.driver import Connection

_ISQL_SETTINGS = {
    "AUTODDL", "NAMES", "SQL", "BAIL", "ECHO", "LIST", "STATS", "PLAN", "PLANONLY", "COUNT", "HEADING",
    "WARNINGS", "WNG", "WIDTH", "BLOB", "BLOBDISPLAY", "TIME", "ROWCOUNT", "EXPLAIN", "PER_TABLE_STATS",
    "KEEP_TRAN_PARAMS", "MAXROWS", "EXEC_PATH_DISPLAY", "TERM",
}
_DDL = {"CREATE", "ALTER", "DROP", "RECREATE", "DECLARE", "COMMENT", "GRANT", "REVOKE"}
_FB_POSITION = re.compile(r"line (\d+), column (\d+)")


def run_file(connection: Connection, path: Path, params: Mapping[str, object] | None = None) -> int:
    return run_text(connection, path.read_text(), path.name, params, base_dir=path.parent)


def run_text(connection: Connection, text: str, source: str, params: Mapping[str, object] | None = None,
             base_dir: Path | None = None) -> int:
    """Execute a script; returns the number of statements executed."""
    import firebird.driver as driver

    text = substitute(text, params or {}, source)
    executed = 0
    for statement in split(text, source):
        words = statement.words
        if not words:
            continue
        head = words[0]
        if head == "SET" and len(words) > 1 and words[1] in _ISQL_SETTINGS:
            continue
        if head in ("COMMIT", "ROLLBACK") and len(words) <= 2 and (len(words) == 1 or words[1] == "WORK"):
            _end_transaction(connection, commit=head == "COMMIT")
            continue
        if head == "INPUT":
            included = (base_dir or Path.cwd()) / statement.text.split(None, 1)[1].strip().strip("'\"")
            executed += run_text(connection, included.read_text(), included.name, params, included.parent)
            continue
        if head in ("CONNECT",) or (head == "CREATE" and len(words) > 1 and words[1] in ("DATABASE", "SCHEMA")):
            raise FbbenchError(
                f"{source}:{statement.line}: {head} {words[1] if head == 'CREATE' else ''} is not allowed here".replace(
                    "  ", " "),
                hint="fbbench creates and connects to the benchmark database itself; remove this statement",
            )
        try:
            if head in _DDL or (head == "SET" and len(words) > 1 and words[1] in ("GENERATOR", "STATISTICS")):
                connection.execute_immediate(statement.text)
                _end_transaction(connection, commit=True)
            else:
                with connection.cursor() as cursor:
                    cursor.execute(statement.text)
                    if cursor.description:
                        cursor.fetchall()
        except driver.DatabaseError as error:
            _end_transaction(connection, commit=False)
            raise _located(error, statement) from None
        executed += 1
    _end_transaction(connection, commit=True)
    return executed


def _end_transaction(connection: Connection, commit: bool) -> None:
    transaction = connection.main_transaction
    if transaction.is_active():
        transaction.commit() if commit else transaction.rollback()


def _located(error: Exception, statement: Statement) -> FirebirdError:
    """Firebird counts lines from the start of the statement; report the line in the script."""
    message = " ".join(part.strip().lstrip("-") for part in str(error).strip().splitlines() if part.strip())
    position = _FB_POSITION.search(message)
    line = statement.line + (int(position.group(1)) - 1 if position else 0)
    codes = tuple(getattr(error, "gds_codes", ()) or ())
    return FirebirdError(f"{statement.source}:{line}: {message}", codes)
