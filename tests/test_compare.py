"""``fbbench compare`` and ``fbbench lint`` on real runs, and the lint and steady state every run
carries: the real CLI, embedded 4.0 and 5.0, tiny workloads, short runs, one results store.

The series run the bank workload at a fixed arrival rate (open loop, far below what the machine
can do) with a fixed seed: their throughput is the schedule's, not the machine's, so that two
series of the same conditions show no difference although other work shares the CPU (a claimed
difference there would be a false one — on a free-running load, the drift between runs taken one
after the other is ±10–20 % on this machine, DESIGN.md).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fbbench.analysis import lint, stats
from fbbench.store import ResultsStore
from tests import chromium
from tests.conftest import REPO, assert_clean_error, run_cli
from tests.documented import actual_paths, documented_paths, undocumented_and_missing

WORKLOADS = REPO / "tests" / "workloads"
BANK = str(WORKLOADS / "bank")
# The series' conditions: 5 measured intervals of 0.5 s (enough to judge the steady state), a fixed
# arrival rate and seed (see the module).
SERIES = ("-c", "2", "--warmup", "0.5s", "--duration", "2.5s", "--interval", "0.5s", "--rate", "60", "--seed", "42")

Compared = tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]  # console, JSON document, HTML page


@dataclass
class Lab:
    store: Path
    out: Path
    ids: dict[str, str]
    outputs: dict[str, str]
    compared: int = 0
    page: Path | None = None

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        result = run_cli(*args, "--results", str(self.store), timeout=timeout)
        assert "Traceback" not in result.stdout + result.stderr, result.stderr
        return result

    def run(self, name: str, workload: str, *args: str, code: int = 0) -> str:
        """A run (or a series, with --repeat) recorded as ``name``: its id."""
        result = self.cli("run", workload, *args, "--report", str(self.out / f"{name}.html"), timeout=240)
        assert result.returncode == code, result.stdout[-3000:] + result.stderr[-3000:]
        self.outputs[name] = result.stdout
        with ResultsStore(self.store, create=False) as store:
            latest = store.list_runs(1)[0]
        self.ids[name] = latest["series_id"] if "--repeat" in args else latest["run_id"]
        return self.ids[name]

    def compare(self, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
        """``fbbench compare`` with --json and --report; the page is ``self.page`` afterwards."""
        self.compared += 1
        target = self.out / f"compare-{self.compared}.json"
        self.page = target.with_suffix(".html")
        result = self.cli("compare", *args, "--json", str(target), "--report", str(self.page))
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-3000:]
        assert self.page.is_file()
        return result, json.loads(target.read_text())

    def load(self, run_id: str) -> dict[str, Any]:
        with ResultsStore(self.store, create=False) as store:
            return store.load_run(run_id)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    out = tmp_path_factory.mktemp("compare")
    return Lab(out / "results.sqlite", out, {}, {})


@pytest.fixture(scope="module")
def five(lab: Lab) -> tuple[str, str]:
    """Two series of the same conditions on 5.0."""
    return (lab.run("five-a", BANK, "--engine", "5.0", *SERIES, "--repeat", "3"),
            lab.run("five-b", BANK, "--engine", "5.0", *SERIES, "--repeat", "3"))


@pytest.fixture(scope="module")
def four(lab: Lab) -> str:
    return lab.run("four", BANK, "--engine", "4.0", *SERIES, "--repeat", "3")


@pytest.fixture(scope="module")
def other_page(lab: Lab) -> str:
    """One run that differs from the series in connections, page size and a firebird.conf key."""
    changed = [*SERIES]
    changed[1] = "3"
    return lab.run("page", BANK, "--engine", "5.0", *changed, "--page-size", "16384", "--set",
                   "DefaultDbCachePages=50")


# ------------------------------------------------------------------------------------ series


def test_a_series_ends_with_its_median_interval_and_spread(lab: Lab, five: tuple[str, str]) -> None:
    output = lab.outputs["five-a"]
    runs = [lab.load(run_id) for run_id in ResultsStore(lab.store, create=False).series_runs(five[0])]
    values = [run["summary"]["headline"]["result"] for run in runs]
    summary = stats.summarize(values)
    line = next(line for line in output.splitlines() if line.startswith(f"series {five[0]}"))
    assert "3 of 3 repeat(s) completed" in line
    assert f"score ↑ median {summary.median:,.0f}/min (no 95 % interval below 6 repeats)" in line, line
    assert f"repeats spread {summary.minimum:,.0f}–{summary.maximum:,.0f}/min (±{summary.spread * 50:.1f} %" in line
    # The seed was given: a condition of every repeat, recorded as such.
    assert all(run["settings"]["seed"] == 42 and run["settings"]["seed_fixed"] is True for run in runs)


def test_two_series_of_the_same_conditions_resolve_no_difference(lab: Lab, five: tuple[str, str]) -> None:
    result, doc = lab.compare(*five)
    assert doc["conditions"]["axis"] == [] and doc["conditions"]["differences"] == []
    assert doc["conditions"]["equal"]["load.seed"] == "42"  # a fixed seed is a condition
    assert doc["valid"] and not any(f["severity"] == "error" for f in doc["lint"])
    headline = doc["figures"][0]
    assert headline["kind"] == "headline" and headline["name"] == "score"
    ratio = headline["ratios"]["B"]
    assert ratio["basis"] == "repeats" and (ratio["n_a"], ratio["n_b"]) == (3, 3) and not ratio["resolved"]
    verdict = doc["verdicts"]["B"]
    assert not verdict["resolved"] and verdict["word"] is None
    if ratio["low"] is None:  # the schedule gave every run the same count: no spread, no interval
        assert len({v for side in headline["runs"].values() for v in side}) <= 2, headline["runs"]
        assert "no spread to judge a difference by" in ratio["note"]
        assert verdict["text"].startswith("no difference resolved: B/A ") and "no 95 % interval" in verdict["text"]
    else:
        assert "Welch" in ratio["method"] and ratio["low"] <= 1.0 <= ratio["high"], ratio
        assert verdict["text"].startswith("no difference resolved: the 95 % interval of B against A spans"), verdict
        assert re.search(r"\(±\d+\.\d %\)$", verdict["text"]), verdict["text"]
    out = result.stdout
    assert "conditions: the same in all" in out and f"verdict B against A: {verdict['text']}" in " ".join(out.split())
    assert "repeats: median" in out  # each series' spread
    assert "compare --paired SPEC_A SPEC_B" in " ".join(out.split())  # unresolved, embedded series: the way on
    # A latency varies from run to run even at a fixed rate: a real interval, a word only where it excludes 1.
    p95 = next(row for row in doc["figures"] if row["name"] == "transfer p95")
    assert p95["centres"] == {"A": "geometric mean", "B": "geometric mean"}
    assert p95["ratios"]["B"]["low"] < p95["ratios"]["B"]["ratio"] < p95["ratios"]["B"]["high"]
    assert (p95["verdicts"]["B"]["word"] is not None) == p95["ratios"]["B"]["resolved"]
    # One run of each: the weaker basis, each run's measured intervals — too few of them here to judge.
    store = ResultsStore(lab.store, create=False)
    _, single = lab.compare(store.series_runs(five[0])[0], store.series_runs(five[1])[0])
    ratio = single["figures"][0]["ratios"]["B"]
    assert ratio["basis"] == "intervals" and ratio["low"] is None and "at least 10 are needed" in ratio["note"]
    assert single["verdicts"]["B"]["text"].startswith("no difference resolved: B/A ")
    assert single["figures"][0]["centres"] == {"A": "value", "B": "value"}


@pytest.fixture(scope="module")
def engines(lab: Lab, five: tuple[str, str], four: str) -> Compared:
    """The 4.0 series against a 5.0 one: console output, JSON document, HTML page."""
    result, doc = lab.compare(four, five[0])
    assert lab.page is not None
    return result, doc, lab.page


def test_a_series_on_4_0_against_one_on_5_0(engines: Compared, tmp_path: Path) -> None:
    result, doc, page = engines
    axis = {row["key"]: row for row in doc["conditions"]["axis"]}
    assert axis["engine.version"]["values"] == {"A": "4.0.7", "B": "5.0.4"}
    assert axis["engine.version"]["follows"] is None
    assert axis["database.ods"]["follows"] == "engine"
    assert doc["conditions"]["differences"] == [] and doc["conditions"]["axis_requested"] is None
    assert [s["name"] for s in doc["sides"]] == ["A (4.0.7)", "B (5.0.4)"]
    assert not [f for f in doc["lint"] if f["severity"] == "error"], doc["lint"]
    # The verdict says what the interval allows, no more.
    headline, verdict = doc["figures"][0], doc["verdicts"]["B"]
    ratio = headline["ratios"]["B"]
    resolved = ratio["low"] is not None and (ratio["low"] > 1 or ratio["high"] < 1)
    assert verdict["resolved"] == resolved == ratio["resolved"]
    if resolved:
        assert verdict["word"] == ("faster" if ratio["low"] > 1 else "slower")
        assert verdict["text"].startswith(f"B (5.0.4) is {abs(ratio['ratio'] - 1) * 100:.1f} % {verdict['word']}")
    else:
        assert verdict["word"] is None and verdict["text"].startswith("no difference resolved")
    # Every figure: a ratio with an interval over the repeats; words only where the interval excludes 1.
    for row in doc["figures"]:
        for label, ratio in row["ratios"].items():
            if ratio is None:
                continue
            assert ratio["basis"] == "repeats", row["name"]
            word = row["verdicts"][label]["word"]
            assert (word is not None) == bool(ratio["resolved"]), (row["name"], ratio, word)
    assert {r["name"] for r in doc["figures"]} >= {"score", "transfers per minute", "TPM", "transfer ok",
                                                    "transfer p95", "conflicts", "errors"}
    # Where a difference came from: the engine's work per unit, from the sampler.
    engine = {row["name"]: row for row in doc["engine"]["figures"]}
    assert doc["engine"]["available"] and engine["page fetches per unit"]["values"]["A"] > 0
    assert engine["page fetches per unit"]["ratios"]["B"]["basis"] == "repeats"
    lines = " ".join(result.stdout.split())
    assert "engine.version" in lines and "4.0.7" in lines and "5.0.4" in lines and "axis" in lines
    assert "engine work per unit" in lines and f"verdict B (5.0.4) against A (4.0.7): {verdict['text']}" in lines
    # The HTML page draws every chart.
    dom = chromium.render_ok(page, tmp_path / "chromium").body
    assert int(dom.attrs["data-charts"]) == 3
    ratio = ["B (5.0.4) / A (4.0.7)"]
    for chart, legend in (("ratios-throughput", ratio), ("ratios-latency", ratio),
                          ("intervals", ["A·1", "A·2", "A·3", "B·1", "B·2", "B·3"])):
        assert dom.by_id(chart).attrs.get("data-rendered") == "true", chart
        assert chromium.legend(dom.by_id(chart))[1:] == legend, (chart, chromium.legend(dom.by_id(chart)))
    assert "engine.version" in dom.by_id("conditions-table").text and "axis" in dom.by_id("conditions-table").text
    assert verdict["text"] in dom.by_id("verdict-B").text
    assert "page fetches per unit" in dom.by_id("engine-table").text
    assert f"{headline['values']['A']:,.0f}" in dom.by_id("results-table").text
    # The engine's table has no empty "kind" column; no profile, no profiler section.
    assert "kind" not in [th.text for th in dom.by_id("engine-table").all("th")]
    assert "kind" in [th.text for th in dom.by_id("results-table").all("th")]
    assert not dom.has_id("profile-part") and not dom.has_id("profile")


def test_figures_that_are_one_figure_are_one_ratio_in_the_chart(tmp_path: Path) -> None:
    """A one-unit workload's score, TPM and the unit's ok are one count: the ratio chart drew one
    interval three times; now one category names them all."""
    store = tmp_path / "r.sqlite"
    fixed = ["--transactions", "40", "-c", "1", "--repeat", "2", "--no-sweep", "--no-validate", "--no-monitor",
             "--results", str(store), "--workdir", str(tmp_path / "work")]
    series = []
    for engine in ("4.0", "5.0"):
        made = run_cli("run", str(REPO / "tests" / "workloads" / "hot_row"), "--engine", engine, *fixed)
        assert made.returncode == 0, made.stdout + made.stderr
        series.append(re.findall(r"series (s[\w-]+)", made.stdout)[-1])
    page = tmp_path / "cmp.html"
    compared = run_cli("compare", *series, "--axis", "engine", "--report", str(page), "--results", str(store))
    assert compared.returncode == 0, compared.stdout + compared.stderr
    drawn = json.loads(chromium.render_ok(page, tmp_path / "chromium").body.by_id("ratios-throughput")
                       .attrs["data-categories"])
    assert len(drawn) == len(set(drawn)) and any(" = " in name for name in drawn), drawn
    merged = next(name for name in drawn if " = " in name).split(" = ")
    assert {"score", "bump ok"} <= set(merged), drawn


def test_the_comparison_page_opens_with_its_verdict(engines: Compared, tmp_path: Path) -> None:
    """Opened in a laptop's window, the page shows its answer without scrolling: the verdict, the
    headline's ratio with its interval, the ratio chart; then the conditions, the lint grouped by
    rule and side, the per-figure table and the runs. (The runs' table came first, and on a
    10-pair comparison the verdict lay some 4,000 pixels down.)"""
    _, doc, page = engines
    screen = chromium.first_screen(page, tmp_path / "screen")
    assert screen.screenshot.stat().st_size > 10_000
    assert screen.shows("verdict-B") and screen.shows("headline-ratio-B"), screen.layout
    assert screen.layout["ratios-throughput"]["top"] < screen.height  # the chart starts on the first screen
    order = ["verdicts", "headline-ratio", "ratios-throughput", "conditions", "lint", "results", "sides"]
    tops = [screen.layout[element]["top"] for element in order]
    assert tops == sorted(tops), dict(zip(order, tops, strict=True))
    body = chromium.render_ok(page, tmp_path / "chromium").body
    headline = doc["figures"][0]["ratios"]["B"]
    text = body.by_id("headline-ratio-B").text
    assert f"score B/A = {headline['ratio']:.3f}" in text, text
    # At a fixed arrival rate the score may come out the same in every run: then there is no interval.
    said = f"over the {headline['basis']}" if headline["low"] is not None else "no interval"
    assert said in text, text
    # The lint, one row per rule and side: a finding every run of a series has is one row, with its count.
    groups, findings = doc["lint_groups"], doc["lint"]
    assert len(groups) < len(findings), (groups, findings)
    for group in groups:
        same = [f for f in findings if f["rule"] == group["rule"] and f["side"] == group["side"]
                and f["scope"] == group["scope"] and f["severity"] == group["severity"]]
        assert group["count"] == len(same) == len(group["findings"]), group
        if group["scope"] == "run":
            assert group["about"] == f"{group['side']} ({group['count']} of 3 runs)", group
    rows = body.by_id("lint-table").all("tr")[1:]
    assert [row.all("td")[2].text for row in rows] == [group["about"] for group in groups]


def test_compare_json_matches_its_documentation(engines: Compared) -> None:
    doc = engines[1]
    assert doc["schema_version"] == 1
    documented = documented_paths(REPO / "docs" / "compare-result.md")
    assert len(documented) > 60
    undocumented, missing = undocumented_and_missing(actual_paths(doc, documented), documented)
    assert not undocumented, f"keys not in docs/compare-result.md: {undocumented}"
    assert not missing, f"documented keys the comparison does not have: {missing}"


# ------------------------------------------------------------------ conditions outside the axis


def test_differences_outside_the_axis_are_errors_and_withhold_the_verdict(lab: Lab, five: tuple[str, str],
                                                                          other_page: str) -> None:
    # Without --axis: which of the differences is meant? One line naming them, exit 2.
    unclear = lab.cli("compare", five[0], other_page)
    assert_clean_error(unclear, "several differences: say which is the axis with --axis")
    for key in ("load.connections", "database.page_size", "conf.DefaultDbCachePages"):
        assert key in unclear.stderr, unclear.stderr
    assert len(unclear.stderr.strip().splitlines()) == 2  # the error and its hint
    # The axis is the connections: page size and the cache are errors, named with both values.
    result, doc = lab.compare(five[0], other_page, "--axis", "connections")
    assert not doc["valid"]
    errors = {f["rule"]: f for f in doc["lint"] if f["severity"] == "error"}
    assert set(errors) == {"FB003", "FB007"}, errors
    assert "database.page_size" in errors["FB003"]["message"]
    assert "8192" in errors["FB003"]["message"] and "16384" in errors["FB003"]["message"]
    cache = errors["FB007"]["message"]
    assert "conf.DefaultDbCachePages" in cache and "2048" in cache and "50" in cache
    assert "database.page_buffers" in cache  # follows the key, named with it
    verdict = doc["verdicts"]["B"]
    assert verdict["withheld"] and verdict["word"] is None
    assert verdict["text"].startswith("verdict withheld: the comparison is invalid (FB003, FB007)"), verdict
    assert all(not (v or {}).get("word") for row in doc["figures"] for v in row["verdicts"].values())
    text = " ".join(result.stdout.split())
    assert "verdict withheld" in text and "FB003 error" in text and "FB007 error" in text
    assert text.index("credibility lint") < text.index("verdict B")  # the lint above the verdict
    # --force shows the verdict anyway, and says it was forced.
    _, forced = lab.compare(five[0], other_page, "--axis", "connections", "--force")
    assert forced["forced"] and not forced["verdicts"]["B"]["withheld"]
    # fbbench lint: the same errors, exit 1 for CI.
    linted = lab.cli("lint", five[0], other_page, "--axis", "connections")
    assert linted.returncode == 1 and "FB003 error" in linted.stdout and "FB007 error" in linted.stdout
    assert lab.cli("lint", five[0], other_page).returncode == 1  # no axis among several: FB010


def test_a_50_page_cache_is_a_warning_of_its_own(lab: Lab, other_page: str) -> None:
    linted = lab.cli("lint", other_page)
    assert linted.returncode == 0, linted.stdout  # warnings and notes only: nothing for CI to fail on
    text = " ".join(linted.stdout.split())
    assert "FB020 warning" in text and "page buffers 50 (< 256)" in text and "OS file cache" in text
    assert "why: With a cache of a few dozen pages" in text


# --------------------------------------------------------------------------- every run's lint


def test_rand_under_read_consistency_is_a_warning_before_the_run(lab: Lab) -> None:
    run_id = lab.run("random", str(WORKLOADS / "random_pick"), "--engine", "5.0", "-c", "1", "--warmup", "0s",
                     "--duration", "1s", "--interval", "1s")
    output = lab.outputs["random"]
    warning = output.index("warning: the credibility lint found 2 problem(s) before the run (it goes on)")
    assert warning < output.index("▶ database")
    before = " ".join(output[:output.index("▶ database")].split())
    assert "FB033 warning buy: unit buy runs under read_consistency" in before
    assert "PLACE_ORDER → PICK_ITEM: rand() at schema.sql:21" in before
    assert "a comparison that uses this run will be refused unless --force" in before
    # The stored run carries it as an error: as evidence it is invalid.
    linted = lab.cli("lint", run_id)
    assert linted.returncode == 1 and "FB033 error" in linted.stdout


def test_a_large_cache_per_attachment_is_a_warning_before_the_run(tmp_path: Path) -> None:
    """FB021 for --architecture was reported only after the run, while FB020 came before it."""
    result = run_cli("run", BANK, "--engine", "5.0", "--architecture", "superclassic", "--page-buffers", "4096",
                     "--page-size", "8192", "-c", "2", "--transactions", "2", "--results", str(tmp_path / "r.sqlite"),
                     "--report", str(tmp_path / "r.html"), timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    output = result.stdout
    before = " ".join(output[:output.index("▶ database")].split())
    assert "warning: the credibility lint found 1 problem(s) before the run (it goes on)" in before, before
    assert ("FB021 warning bank: ServerMode SuperClassic with 4096 page buffers per attachment (> 2048): "
            "2 attachment(s) × 32.0 MiB of cache = 64.0 MiB") in before, before
    # Without a page size the cost is not known before the run: the count of caches is.
    with_default_page = run_cli("run", BANK, "--architecture", "classic", "--page-buffers", "4096", "-c", "3",
                                "--transactions", "1", "--results", str(tmp_path / "r.sqlite"),
                                "--report", str(tmp_path / "r2.html"), timeout=240)
    assert with_default_page.returncode == 0, with_default_page.stdout[-3000:] + with_default_page.stderr[-3000:]
    output = with_default_page.stdout
    before = " ".join(output[:output.index("▶ database")].split())
    assert ("FB021 warning bank: ServerMode Classic with 4096 page buffers per attachment (> 2048): "
            "3 attachment(s), a cache each") in before, before


def test_conflicts_and_a_two_interval_run(lab: Lab) -> None:
    run_id = lab.run("hot", str(WORKLOADS / "hot_row"), "--engine", "5.0", "-c", "2", "--warmup", "0s",
                     "--duration", "2s", "--interval", "1s")
    run = lab.load(run_id)
    found = {f.rule: f for f in lint.lint_run(run)}
    assert found["FB030"].severity == "warning" and found["FB030"].evidence["conflicts"] > 0.05 * \
        found["FB030"].evidence["total"]
    assert found["FB040"].evidence["intervals"] == 2
    # Printed at the end of the run, and by fbbench lint.
    ending = " ".join(lab.outputs["hot"].split())
    assert "steady state of the score: too short — 2 measured interval(s); at least 5 are needed" in ending
    assert "FB030 warning" in ending and "update conflicts in" in ending
    linted = " ".join(lab.cli("lint", run_id).stdout.split())
    assert "FB030 warning" in linted and "FB040 warning" in linted
    assert "too short to judge its steady state: 2 measured interval(s); at least 5" in linted
    shown = " ".join(lab.cli("results", "show", run_id).stdout.split())
    assert "credibility lint: 2 warnings" in shown and "steady state of the score: too short" in shown


def test_a_30_unit_tpcc_run_has_audits_too_short_to_judge(lab: Lab) -> None:
    run_id = lab.run("tpcc", "tpcc", "--scale", "items=2000", "--scale", "customers=300", "--scale", "orders=300",
                     "-c", "1", "--transactions", "30", "--seed", "7")
    audits = {c["name"]: c for c in lab.load(run_id)["checks"] if c["kind"] == "audit"}
    assert not [a for a in audits.values() if a["passed"] is False], audits
    rolled_back = audits["New-Order rolled back"]
    assert rolled_back["passed"] is None and rolled_back["detail"].startswith("too few transactions to judge")
    # The sampling interval is stored with the audit (schema 3).
    assert rolled_back["low"] < 0.9 and rolled_back["high"] > 1.1 and 5 <= rolled_back["n"] <= 30
    linted = lab.cli("lint", run_id)
    assert linted.returncode == 0, linted.stdout
    text = " ".join(linted.stdout.split())
    assert "FB054 note" in text and "too few transactions to judge: New-Order rolled back" in text
    assert "FB053" not in text and "FB050" not in text  # a 0.1-second run says nothing about fbbench's CPU share


def test_the_run_report_shows_credibility_and_the_steady_state(lab: Lab, five: tuple[str, str],
                                                                tmp_path: Path) -> None:
    run_id = ResultsStore(lab.store, create=False).series_runs(five[0])[0]
    json_file, page = tmp_path / "run.json", tmp_path / "run.html"
    shown = lab.cli("results", "show", run_id, "--json", str(json_file), "--report", str(page))
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(json_file.read_text())
    state = doc["steady"]
    assert state["n_measured"] == 5 and state["verdict"] in ("steady", "trend", "never settled")
    assert len(state["trend_line"]) == 5 and [v["measured"] for v in state["values"]] == [False] + [True] * 5
    assert {f["rule"] for f in doc["lint"]} == {f.rule for f in lint.lint_run(lab.load(run_id))}
    assert f"steady state of the score: {state['verdict']}" in shown.stdout
    body = chromium.render_ok(page, tmp_path / "chromium").body
    assert state["verdict"] in body.by_id("steady-text").text
    rules = body.by_id("lint-table").text
    assert all(f["rule"] in rules and f["why"] in rules for f in doc["lint"])
    throughput = body.by_id("throughput")
    assert "trend of the score (Theil–Sen)" in chromium.legend(throughput)
    shaded = throughput.attrs.get("data-shaded", "").split(",")
    assert shaded[0] == "warm-up" and ("settled" in shaded) == (state["settled_after"] is not None), shaded


# --------------------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def interrupted(lab: Lab) -> str:
    """A series' conditions, interrupted (Ctrl-C) once it has measured an interval."""
    args = [sys.executable, "-m", "fbbench", "run", BANK, "--engine", "5.0", *SERIES[:4], "--duration", "60s",
            *SERIES[6:], "--results", str(lab.store), "--report", str(lab.out / "interrupted.html")]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                               start_new_session=True, env={**os.environ, "COLUMNS": "200"})
    deadline = time.monotonic() + 90
    measured = 0
    while time.monotonic() < deadline and not measured:
        time.sleep(0.2)
        try:
            db = sqlite3.connect(lab.store)
            measured = db.execute("select count(*) from intervals i join runs r using (run_id) "
                                  "where r.status = 'running' and i.phase = 'measure'").fetchone()[0]
            db.close()
        except sqlite3.Error:
            pass
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stdout[-2000:] + stderr[-2000:]
    with ResultsStore(lab.store, create=False) as store:
        latest = store.list_runs(1)[0]
    assert latest["status"] == "interrupted"
    return str(latest["run_id"])


def test_an_interrupted_run_is_shown_flagged_and_never_judged(lab: Lab, five: tuple[str, str],
                                                              interrupted: str) -> None:
    result, doc = lab.compare(five[0], interrupted)
    side = doc["sides"][1]
    assert side["runs"][0]["status"] == "interrupted" and side["runs"][0]["used"] is False
    assert doc["verdicts"]["B"]["text"] == "no verdict: B has no completed run (interrupted)"
    assert all(row["ratios"]["B"] is None for row in doc["figures"])
    flagged = [f for f in doc["lint"] if f["rule"] == "FB051"]
    assert flagged and all(f["excluded"] for f in flagged) and doc["valid"]
    assert f"not used: {interrupted} interrupted" in " ".join(result.stdout.split())
    # Linted for itself, an interrupted run is an error (FB051): CI learns it.
    linted = lab.cli("lint", interrupted)
    assert linted.returncode == 1 and "FB051 error" in linted.stdout and "the run is interrupted" in linted.stdout


def test_bad_input_is_one_line(lab: Lab, five: tuple[str, str]) -> None:
    first_run = ResultsStore(lab.store, create=False).series_runs(five[0])[0]
    cases = [
        (("compare", five[0], "20990101-000000-zzzz"), "no run '20990101-000000-zzzz'"),
        (("compare", five[0], "s2099"), "no series 's2099'"),
        (("compare", five[0], five[0]), "a run compared with itself"),
        (("compare", five[0], first_run), f"run {first_run} is in A and B"),
        (("compare", five[0]), "compare needs at least two runs or series"),
        (("compare", five[0], five[1], "--baseline", "nope"), "--baseline nope is not one of the compared"),
        (("compare", five[0], five[1], "--axis", "page_size"), "is the same in every run"),
        (("compare", "last~100000", five[0]), "no run 'last~100000'"),
        (("lint", "zzzz"), "no run 'zzzz'"),
    ]
    hot = lab.ids.get("hot")
    if hot:
        cases.append((("compare", five[0], hot), "different workloads: A runs bank, B runs hot_row"))
    for args, message in cases:
        result = lab.cli(*args)
        assert_clean_error(result, message)
        assert result.returncode == 2, (args, result.returncode)
        assert len(result.stderr.strip().splitlines()) <= 2, result.stderr
    # The baseline, named as written or by its letter: the ratios turn over.
    _, by_arg = lab.compare(five[0], five[1], "--baseline", five[1])
    _, by_letter = lab.compare(five[0], five[1], "--baseline", "B")
    assert by_arg["baseline"] == by_letter["baseline"] == "B"
    assert set(by_arg["figures"][0]["ratios"]) == {"A"}


def test_harness_share_needs_a_second_of_cpu() -> None:
    run = {"run_id": "r", "status": "completed", "engine_label": "Firebird 5.0.4 embedded", "settings": {},
           "summary": {"client_cpu_seconds": 0.0, "python_cpu_seconds": 0.05, "process_cpu_seconds": 0.1}}
    assert lint.harness_share(run) is None
    run["summary"] = {"client_cpu_seconds": 0.5, "python_cpu_seconds": 0.5, "process_cpu_seconds": 3.0}
    assert lint.harness_share(run) == pytest.approx(1 / 3)


def test_the_run_path_does_not_import_scipy() -> None:
    """scipy takes over a second to import; every engine process imports the run's modules."""
    code = ("import sys, fbbench.runner.engine.phases, fbbench.runner.run, fbbench.cli, fbbench.analysis.run; "
            "from fbbench.analysis.audits import sampling; "  # what every run's end computes
            "sampling('100 * a.rolled_back / a.ok', {'a.rolled_back': 3, 'a.ok': 400}); "
            "sampling('b.tally.LINES / b.ok', {'b.tally.LINES': 4000, 'b.ok': 400}); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stdout + result.stderr
