"""isql-style SQL text as the workload format reads it: ``${name}`` substitution and the
splitting of a script into statements.

What isql accepts, the splitter accepts: ``;`` terminators, ``SET TERM`` for PSQL bodies, ``--``
and ``/* */`` comments, quoted strings and identifiers, ``q'{...}'`` literals. Every statement
keeps the line it starts on, so that an error (here, or Firebird's when the statement runs:
:mod:`fbbench.database.scripts`) names the script and its line.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fbbench.errors import FbbenchError

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
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

    return PLACEHOLDER.sub(replace, text)


def _strip_comments(text: str) -> str:
    return re.sub(r"--[^\n]*|/\*.*?\*/", " ", text, flags=re.DOTALL)


def split(text: str, source: str = "<script>") -> list[Statement]:
    """Split a script into statements, honouring SET TERM, comments and quotes."""
    statements: list[Statement] = []
    terminator = ";"
    special = _special(terminator)
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
        # Text up to the next character that may change what follows is taken in one step: a
        # script is split for every run and every lint, character by character it cost 15 ms
        # for TPC-C's procedures. Such a stretch holds no newline (one is special).
        found = special.search(text, i)
        stop = n if found is None else found.start()
        if stop > i:
            if first_line is None and (word := _NON_SPACE.search(text, i, stop)) is not None:
                significant(word.start())
            i = stop
            continue
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
                special = _special(terminator)
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


_NON_SPACE = re.compile(r"\S")  # re's \s is str.isspace()


@functools.lru_cache(maxsize=16)
def _special(terminator: str) -> re.Pattern[str]:
    """Where :func:`split` must look at a character: a newline, a comment, a quote, a q-string
    and the terminator begin there (SET TERM makes the terminator any text without spaces)."""
    return re.compile(r"\n|--|/\*|['\"]|[qQ]'|" + re.escape(terminator))


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
