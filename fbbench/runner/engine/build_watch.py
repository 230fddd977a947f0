"""What stops a population build, as a failed run with one line, before it fills the disk or
runs for days (:class:`Watch`, told of each load step and called all through one).
"""

from __future__ import annotations

import time
from pathlib import Path

from fbbench.errors import FbbenchError
from fbbench.runner import limits
from fbbench.sizes import size_text


class Watch:
    """Stops a build, as a failed run with one line, before it fills the disk or runs for days.

    Before each load step, and all through a ``for_each`` step, the file system that holds the
    database being built must keep what fbbench leaves free (:class:`limits.Room`), also at the
    pace the file grows right now for another :data:`RUNWAY` seconds. Once a step has run a few
    seconds, its end is projected from its pace so far (the file's growth and the time per
    iteration, times the iterations left): more room than the file systems have (beyond
    :data:`limits.ESTIMATE_MARGIN`; the run's copy of the finished build counted too), or a build
    longer than ``time_limit``, stops it. This is what guards a first build of a scale, which no
    measured build can estimate beforehand; the steps still to come only add to a projection that
    already does not fit. The steps that run a script (indices) are not watched while they run.
    ``file`` None (a server's database elsewhere): time only.
    """

    SETTLE = 5.0  # seconds of a step before its pace is projected
    PROJECT_EVERY = 1.0  # seconds between two projections
    RUNWAY = 2.0  # seconds of growth at the current pace that must still fit above the reserve

    def __init__(self, file: Path | None, copy_to: Path | None, time_limit: float | None) -> None:
        self.file, self.copy_to, self.time_limit = file, copy_to, time_limit
        self.started = time.monotonic()
        self.name = ""
        self.step_started = self.projected = self.looked = 0.0
        self.size_at_start = self.size_looked = 0

    def step(self, name: str) -> None:
        """A step begins; the build must still leave what fbbench leaves free."""
        now = time.monotonic()
        self.name, self.step_started, self.projected, self.looked = name, now, now, now
        self.size_at_start = self.size_looked = self._file_size()
        self._keep_reserve("", 0.0)

    def check(self, done: int, total: int) -> None:
        """Called while a step's iterations run (``done`` of ``total``); raises to stop the build."""
        now = time.monotonic()
        at = f" ({done:,} of {total:,} iterations in {limits.duration_text(now - self.step_started)})"
        size = self._file_size()
        pace = max(size - self.size_looked, 0) / max(now - self.looked, 1e-3)
        self.looked, self.size_looked = now, size
        self._keep_reserve(at, pace)
        if now - self.step_started < self.SETTLE or now - self.projected < self.PROJECT_EVERY or done == 0:
            return
        self.projected = now
        left = total - done
        if self.file is not None:
            more = max(size - self.size_at_start, 0) / done * left
            needs = [(self.file.parent, more)]
            if self.copy_to is not None:
                needs.append((self.copy_to.parent, size + more))
            short = limits.shortfall(needs, limits.ESTIMATE_MARGIN)
            if short is not None:
                what = "the rest of this step" + (" and the run's copy" if self.copy_to is not None else "")
                raise FbbenchError(
                    f"the population stopped at step '{self.name}'{at}: at its pace so far {what} need about "
                    f"{size_text(short[1])} more; {short[0].text()}", hint=limits.ROOM_HINT)
        seconds = (now - self.started) + (now - self.step_started) / done * left
        if self.time_limit is not None and seconds > self.time_limit:
            raise FbbenchError(
                f"the population stopped at step '{self.name}'{at}: at its pace so far the build would take about "
                f"{limits.duration_text(seconds)}, more than {limits.duration_text(self.time_limit)}",
                hint="a smaller --scale; or --yes to build it however long it takes")

    def _keep_reserve(self, at: str, pace: float) -> None:
        """Above the reserve now, and for another RUNWAY seconds at ``pace`` bytes a second."""
        if self.file is None:
            return
        here = limits.room(self.file.parent)
        if here.free - pace * self.RUNWAY < here.reserve:
            growing = f" (the database grows by {size_text(pace)}/s)" if pace > 0 else ""
            raise FbbenchError(f"the population stopped at step '{self.name}'{at} before it filled the disk: "
                               f"{here.text()}{growing}", hint=limits.ROOM_HINT)

    def _file_size(self) -> int:
        try:
            return self.file.stat().st_size if self.file is not None else 0
        except OSError:
            return 0
