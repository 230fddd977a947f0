"""The built-in docflow workload's SQL on real engines, through firebird-driver in an engine
child process (tests/docflow_sql_child.py), without the native load core: the small population
passes every check; every unit runs with varied seeds and workers; a concurrent mix keeps the
checks passing and the service units never overlap; a busy semaphore is the listed by-design
rollback; the same seed repeats the same documents; and each check catches the invariant it is
about when it is broken on purpose.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from fbbench.workloads.spec import load_workload
from tests import chromium
from tests.conftest import ENGINES, run_cli
from tests.docflow_sql_child import unit_sequence
from tests.engine_database import EngineDatabase, built

CHILD = "tests.docflow_sql_child"
SCALE = {"mode": "small", "workers": 4, "init_rounds": 6}
SHARED = {**SCALE, "workers_separate": "off"}  # on the same database: every attachment works as worker 1
CHECKS = 11
SERVICE_UNITS = ("make_invnt_saldo", "make_money_saldo")


Docflow = EngineDatabase


@pytest.fixture(scope="module", params=ENGINES)
def docflow(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Docflow]:
    yield built(request.param, tmp_path_factory.mktemp(f"docflow-sql-{request.param}"), CHILD, "docflow.fdb", SCALE)


def assert_checks_pass(docflow: Docflow, path: str) -> None:
    checks = docflow.call("run_checks", path, SCALE)
    assert len(checks) == CHECKS
    assert checks == dict.fromkeys(checks, 0), {name: value for name, value in checks.items() if value}


def test_population_leaves_work_for_the_units_and_passes_the_checks(docflow: Docflow) -> None:
    counts = docflow.call("table_counts", str(docflow.path), ["wares", "agents", "invnt_saldo", "money_saldo"])
    assert counts == {"wares": 100, "agents": 300, "invnt_saldo": 100, "money_saldo": 300}  # working mode small
    documents = docflow.call("documents", str(docflow.path))
    # Client orders, supplier orders, reserves, sales and both payments: each unit has a candidate.
    for kind in ("1000/2000", "1200/2000", "2100/2020", "3300/2000", "3400/2020", "4000/2000", "5000/2000"):
        assert documents.get(kind, 0) > 0, (kind, documents)
    assert documents["1000/2000"] == 4 * 6 * 3  # three client orders per round and worker
    assert_checks_pass(docflow, str(docflow.path))


# Every unit's parameters for a worker and a seed (the service units take none).
UNIT_PARAMS = {
    name: (lambda worker, seed: []) if name in SERVICE_UNITS else (lambda worker, seed: [worker, seed])
    for name in ("client_order", "supplier_order", "supplier_invoice", "add_invoice_to_stock", "customer_reserve",
                 "reserve_write_off", "pay_from_customer", "pay_to_supplier", "make_invnt_saldo", "make_money_saldo",
                 "cancel_client_order", "cancel_supplier_order", "cancel_supplier_invoice", "cancel_adding_invoice",
                 "cancel_customer_reserve", "cancel_write_off", "cancel_pay_from_customer", "cancel_pay_to_supplier")
}


def test_every_unit_runs_with_varied_seeds_and_workers(docflow: Docflow) -> None:
    assert set(UNIT_PARAMS) == {unit.name for unit in load_workload("docflow").units}
    path = docflow.copy("units.fdb")
    calls = []
    for round_no in range(3):
        for name, params in UNIT_PARAMS.items():
            for worker in (1, 2, 3, 4):
                calls.append([name, params(worker, 1000 * round_no + 17 * worker)])
    results = docflow.call("run_calls", path, SCALE, calls)
    outcomes = Counter(f"{result['unit']}.{result['outcome']}" for result in results)
    failures = [result for result in results if result["outcome"] not in ("ok", "rolled_back")]
    assert failures == [], failures[:3]
    never_ok = [name for name in UNIT_PARAMS if outcomes[f"{name}.ok"] == 0]
    assert never_ok == [], outcomes
    rolled_back = [result for result in results if result["outcome"] == "rolled_back"]
    assert all("DOCFLOW_NOTHING_TO_DO" in result["message"] or "DOCFLOW_SERVICE_BUSY" in result["message"]
               for result in rolled_back), rolled_back[:3]
    assert_checks_pass(docflow, path)


@pytest.mark.parametrize("scale", [SCALE, SHARED], ids=["separate", "shared"])
def test_concurrent_mix_keeps_the_checks_and_service_units_never_overlap(docflow: Docflow,
                                                                          scale: dict[str, Any]) -> None:
    path = docflow.copy(f"mix-{scale.get('workers_separate', 'on')}.fdb")
    mix = docflow.call("run_mix", path, scale, 60, 11, 4)
    assert mix["errors"] == []
    outcomes = mix["outcomes"]
    assert sum(outcomes.values()) == 4 * 60
    assert outcomes.get("client_order.ok", 0) > 0 and outcomes.get("make_invnt_saldo.ok", 0) > 0, outcomes
    assert_checks_pass(docflow, path)
    runs = docflow.call("service_runs", path)
    for unit in ("make_invnt_saldo", "make_money_saldo"):
        mine = sorted((run for run in runs if run["unit"] == unit), key=lambda run: run["started"])
        assert len(mine) >= 2, mine  # the population's run and the mix's
        for earlier, later in pairwise(mine):
            assert earlier["started"] < earlier["finished"] < later["started"], (earlier, later)


@pytest.mark.parametrize("unit", SERVICE_UNITS)
def test_busy_semaphore_is_a_by_design_rollback(docflow: Docflow, unit: str) -> None:
    result = docflow.call("service_while_busy", docflow.copy(f"busy-{unit}.fdb"), SCALE, unit)
    assert result["while_busy"]["outcome"] == "rolled_back", result
    assert "DOCFLOW_SERVICE_BUSY" in result["while_busy"]["message"]
    # Another snapshot taken after the holder committed finds the semaphore free.
    assert result["after"]["outcome"] == "ok", result


def test_same_seed_same_documents(docflow: Docflow) -> None:
    calls = unit_sequence(SCALE, 42, 150)
    documents = []
    for copy in ("seed-a.fdb", "seed-b.fdb"):
        path = docflow.copy(copy)
        results = docflow.call("run_calls", path, SCALE, calls)
        assert all(result["outcome"] in ("ok", "rolled_back") for result in results)
        documents.append(docflow.call("documents", path))
    assert documents[0] == documents[1]
    other = docflow.copy("seed-c.fdb")
    docflow.call("run_calls", other, SCALE, unit_sequence(SCALE, 43, 150))
    assert docflow.call("documents", other) != documents[0]  # the comparison above can fail


BREAKAGES = {
    "a balance changed behind the log's back": (
        ["update invnt_saldo set qty_avl = qty_avl + 1 where ware_id = 1"],
        {"stock balance = its turnover log", "stock balances agree with the documents",
         "stock value = quantity x purchase price"}),
    "a debt changed behind the log's back": (
        ["update money_saldo set cust_debt = cust_debt - 1 where agent_id = 2"],
        {"no negative balance", "money balance = its turnover log", "debts agree with the unpaid money rows"}),
    "a free FIFO row lost": (
        ["delete from qdistr where id = (select min(id) from qdistr)"],
        {"document line quantity = its FIFO rows"}),
    "a cancelled client order still holding a row": (
        ["update doc_list set optype_id = 1100, state_id = 2030 where id = (select min(l.doc_id) from doc_data l "
         "join qdistr q on q.snd_id = l.id where q.snd_optype_id = 1000)"],
        {"cancelled documents hold no FIFO rows", "stock balances agree with the documents"}),
    "a line without a document's rows": (
        ["delete from doc_data where id = (select min(snd_id) from qdistr)"],
        {"no orphan lines or rows", "stock balances agree with the documents"}),
    "a payment that took more than it paid": (
        ["update doc_list set cost_retail = cost_retail + 1 where id = (select min(id) from doc_list "
         "where optype_id = 5000)"],
        {"money document = its money rows"}),
    "two service runs that overlapped": (
        ["update semaphores set runs = runs + 1 where name = 'invnt_saldo'",
         "insert into service_runs select id + 1000000, unit_name, attachment_id, started_ticket + 1, "
         "finished_ticket + 1, started_at, finished_at, log_rows from service_runs "
         "where unit_name = 'make_invnt_saldo'"],
        {"service units never overlapped"}),
}


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_checks_catch_a_broken_invariant(docflow: Docflow, breakage: str, request: pytest.FixtureRequest) -> None:
    if request.node.callspec.params["docflow"] != "5.0":
        pytest.skip("the checks are the same SQL on every engine; once is enough")
    statements, expected = BREAKAGES[breakage]
    path = docflow.copy("broken.fdb")
    docflow.call("execute_sql", path, statements)
    checks = docflow.call("run_checks", path, SCALE)
    assert {name for name, value in checks.items() if value} == expected, checks


# ------------------------------------------------------------------ end to end with the real CLI


def _docflow_run(tmp_path: Path, *engine: str) -> tuple[dict[str, Any], str]:
    json_path = tmp_path / "run.json"
    # Fixed work with a fixed seed: each attachment draws the same 120 units on every engine, among
    # them every unit of the mix (the rarest has a 0.55 % share) — a timed run on a slow engine
    # drew too few units to be sure of that.
    cli = run_cli("run", "docflow", "--scale", "mode=small", "-c", "8", "--transactions", "120", "--seed", "5",
                  "--interval", "1s", *engine, "--json", str(json_path), "--report",
                  str(tmp_path / "report.html"), timeout=300)
    assert cli.returncode == 0, cli.stdout[-4000:] + cli.stderr[-4000:]
    assert "Traceback" not in cli.stdout + cli.stderr
    return json.loads(json_path.read_text()), cli.stdout


def _assert_docflow_run(doc: dict[str, Any]) -> None:
    assert doc["status"] == "completed", doc.get("failure")
    assert doc["workload"] == "docflow" and doc["connections"] == 8
    assert doc["scale"] == {"mode": "small"}
    checks = doc["checks"]
    # Every check passes, among them "service units never ran at the same time", read from the
    # tickets the service units log in the database.
    assert len(checks) == CHECKS and all(check["passed"] for check in checks), checks
    units = doc["units"]
    assert set(units) == set(UNIT_PARAMS)
    ran = {name: unit["ok"] + unit["rolled_back"] for name, unit in units.items()}
    assert all(count > 0 for count in ran.values()), ran
    # A busy semaphore is a by-design rollback, never an error.
    assert all(unit["errors"] == 0 for unit in units.values()), {n: u["errors_by_gdscode"] for n, u in units.items()}
    # Separate workers (the default): no two attachments share a document, so nothing conflicts.
    assert sum(unit["conflicts"] for unit in units.values()) == 0, units
    assert units["client_order"]["ok"] > 0 and units["client_order"]["tally"]["LINES"] >= units["client_order"]["ok"]
    assert doc["metrics"]["documents created"] > 0
    headline = doc["headline"]
    assert headline["name"] == "business actions" and headline["better"] == "higher"
    business = sum(unit["ok"] for name, unit in units.items() if not name.startswith("make_"))
    assert headline["value"] == pytest.approx(business * 60 / doc["measure_seconds"], rel=1e-6)


def test_fbbench_run_docflow_small_completes_with_every_check_passing(tmp_path: Path) -> None:
    # End to end on embedded 5.0; the schema, population, every unit and the checks run on each
    # engine in the tests above, and end to end on 3.0 through the loopback server below.
    doc, stdout = _docflow_run(tmp_path, "--engine", "5.0")
    _assert_docflow_run(doc)
    population = doc["population"]
    assert population["rows"]["WARES"] == 100 and population["rows"]["AGENTS"] == 300
    assert "population" in stdout and "rows/s" in stdout
    assert "business actions" in stdout
    # The report: the headline's card names its 16-term sum by its ends (it listed all 16, a card
    # taller than the screen), the whole expression on hover; the latency bars of the 18 units lie
    # along the side with their names beside them (side by side, the names overlapped).
    body = chromium.render_ok(tmp_path / "report.html", tmp_path / "chromium").body
    card = body.by_id("headline-figure")
    assert "counts the sum of 16 terms, client_order.ok + … + cancel_adding_invoice.ok per minute" in card.text
    assert "cancel_supplier_order.ok" not in card.text and "cancel_supplier_order.ok" in card.attrs["title"]
    latency = body.by_id("latency-units")
    assert latency.attrs.get("data-orientation") == "horizontal" and latency.attrs.get("data-rendered") == "true"


@pytest.mark.server
def test_fbbench_run_docflow_against_the_loopback_server(tmp_path: Path) -> None:
    from tests.conftest import fb3_server_or_skip

    with fb3_server_or_skip(tmp_path / "fb3") as server:
        password = tmp_path / "password"
        password.write_text(server.password + "\n")
        (tmp_path / "data").mkdir()
        doc, _stdout = _docflow_run(tmp_path, "--engine", server.dsn(tmp_path / "data" / "docflow.fdb"),
                                    "--user", server.user, "--password-file", str(password))
    _assert_docflow_run(doc)
    assert doc["population"]["source"] == "built in place"


def test_same_seed_same_fixed_work_same_documents(tmp_path: Path) -> None:
    """Determinism end to end: one attachment, fixed work, the same seed → the same documents."""
    counts = []
    for attempt in range(2):
        json_path = tmp_path / f"run-{attempt}.json"
        cli = run_cli("run", "docflow", "--scale", "mode=small", "-c", "1", "--transactions", "60", "--seed", "11",
                      "--no-sweep", "--json", str(json_path), "--results", str(tmp_path / "r.sqlite"), timeout=300)
        assert cli.returncode == 0, cli.stdout[-3000:] + cli.stderr
        doc = json.loads(json_path.read_text())
        counts.append({name: (unit["ok"], unit["rolled_back"], tuple(sorted(unit["tally"].items())))
                       for name, unit in doc["units"].items()})
    assert counts[0] == counts[1]
    assert sum(ok for ok, _rb, _tally in counts[0].values()) > 0
