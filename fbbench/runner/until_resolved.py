"""``compare --paired --until-resolved``: pairs until the headline's comparison is resolved.

After each complete pair the headline's per-pair ratios B/A go to the confidence sequence of
:mod:`fbbench.analysis.sequential`, valid at every look: the pairs stop once it excludes no
change, or lies within ±threshold; otherwise once another pair would not end within the time
limit (the longest pair so far says how long one takes), or at the pair limit. The pairs stay
ordinary pairs in the results store; each run records the design it ran under
(``settings.timeshare.until_resolved``), and the runs of the last pair why the pairs stopped
(phase ``until_resolved``), so that a comparison built later from the store says the same.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from fbbench.analysis import sequential
from fbbench.errors import FbbenchError
from fbbench.runner.paired import PairedOutcome
from fbbench.runner.settings import parse_duration
from fbbench.store import ResultsStore

PHASE = "until_resolved"
DEFAULT_MAX_SECONDS = 3600.0  # --max-time when not given: an hour of pairs at most


def design_of(until_resolved: bool, paired: bool, max_time: str | None, threshold: float | None,
              pairs: int | None) -> sequential.Design | None:
    """The design the options ask for (None: no --until-resolved), or one line saying why not."""
    if not until_resolved:
        for given, name in ((max_time, "--max-time"), (threshold, "--threshold")):
            if given is not None:
                raise FbbenchError(f"{name} belongs to --until-resolved, which was not given",
                                   hint="e.g. fbbench compare --paired a.toml b.toml --until-resolved --max-time 15m")
        return None
    if not paired:
        raise FbbenchError("--until-resolved runs pairs until they resolve the comparison: it needs --paired "
                           "SPEC_A SPEC_B", hint="e.g. fbbench compare --paired a.toml b.toml --until-resolved")
    seconds = DEFAULT_MAX_SECONDS if max_time is None else parse_duration(max_time, "--max-time")
    if not math.isfinite(seconds) or seconds <= 0:
        raise FbbenchError(f"--max-time must be longer than 0 seconds, got '{max_time}'",
                           hint="e.g. --max-time 15m: no pair starts that would not end within it")
    if threshold is not None and not (math.isfinite(threshold) and 0 < threshold < 100):
        raise FbbenchError(f"--threshold is a difference in per cent above 0 and below 100, got {threshold:g}",
                           hint="e.g. --threshold 1: the pairs also stop once the interval lies within ±1 %")
    return sequential.Design(threshold=sequential.THRESHOLD if threshold is None else threshold / 100,
                             max_seconds=seconds, max_pairs=pairs)


@dataclass
class UntilResolved:
    """The ``stop_after`` of :func:`fbbench.runner.paired.execute_pairs` for pairs run until resolved."""

    design: sequential.Design
    on_look: Callable[[sequential.Look], None] | None = None
    started: float = field(default_factory=time.monotonic)
    last_end: float | None = None
    longest_pair: float = 0.0  # seconds, start-up and checks included
    looks: list[sequential.Look] = field(default_factory=list)
    ratios: dict[str, float | None] = field(default_factory=dict)  # pair id → its headline's B/A, read once

    def __call__(self, outcome: PairedOutcome) -> str | None:
        now = time.monotonic()
        self.longest_pair = max(self.longest_pair, now - (self.last_end or self.started))
        self.last_end = now
        ratios = self.headline_ratios(outcome)
        if ratios is None:
            return sequential.FAILED  # a run without a headline: nothing to decide by
        estimate = sequential.interval(ratios, self.design)
        look = sequential.Look(len(ratios), estimate, sequential.decision(estimate, self.design.threshold))
        self.looks.append(look)
        if self.on_look is not None:
            self.on_look(look)
        if look.decision is not None:
            return look.decision
        if self.design.max_pairs is not None and len(outcome.pairs) >= self.design.max_pairs:
            return sequential.MAX_PAIRS
        if self.design.max_seconds is not None and now - self.started + self.longest_pair > self.design.max_seconds:
            return sequential.MAX_TIME
        return None

    def headline_ratios(self, outcome: PairedOutcome) -> list[float] | None:
        """B/A of the headline in each complete pair, in pair order (None: a run has no headline)."""
        complete = [pair for pair in outcome.pairs if pair.complete]
        with ResultsStore(outcome.results, create=False) as store:
            for pair in complete:
                run_a, run_b = pair.outcomes["A"], pair.outcomes["B"]
                if pair.pair_id not in self.ratios and run_a is not None and run_b is not None:
                    self.ratios[pair.pair_id] = headline_ratio(store, run_a.run_id, run_b.run_id)
        ratios = [self.ratios.get(pair.pair_id) for pair in complete]
        return None if any(r is None for r in ratios) else [r for r in ratios if r is not None]

    def record(self, outcome: PairedOutcome) -> str | None:
        """Why the pairs ended, on the runs of the last pair (None: they ran all ``--pairs``)."""
        reason = outcome.stopped_because
        if outcome.interrupted:
            reason = sequential.INTERRUPTED
        elif outcome.failure:
            reason = sequential.FAILED
        if reason is None or not outcome.pairs:
            return reason
        runs = [run for run in outcome.pairs[-1].outcomes.values() if run is not None]
        complete = sum(pair.complete for pair in outcome.pairs)
        with ResultsStore(outcome.results) as store:
            for run in runs:
                store.record_phase(run.run_id, PHASE, time.time(), time.monotonic() - self.started,
                                   {"stopped_because": reason, "looks": len(self.looks), "complete_pairs": complete,
                                    "text": sequential.stop_text(reason, self.design, complete)})
        return reason


def headline_ratio(store: ResultsStore, run_a: str, run_b: str) -> float | None:
    """B/A of the headline of one pair's runs (None: a run has no positive headline)."""
    values = []
    for run_id in (run_a, run_b):
        value = ((store.load_run(run_id).get("summary") or {}).get("headline") or {}).get("result")
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            return None
        values.append(float(value))
    return values[1] / values[0]
