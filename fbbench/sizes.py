"""Sizes in bytes, read and written one way everywhere (console, JSON, HTML).

KB, MB, GB, TB, PB are 10^3, 10^6, 10^9, 10^12, 10^15 bytes; KiB, MiB, GiB, TiB, PiB are 2^10,
2^20, 2^30, 2^40, 2^50 bytes. :func:`parse_size` reads a size as the user wrote it,
:func:`size_text` writes one (decimal unless asked), :func:`given_size_text` writes back a size the
user gave in the convention they wrote it in (``100GiB`` is "100 GiB", ``10TB`` "10 TB").
"""

from __future__ import annotations

import re

from fbbench.errors import FbbenchError

DECIMAL = ("bytes", "KB", "MB", "GB", "TB", "PB")
BINARY = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([kmgtp]i?b?|b)?\s*", re.IGNORECASE)


def parse_size(text: str | int, what: str) -> int:
    """``4GB``, ``500 MB``, ``1.5G``, ``2GiB`` or a number of bytes → bytes (GB = 10^9, GiB = 2^30;
    a unit without ``B`` is decimal: ``4G`` = 4GB)."""
    if isinstance(text, bool) or not isinstance(text, str | int):
        raise FbbenchError(f"{what} must be a size such as 4GB or 500MB, got {_shown(text)}")
    if isinstance(text, int):
        size = text
    else:
        match = _SIZE.fullmatch(text)
        if not match:
            raise FbbenchError(f"{what} must be a size such as 4GB, 500MB or 2GiB, got '{text}'")
        unit = (match.group(2) or "").lower()
        power = " kmgtp".index(unit[0]) if unit and unit != "b" else 0
        scale = 1024 ** power if unit.endswith("ib") else 1000 ** power
        size = int(float(match.group(1)) * scale)
    if size <= 0:
        raise FbbenchError(f"{what} must be more than 0 bytes, got '{text}'")
    return size


def _shown(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else repr(value)


def size_text(size: float, binary: bool = False, digits: int = 1, unit: str | None = None) -> str:
    """``size`` bytes in the largest unit it is at least one of (``unit``: that unit), with
    ``digits`` decimals: 82,970,000,000 → "83.0 GB"; ``binary``: in KiB, MiB, GiB … instead."""
    names = BINARY if binary or (unit is not None and unit in BINARY) else DECIMAL
    base = 1024 if names is BINARY else 1000
    if unit is not None:
        power = names.index(unit)
    else:
        power = 0
        while power < len(names) - 1 and abs(size) >= base ** (power + 1):
            power += 1
    if power == 0:
        return f"{size:,.0f} bytes"
    return f"{size / base ** power:,.{digits}f} {names[power]}"


def given_size_text(size: int) -> str:
    """A size the user gave, in the units they wrote it in: the convention (KB … or KiB …) in which
    it is the rounder number (fewer significant digits), without trailing zeros: 10TB → "10 TB",
    100GiB → "100 GiB", 1.5GB → "1.5 GB". Parsing keeps only bytes; this reads the units back."""
    def shown(base: int, names: tuple[str, ...]) -> tuple[int, str]:
        power = 0
        while power < len(names) - 1 and size >= base ** (power + 1):
            power += 1
        number = f"{size / base ** power:,.3f}".rstrip("0").rstrip(".")
        return len(number.replace(",", "").replace(".", "").strip("0")), f"{number} {names[power]}"

    decimal, binary = shown(1000, DECIMAL), shown(1024, BINARY)
    return binary[1] if binary[0] < decimal[0] else decimal[1]
