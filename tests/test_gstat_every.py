"""``fbbench run --gstat-every``: gstat's record versions per table read at a cadence while the
load runs (issue 31, "Record versions over time"), stored as they come, in the JSON with what each
reading cost, and drawn per table over time on the run's page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import chromium
from tests.conftest import REPO, assert_clean_error, run_cli
from tests.documented import actual_paths, documented_paths, undocumented_and_missing


@pytest.mark.alone  # times the first reading: 0.9–4.5 s into the load
def test_record_versions_are_read_as_the_run_goes(tmp_path: Path) -> None:
    out, report = tmp_path / "run.json", tmp_path / "run.html"
    result = run_cli("run", "orders", "-c", "2", "--scale", "orders=10", "--warmup", "0s", "--duration", "4s",
                     "--interval", "1s", "--gstat-every", "1s", "--no-sweep", "--no-validate", "--results",
                     str(tmp_path / "r.sqlite"), "--json", str(out), "--report", str(report))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    document = json.loads(out.read_text())
    series = document["gstat_series"]
    assert len(series) >= 2, series  # a 4 s load read every second
    assert [r["reading"] for r in series] == list(range(1, len(series) + 1))
    offsets = [r["offset_seconds"] for r in series]
    assert offsets == sorted(offsets) and 0.9 <= offsets[0] <= 4.5, offsets
    assert all(r["seconds"] > 0 and r["problem"] is None for r in series), series
    assert all("ORDERS" in r["tables"] and r["tables"]["ORDERS"]["records"] is not None for r in series)
    # The orders grow as the run goes: the last reading holds more than the first.
    assert series[-1]["tables"]["ORDERS"]["records"] > series[0]["tables"]["ORDERS"]["records"]
    assert set(document["gstat"]) == {"before", "after"}  # the cadence's readings are the series, not moments
    assert document["settings"]["gstat_every"] == 1.0
    documented = documented_paths(REPO / "docs" / "run-result.md")
    undocumented, _missing = undocumented_and_missing(actual_paths(document, documented), documented)
    assert not undocumented, undocumented
    body = chromium.render_ok(report, tmp_path / "chromium").body
    if any(peak for r in series for t in r["tables"].values() if (peak := t["versions"])):
        assert body.has_id("gstat-versions")
    assert "gstat reading(s) while the load ran" in body.by_id("gstat-series").text


def test_a_cadence_that_cannot_be_is_one_line(tmp_path: Path) -> None:
    common = ["run", "orders", "--transactions", "1", "-c", "1", "--results", str(tmp_path / "r.sqlite")]
    assert_clean_error(run_cli(*common, "--gstat-every", "0.2s"), "--gstat-every must be at least 1 s")
    assert_clean_error(run_cli(*common, "--gstat-every", "10s", "--no-monitor"), "--no-monitor")
    assert_clean_error(run_cli(*common, "--gstat-every", "often"), "--gstat-every must be a duration")
