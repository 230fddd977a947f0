"""What a run shows while it works: population progress and the live measurement line.

On a terminal these are rich live displays; elsewhere (CI logs, pipes) a plain line per step or
per interval, so logs stay readable.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fbbench.analysis import figures


class LiveDisplay:
    def __init__(self, console: Console, units: list[str], settings: Mapping[str, Any]) -> None:
        self.console = console
        self.units = units
        self.settings = settings
        self.live: Live | None = None
        self.printed_intervals = 0
        self.latest: Mapping[str, Any] = {}

    @staticmethod
    @contextmanager
    def population(console: Console) -> Iterator[Callable[[str, int, int], None]]:
        lock = threading.Lock()
        if console.is_terminal:
            progress = Progress(TextColumn("  {task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=console)
            tasks: dict[str, Any] = {}

            def update(step: str, done: int, total: int) -> None:
                with lock:
                    if step not in tasks:
                        tasks[step] = progress.add_task(step, total=total)
                    progress.update(tasks[step], completed=done, total=total)

            with progress:
                yield update
            return

        reported: set[str] = set()

        def plain(step: str, done: int, total: int) -> None:
            with lock:
                if done == total and step not in reported:
                    reported.add(step)
                    console.print(f"  loaded: {step} ({total} step(s))")

        yield plain

    @staticmethod
    @contextmanager
    def measurement(console: Console, workload: Any, settings: Mapping[str, Any]) -> Iterator[LiveDisplay]:
        display = LiveDisplay(console, [unit.name for unit in workload.units], settings)
        if console.is_terminal:
            with Live(display._table({}), console=console, refresh_per_second=4, transient=False) as live:
                display.live = live
                yield display
        else:
            yield display

    def update(self, snapshot: Mapping[str, Any]) -> None:
        self.latest = snapshot
        if self.live is not None:
            self.live.update(self._table(snapshot))
            return
        completed = snapshot.get("intervals_completed", 0)
        if completed > self.printed_intervals and snapshot.get("last_interval"):
            self.printed_intervals = completed
            self.console.print("  " + self._line(snapshot), soft_wrap=True)

    def _rates(self, snapshot: Mapping[str, Any]) -> tuple[float | None, float | None]:
        last = snapshot.get("last_interval") or {}
        current = figures.score_per_minute(last.get("units") or {}, last.get("seconds"))
        measure_seconds = snapshot.get("elapsed_seconds", 0) - self.settings["warmup"]
        average = None
        # An average over less than one interval of the measured period is a few units over a few
        # milliseconds (the warm-up's last interval closes just after the measured period began).
        if self.settings.get("transactions") is None and measure_seconds >= self.settings["interval"] * 0.999:
            average = figures.score_per_minute(snapshot.get("measure_units") or {}, measure_seconds)
        return current, average

    @staticmethod
    def _counts(snapshot: Mapping[str, Any], phase: str) -> tuple[str, dict[str, Any]]:
        """The counts to show: the measured period's once it has begun, the warm-up's before."""
        if phase in ("measure", "stopping", "done") and snapshot.get("measure_units"):
            return "measured", snapshot["measure_units"]
        return "warm-up", snapshot.get("units", {})

    def _line(self, snapshot: Mapping[str, Any]) -> str:
        current, average = self._rates(snapshot)
        last = snapshot["last_interval"]
        parts = [f"[{snapshot.get('elapsed_seconds', 0):6.0f} s] {last['phase']:<7}"]
        parts.append(f"score/min {current:,.0f}" if current is not None else "score/min –")
        if average is not None:
            parts.append(f"avg {average:,.0f}")
        _label, totals = self._counts(snapshot, last["phase"])
        for unit in self.units:
            counts = totals.get(unit, {})
            parts.append(f"{unit} {counts.get('ok', 0)}/{counts.get('conflicts', 0)}c/{counts.get('errors', 0)}e")
        return "  ".join(parts)

    def _table(self, snapshot: Mapping[str, Any]) -> Table:
        current, average = self._rates(snapshot)
        phase = snapshot.get("phase", "connecting")
        title = (f"{phase}  ·  {snapshot.get('elapsed_seconds', 0):.0f} s  ·  "
                 f"{snapshot.get('connected', 0)} attachment(s)  ·  score/min now "
                 f"{'–' if current is None else f'{current:,.0f}'}  ·  measured average "
                 f"{'–' if average is None else f'{average:,.0f}'}")
        table = Table(title=title, title_justify="left", expand=False)
        label, totals = self._counts(snapshot, phase)
        table.add_column(f"unit ({label})")
        for column in figures.OUTCOMES:
            table.add_column(column.replace("_", " "), justify="right")
        for unit in self.units:
            counts = totals.get(unit, {})
            table.add_row(unit, *(f"{counts.get(c, 0):,}" for c in figures.OUTCOMES))
        if snapshot.get("failure"):
            table.caption = f"[red]{snapshot['failure']}[/]"
        return table
