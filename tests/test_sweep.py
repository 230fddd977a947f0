"""``fbbench sweep`` on real engines, through the real CLI: a 2 × 2 matrix with repeats interleaved,
killed in the middle and resumed, its report rendered in headless Chromium; --dry-run; a size
series that grows one database; one factor at a time; bad spec files.

Runs are tiny (the bank test workload, half-second intervals) so the whole file stays short.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from tests.chromium import first_screen, legend, render_ok
from tests.conftest import REPO, assert_clean_error, run_cli

BANK = REPO / "tests" / "workloads" / "bank"
TIMING = 'warmup = "0.5s"\nduration = "1s"\ninterval = "0.5s"\nsweep = false\n'


def _spec(tmp_path: Path, body: str, name: str = "sweep.toml") -> Path:
    spec = tmp_path / name
    spec.write_text(f'workload = "{BANK}"\n{TIMING}{body}')
    return spec


def _runs(store: Path) -> list[tuple[str, int, int, str]]:
    if not store.exists():
        return []
    with closing(sqlite3.connect(store)) as db:
        try:
            return db.execute("select run_id, cell, repeat_index, status from runs where sweep_id is not null "
                              "order by started_at").fetchall()
        except sqlite3.OperationalError as error:
            if "no such table" in str(error):
                return []  # the sweep has created the file, not yet its tables
            raise


MATRIX = ('repeats = 2\n[scale]\naccounts = 200\n[matrix]\nconnections = [1, 2]\n'
          '"conf.DefaultDbCachePages" = [256, 2048]\n')


def test_a_sweep_killed_in_the_middle_resumes_and_reports(tmp_path: Path) -> None:
    spec = _spec(tmp_path, MATRIX)
    store, work = tmp_path / "r.sqlite", tmp_path / "work"
    common = ["--results", str(store)]
    env = {**os.environ, "FBBENCH_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    (tmp_path / "home").mkdir()
    spec.write_text(spec.read_text().replace("sweep = false\n", f'sweep = false\nworkdir = "{work}"\n'))

    dry = run_cli("sweep", str(spec), "--dry-run", *common)
    assert dry.returncode == 0, dry.stderr
    assert "4 cell(s) × 2 repeat(s) = 8 run(s), 8 to do" in dry.stdout and "estimated time" in dry.stdout
    assert not _runs(store)  # --dry-run runs nothing

    with open(tmp_path / "out.txt", "w") as out:
        sweeping = subprocess.Popen([sys.executable, "-m", "fbbench", "sweep", str(spec), *common], stdout=out,
                                    stderr=subprocess.STDOUT, cwd=REPO, env=env, start_new_session=True)
    deadline = time.monotonic() + 180
    while sum(1 for run in _runs(store) if run[3] == "completed") < 3:
        assert sweeping.poll() is None, (tmp_path / "out.txt").read_text()
        assert time.monotonic() < deadline, "the sweep did not get through 3 runs"
        time.sleep(0.2)
    os.killpg(sweeping.pid, signal.SIGKILL)
    sweeping.wait(30)
    before = _runs(store)
    assert 3 <= len(before) <= 5, before
    # Interleaved: round 1 runs every cell once before any cell runs twice.
    assert [cell for _, cell, _, _ in before[:3]] == [1, 2, 3]

    resumed = run_cli("sweep", "--resume", "last", *common, "--report", str(tmp_path / "sweep.html"),
                      "--json", str(tmp_path / "sweep.json"), env={"FBBENCH_HOME": str(tmp_path / "home")},
                      timeout=300)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr
    done_before = sum(1 for run in before if run[3] == "completed")
    assert f"run 1 of {8 - done_before}" in resumed.stdout  # only what was missing
    after = _runs(store)
    completed = [(cell, repeat) for _, cell, repeat, status in after if status == "completed"]
    assert sorted(completed) == [(cell, repeat) for cell in range(1, 5) for repeat in (1, 2)]
    document = json.loads((tmp_path / "sweep.json").read_text())
    assert document["status"] == "completed" and len(document["cells"]) == 4
    assert all(cell["summary"]["n"] == 2 for cell in document["cells"])
    assert document["best"]["cell"] in (1, 2, 3, 4) and document["best"]["versus_runner_up"]
    assert document["overhead"]["share"] > 0
    assert "sweep overhead:" in resumed.stdout
    # Nothing of the killed run is left behind once the resumed sweep ran its clean-up.
    assert not list((work / "databases").glob("*.fdb")) and not list((work / "runtimes").iterdir())

    body = render_ok(tmp_path / "sweep.html", tmp_path / "profile").body
    for chart in ("curve-connections", "curve-conf.DefaultDbCachePages", "latency-connections"):
        assert body.by_id(chart).attrs.get("data-rendered") == "true", chart
        names = legend(body.by_id(chart))
        assert len(names) == 3, names  # the axis, then one line per value of the other axis
    assert body.has_id("heatmap") and "2048" in body.by_id("heatmap").text
    assert "cell" in body.by_id("cells-table").text
    # The answer first: the best cell and how sure that is, on the first screen; then the curves, the
    # conditions (where the cells differ: the axes), the lint grouped by rule and cell, every cell.
    screen = first_screen(tmp_path / "sweep.html", tmp_path / "screen")
    assert screen.shows("best-verdict"), screen.layout
    order = ["best", "curves", "conditions", "lint", "cells"]
    tops = [screen.layout[element]["top"] for element in order]
    assert tops == sorted(tops), dict(zip(order, tops, strict=True))
    best = document["best"]
    assert f"Best: cell {best['cell']}" in body.by_id("best-verdict").text
    axis_rows = [row["key"] for row in document["conditions"]["axis"]]
    assert {"load.connections", "conf.DefaultDbCachePages"} <= set(axis_rows), document["conditions"]
    assert "load.connections" in body.by_id("conditions-table").text
    runs_of = {f"cell {cell['index']}": len(cell["runs"]) for cell in document["cells"]}  # the killed run too
    for group in document["lint_groups"]:
        if group["scope"] == "run":
            assert group["about"] == f"{group['side']} ({group['count']} of {runs_of[group['side']]} runs)", group
    assert len(document["lint_groups"]) <= len(document["lint"])


def test_a_size_series_grows_one_database(tmp_path: Path) -> None:
    spec = tmp_path / "grow.toml"
    spec.write_text(f'workload = "tpcc"\n{TIMING}repeats = 1\nconnections = 2\nworkdir = "{tmp_path / "work"}"\n'
                    "[scale]\nitems = 1000\ncustomers = 100\norders = 100\n"
                    '[matrix]\n"scale.warehouses" = { values = [1, 2, 3], grow = true }\n')
    out = tmp_path / "grow.json"
    result = run_cli("sweep", str(spec), "--results", str(tmp_path / "r.sqlite"), "--json", str(out), timeout=400)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    document = json.loads(out.read_text())
    series = document["size_series"]
    assert [point["size"] for point in series] == ["1", "2", "3"]
    sizes = [point["database_bytes"] for point in series]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1], sizes
    assert series[0]["load_source"].startswith("built")
    assert series[1]["load_source"] == "grown from warehouses=1 (now cached)"
    assert series[2]["load_source"] == "grown from warehouses=2 (now cached)"
    assert all(point["load_mb_per_second"] and point["headline"] for point in series)
    with closing(sqlite3.connect(tmp_path / "r.sqlite")) as db:
        checks = db.execute("select count(*), sum(passed) from checks where kind = 'check'").fetchone()
    assert checks == (36, 36)  # the 12 TPC-C checks pass at every size


def test_one_factor_at_a_time_compares_with_the_baseline(tmp_path: Path) -> None:
    spec = _spec(tmp_path, 'repeats = 2\nmode = "one_at_a_time"\nconnections = 1\n[scale]\naccounts = 200\n'
                           "[matrix]\nconnections = [1, 2]\n")
    out = tmp_path / "advisor.json"
    result = run_cli("sweep", str(spec), "--results", str(tmp_path / "r.sqlite"), "--json", str(out),
                     env={"FBBENCH_HOME": str(tmp_path / "home")}, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    advisor = json.loads(out.read_text())["one_at_a_time"]
    assert advisor["baseline_cell"] in (1, 2)
    assert len(advisor["steps"]) == 1 and advisor["steps"][0]["kind"] == "one factor"
    assert advisor["conclusion"] and "one factor at a time, against the baseline" in result.stdout


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        ("[matrix]\nconections = [1, 2]\n", ["sweep.toml:7:", "'conections' is not a sweep axis", "connections"]),
        ("[matrix]\nconnections = []\n", ["sweep.toml:7:", "axis 'connections' is empty"]),
        ("[matrix]\nconnections = [1, \"two\"]\n", ["sweep.toml:7:", "must be a whole number", '"two"']),
        ("repeats = 0\n[matrix]\nconnections = [1]\n",
         ["sweep.toml:6:", "repeats must be a whole number of at least 1"]),
        ('mode = "random"\n[matrix]\nconnections = [1]\n', ["sweep.toml:6:", "mode must be"]),
        ("connections = 2\n", ["a sweep needs a [matrix]"]),
        ('[matrix]\n"conf.NoSuchKey" = [1, 2]\n', ["unknown firebird.conf key 'NoSuchKey'"]),
        ('[matrix]\nconnections = { values = [1, 2], grow = true }\n', ["only a scale axis can grow"]),
    ],
)
def test_bad_sweep_specs_are_one_line_errors(body: str, fragments: list[str], tmp_path: Path) -> None:
    spec = _spec(tmp_path, body)
    store = tmp_path / "r.sqlite"
    result = run_cli("sweep", str(spec), "--results", str(store))
    assert_clean_error(result, *fragments)
    assert not _runs(store)


def test_resume_of_an_unknown_sweep(tmp_path: Path) -> None:
    store = tmp_path / "r.sqlite"
    assert_clean_error(run_cli("sweep", "--resume", "nosuch", "--results", str(store)), "no results store")
