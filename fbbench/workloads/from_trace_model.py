"""What ``fbbench workload from-trace`` makes of a trace before it writes it: the units (a
transaction shape with its parameters fitted, its lets and its think time), the generated files,
and the rules' thresholds — shared by the generator (:mod:`fbbench.workloads.from_trace`) and the
README that says what the workload represents (:mod:`fbbench.workloads.trace_readme`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fbbench.trace.shapes import Shape
from fbbench.workloads.generators import Generator

LOW_CARDINALITY = 20  # at most this many distinct values: choice of exactly those, as often as seen
SAMPLE = 100  # more distinct values (not integer keys): choice of this many, spread over what was seen
NO_THINK_BELOW = 0.005  # s: a median gap between an attachment's transactions below this is no think time
FLOW_SHARE = 0.99  # a later parameter equal to an earlier one in at least this share of its executions …
FLOW_CHANCE = 0.001  # … where draws apart would be equal that often less likely than this: one let (from_trace._flows)
PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")  # what the workload format would substitute
USER_EXCEPTION = 335544517  # isc_except: a user exception, "exception N" then its name
ISOLATION = {"snapshot": "snapshot", "serializable": "serializable", "read_committed": "read_committed",
              "read_committed_no_rec_version": "read_committed", "read_consistency": "read_committed"}


@dataclass
class Fitted:
    generator: Generator
    how: str


@dataclass
class Let:
    """A value drawn once per execution of a unit and used by name by every parameter in ``uses``
    (statement, parameter; the first is where the trace first saw it)."""

    name: str
    fitted: Fitted
    uses: list[tuple[int, int]]
    evidence: list[str]  # per later use: how often the trace saw the value flow


@dataclass
class Unit:
    shape: Shape
    fitted: list[list[Fitted]]  # per statement, per parameter
    rollback_on: list[str]
    think: float
    lets: list[Let]
    flows: list[str]  # values that flowed sometimes, drawn independently: what the trace showed
    gap_before: float | None = None  # s: the mean gap before the shape's transactions (not written)

    def let_of(self, statement: int, parameter: int) -> Let | None:
        return next((let for let in self.lets if (statement, parameter) in let.uses), None)


@dataclass
class Generated:
    files: dict[str, str]
    summary: dict[str, Any] = field(default_factory=dict)
