"""Runs that share the machine in turns: the one mechanism for time-sharing in fbbench.

A 2-core VM drifts by ±20 % between runs taken one after the other and by ±14 % from one second
to the next (DESIGN.md): two runs measured at different times see different machines, and a
difference of a few per cent drowns in that. Two runs that take turns of 0.1 s over the same
seconds see the same machine: the one whose turn it is runs alone, the other is stopped
(SIGSTOP / SIGCONT), and whatever the machine does in those seconds it does to both.

Each member is a **process group**: an engine child runs in a group of its own
(:func:`fbbench.engines.child.run_in_engine`), and an embedded Classic run's attachment
processes are in it too, so a stop stops all of the run.

The **start barrier** (:mod:`fbbench.runner.barrier`) makes the members measure the same seconds:

1. engine side — :func:`arrive`, called once the run's attachments are connected and holding
   (the core's hold mode): it writes the process id to the member's ``ready`` file and stops
   its own process;
2. the coordinator (:class:`Turns`) sees every member stopped at the barrier
   (:meth:`Barrier.reached`), writes one common zero — a ``CLOCK_MONOTONIC`` time a little ahead
   — to every member's ``go`` file, and starts the turns;
3. each member, continued for its first turn, reads that zero and starts its clock there: the
   members' intervals and measured periods are the same seconds, so no member ever measures
   while the other runs free. The turns end with the measured period (zero + warm-up +
   duration); after it every member runs freely to its end.

**Fixed work** (``--transactions``) ends at a different moment for each member, and its
headline is how long the work took. Then the turns go on until every member's measured period
has ended (each says when: :func:`fbbench.runner.barrier.measured`); a member that has finished
goes on in its turns (never beside another one's measurement) until its run ends; and each
member's seconds are its own turns only (:func:`fbbench.runner.barrier.own_seconds`, from
the turn log the coordinator keeps per member), not the wall time, which would hold the other
member's turns too — the headline would then be the other run's speed as well.

Who takes the first turn is the caller's choice (fbbench alternates it between pairs, so that
neither side always follows the other).

**CPU while shared**: each member's CPU over the turns, read per process at the end of each of
its turns (it is stopped then) and kept per process, so that a process that ends — a Classic
attachment, or a fixed-work run that finished before the other — keeps what it used: the sum of
the live processes' counters at the end once went below the sum at the start, a negative share.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from fbbench.engines import platform

TURN_SECONDS = 0.1


# ------------------------------------------------------------------------- the coordinator


@dataclass
class Member:
    """One process group taking part in the turns."""

    name: str
    pgid: int
    running_seconds: float = 0.0  # wall time of its turns
    turns: int = 0
    cpu_seconds: float = 0.0  # CPU its processes used over the shared seconds
    log: Path | None = None  # where its turns are logged ("c T" continued, "s T" stopped: barrier.own_seconds)
    # CPU seconds per process of the group: when the turns began, and when last seen.
    cpu_at_start: dict[int, float] = field(default_factory=dict)
    cpu_seen: dict[int, float] = field(default_factory=dict)

    def watch_cpu(self) -> None:
        """Read the group's CPU per process now, keeping what processes that ended used."""
        for pid, seconds in _group_cpu(self.pgid).items():
            self.cpu_seen[pid] = max(seconds, self.cpu_seen.get(pid, 0.0))
        # A process that began during the turns counts from nothing.
        self.cpu_seconds = sum(seen - self.cpu_at_start.get(pid, 0.0) for pid, seen in self.cpu_seen.items())

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "running_seconds": self.running_seconds, "turns": self.turns,
                "cpu_seconds": self.cpu_seconds}


@dataclass
class Turns:
    """Process groups that run one at a time, in turns of ``turn`` seconds, the others stopped."""

    members: list[Member]
    turn: float = TURN_SECONDS
    started_at: float | None = None  # time.time() when the turns began
    seconds: float = 0.0  # how long they lasted

    @classmethod
    def of(cls, groups: Sequence[tuple[str, int]], turn: float = TURN_SECONDS,
           logs: dict[str, Path] | None = None) -> Turns:
        if turn <= 0:
            raise ValueError("a turn must last longer than 0 seconds")
        return cls([Member(name, pgid, log=(logs or {}).get(name)) for name, pgid in groups], turn)

    def stop_all(self) -> None:
        for member in self.members:
            platform.stop_group(member.pgid)

    def release(self) -> None:
        """Every member runs freely again (whatever happened: called from ``finally``)."""
        for member in self.members:
            platform.continue_group(member.pgid)

    def share(self, until: float | None, *, first: int = 0, abort: Callable[[], bool] | None = None,
              done: Callable[[Member], bool] | None = None) -> bool:
        """Turns until ``until`` (time.monotonic()), member ``first`` first; the members are
        stopped when this starts and left stopped when it returns. ``until`` None (fixed work):
        until ``done(member)`` holds for every member. A member that is done goes on taking its
        turns (what it does after its measured period — storing, checking — must never run beside
        another's measurement, nor stop holding a lock the others wait for) until its process has
        ended. Returns False when ``abort()`` said to give up (checked between turns: a member
        died); Ctrl-C propagates."""
        if until is None and done is None:
            raise ValueError("turns without an end: give until, or done")
        order = self.members[first:] + self.members[:first]
        self.started_at, clock = time.time(), time.monotonic()
        for member in self.members:
            member.cpu_at_start = _group_cpu(member.pgid)
            member.cpu_seen = dict(member.cpu_at_start)
        finished: set[str] = set()
        try:
            while until is None or time.monotonic() < until:
                if done is not None:
                    finished |= {member.name for member in order if done(member)}
                    if len(finished) == len(order):
                        break
                for member in order:
                    left = self.turn if until is None else until - time.monotonic()
                    if left <= 0:
                        break
                    if abort is not None and abort():
                        return False
                    if member.name in finished and not platform.process_alive(member.pgid):
                        continue  # done, and its run has ended
                    self._take_turn(member, min(self.turn, left))
                    member.watch_cpu()  # stopped: its counters hold still
            return True
        finally:
            self.seconds = time.monotonic() - clock
            for member in self.members:
                member.watch_cpu()

    def rounds(self, count: int, *, first: int = 0) -> None:
        """``count`` turns of each member, in order (benchmarks that run for a number of turns)."""
        order = self.members[first:] + self.members[:first]
        for _ in range(count):
            for member in order:
                self._take_turn(member, self.turn)

    def _take_turn(self, member: Member, seconds: float) -> None:
        if member.log is not None:  # before it can run: the turn log holds every moment it could
            _log(member.log, "c")
        platform.continue_group(member.pgid)
        started = time.perf_counter()
        try:
            time.sleep(seconds)
        finally:
            platform.stop_group(member.pgid)
            member.running_seconds += time.perf_counter() - started
            member.turns += 1
            if member.log is not None:
                _log(member.log, "s")

    def facts(self) -> dict[str, Any]:
        return {"turn": self.turn, "started_at": self.started_at, "seconds": self.seconds, "cpus": _cpus(),
                "members": [m.to_dict() for m in self.members]}


def _group_cpu(pgid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each live process of a process group."""
    found: dict[int, float] = {}
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == pgid:
                times = process.cpu_times()
                found[process.pid] = times.user + times.system
        except (OSError, psutil.Error):
            continue  # ended while we looked
    return found


def _cpus() -> int:
    """The CPUs this process (and the engines it starts) may run on."""
    return len(os.sched_getaffinity(0)) or os.cpu_count() or 1


def machine_share(cpu_seconds: float, seconds: float, cpus: int | None) -> float:
    """CPU seconds as a share of what the machine's CPUs offered over ``seconds``: 0 to 1."""
    return cpu_seconds / max(seconds * (cpus or 1), 1e-9)


def _log(path: Path, event: str) -> None:
    with open(path, "a") as log:
        log.write(f"{event} {time.monotonic()!r}\n")


def start_in(seconds: float) -> float:
    """A common zero ``seconds`` from now (CLOCK_MONOTONIC, which every process on the machine shares)."""
    return time.monotonic() + seconds
