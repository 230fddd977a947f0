"""The start barrier of time-shared runs (:mod:`fbbench.runner.timeshare`): how one member — a run's
engine process — and the coordinator meet at the start, and what each tells the other later,
through files per member.

The engine side calls :func:`arrive` once connected and holding; the coordinator waits until
every member :meth:`Barrier.reached` it, then :func:`write_go` gives them all one common zero.
While the turns go, the coordinator logs each of the member's turns (``turns``: when it was
continued, when it was stopped again, CLOCK_MONOTONIC); a member whose measured period ended
says when (:func:`measured`), and fixed work reads its own running time off the turn log
(:func:`own_seconds`). A module of its own so that the engine side does not import the
coordinator's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fbbench.engines import platform
from fbbench.errors import FbbenchError


@dataclass(frozen=True)
class Barrier:
    """The files through which one member and the coordinator meet at the start."""

    ready: Path  # the member writes its process id here once it holds at the start
    go: Path  # the coordinator writes the common zero (CLOCK_MONOTONIC seconds) here
    turns: Path  # the coordinator appends "c T" as it continues the member, "s T" once it stopped it
    ended: Path  # the member writes the end of its measured period (CLOCK_MONOTONIC) here

    @classmethod
    def in_directory(cls, directory: Path, name: str) -> Barrier:
        return cls(directory / f"{name}.ready", directory / f"{name}.go", directory / f"{name}.turns",
                   directory / f"{name}.ended")

    def to_json(self) -> dict[str, str]:
        return {"ready": str(self.ready), "go": str(self.go), "turns": str(self.turns), "ended": str(self.ended)}

    @classmethod
    def from_json(cls, data: dict[str, str]) -> Barrier:
        return cls(Path(data["ready"]), Path(data["go"]), Path(data["turns"]), Path(data["ended"]))

    def measured_until(self) -> float | None:
        """When the member's measured period ended (CLOCK_MONOTONIC), once it said so."""
        try:
            return float(self.ended.read_text())
        except (OSError, ValueError):
            return None

    def reached(self, pid: int) -> bool:
        """The member ``pid`` announced itself and is stopped at the barrier."""
        try:
            announced = int(self.ready.read_text())
        except (OSError, ValueError):
            return False
        return announced == pid and platform.is_stopped(pid)


def arrive(barrier: Barrier) -> float:
    """Engine side, once the run is connected and holding: announce, stop, return the common zero.

    The coordinator continues this process for its first turn once every member has arrived and
    the zero is written; it continues it with SIGINT pending to stop it instead (Ctrl-C, or the
    other member failed), which raises KeyboardInterrupt here like any stop.
    """
    _write_atomically(barrier.ready, str(os.getpid()))
    platform.stop_self()
    try:
        return float(barrier.go.read_text())
    except (OSError, ValueError):
        raise FbbenchError("the time-shared run was continued without a start time "
                           "(its coordinator is gone?)") from None


def measured(barrier: Barrier, end: float) -> None:
    """Engine side: the member's measured period ended at ``end`` (CLOCK_MONOTONIC)."""
    _write_atomically(barrier.ended, json.dumps(end))


def own_seconds(barrier: Barrier, start: float, end: float) -> tuple[float, int]:
    """Engine side, while running: the seconds of ``start``–``end`` (CLOCK_MONOTONIC) in which this
    member ran — its turns, the other members stopped — and how many turns that was. A turn
    begins when the coordinator is about to continue the member and ends once it stopped it
    again, so it holds every moment the member could run; the turn running now is still open
    (its end is this moment)."""
    try:
        lines = barrier.turns.read_text().split("\n")
    except OSError:
        return 0.0, 0
    seconds, turns, began = 0.0, 0, None
    for line in lines:
        event, _, at = line.partition(" ")
        try:
            moment = float(at)
        except ValueError:
            continue  # a line being written
        if event == "c":
            began = moment
        elif event == "s" and began is not None:
            overlap = min(moment, end) - max(began, start)
            if overlap > 0:
                seconds, turns = seconds + overlap, turns + 1
            began = None
    if began is not None and end > max(began, start):  # the open turn: it runs now
        seconds, turns = seconds + end - max(began, start), turns + 1
    return seconds, turns


def _write_atomically(path: Path, text: str) -> None:
    # A reader never sees half a number: the file appears whole, by rename.
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)


def write_go(barriers: Sequence[Barrier], zero: float) -> None:
    for barrier in barriers:
        _write_atomically(barrier.go, json.dumps(zero))
