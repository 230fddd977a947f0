"""The start barrier of time-shared runs (:mod:`fbbench.runner.timeshare`): how one member — a run's
engine process — and the coordinator meet at the start, through two files per member.

The engine side calls :func:`arrive` once connected and holding; the coordinator waits until
every member :meth:`Barrier.reached` it, then :func:`write_go` gives them all one common zero.
A module of its own so that the engine side does not import the coordinator's.
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

    @classmethod
    def in_directory(cls, directory: Path, name: str) -> Barrier:
        return cls(directory / f"{name}.ready", directory / f"{name}.go")

    def to_json(self) -> dict[str, str]:
        return {"ready": str(self.ready), "go": str(self.go)}

    @classmethod
    def from_json(cls, data: dict[str, str]) -> Barrier:
        return cls(Path(data["ready"]), Path(data["go"]))

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


def _write_atomically(path: Path, text: str) -> None:
    # A reader never sees half a number: the file appears whole, by rename.
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)


def write_go(barriers: Sequence[Barrier], zero: float) -> None:
    for barrier in barriers:
        _write_atomically(barrier.go, json.dumps(zero))
