"""``fbbench run tpcc`` end to end, as a user runs it: real embedded engines 3.0 / 4.0 / 5.0, the
loopback Firebird 3 server, the JSON run result (DESIGN.md "Run result contract") and the HTML
report rendered by headless Chromium.

Every run is tiny (1,000 items, 100 customers and 100 orders per district) with short phases; the
populated database is cached per engine, so the runs after the first one start from a copy. Each
run is module-scoped and checked by several tests.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import chromium
from tests.conftest import ENGINES, REPO, fb3_server_or_skip, run_cli
from tests.documented import actual_paths, documented_paths, undocumented_and_missing
from tests.fb3server import Fb3Server

SCALE = ("--scale", "items=1000", "--scale", "customers=100", "--scale", "orders=100")
TIMED = ("--connections", "2", "--warmup", "1s", "--duration", "4s", "--interval", "1s")
UNITS = {"new_order", "payment", "order_status", "delivery", "stock_level"}
# In the workload's order: 3.3.2.10 and 3.3.2.12 are one query (their rows read once), reported side by side.
CHECK_NUMBERS = [f"3.3.2.{n}" for n in (*range(1, 11), 12, 11)]
AUDITS = {"New-Order rolled back", "Order lines per New-Order", "Remote order lines", "Remote Payments",
          "Payments by last name", "Order-Status by last name", "Delivery districts skipped",
          "UPDATEs run again after missing their row", "Orders Delivery picked again"}
# User text that must neither end the report's <script> early nor become markup.
TAG = "e2e </script><b>bold</b>"


@dataclass
class TpccRun:
    cli: subprocess.CompletedProcess[str]
    doc: dict[str, Any]
    json_path: Path
    report_path: Path

    @property
    def output(self) -> str:
        return self.cli.stdout + self.cli.stderr


def run_tpcc(out: Path, *args: str, env: dict[str, str] | None = None) -> TpccRun:
    out.mkdir(parents=True, exist_ok=True)
    json_path, report_path = out / "run.json", out / "report.html"
    cli = run_cli("run", "tpcc", *SCALE, *args, "--json", str(json_path), "--report", str(report_path),
                  env=env, timeout=300)
    assert cli.returncode == 0, cli.stdout[-4000:] + cli.stderr[-4000:]
    assert "Traceback" not in cli.stdout + cli.stderr, cli.stderr
    assert json_path.is_file() and report_path.is_file(), cli.stdout[-2000:]
    return TpccRun(cli, json.loads(json_path.read_text()), json_path, report_path)


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# ------------------------------------------------------------------ assertions shared by all runs


def assert_contract(doc: dict[str, Any]) -> None:
    """The keys DESIGN.md's run result contract promises, with values of the right kind."""
    assert re.fullmatch(r"[\w-]+", doc["run_id"]), doc["run_id"]
    assert doc["status"] == "completed", doc.get("failure")
    assert doc["workload"] == "tpcc"

    engine = doc["engine"]
    assert isinstance(engine["version"], str) and engine["version"]
    assert isinstance(engine["mode"], str) and engine["mode"]
    assert "firebird_conf" in engine

    database = doc["database"]
    assert isinstance(database["path"], str) and database["path"].endswith(".fdb")
    assert database["page_size"] in (4096, 8192, 16384, 32768)
    assert isinstance(database["page_buffers"], int) and database["page_buffers"] > 0
    assert isinstance(database["forced_writes"], bool)
    assert isinstance(database["size_bytes"], int) and database["size_bytes"] > 1_000_000  # populated

    assert isinstance(doc["connections"], int) and doc["connections"] >= 1
    assert is_number(doc["warmup_seconds"]) and doc["warmup_seconds"] >= 0
    assert is_number(doc["measure_seconds"]) and doc["measure_seconds"] > 0
    assert is_number(doc["score_per_minute"]) and doc["score_per_minute"] > 0
    assert is_number(doc["client_cpu_seconds"]) and doc["client_cpu_seconds"] >= 0

    assert set(doc["units"]) == UNITS
    for name, unit in doc["units"].items():
        for key in ("ok", "rolled_back", "conflicts", "errors"):
            assert isinstance(unit[key], int) and unit[key] >= 0, (name, key, unit[key])
        assert unit["errors"] == 0, (name, unit.get("errors_by_gdscode"))
        assert unit["ok"] > 0, name
        latency = unit["latency_ms"]
        quantiles = [latency[q] for q in ("p50", "p90", "p95", "p99", "max")]
        assert all(is_number(q) for q in quantiles), (name, latency)
        assert quantiles[0] > 0 and quantiles == sorted(quantiles), (name, latency)

    # score_per_minute: successful business actions per minute of the measured period.
    ok = sum(unit["ok"] for unit in doc["units"].values())
    assert doc["score_per_minute"] == pytest.approx(ok * 60 / doc["measure_seconds"], rel=1e-6)

    # intervals: one row per interval per unit; the measured rows add up to the unit totals.
    intervals = doc["intervals"]
    assert intervals
    for row in intervals:
        assert {"index", "phase", "unit", "start_offset", "seconds", "ok", "rolled_back", "conflicts",
                "errors"} <= set(row), row
        assert row["unit"] in UNITS and row["phase"] in ("warmup", "measure")
    per_index = Counter(row["index"] for row in intervals)
    assert set(per_index.values()) == {len(UNITS)}, per_index
    measured = [row for row in intervals if row["phase"] == "measure"]
    for name, unit in doc["units"].items():
        assert sum(row["ok"] for row in measured if row["unit"] == name) == unit["ok"], name
        assert sum(row["rolled_back"] for row in measured if row["unit"] == name) == unit["rolled_back"], name
    seconds = {row["index"]: row["seconds"] for row in measured}
    assert sum(seconds.values()) == pytest.approx(doc["measure_seconds"], abs=0.05)


def assert_checks_and_audits(doc: dict[str, Any]) -> None:
    checks = doc["checks"]
    numbers = [check["name"].split(" ", 1)[0] for check in checks]
    assert numbers == CHECK_NUMBERS, numbers
    for check in checks:
        assert {"name", "passed", "detail"} <= set(check), check
        assert check["passed"] is True, check
        assert "0 violation" in check["detail"], check

    audits = {audit["name"]: audit for audit in doc["audits"]}
    assert set(audits) == AUDITS
    for audit in audits.values():
        # Short runs may miss the specification's bounds by chance: only the figure is asserted.
        assert is_number(audit["value"]), audit
        assert audit["passed"] in (True, False, None), audit
    new_order = doc["units"]["new_order"]
    expected = 100 * new_order["rolled_back"] / sum(new_order[k] for k in ("ok", "rolled_back", "conflicts", "errors"))
    assert audits["New-Order rolled back"]["value"] == pytest.approx(expected)
    lines = new_order["tally"]["OL_CNT"] / new_order["ok"]
    assert audits["Order lines per New-Order"]["value"] == pytest.approx(lines)
    assert 5 <= lines <= 15  # New-Order has 5 to 15 lines
    # One warehouse: nothing remote (clause 2.4.1.5 / 2.5.1.2 need a second warehouse).
    assert audits["Remote order lines"]["value"] == 0 and audits["Remote Payments"]["value"] == 0


def assert_nopm(doc: dict[str, Any]) -> None:
    """NOPM is counted by the database (D_NEXT_O_ID); it must agree with the client's count,
    loosely: the two windows differ by the time the metric reads take."""
    nopm = doc["metrics"]["NOPM"]
    assert is_number(nopm) and nopm > 0
    client_rate = doc["units"]["new_order"]["ok"] * 60 / doc["measure_seconds"]
    assert 0.5 * client_rate < nopm < 2 * client_rate, (nopm, client_rate)


TPCC_TABLES = {"WAREHOUSE", "DISTRICT", "CUSTOMER", "HISTORY", "NEW_ORDER", "ORDERS", "ORDER_LINE", "ITEM", "STOCK"}


def assert_engine_observed(doc: dict[str, Any]) -> None:
    """What the engine did while it was measured (issue "Engine observation"), from a real run."""
    measured = sorted({row["index"] for row in doc["intervals"] if row["phase"] == "measure"})
    samples = {sample["index"]: sample for sample in doc["engine_samples"]}
    # A reading at every boundary: every measured interval has its figures (readings that fell
    # behind answer for several intervals and say so).
    covered = sum(int(samples[i]["sample"]["intervals_covered"]) for i in measured if i in samples)
    assert covered == len(measured), (measured, sorted(samples))
    fetches = sum(samples[i]["io"]["page_fetches"] for i in measured if i in samples)
    inserts = sum(samples[i]["record"]["inserts"] for i in measured if i in samples)
    assert fetches > 0 and inserts > 0, (fetches, inserts)
    assert all(samples[i]["sample"]["seconds"] < 1 for i in samples)
    activity = doc["engine_activity"]
    assert activity["io_per_second"]["page_fetches"] > 0 and activity["largest_gap"]["next_minus_oit"] is not None
    # Per table: ORDER_LINE is among the busiest tables of the measured period.
    busiest = sorted(doc["tables"], key=lambda t: -sum((doc["tables"][t].get("activity") or {}).get(k, 0)
                                                         for k in ("reads", "writes")))
    assert "ORDER_LINE" in busiest[:4], busiest
    # gstat before and after list the nine TPC-C tables, with their records.
    for moment in ("before", "after"):
        assert doc["gstat"][moment]["problem"] is None, doc["gstat"][moment]
        for table in TPCC_TABLES:
            assert doc["tables"][table][f"gstat_{moment}"]["records"] > 0, (moment, table)
    assert doc["tables"]["ORDER_LINE"]["gstat_delta"]["records"] > 0
    # NOPM per interval: its changes add up, to the unit, to the change over the measured window.
    window = doc["metric_windows"]["NOPM"]
    assert window["seconds"] == pytest.approx(doc["measure_seconds"], abs=1.0)
    per_interval = [samples[i]["metric"]["NOPM"] for i in measured if i in samples]
    assert len(per_interval) == len(measured)
    total = doc["metrics"]["NOPM"] * doc["measure_seconds"] / 60
    assert abs(sum(per_interval) - total) <= 1, (per_interval, total)
    # The run's own sweep is in the engine's log, and nothing alarming.
    assert all(f["severity"] not in ("fatal", "critical", "error") for f in doc["log_findings"]), doc["log_findings"]


# ------------------------------------------------------------------ embedded engines


@pytest.fixture(scope="module", params=ENGINES)
def embedded_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> TpccRun:
    out = tmp_path_factory.mktemp(f"tpcc-{request.param}")
    return run_tpcc(out, "--engine", request.param, *TIMED, "--tag", TAG)


def test_embedded_run_completes_with_the_contract(embedded_run: TpccRun) -> None:
    doc = embedded_run.doc
    assert_contract(doc)
    assert doc["connections"] == 2
    assert doc["warmup_seconds"] == 1 and doc["measure_seconds"] == 4
    assert doc["tags"] == [TAG]
    assert doc["scale"] == {"items": "1000", "customers": "100", "orders": "100"}
    assert doc["engine"]["label"].endswith("embedded")
    # The run's own copy of the cached population, removed after the run (no --keep-database).
    assert not Path(doc["database"]["path"]).exists()
    assert doc["population"]["rows"]["ITEM"] == 1000
    assert doc["population"]["rows"]["CUSTOMER"] == 1000  # 100 per district
    # A warm-up interval, then four measured ones.
    phases = Counter(row["phase"] for row in doc["intervals"])
    assert phases["warmup"] >= len(UNITS) and phases["measure"] >= 3 * len(UNITS), phases
    assert f"run {doc['run_id']} — completed" in embedded_run.cli.stdout
    # The live line: the measured average only once a measured interval has closed, never on the
    # warm-up's line (it read "avg" over the few milliseconds the measured period had lasted).
    live = [line for line in embedded_run.cli.stdout.splitlines() if re.match(r"\s*\[\s*\d+ s\] ", line)]
    assert any("] measure" in line and " avg " in line for line in live), live
    assert not [line for line in live if "] warmup" in line and " avg " in line], live


def test_embedded_engine_is_the_requested_one(embedded_run: TpccRun, request: pytest.FixtureRequest) -> None:
    major = request.node.callspec.params["embedded_run"]
    engine = embedded_run.doc["engine"]
    assert engine["engine_version"].split(".")[:2] == major.split("."), engine["engine_version"]
    assert f"V{major}." in engine["version"] and f"Firebird {major}" in engine["version"], engine["version"]
    assert embedded_run.doc["settings"]["engine"] == major
    assert embedded_run.doc["database"]["ods"].startswith({"3.0": "12.", "4.0": "13.0", "5.0": "13.1"}[major])
    if major != "3.0":  # RDB$CONFIG (4.0+): the effective configuration, as the engine reports it
        conf = engine["firebird_conf"]
        assert isinstance(conf, dict) and conf.get("ServerMode") == engine["mode"], engine["mode"]


def test_embedded_checks_audits_and_nopm(embedded_run: TpccRun) -> None:
    assert_checks_and_audits(embedded_run.doc)
    assert_nopm(embedded_run.doc)


def test_embedded_engine_observed(embedded_run: TpccRun) -> None:
    assert_engine_observed(embedded_run.doc)
    assert "engine per measured second:" in embedded_run.cli.stdout
    assert "garbage collection per second:" in embedded_run.cli.stdout
    assert "firebird.log:" in embedded_run.cli.stdout


# ------------------------------------------------------------------ fixed work: the by-design rollback


def test_rolled_back_new_order_is_not_an_error(tmp_path: Path) -> None:
    # One attachment, a fixed seed and fixed work: the same units every time, and with seed 1 the
    # 600 units include three New-Orders that hit the unused item number (clause 2.4.1.4).
    run = run_tpcc(tmp_path, "--engine", "5.0", "--connections", "1", "--transactions", "600", "--seed", "1",
                   "--interval", "1s")
    doc = run.doc
    assert doc["status"] == "completed", doc.get("failure")
    assert doc["seed"] == 1 and doc["transactions_per_attachment"] == 600
    units = doc["units"]
    assert sum(unit["ok"] + unit["rolled_back"] for unit in units.values()) == 600
    new_order = units["new_order"]
    assert new_order["rolled_back"] > 0, new_order
    for name, unit in units.items():
        assert unit["errors"] == 0 and unit["conflicts"] == 0, (name, unit)
        assert unit["errors_by_gdscode"] in ({}, None), (name, unit)
        if name != "new_order":
            assert unit["rolled_back"] == 0, (name, unit)
    audit = next(audit for audit in doc["audits"] if audit["name"] == "New-Order rolled back")
    expected = 100 * new_order["rolled_back"] / sum(new_order[k] for k in ("ok", "rolled_back", "conflicts", "errors"))
    assert audit["value"] == pytest.approx(expected), audit
    # A rolled-back New-Order leaves no trace: the consistency checks still hold.
    assert all(check["passed"] for check in doc["checks"]) and len(doc["checks"]) == 12
    assert re.search(r"│ new_order\s*│[^│]*│[^│]*│\s*" + str(new_order["rolled_back"]) + r"\s*│\s*0\s*│\s*0\s*│",
                     run.cli.stdout), run.cli.stdout[-3000:]


# ------------------------------------------------------------------ a copy of the cached population


def test_a_copied_population_says_what_the_copy_took(tmp_path: Path, fbbench_home: Path) -> None:
    """The copy of a cached population printed the original build's time and MB/s as its own."""
    fixed = ("--engine", "5.0", "--connections", "1", "--transactions", "10", "--interval", "1s")
    run_tpcc(tmp_path / "first", *fixed)  # builds the cache, or copies it when an earlier test built it
    copied = run_tpcc(tmp_path / "second", *fixed)
    population = copied.doc["population"]
    assert population["source"] == "copy of cached population"
    assert is_number(population["copy_seconds"]) and population["copy_seconds"] >= 0
    assert is_number(population["cache_built_at"]) and population["cache_built_at"] <= copied.doc["started_at"]
    # The build's figures are the cache's, and said so: after "the cache was built …", never before.
    said, _, build = population["text"].partition("; the cache was built on ")
    assert said.startswith("population: copied from the cache in ") and "MB/s" not in said, said
    assert f"{population['mb_per_second']:.2f} MB/s" in build, build
    lines = [line.strip() for line in copied.cli.stdout.splitlines() if "population" in line]
    assert lines.count(population["text"]) == 2, lines  # the live line and the summary
    # The cache was swept once when built: its data pages carry the flag that lets every run's own
    # sweep pass them by (it wrote each one again, with the run's forced writes on: seconds a run).
    cached = next((fbbench_home / "work" / "dbcache").glob("tpcc-*.fdb"))
    facts = json.loads(cached.with_suffix(".json").read_text())["load"]
    assert is_number(facts["cache_sweep_seconds"])
    # Each load step's CPU: the embedded engine's, in the process that ran the steps.
    assert facts["steps"] and all(is_number(step["cpu_seconds"]) for step in facts["steps"]), facts["steps"]
    assert sum(step["cpu_seconds"] for step in facts["steps"]) > 0.1, facts["steps"]
    data_pages, swept = swept_data_pages(cached)
    assert data_pages > 100 and swept >= 0.75 * data_pages, (data_pages, swept)  # unswept: next to none


def swept_data_pages(database: Path) -> tuple[int, int]:
    """(data pages, those flagged swept) in a Firebird 3+ database file: a page's first byte is its
    type (5: data), its second its flags (0x08: dpg_swept, "sweep has nothing to do on this page",
    Firebird's src/jrd/ods.h); the page size is the header page's USHORT at offset 16."""
    data = swept = 0
    with database.open("rb") as file:
        size = int.from_bytes(file.read(18)[16:18], "little")
        file.seek(0)
        while len(page := file.read(size)) == size:
            if page[0] == 5:
                data += 1
                swept += bool(page[1] & 0x08)
    return data, swept


# ------------------------------------------------------------------ the headline: NOPM


def test_nopm_is_the_headline_and_what_compare_judges_first(tmp_path: Path) -> None:
    """TPC-C's headline was the generic score; every TPC-C user looks for NOPM first."""
    timed = ("--engine", "5.0", "--connections", "2", "--warmup", "1s", "--duration", "3s", "--interval", "1s")
    runs = [run_tpcc(tmp_path / side, *timed, "--results", str(tmp_path / "r.sqlite")) for side in ("a", "b")]
    for run in runs:
        doc = run.doc
        assert doc["headline"]["name"] == "NOPM" and doc["headline"]["unit"] == "/min"
        assert doc["headline"]["value"] == doc["metrics"]["NOPM"] > 0
        # Shown once, first, with its window; the score beside it.
        figures = re.search(r"^NOPM .*TPM .*$", run.cli.stdout, re.MULTILINE)
        assert figures, run.cli.stdout[-3000:]
        assert figures.group(0).count("NOPM") == 1 and f"score {doc['score_per_minute']:,.0f}/min" in figures.group(0)
        assert f"NOPM {doc['headline']['value']:,.0f}/min ↑ (window " in figures.group(0)
    listed = run_cli("results", "list", "--results", str(tmp_path / "r.sqlite"))
    assert listed.stdout.count("NOPM ") >= 2 and "score " not in listed.stdout, listed.stdout
    out = tmp_path / "compare.json"
    compared = run_cli("compare", runs[0].doc["run_id"], runs[1].doc["run_id"], "--results",
                       str(tmp_path / "r.sqlite"), "--json", str(out), "--report", str(tmp_path / "compare.html"))
    assert compared.returncode == 0, compared.stdout[-3000:] + compared.stderr
    figures = json.loads(out.read_text())["figures"]
    headline = figures[0]
    assert (headline["kind"], headline["name"], headline["rate"]) == ("headline", "NOPM", True), headline
    # As the NOPM metric was judged before: per measured interval, from the sampler's readings.
    ratio = next(iter(headline["ratios"].values()))
    assert ratio["basis"] == "intervals" and ratio["n_a"] >= 3, ratio
    assert [f["name"] for f in figures].count("NOPM") == 1 and any(f["kind"] == "score" for f in figures)


def test_new_order_rollbacks_on_3_0_with_conflicts_are_counted_among_every_new_order_entered(tmp_path: Path) -> None:
    # Firebird 3.0 SuperClassic with 2 attachments: New-Orders meet on their district's D_NEXT_O_ID
    # and end in conflicts (deadlock reports), which the core does not retry. Each attempt is a
    # New-Order entered; the by-design 1 % is counted among all of them (README, "Input audits").
    # A fixed seed and fixed work: the same 428 New-Orders every time, 2 to 4 of them rolled back in
    # six runs (a New-Order drawn to roll back can meet a conflict on a stock row first). A random
    # seed made the audit's chance the test's: none rolled back among ~420, about 3 % of runs at
    # this conflict rate, and the audit failed (fresh clone, 2026-11-29).
    run = run_tpcc(tmp_path, "--engine", "3.0", "--architecture", "superclassic", "--connections", "2",
                   "--warmup", "0s", "--transactions", "500", "--seed", "1", "--interval", "1s")
    doc = run.doc
    assert doc["engine"]["architecture"]["verified"] == "superclassic", doc["engine"]["architecture"]
    new_order = doc["units"]["new_order"]
    assert new_order["conflicts"] > 0, new_order
    entered = sum(new_order[key] for key in ("ok", "rolled_back", "conflicts", "errors"))
    audit = next(audit for audit in doc["audits"] if audit["name"] == "New-Order rolled back")
    assert audit["n"] == entered and audit["value"] == pytest.approx(100 * new_order["rolled_back"] / entered), \
        (audit, new_order)
    assert audit["passed"] is not False, audit
    assert f"n = {entered:,}" in audit["detail"]


# ------------------------------------------------------------------ the loopback Firebird 3 server


@pytest.fixture(scope="module")
def fb3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fb3Server]:
    with fb3_server_or_skip(tmp_path_factory.mktemp("fb3-tpcc")) as server:
        yield server


@pytest.fixture(scope="module")
def server_run(fb3: Fb3Server, tmp_path_factory: pytest.TempPathFactory) -> TpccRun:
    out = tmp_path_factory.mktemp("tpcc-server")
    data = out / "data"
    data.mkdir()
    password = out / "password"
    password.write_text(fb3.password + "\n")
    password.chmod(0o600)
    return run_tpcc(out, "--engine", fb3.dsn(data / "tpcc.fdb"), "--user", fb3.user, "--password-file",
                    str(password), *TIMED)


@pytest.mark.server
def test_server_run_completes_with_the_contract(server_run: TpccRun, fb3: Fb3Server) -> None:
    doc = server_run.doc
    assert_contract(doc)
    assert_checks_and_audits(doc)
    assert_nopm(doc)
    assert doc["engine"]["engine_version"].startswith("3.0"), doc["engine"]
    assert doc["engine"]["version"].startswith("LI-V3.0"), doc["engine"]["version"]
    assert doc["database"]["path"] == fb3.dsn(Path(doc["database"]["path"].split(":", 1)[1]))
    assert doc["database"]["ods"].startswith("12."), doc["database"]  # written by the 3.0 server
    assert doc["population"]["source"] == "built in place"
    assert_engine_observed(doc)


@pytest.mark.server
def test_server_password_is_never_stored(server_run: TpccRun, fb3: Fb3Server, fbbench_home: Path) -> None:
    assert fb3.password not in server_run.json_path.read_text()
    assert fb3.password not in server_run.report_path.read_text()
    assert fb3.password not in server_run.output
    results = fbbench_home / "results.sqlite"
    assert results.is_file()
    assert fb3.password.encode() not in results.read_bytes()


# ------------------------------------------------------------------ the HTML report
# tests/test_report.py tests the report in depth on one run; here every engine's report draws.


def test_embedded_report_draws_every_chart(embedded_run: TpccRun, request: pytest.FixtureRequest,
                                           tmp_path: Path) -> None:
    major = request.node.callspec.params["embedded_run"]
    body = chromium.render_ok(embedded_run.report_path, tmp_path / "chromium-profile").body
    assert body.by_id("status").text == "completed"
    # 14: the OS file cache's levels (MB) and the reads' rates (MB/s) are two charts.
    assert int(body.attrs["data-charts"]) == 14, body.attrs
    # imgc (intermediate garbage collection) is counted from 4.0 on; 3.0's chart leaves it out.
    garbage = chromium.legend(body.by_id("engine-garbage"))[1:]
    assert garbage == ["backouts", "purges", "expunges", *([] if major == "3.0" else ["imgc"])], garbage
    busiest = {row.all("td")[0].text for row in body.by_id("busiest-table").all("tr")[1:]}
    assert {"ORDER_LINE", "STOCK"} <= busiest, busiest


# ------------------------------------------------------------------ the run result contract


def test_run_result_matches_its_documentation(embedded_run: TpccRun) -> None:
    documented = documented_paths(REPO / "docs" / "run-result.md")
    assert len(documented) > 100
    document = embedded_run.doc
    assert document["schema_version"] == 1
    undocumented, missing = undocumented_and_missing(actual_paths(document, documented), documented)
    assert not undocumented, f"keys not in docs/run-result.md: {undocumented}"
    assert not missing, f"documented keys the run does not have: {missing}"
