"""Scale values of the workload format (``[scale]`` and ``--scale name=value``): numbers,
on/off switches and words with their choices."""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence

from fbbench.errors import FbbenchError

BOOLEAN_WORDS = {"on": 1, "true": 1, "yes": 1, "off": 0, "false": 0, "no": 0}


def parse_scale_value(name: str, value: object) -> int | float:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        _check_finite(name, value, value)
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in BOOLEAN_WORDS:
            return BOOLEAN_WORDS[word]
        try:
            number = float(word)
        except ValueError:
            raise FbbenchError(f"scale '{name}' must be a number or on/off, got '{value}'") from None
        _check_finite(name, number, value)
        return int(number) if number.is_integer() and "." not in word and "e" not in word else number
    raise FbbenchError(f"scale '{name}' must be a number or on/off, got {value!r}")


def _check_finite(name: str, number: float, given: object) -> None:
    # float() reads "inf" and "nan", which no size can be (they reached the SQL as words).
    if not math.isfinite(number):
        raise FbbenchError(f"scale '{name}' must be a finite number, got '{given}'")


def parse_scale_choice(name: str, value: object, choices: Sequence[str]) -> str:
    """A word-valued scale parameter: one of its choices (case does not matter)."""
    word = str(value).strip()
    for choice in choices:
        if word.lower() == choice.lower():
            return choice
    close = difflib.get_close_matches(word.lower(), [choice.lower() for choice in choices], n=1)
    raise FbbenchError(f"scale '{name}' must be one of: {', '.join(choices)}; got '{value}'",
                       hint=f"did you mean '{next(c for c in choices if c.lower() == close[0])}'?" if close else None)
