"""Errors the user can act on.

Anything raised as :class:`FbbenchError` is printed by the CLI as one line (plus an optional
hint saying what to do) and ends the command with exit code 2 — never with a traceback.
"""

from __future__ import annotations


class FbbenchError(Exception):
    """A failure explained to the user: what went wrong and, when known, how to fix it."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  → {self.hint}"


class FirebirdError(FbbenchError):
    """Firebird refused an operation; the message is Firebird's own."""

    def __init__(self, message: str, gdscodes: tuple[int, ...] = (), hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.gdscodes = gdscodes


class NotOwnedError(FbbenchError):
    """A database fbbench did not create: it is never changed or dropped."""


class Interrupted(FbbenchError):
    """The user pressed Ctrl-C; what was measured has been kept."""

    exit_code = 130
