"""Populations that would not fit (issue "Hardening", item 2): ``--scale warehouses=1e9`` once grew
the engine child to 24 GB until the kernel killed it.

A load step's work list is drawn one iteration at a time, never listed in memory; a population is
estimated (disk and time) from the nearest measured build before anything is built, and refused
with the figures when it cannot fit; a first build with no measurement is watched while it grows
and stopped cleanly, as a failed run with one line, before it fills the disk or runs for days.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.conftest import REPO

BANK = Path(__file__).parent / "workloads" / "bank"
MB = 1 << 20


class Watched:
    """``fbbench ARGS`` in its own session, the peak RSS of each of its descendants sampled while it
    runs; killed (all of it) when one grows past ``kill_above`` bytes, so that a regression cannot
    take the machine's memory."""

    def __init__(self, tmp_path: Path, *args: str, kill_above: float = 1024 * MB) -> None:
        self.out = tmp_path / "output.txt"
        self.kill_above = kill_above
        self.peak: dict[int, int] = {}
        self.killed_for: str | None = None
        with open(self.out, "w") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "fbbench", *args], stdout=out,
                                            stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True,
                                            env={**os.environ, "COLUMNS": "200"})

    def sample(self) -> None:
        try:
            children = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.Error:
            return
        for child in children:
            try:
                rss = child.memory_info().rss
            except psutil.Error:
                continue
            self.peak[child.pid] = max(self.peak.get(child.pid, 0), rss)
            if rss > self.kill_above and self.killed_for is None:
                self.killed_for = f"process {child.pid} reached {rss / MB:,.0f} MB"
                os.killpg(self.process.pid, signal.SIGKILL)

    def watch(self, seconds: float) -> bool:
        """Sample for up to ``seconds``; True when fbbench ended meanwhile."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.sample()
            if self.process.poll() is not None:
                return True
            time.sleep(0.2)
        return False

    def interrupt(self, within: float = 20) -> int:
        """Ctrl-C as a terminal sends it; the exit code."""
        os.killpg(self.process.pid, signal.SIGINT)
        return self.process.wait(within)

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    @property
    def largest(self) -> int:
        return max(self.peak.values(), default=0)


def test_a_huge_load_step_is_not_listed_in_memory(tmp_path: Path) -> None:
    """5,000,000 iterations of one load step: the old list of them (and its queue) took the engine
    child from about 80 MB to 546 MB; drawn one at a time, it stays where a small step leaves it."""
    work = tmp_path / "work"
    run = Watched(tmp_path, "run", str(BANK), "--scale", "branches=5000000", "--scale", "accounts=5000000",
                  "--load-connections", "2", "--connections", "1", "--duration", "5s",
                  "--workdir", str(work), "--results", str(tmp_path / "r.sqlite"))
    try:
        ended = run.watch(25)  # the schema, then well inside the step of 5,000,000 iterations
        assert not ended, run.output()
        assert run.interrupt() == 130, run.output()
    finally:
        if run.process.poll() is None:
            os.killpg(run.process.pid, signal.SIGKILL)
    assert run.killed_for is None, run.killed_for
    assert run.peak, "no engine child was seen"
    assert run.largest < 250 * MB, {pid: rss // MB for pid, rss in run.peak.items()}
    assert "Traceback" not in run.output()
