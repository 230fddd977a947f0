"""A run that tires until it stops is never "steady" (issue 31, item 5): its verdict follows the
fall to zero and the spread of its intervals — on the issue's series and on real runs of a
workload whose every unit takes longer than the one before (tests/workloads/tiring)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fbbench.analysis import steady
from fbbench.analysis.steady import IntervalSeries
from tests.conftest import REPO, run_cli

TIRING = str(REPO / "tests" / "workloads" / "tiring")


def _per_second(values: list[float], warmup: int) -> IntervalSeries:
    n = len(values)
    return IntervalSeries(tuple(values), (1.0,) * n, tuple(float(i) for i in range(n)),
                          tuple(i >= warmup for i in range(n)))


def test_the_issue_s_series_fall_to_zero_and_scatter_and_are_not_steady() -> None:
    falling = steady.steady_state(_per_second([120, 60, 120, 0, 60, 60, 0, 60, 0, 60, 0, 0], warmup=1))
    assert falling.verdict == "never settled" and falling.settled_index is None
    assert falling.trend == "declining" and "fell to 0/min" in falling.text, falling.text
    assert "settled after" not in falling.text
    # At 1.12 the intervals count 1 to 4 units: the band around its level reaches 0.
    scattered = steady.steady_state(_per_second([240, 120, 180, 60, 120, 60, 60, 60, 60, 60, 0, 60], warmup=1))
    assert scattered.verdict == "never settled" and "scatters" in scattered.text, scattered.text
    assert "no clear trend (−88.0 %" in scattered.text and "includes no change" in scattered.text


@pytest.mark.parametrize("growth", ["1.3", "1.12"])
def test_a_real_run_whose_units_grow_longer_is_never_steady(growth: str, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    cli = run_cli("run", TIRING, "--scale", f"growth={growth}", "-c", "1", "--warmup", "0.5s", "--duration", "3s",
                  "--interval", "0.25s", "--no-sweep", "--no-monitor", "--no-validate", "--json", str(out),
                  "--results", str(tmp_path / "r.sqlite"), "--workdir", str(tmp_path / "work"))
    assert cli.returncode == 0, cli.stdout + cli.stderr
    document = json.loads(out.read_text())
    state = document["steady"]
    assert state["verdict"] == "never settled" and state["settled_after"] is None, state["text"]
    assert "settled after" not in state["text"] and ("fell to" in state["text"] or "scatters" in state["text"])
    assert any(f["rule"] == "FB043" for f in document["lint"])
    assert "steady state of the score: never settled" in cli.stdout
