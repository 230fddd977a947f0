"""Pairs run until resolved (``compare --paired --until-resolved``): the confidence sequence's
error rate on identical sides, its two stopping claims, and the options refused in one line.
The pairs themselves, on a real engine: tests/test_paired.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

from fbbench.analysis import sequential
from fbbench.analysis.sequential import DIFFERENCE, WITHIN, Design
from tests.conftest import assert_clean_error, run_cli
from tests.test_paired import spec

LOOKS = 100


def test_looking_after_every_pair_stays_honest_on_identical_sides() -> None:
    design = Design()
    normal = sequential.false_claims(None, design, LOOKS, paths=4000, seed=1)
    heavy_tailed = sequential.false_claims(np.random.default_rng(2).standard_t(3, 4000), design, LOOKS, paths=4000,
                                           seed=3)
    assert 0.005 < normal <= 0.05 and heavy_tailed <= 0.05, (normal, heavy_tailed)
    # The same paths judged by a fixed-sample 95 % t interval after every pair from the 5th, stopping
    # at the first that excludes no change: the error rate the sequence is there to avoid.
    draws = np.random.default_rng(1).normal(0.0, 1.0, (4000, LOOKS))
    n = np.arange(1, LOOKS + 1)
    mean = np.cumsum(draws, axis=1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.sqrt((np.cumsum(draws**2, axis=1) - n * mean**2) / (n - 1) / n)
    naive = (np.abs(mean) / spread >= scipy_stats.t.ppf(0.975, n - 1))[:, 4:].any(axis=1).mean()
    assert naive > 3 * normal and naive > 0.15, (naive, normal)


def test_the_sequence_stops_on_a_difference_or_on_none_that_large() -> None:
    assert sequential.first_pairs() == 5 and math.isinf(sequential.critical_t(4))
    assert sequential.critical_t(5) > sequential.critical_t(10) > sequential.critical_t(40) > 3 > 1.96
    rng = np.random.default_rng(5)
    slower = list(np.exp(rng.normal(math.log(0.97), 0.01, 40)))  # B 3 % slower, pairs spread by 1 %
    looks = sequential.looks(slower)
    assert not looks[0].estimate.has_interval and "from 5 pairs" in looks[0].estimate.note
    assert looks[-1].decision == DIFFERENCE and looks[-1].estimate.high < 1 and 5 <= len(looks) < 40, looks[-1]
    assert all(look.decision is None for look in looks[:-1])
    same = list(np.exp(rng.normal(0.0, 0.002, 60)))  # no difference, pairs spread by 0.2 %
    looks = sequential.looks(same, Design(threshold=0.01))
    last = looks[-1].estimate
    assert looks[-1].decision == WITHIN and 1 / 1.01 < last.low < 1 < last.high < 1.01, looks[-1]
    # A 1 % difference hidden in pairs spread by 1 %: still open after 5 pairs, neither claim yet.
    open_after_five = sequential.interval(list(np.exp(rng.normal(math.log(0.99), 0.01, 5))))
    assert open_after_five.has_interval and sequential.decision(open_after_five, 0.01) is None


def test_until_resolved_options_are_refused_in_one_line(tmp_path: Path) -> None:
    store = tmp_path / "results.sqlite"
    a, b = spec(tmp_path, "a", 10), spec(tmp_path, "b", 20)
    paired = ["compare", "--paired", str(a), str(b), "--results", str(store)]
    assert_clean_error(run_cli("compare", "x", "y", "--until-resolved", "--results", str(store)), "needs --paired")
    assert_clean_error(run_cli(*paired, "--max-time", "5m"), "--max-time belongs to --until-resolved")
    assert_clean_error(run_cli(*paired, "--until-resolved", "--max-time", "0"), "--max-time must be longer than 0")
    assert_clean_error(run_cli(*paired, "--until-resolved", "--max-time", "2s"), "shorter than one pair")
    assert_clean_error(run_cli(*paired, "--until-resolved", "--max-time", "100000h"), "more than 24 h", "--yes")
    assert_clean_error(run_cli(*paired, "--until-resolved", "--threshold", "0"), "--threshold", "above 0")
    assert not store.exists()  # nothing ran
