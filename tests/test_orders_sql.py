"""The built-in orders workload's SQL on real engines, through firebird-driver in an engine child
process (tests/orders_sql_child.py): the INITALL population; the flawed generator draws other
products and quantities when the same call is executed again (RAND()), the fixed one the same
(seeded); rounds = 2 leaves only the second round's orders and the checks pass; and
``fbbench run orders --transactions 2 -c 1`` end to end on every engine.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fbbench.engines import prepare_runtime, run_in_engine
from tests import chromium
from tests.conftest import ENGINES, run_cli

CHILD = "tests.orders_sql_child"
SCALE = {"customers": 20, "products": 200, "orders": 10}


@pytest.fixture(scope="module", params=ENGINES)
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    workdir = tmp_path_factory.mktemp(f"orders-sql-{request.param}")
    runtime = prepare_runtime(request.param, workdir)
    path = workdir / "orders.fdb"
    run_in_engine(runtime, f"{CHILD}:build", str(path), SCALE)
    return runtime, path


def copy(path: Path, name: str) -> str:
    target = path.with_name(name)
    shutil.copyfile(path, target)
    return str(target)


def test_initall_populates_customers_products_and_inventory(built) -> None:
    runtime, path = built
    counts = run_in_engine(runtime, f"{CHILD}:counts", str(path))
    assert counts == {"customers": 20, "products": 200, "inventory": 200, "orders": 0, "order_lines": 0}


@pytest.mark.parametrize(("variant", "repeats"), [("flawed", False), ("fixed", True)])
def test_a_repeated_call_draws_the_same_lines_only_when_fixed(built, variant: str, repeats: bool) -> None:
    runtime, path = built
    scale = {**SCALE, "variant": variant}
    first, second = run_in_engine(runtime, f"{CHILD}:lines_drawn_twice", str(path), scale, 7, 123456789)
    assert 10 <= len(first) <= 60 and 10 <= len(second) <= 60  # 10 orders of 1..6 lines
    assert all(1 <= product <= 200 and 1 <= qty <= 10 for product, qty in first + second)
    assert (first == second) is repeats, (first[:5], second[:5])


def test_fixed_draws_depend_on_the_seed(built) -> None:
    runtime, path = built
    scale = {**SCALE, "variant": "fixed"}
    seeded, _ = run_in_engine(runtime, f"{CHILD}:lines_drawn_twice", str(path), scale, 7, 123456789)
    other, _ = run_in_engine(runtime, f"{CHILD}:lines_drawn_twice", str(path), scale, 7, 987654321)
    assert seeded != other


@pytest.mark.parametrize("variant", ["flawed", "fixed"])
def test_two_rounds_leave_the_second_rounds_orders_and_the_checks_pass(built, variant: str) -> None:
    runtime, path = built
    database = copy(path, f"rounds-{variant}.fdb")
    scale = {**SCALE, "variant": variant, "rounds": 2}
    for seed in (1, 2, 3):
        result = run_in_engine(runtime, f"{CHILD}:call", database, scale, [seed, 10, 2, seed * 1000])
        assert result["outcome"] == "ok", result
        assert result["row"]["ORDERS_MADE"] == 20  # 10 per round
    counts = run_in_engine(runtime, f"{CHILD}:counts", database)
    assert counts["orders"] == 30
    checks = run_in_engine(runtime, f"{CHILD}:run_checks", database, scale)
    assert len(checks) == 4 and checks == dict.fromkeys(checks, 0), checks
    # The checks can fail: an inventory changed behind the trigger's back, a total off by one.
    run_in_engine(runtime, f"{CHILD}:execute_sql", database, [
        "update inventory set qty_ordered = qty_ordered + 1 where product_id = 5",
        "update orders set total_qty = total_qty + 1 where id = (select min(id) from orders)"])
    checks = run_in_engine(runtime, f"{CHILD}:run_checks", database, scale)
    assert {name for name, value in checks.items() if value} == {"inventory = ordered quantities",
                                                                   "order totals = its lines"}, checks


# ------------------------------------------------------------------ end to end with the real CLI


@pytest.mark.parametrize("engine", ENGINES)
def test_fbbench_run_orders_fixed_work_on_one_attachment(engine: str, tmp_path: Path) -> None:
    json_path = tmp_path / "run.json"
    cli = run_cli("run", "orders", "--transactions", "2", "-c", "1", "--engine", engine, "--json", str(json_path),
                  "--report", str(tmp_path / "report.html"), timeout=300)
    assert cli.returncode == 0, cli.stdout[-4000:] + cli.stderr[-4000:]
    assert "Traceback" not in cli.stdout + cli.stderr
    doc = json.loads(json_path.read_text())
    assert doc["status"] == "completed", doc.get("failure")
    assert doc["transactions_per_attachment"] == 2 and doc["connections"] == 1
    unit = doc["units"]["generate_orders"]
    assert unit["ok"] == 2 and unit["errors"] == 0 and unit["conflicts"] == 0, unit
    assert unit["tally"]["ORDERS_MADE"] == 200  # the default: 100 orders per unit
    assert 200 <= unit["tally"]["LINES_MADE"] <= 1200
    checks = doc["checks"]
    assert len(checks) == 4 and all(check["passed"] for check in checks), checks
    assert doc["population"]["rows"]["PRODUCTS"] == 10000 and doc["population"]["rows"]["CUSTOMERS"] == 1000
    # Fixed work is judged by its elapsed time (lower is better), with orders per second beside it.
    assert doc["headline"]["name"] == "elapsed" and doc["headline"]["better"] == "lower"
    assert doc["headline"]["value"] == pytest.approx(doc["measure_seconds"])
    orders_per_second = next(f for f in doc["figures"] if f["name"] == "orders/s")
    assert orders_per_second["value"] == pytest.approx(200 / doc["measure_seconds"], rel=1e-6)
    assert "elapsed" in cli.stdout and "↓" in cli.stdout
    # The database's count of orders is per minute: 200 orders in a fraction of a second are a large
    # number per minute, and every place that shows it says "/min" (it read "391,299 orders").
    orders = doc["metrics"]["orders"]
    assert doc["metric_units"] == {"orders": "/min"}
    assert orders == pytest.approx(200 * 60 / doc["measure_seconds"], rel=1e-6)
    assert f"orders {orders:,.0f}/min" in cli.stdout, cli.stdout[-3000:]
    listed = run_cli("results", "list", "--limit", "1")
    # The metrics column (the 8th), its lines (folded at 120 characters) joined again.
    column = "".join(line.split("│")[8].strip() for line in listed.stdout.splitlines() if line.startswith("│"))
    assert f"orders{orders:,.0f}/min" in column, listed.stdout
    if engine == "5.0":
        page = chromium.render_ok(tmp_path / "report.html", tmp_path / "chromium").body
        box = next(b for b in page.by_id("headline").all("div", "figure") if "orders" in b.text)
        assert f"{orders:,.0f} /min" in box.text, box.text
        assert f"{orders:,.0f}/min" in page.by_id("metric-windows").text


def test_fixed_variant_under_read_consistency_restarts_nothing_into_the_log(tmp_path: Path) -> None:
    """variant=fixed on 5.0 with ReadConsistency=1 at 4 attachments: every choice comes from the
    seed, so a restarted statement repeats its work; firebird.log gets no restart storm."""
    json_path = tmp_path / "run.json"
    cli = run_cli("run", "orders", "--scale", "variant=fixed", "--scale", "orders=10", "-c", "4", "--engine", "5.0",
                  "--warmup", "1s", "--duration", "5s", "--interval", "1s", "--set", "ReadConsistency=1",
                  "--json", str(json_path), timeout=300)
    assert cli.returncode == 0, cli.stdout[-4000:] + cli.stderr[-4000:]
    doc = json.loads(json_path.read_text())
    assert doc["status"] == "completed" and doc["units"]["generate_orders"]["ok"] > 0
    assert doc["headline"]["name"] == "orders"  # a timed run: orders committed per minute
    assert not [f for f in doc["log_findings"] if f["kind"] == "read_consistency_restarts"], doc["log_findings"]
    assert all(check["passed"] for check in doc["checks"]), doc["checks"]
