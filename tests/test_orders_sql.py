"""The built-in orders workload's SQL on real engines, through firebird-driver in an engine child
process (tests/orders_sql_child.py): the INITALL population; the flawed generator draws other
products and quantities when the same call is executed again (RAND()), the fixed one the same
(seeded); rounds = 2 leaves only the second round's orders; the checks pass and catch a broken
inventory.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fbbench.engines import prepare_runtime, run_in_engine
from tests.conftest import ENGINES

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
