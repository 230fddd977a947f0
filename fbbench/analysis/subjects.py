"""The sides of a comparison: a single run or a series (:class:`Subject`), and two series that ran
as time-shared pairs (``fbbench compare --paired``), matched run by run through the pair each run
recorded (:func:`pairs_of`), with the runs whose partner did not complete set aside (:func:`paired`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fbbench.store.model import StoredRun


@dataclass
class Subject:
    """One side of a comparison: a single run or a series, with its stored runs in repeat order."""

    label: str  # A, B, C … in the order the user named them
    kind: str  # run / series
    ident: str  # the run id or the series id
    argument: str  # as the user wrote it (last~1, a prefix, …)
    runs: list[StoredRun]
    # Paired with the other side (compare --paired): runs whose partner did not complete are not
    # used either, so that the used runs of both sides are the complete pairs, in pair order.
    paired: bool = False
    unpaired: frozenset[str] = frozenset()

    @property
    def used(self) -> list[StoredRun]:
        """The runs whose figures count: completed ones only (in pairs: whose partner completed too)."""
        return [run for run in self.runs if run.get("status") == "completed" and str(run.get("run_id")) not in
                self.unpaired]

    def describe(self) -> str:
        if self.kind == "run":
            run = self.runs[0]
            return f"run {self.ident}" + ("" if run.get("status") == "completed" else f" ({run.get('status')})")
        used = len(self.used)
        shown = f"{len(self.runs)} runs" if used == len(self.runs) else f"{used} of {len(self.runs)} runs completed"
        return f"series {self.ident} ({shown})"


def pair_of(run: StoredRun) -> str | None:
    """The pair a time-shared run belonged to (``fbbench compare --paired``), None for any other run."""
    timeshare = (run.get("settings") or {}).get("timeshare")
    return str(timeshare["pair"]) if isinstance(timeshare, Mapping) and timeshare.get("pair") else None


def pairs_of(base: Subject, other: Subject) -> list[tuple[StoredRun, StoredRun]] | None:
    """The runs of two series that ran as time-shared pairs, matched by the pair each run
    recorded, in the base's order; None unless every run of each side has its partner on the
    other (then the sides are compared as series)."""
    if base.kind != "series" or other.kind != "series":
        return None
    runs_a = {pair_of(run): run for run in base.runs}
    runs_b = {pair_of(run): run for run in other.runs}
    if (None in runs_a or None in runs_b or runs_a.keys() != runs_b.keys() or len(runs_a) != len(base.runs)
            or len(runs_b) != len(other.runs)):
        return None
    return [(runs_a[pair], runs_b[pair]) for pair in (pair_of(run) for run in base.runs)]


def paired(base: Subject, other: Subject) -> tuple[Subject, Subject, dict[str, Any]] | None:
    """The two sides as pairs (the other's runs in the base's pair order, runs whose partner did
    not complete set aside), and what the document says of the pairing; None when not paired."""
    pairs = pairs_of(base, other)
    if pairs is None:
        return None
    complete = [(a, b) for a, b in pairs if a.get("status") == "completed" and b.get("status") == "completed"]
    unpaired = frozenset(str(run.get("run_id")) for pair in pairs for run in pair
                         if pair not in complete and run.get("status") == "completed")
    turns = {str(((run.get("settings") or {}).get("timeshare") or {}).get("turn")) for pair in pairs for run in pair}
    info = {"pairs": len(pairs), "complete": len(complete), "turn_seconds": float(turns.pop()) if len(turns) == 1
            else None, "runs": [[a.get("run_id"), b.get("run_id")] for a, b in pairs],
            "unused_because_partner": sorted(unpaired)}
    return (Subject(base.label, base.kind, base.ident, base.argument, [a for a, _ in pairs], True, unpaired),
            Subject(other.label, other.kind, other.ident, other.argument, [b for _, b in pairs], True, unpaired), info)
