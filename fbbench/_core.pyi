"""Types of the native load core (core/, a PyO3 extension built by maturin).

Its contract is docs/core-api.md; what is not spelled out here is typed Any.
"""

from typing import Any

CANNOT_WRITE_CODES: list[int]

def __getattr__(name: str) -> Any: ...
