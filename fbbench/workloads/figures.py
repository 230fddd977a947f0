"""The figures a workload defines — its ``[headline]`` and ``[[figures]]`` (docs/workload-format.md)
— and the outcomes every unit ends in, which their expressions count.

How a figure's value comes out of a run's counts is the analysis's
(:mod:`fbbench.analysis.figures`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

# What a unit ends in, as the native core counts it (docs/core-api.md); "total" is their sum.
Outcome = Literal["ok", "rolled_back", "conflicts", "errors"]
OUTCOMES: tuple[Outcome, ...] = ("ok", "rolled_back", "conflicts", "errors")
PER_SECONDS = {"minute": 60.0, "second": 1.0, "run": None}


@dataclass(frozen=True)
class Figure:
    """A figure defined by a workload: ``value`` is an expression over the names above."""

    name: str = "score"
    value: str = "ok"
    per: str = "minute"  # minute | second | run
    better: str = "higher"  # higher | lower
    unit: str = "/min"
    description: str = "successful units per minute of the measured period"
    when: str = "always"  # always | timed | fixed_work: the kind of run the figure is meant for

    def applies(self, fixed_work: bool) -> bool:
        return self.when == "always" or self.when == ("fixed_work" if fixed_work else "timed")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Figure:
        return cls(**data) if data else cls()


SCORE = Figure()
