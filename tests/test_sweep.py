"""``fbbench sweep`` on real engines, through the real CLI: a 2 × 2 matrix with repeats interleaved,
killed in the middle and resumed, its report rendered in headless Chromium; --dry-run; a size
series that grows one database; one factor at a time; the JSON against docs/sweep-result.md;
bad spec files.

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
from typing import Any

import pytest

from fbbench.analysis.sweep import sweep_document
from tests.chromium import first_screen, legend, render_ok
from tests.conftest import REPO, assert_clean_error, run_cli
from tests.documented import actual_paths, documented_paths, undocumented_and_missing

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
            if "no such table" in str(error) or "no such column" in str(error):
                return []  # the sweep has created the file, not yet all of its tables (one migration at a time)
            raise


MATRIX = ('repeats = 2\n[scale]\naccounts = 200\n[matrix]\nconnections = [1, 2]\n'
          '"conf.DefaultDbCachePages" = [256, 2048]\n')


def test_a_sweep_killed_in_the_middle_resumes_and_reports(tmp_path: Path) -> None:
    spec = _spec(tmp_path, MATRIX)
    store, work = tmp_path / "r.sqlite", tmp_path / "work"
    common = ["--results", str(store)]
    env = {**os.environ, "FBBENCH_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    (tmp_path / "home").mkdir()

    dry = run_cli("sweep", str(spec), "--dry-run", *common)
    assert dry.returncode == 0, dry.stderr
    assert "4 cell(s) × 2 repeat(s) = 8 run(s), 8 to do" in dry.stdout and "estimated time" in dry.stdout
    assert not _runs(store)  # --dry-run runs nothing

    with open(tmp_path / "out.txt", "w") as out:
        # --workdir on the first command only: the resumed sweep runs in it too.
        sweeping = subprocess.Popen([sys.executable, "-m", "fbbench", "sweep", str(spec), *common,
                                     "--workdir", str(work)],
                                    stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env, start_new_session=True)
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
    # Every run, the resumed ones too, in the work directory the sweep began with.
    with closing(sqlite3.connect(store)) as db:
        roots = [json.loads(row[0])["root"] for row in db.execute("select detail_json from phases "
                                                                    "where name = 'runtime'")]
    assert len(roots) >= len(completed) and all(root.startswith(f"{work}/runtimes/") for root in roots), roots
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
    undocumented, missing = _against_its_documentation(document)
    assert not undocumented, f"keys not in docs/sweep-result.md: {undocumented}"
    assert not [path for path in missing if path.startswith("size_series")], missing
    with closing(sqlite3.connect(tmp_path / "r.sqlite")) as db:
        checks = db.execute("select count(*), sum(passed) from checks where kind = 'check'").fetchone()
    assert checks == (36, 36)  # the 12 TPC-C checks pass at every size


def _one_at_a_time(tmp_path: Path, repeats: int) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """A one-factor-at-a-time sweep of connections 1 and 2 (baseline 1): its console and document."""
    spec = _spec(tmp_path, f'repeats = {repeats}\nmode = "one_at_a_time"\nconnections = 1\n[scale]\naccounts = 200\n'
                           "[matrix]\nconnections = [1, 2]\n")
    out = tmp_path / "advisor.json"
    result = run_cli("sweep", str(spec), "--results", str(tmp_path / "r.sqlite"), "--json", str(out),
                     env={"FBBENCH_HOME": str(tmp_path / "home")}, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    return result, json.loads(out.read_text())


@pytest.fixture(scope="module")
def advisor_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """One factor at a time with 2 repeats: run once, read by the tests below."""
    return _one_at_a_time(tmp_path_factory.mktemp("advisor"), repeats=2)


def test_one_factor_at_a_time_compares_with_the_baseline(
        advisor_sweep: tuple[subprocess.CompletedProcess[str], dict[str, Any]]) -> None:
    result, document = advisor_sweep
    advisor = document["one_at_a_time"]
    assert advisor["baseline_cell"] in (1, 2)
    assert len(advisor["steps"]) == 1 and advisor["steps"][0]["kind"] == "one factor"
    assert advisor["conclusion"] and "one factor at a time, against the baseline" in result.stdout


def _against_its_documentation(document: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(keys docs/sweep-result.md does not list, keys it lists that the document lacks)."""
    documented = documented_paths(REPO / "docs" / "sweep-result.md")
    assert len(documented) > 60
    return undocumented_and_missing(actual_paths(document, documented), documented)


def test_sweep_json_matches_its_documentation(
        advisor_sweep: tuple[subprocess.CompletedProcess[str], dict[str, Any]]) -> None:
    """Every key of docs/sweep-result.md is there and no other (a key inside a null one, such as
    size_series or blocks, counts as there): one factor at a time with repeats shows the best cell
    with its ratio and the advisor's steps with theirs."""
    document = advisor_sweep[1]
    assert document["schema_version"] == 1
    assert document["best"]["ratio"] and document["one_at_a_time"]["steps"][0]["ratio"], document["best"]
    undocumented, missing = _against_its_documentation(document)
    assert not undocumented, f"keys not in docs/sweep-result.md: {undocumented}"
    assert not missing, f"documented keys the sweep does not have: {missing}"


def test_a_ratio_without_an_interval_is_null_in_the_document() -> None:
    """Every run of each cell gave the same value (a target rate's figure): the best cell's ratio has
    no interval, whose ends were NaN in the JSON file (which JSON has no spelling for)."""
    headline = {"name": "score", "unit": "/min", "better": "higher", "per": "minute"}
    values = [(1, 100.0), (1, 100.0), (2, 200.0), (2, 200.0)]
    runs = {f"r{i}": {"run_id": f"r{i}", "status": "completed", "started_at": 0.0, "ended_at": 10.0,
                      "summary": {"headline": {**headline, "result": value}}} for i, (_, value) in enumerate(values)}
    sweep = {"sweep_id": "w1", "status": "completed", "created_at": 0.0, "ended_at": 1.0, "result": None,
             "spec": {"mode": "matrix", "repeats": 2, "axes": [{"key": "connections", "values": [1, 2], "grow": False}],
                      "base": {}, "cells": [{"index": 1, "values": {"connections": 1}},
                                            {"index": 2, "values": {"connections": 2}}]},
             "runs": [{"run_id": f"r{i}", "cell": cell, "repeat_index": 1, "status": "completed"}
                      for i, (cell, _) in enumerate(values)]}
    best = sweep_document(sweep, runs)["best"]  # type: ignore[arg-type]
    assert best["ratio"]["ratio"] == 2.0 and best["ratio"]["low"] is None and best["ratio"]["high"] is None, best
    json.dumps(best, allow_nan=False)


def test_one_run_per_cell_claims_no_spread_and_no_verdict(tmp_path: Path) -> None:
    """With one run per cell the console said "spread ±0.0 %" and "not distinguishable from the
    runner-up", and one factor at a time that "no setting tried is distinguishable": one run has no
    spread, and nothing was tested."""
    result, document = _one_at_a_time(tmp_path, repeats=1)
    assert [cell["summary"]["n"] for cell in document["cells"]] == [1, 1]
    assert all(cell["summary"]["spread"] is None for cell in document["cells"]), document["cells"]
    best = document["best"]
    assert best["resolved"] is None and "one run per cell" in best["versus_runner_up"], best
    advisor = document["one_at_a_time"]
    assert [step["resolved"] for step in advisor["steps"]] == [None], advisor
    summary = result.stdout[result.stdout.index(f"sweep {document['sweep_id']} — "):]
    assert "±0.0 %" not in summary and "distinguishable" not in summary, summary
    assert f"best: cell {best['cell']} ({best['label']}), one run:" in summary, summary
    assert "one run per cell: whether" in summary and "cannot be told" in summary, summary


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
        # Counted before any cell is made: five axes of 100 values would be 10^10 cells in memory.
        ("[matrix]\n" + "".join(f'"conf.{key}" = {list(range(1000, 1100))}\n'
                                for key in ("DefaultDbCachePages", "LockHashSlots", "TempCacheLimit",
                                            "MaxUnflushedWrites", "MaxUnflushedWriteTime")),
         ["sweep.toml:6:", "10,000,000,000 cell(s) × 3 repeat(s) = 30,000,000,000 runs",
          "a sweep makes at most 100,000"]),
        ("repeats = 11\n[matrix]\nconnections = " + str(list(range(1, 101))) + "\n"
         '"conf.DefaultDbCachePages" = ' + str(list(range(1000, 1100))) + "\n",
         ["10,000 cell(s) × 11 repeat(s) = 110,000 runs"]),
    ],
)
def test_bad_sweep_specs_are_one_line_errors(body: str, fragments: list[str], tmp_path: Path) -> None:
    spec = _spec(tmp_path, body)
    store = tmp_path / "r.sqlite"
    result = run_cli("sweep", str(spec), "--results", str(store))
    assert_clean_error(result, *fragments)
    assert not _runs(store)


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        # Set by compare --paired, never by a spec: it was refused with "did you mean 'timeshare'?".
        ("[matrix]\ntimeshare = [1, 2]\n", ["sweep.toml:7:", "'timeshare' is not a sweep axis"]),
        # The top-level workload (line 1) was named instead of the axis.
        ('[matrix]\nworkload = ["a", "b"]\n', ["sweep.toml:7:", "'workload' is not a sweep axis",
                                             "set once for the whole sweep"]),
        # A setting both at the top and as an axis: the axis's line, not the top-level one.
        ('connections = 2\n[matrix]\nconnections = [1, "two"]\n', ["sweep.toml:8:", '"two"']),
    ],
)
def test_a_refused_axis_is_named_at_its_line_with_the_axes_there_are(body: str, fragments: list[str],
                                                                      tmp_path: Path) -> None:
    result = run_cli("sweep", str(_spec(tmp_path, body)), "--dry-run")
    assert_clean_error(result, *fragments)
    hint = next((line for line in result.stderr.splitlines() if line.startswith("hint:")), "")
    if "axes are run settings" in hint:  # only what a spec can give as an axis, by the name it takes
        listed = hint.split("axes are run settings (", 1)[1].split(")", 1)[0].split(", ")
        assert "rate" in listed and "connections" in listed, listed
        assert not {"timeshare", "seed_fixed", "target_rate", "conf", "scale", "workload"} & set(listed), listed
    refused = body.split("[matrix]\n", 1)[1].split(" =", 1)[0].strip('"')
    assert f"did you mean '{refused}'" not in hint, hint


def test_dry_run_lists_each_cell_on_one_line_in_the_spec_s_words(tmp_path: Path) -> None:
    """--dry-run printed each cell's scale as a Python dict ({'accounts': '200'}), folded over lines."""
    spec = _spec(tmp_path, 'repeats = 2\n[scale]\naccounts = 200\n[matrix]\nconnections = [1, 2]\n'
                           '"scale.branches" = [2, 3]\n')
    dry = run_cli("sweep", str(spec), "--dry-run", "--results", str(tmp_path / "r.sqlite"))
    assert dry.returncode == 0, dry.stderr
    assert "{" not in dry.stdout and "'" not in dry.stdout, dry.stdout
    cells = [line.strip() for line in dry.stdout.splitlines() if line.strip().startswith("cell")]
    assert len(cells) == 4, dry.stdout
    for cell in cells:  # whole, each on its line
        assert "scale accounts=200, branches=" in cell and cell.endswith("page size default]"), cell


def test_resume_of_an_unknown_sweep(tmp_path: Path) -> None:
    store = tmp_path / "r.sqlite"
    assert_clean_error(run_cli("sweep", "--resume", "nosuch", "--results", str(store)), "no results store")


def test_a_huge_sweep_is_refused_unless_yes(tmp_path: Path) -> None:
    """The user's report: a 10,000-cell sweep (33 hours) started at once."""
    spec = _spec(tmp_path, f'repeats = 1\nworkdir = "{tmp_path / "work"}"\n[matrix]\n'
                           f"connections = {list(range(1, 101))}\n"
                           f'"conf.DefaultDbCachePages" = {list(range(1000, 1100))}\n')
    spec.write_text(spec.read_text().replace('duration = "1s"', 'duration = "10s"'))
    store = tmp_path / "r.sqlite"
    refused = run_cli("sweep", str(spec), "--results", str(store))
    assert_clean_error(refused, "the sweep is planned to take about", "days", "10,000 run(s) of about",
                       "10,000 cell(s) × 1 repeat(s)", "more than 24 h 00 min", "add --yes if you mean it")
    assert not _runs(store)
    with open(tmp_path / "out.txt", "w") as out:
        sweeping = subprocess.Popen([sys.executable, "-m", "fbbench", "sweep", str(spec), "--yes",
                                     "--results", str(store)],
                                    stdout=out, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True,
                                    env={**os.environ, "COLUMNS": "200"})
    try:
        deadline = time.monotonic() + 60
        while "sweep: run 1 of 10000" not in (tmp_path / "out.txt").read_text():
            assert sweeping.poll() is None and time.monotonic() < deadline, (tmp_path / "out.txt").read_text()
            time.sleep(0.2)
        os.killpg(sweeping.pid, signal.SIGINT)
        assert sweeping.wait(60) == 130, (tmp_path / "out.txt").read_text()
    finally:
        if sweeping.poll() is None:
            os.killpg(sweeping.pid, signal.SIGKILL)
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert lines[0].startswith("sweep: about ") and " days " in lines[0].split("—")[0], lines[0]
    assert "10,000 run(s) of about" in lines[0]
    assert "Traceback" not in "\n".join(lines)
    # Its report on the console: a row for the cell whose run began (if the Ctrl-C came after its
    # record), the others counted (a row each took rich 12 s to lay out).
    began = len(_runs(store))
    assert began in (0, 1)
    assert (f"{10_000 - began:,} cell(s) with no run yet are not listed here (cells {began + 1}–10000)"
            in "\n".join(lines)), "\n".join(lines)
    assert not [line for line in lines if line.startswith(f"│ {began + 1} ")]


def test_a_size_series_stopped_while_it_grows_still_reports(tmp_path: Path) -> None:
    """Ctrl-C while a growing cell populates: its run has no population facts, which the size
    series read as a source of None (AttributeError, a traceback instead of the report)."""
    slow = REPO / "tests" / "workloads" / "slow_load"
    spec = tmp_path / "grow.toml"
    # yes: the second size would take days to grow (the first one's build says so before it runs).
    spec.write_text(f'workload = "{slow}"\n{TIMING}repeats = 1\nconnections = 1\nyes = true\n'
                    f'workdir = "{tmp_path / "work"}"\n'
                    '[matrix]\n"scale.rounds" = { values = [4, 100000000], grow = true }\n')
    store = tmp_path / "r.sqlite"
    with open(tmp_path / "out.txt", "w") as out:
        sweeping = subprocess.Popen([sys.executable, "-m", "fbbench", "sweep", str(spec), "--results", str(store),
                                     "--json", str(tmp_path / "grow.json")], stdout=out, stderr=subprocess.STDOUT,
                                    cwd=REPO, start_new_session=True, env={**os.environ, "COLUMNS": "200"})
    try:
        deadline = time.monotonic() + 120
        while not [run for run in _runs(store) if run[1] == 2]:  # the second cell's run has begun
            assert sweeping.poll() is None and time.monotonic() < deadline, (tmp_path / "out.txt").read_text()
            time.sleep(0.2)
        time.sleep(3)  # inside its population
        os.killpg(sweeping.pid, signal.SIGINT)
        code = sweeping.wait(60)
    finally:
        if sweeping.poll() is None:
            os.killpg(sweeping.pid, signal.SIGKILL)
    output = (tmp_path / "out.txt").read_text()
    assert code == 130, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    series = json.loads((tmp_path / "grow.json").read_text())["size_series"]
    assert [point["size"] for point in series] == ["4", "100000000"]
    assert series[0]["load_source"].startswith("built") and series[1]["load_source"] is None


def test_a_sweep_without_a_numeric_axis_opens_with_its_cells(tmp_path: Path) -> None:
    """Its first screen said "No numeric axis: see the table of cells" where the curves would be."""
    spec = tmp_path / "engines.toml"
    spec.write_text(f'workload = "{BANK}"\ntransactions = 5\nconnections = 1\nsweep = false\nvalidate = false\n'
                    'repeats = 1\n[scale]\naccounts = 200\n[matrix]\narchitecture = ["super", "superclassic"]\n')
    page = tmp_path / "sweep.html"
    swept = run_cli("sweep", str(spec), "--report", str(page), "--results", str(tmp_path / "r.sqlite"),
                    "--workdir", str(tmp_path / "work"))
    assert swept.returncode == 0, swept.stdout + swept.stderr
    body = render_ok(page, tmp_path / "profile").body
    assert not body.has_id("curves") and "No numeric axis" not in body.text
    screen = first_screen(page, tmp_path / "screen")
    assert screen.layout["best"]["top"] < screen.layout["cells"]["top"] < screen.layout["conditions"]["top"]
    assert screen.layout["cells"]["top"] < screen.height  # the cells on the first screen
