"""Run isql-style SQL scripts unchanged.

What isql accepts, this runner accepts: ``;`` terminators, ``SET TERM`` for PSQL bodies, ``--``
and ``/* */`` comments, quoted strings and identifiers, ``q'{...}'`` literals, ``COMMIT`` /
``ROLLBACK``, ``INPUT 'file'`` and isql's own client settings (``SET AUTODDL``, ``SET NAMES``,
``SET LIST``...), which only matter to isql and are skipped. DDL commits as it runs (isql's
AUTODDL ON); other work commits at ``COMMIT`` and at the end of the script.

``${name}`` is replaced by the script's parameters (a workload's scale) before anything runs.
Every error names the script, the line in the script and Firebird's own message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fbbench.errors import FbbenchError, FirebirdError

if TYPE_CHECKING:
    from firebird.driver import Connection

_ISQL_SETTINGS = {
    "AUTODDL", "NAMES", "SQL", "BAIL", "ECHO", "LIST", "STATS", "PLAN", "PLANONLY", "COUNT", "HEADING",
    "WARNINGS", "WNG", "WIDTH", "BLOB", "BLOBDISPLAY", "TIME", "ROWCOUNT", "EXPLAIN", "PER_TABLE_STATS",
    "KEEP_TRAN_PARAMS", "MAXROWS", "EXEC_PATH_DISPLAY", "TERM",
}
_DDL = {"CREATE", "ALTER", "DROP", "RECREATE", "DECLARE", "COMMENT", "GRANT", "REVOKE"}
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_FB_POSITION = re.compile(r"line (\d+), column (\d+)")
_Q_CLOSE = {"(": ")", "[": "]", "{": "}", "<": ">"}


@dataclass(frozen=True)
class Statement:
    text: str  # from its first significant character, without its terminator
    line: int  # line of that character, 1-based
    source: str  # script name for messages

    @property
    def words(self) -> list[str]:
        return [w.upper() for w in _WORDS.findall(_strip_comments(self.text))[:3]]


def substitute(text: str, params: Mapping[str, object], source: str,
               unknown: Callable[[str, int], Exception] | None = None) -> str:
    """Replace ``${name}`` — the one substitution of workload files, SQL scripts and workload.toml
    alike; an unknown name is an error at its line (``unknown(name, line)`` makes it)."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in params:
            line = text.count("\n", 0, match.start()) + 1
            if unknown is not None:
                raise unknown(name, line)
            known = ", ".join(sorted(params)) or "none"
            raise FbbenchError(f"{source}:{line}: unknown parameter ${{{name}}} (known: {known})")
        return str(params[name])

    return _PLACEHOLDER.sub(replace, text)


def _strip_comments(text: str) -> str:
    return re.sub(r"--[^\n]*|/\*.*?\*/", " ", text, flags=re.DOTALL)


def split(text: str, source: str = "<script>") -> list[Statement]:
    """Split a script into statements, honouring SET TERM, comments and quotes."""
    statements: list[Statement] = []
    terminator = ";"
    i, n, start, line = 0, len(text), 0, 1
    # Where the statement's first significant character is: Firebird counts error positions
    # from there, because leading comments are not sent.
    first_line: int | None = None
    first_index = 0

    def significant(at: int) -> None:
        nonlocal first_line, first_index
        if first_line is None:
            first_line, first_index = line, at

    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
            continue
        if text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise FbbenchError(f"{source}:{line}: comment /* is never closed")
            line += text.count("\n", i, end)
            i = end + 2
            continue
        if text.startswith(terminator, i):
            body = text[start:i]
            set_term = re.fullmatch(r"\s*SET\s+TERM\s+(\S+)\s*", _strip_comments(body), re.IGNORECASE)
            if set_term:
                terminator = set_term.group(1)
            elif first_line is not None:
                statements.append(Statement(text[first_index:i].rstrip(), first_line, source))
            i += len(terminator)
            start, first_line = i, None
            continue
        if ch in "'\"":
            significant(i)
            end, newlines = _skip_quoted(text, i, ch, ch)
            if end < 0:
                raise FbbenchError(f"{source}:{line}: quoted text starting here is never closed")
            line += newlines
            i = end
            continue
        if ch in "qQ" and text.startswith("'", i + 1) and i + 2 < n and (i == 0 or not _is_word(text[i - 1])):
            significant(i)
            opener = text[i + 2]
            end, newlines = _skip_quoted(text, i + 2, opener, _Q_CLOSE.get(opener, opener), q_string=True)
            if end < 0:
                raise FbbenchError(f"{source}:{line}: q-string starting here is never closed")
            line += newlines
            i = end
            continue
        if not ch.isspace():
            significant(i)
        i += 1
    if first_line is not None and text[start:].strip():
        raise FbbenchError(
            f"{source}:{first_line}: statement is not terminated with '{terminator}'",
            hint="end every statement with the current terminator (see SET TERM)",
        )
    return statements


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch in "_$"


def _skip_quoted(text: str, at: int, opener: str, closer: str, q_string: bool = False) -> tuple[int, int]:
    """Index just after the closing quote, and the newlines inside; (-1, 0) if never closed."""
    if q_string:  # q'<x ... x>' : the closing delimiter is followed by a quote, no escaping
        end = text.find(closer + "'", at + 1)
        return (-1, 0) if end < 0 else (end + 2, text.count("\n", at, end))
    i = at + 1
    while True:
        end = text.find(closer, i)
        if end < 0:
            return -1, 0
        if text.startswith(closer * 2, end):  # doubled quote is an escaped quote
            i = end + 2
            continue
        return end + 1, text.count("\n", at, end)


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
