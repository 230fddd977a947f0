"""The workload file format: what is accepted, and errors that name file, line and expectation."""

from __future__ import annotations

import re
import shutil
import tracemalloc
from pathlib import Path

import pytest

from fbbench.errors import FbbenchError
from fbbench.workloads.expressions import ExpressionError, evaluate
from fbbench.workloads.generators import Generator, nurand, parse_generator
from fbbench.workloads.scale import parse_scale_value
from fbbench.workloads.spec import LoadStep, load_workload

BANK = Path(__file__).parent / "workloads" / "bank"


@pytest.fixture
def bank_copy(tmp_path: Path) -> Path:
    target = tmp_path / "bank"
    shutil.copytree(BANK, target)
    return target


def test_bank_workload_reads(bank_copy: Path) -> None:
    workload = load_workload(str(bank_copy), {"accounts": "200"})
    assert workload.scale == {"accounts": 200, "branches": 2}
    assert workload.scale_defaults["accounts"] == 1000
    transfer = workload.unit("transfer")
    assert transfer.rollback_on == ("BANK_REFUSED",)
    assert transfer.statements[0].params[0] == Generator("uniform", (1, 200))
    assert list(workload.load[0].iterations()) == [(1,), (2,)] and workload.load[0].count == 2
    assert workload.load[0].params == (Generator("const", (100,)),)  # 200 / 2, an integer
    assert "schema.sql" in workload.files


def test_load_step_iterations_are_counted_and_drawn_without_a_list() -> None:
    assert LoadStep(0, "huge", "execute procedure p(?, ?)", for_each=((1, 10**9), (1, 10))).count == 10**10
    # 10**7 rather than 10**9: a list (or itertools.product's tuple of each range) of these takes
    # hundreds of MB where 10**9 took the machine's memory; drawn one at a time, a few bytes.
    huge = LoadStep(0, "huge", "execute procedure p(?, ?)", for_each=((1, 10**7), (1, 10)))
    tracemalloc.start()
    try:
        first = huge.iterations()
        assert [next(first), next(first)] == [(1, 1), (1, 2)]
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
    smaller = LoadStep(0, "smaller", "execute procedure p(?, ?)", for_each=((1, 3), (1, 10)))
    assert huge.shared_count(smaller) == 30 and smaller.shared_count(huge) == 30
    assert huge.covers((3, 10)) and not smaller.covers((4, 1)) and not smaller.covers((1,))
    assert LoadStep(0, "once", "execute procedure p").count == 1
    assert list(LoadStep(0, "once", "execute procedure p").iterations()) == [()]
    assert LoadStep(0, "none", "execute procedure p(?)", for_each=((1, 0),)).count == 0


def test_typo_key_names_file_line_and_expected_keys(bank_copy: Path) -> None:
    toml = bank_copy / "workload.toml"
    text = toml.read_text().replace("weight = 20", "wieght = 20")
    toml.write_text(text)
    line = next(n for n, raw in enumerate(text.splitlines(), 1) if raw.startswith("wieght"))
    with pytest.raises(FbbenchError) as caught:
        load_workload(str(bank_copy))
    message = str(caught.value)
    assert f"workload.toml:{line}:" in message
    assert "unknown key 'wieght' in [[units]] #2" in message
    assert "weight" in message and "isolation" in message  # the expected keys are listed
    assert "did you mean 'weight'" in message


def test_toml_syntax_error_has_a_line(bank_copy: Path) -> None:
    toml = bank_copy / "workload.toml"
    toml.write_text(toml.read_text().replace('name = "bank"', 'name = "bank'))
    with pytest.raises(FbbenchError, match=r"workload\.toml:\d+: invalid TOML"):
        load_workload(str(bank_copy))


@pytest.mark.parametrize(
    ("replace", "by", "fragment"),
    [
        ('isolation = "snapshot"', 'isolation = "dirty_read"', "isolation 'dirty_read' is not one of"),
        ('"uniform(1, 20)"', '"uniform(20, 1)"', "lower bound is above the upper bound"),
        ('"seed()"', '"random()"', "unknown parameter generator 'random()'"),
        ("weight = 80", "weight = 0", "needs a positive 'weight'"),
        ("${branches}", "${shops}", "unknown scale parameter ${shops}"),
        ('for_each = "1..${branches}"', 'for_each = "1 to 2"', "not a range like 1..10"),
    ],
)
def test_semantic_errors_are_located(bank_copy: Path, replace: str, by: str, fragment: str) -> None:
    toml = bank_copy / "workload.toml"
    text = toml.read_text()
    assert replace in text
    toml.write_text(text.replace(replace, by, 1))
    with pytest.raises(FbbenchError) as caught:
        load_workload(str(bank_copy))
    assert fragment in str(caught.value)
    assert "workload.toml:" in str(caught.value)


def test_scale_values() -> None:
    assert parse_scale_value("think", "on") == 1
    assert parse_scale_value("think", "off") == 0
    assert parse_scale_value("warehouses", "4") == 4
    assert parse_scale_value("ratio", "0.5") == 0.5
    with pytest.raises(FbbenchError, match="must be a number"):
        parse_scale_value("warehouses", "many")
    for endless in ("inf", "-Infinity", "nan", float("inf"), float("nan")):  # float() takes them all
        with pytest.raises(FbbenchError, match="scale 'warehouses' must be a finite number"):
            parse_scale_value("warehouses", endless)
    with pytest.raises(FbbenchError, match="unknown scale parameter 'warehoses'"):
        load_workload(str(BANK), {"warehoses": "3"})


def _with_scale(bank: Path, definition: str, description: str = "Transfers") -> Path:
    toml = bank / "workload.toml"
    text = toml.read_text().replace("branches = 2\n", f"branches = 2\n{definition}\n", 1)
    toml.write_text(text.replace('description = "Transfers', f'description = "{description}', 1))
    return toml


def test_scale_choice_is_a_word_checked_against_its_choices(bank_copy: Path) -> None:
    from fbbench.workloads.sqltext import substitute

    _with_scale(bank_copy, 'mode = { default = "small", choices = ["small", "medium", "large", "heavy"] }',
                "${mode} transfers")
    workload = load_workload(str(bank_copy))
    assert workload.scale["mode"] == workload.scale_defaults["mode"] == "small"
    assert workload.scale_choices == {"mode": ("small", "medium", "large", "heavy")}
    assert workload.description.startswith("small transfers")
    # Case does not matter on the command line; the workload gets the word as it spelled it.
    workload = load_workload(str(bank_copy), {"mode": "Medium", "accounts": "200"})
    assert workload.scale == {"accounts": 200, "branches": 2, "mode": "medium"}
    assert workload.description.startswith("medium transfers")
    assert substitute("select * from modes where name = '${mode}'", workload.scale, "x.sql") == (
        "select * from modes where name = 'medium'")
    with pytest.raises(FbbenchError) as caught:
        load_workload(str(bank_copy), {"mode": "meduim"})
    assert "scale 'mode' must be one of: small, medium, large, heavy; got 'meduim'" in str(caught.value)
    assert caught.value.hint == "did you mean 'medium'?"
    with pytest.raises(FbbenchError, match="must be one of"):
        load_workload(str(bank_copy), {"mode": "2"})


@pytest.mark.parametrize(
    ("definition", "fragment"),
    [
        ('mode = { default = "tiny", choices = ["small", "large"] }', "'default' must be one of its choices"),
        ('mode = { default = "small", choices = [] }', "'choices' must be a non-empty list of words"),
        ('mode = { default = "small", choices = ["small", 2] }', "'choices' must be a non-empty list of words"),
        ('mode = { default = "small", choice = ["small"] }', "unknown key 'choice' in scale 'mode'"),
    ],
)
def test_scale_choice_definition_errors_are_located(bank_copy: Path, definition: str, fragment: str) -> None:
    toml = _with_scale(bank_copy, definition)
    line = next(n for n, raw in enumerate(toml.read_text().splitlines(), 1) if raw.startswith("mode ="))
    with pytest.raises(FbbenchError) as caught:
        load_workload(str(bank_copy))
    assert fragment in str(caught.value)
    assert f"workload.toml:{line}:" in str(caught.value)


def test_a_switch_that_is_on_by_default_can_be_turned_off(bank_copy: Path) -> None:
    _with_scale(bank_copy, 'audit = "on"')
    assert load_workload(str(bank_copy), {"audit": "off"}).scale["audit"] == 0
    with pytest.raises(FbbenchError, match="scale 'accounts' must be more than 0"):
        load_workload(str(bank_copy), {"accounts": "0"})


def test_unknown_workload_lists_builtins() -> None:
    with pytest.raises(FbbenchError, match="unknown workload 'nosuch'"):
        load_workload("nosuch")


def test_generators_and_expressions() -> None:
    assert parse_generator("nurand(1023, 1, 3000)") == Generator("nurand", (1023, 1, 3000))
    assert parse_generator("const('abc')") == Generator("const", ("abc",))
    assert parse_generator("uniform(1, 2 * 5)") == Generator("uniform", (1, 10))
    assert evaluate("100 * a.b / (a.c + 1)", {"a.b": 3, "a.c": 2}) == 100.0
    with pytest.raises(ExpressionError, match=r"division by zero in '100 \* a\.b / a\.c': a\.c is 0"):
        evaluate("100 * a.b / a.c", {"a.b": 3, "a.c": 0})
    for bad in ("__import__('os')", "a[0]", "1 if 1 else 2"):
        with pytest.raises(ExpressionError):
            evaluate(bad, {"a": 1})


def test_choice_and_null_values_round_trip_as_a_workload_writes_them() -> None:
    """choice(…) and const(null): strings in single quotes with a quote inside doubled, null as a
    word; what fbbench writes (str) reads back the same (workload from-trace relies on it)."""
    written = parse_generator("choice('a', 'it''s', \"x, y\", null)")
    assert written == Generator("choice", ("a", "it's", "x, y", None))
    assert parse_generator(str(written)) == written
    assert parse_generator("const(null)") == Generator("const", (None,))
    assert parse_generator("choice(1, 2.5, -3)").to_core() == {"kind": "choice", "args": [1, 2.5, -3]}
    for bad, fragment in (("choice()", "1 to 10,000 values"), ("choice('a', 1)", "all numbers or all strings"),
                          ("choice(N)", "'N' is not a run constant")):
        with pytest.raises(ValueError, match=re.escape(fragment)):
            parse_generator(bad)


def test_nurand_stays_in_its_range() -> None:
    import random

    rng = random.Random(7)
    values = [nurand(rng, 1023, 1, 3000, 259) for _ in range(2000)]
    assert min(values) >= 1 and max(values) <= 3000


@pytest.mark.parametrize(
    ("added", "expected"),
    [
        ('[headline]\nname = "x"\nvalue = "transfers.ok"\n',
         ["unknown name 'transfers.ok'", "did you mean 'transfer.ok'"]),
        ('[headline]\nname = "x"\nvalue = "ok"\nper = "hour"\n', ["'per' must be one of: minute, second, run"]),
        ('[headline]\nname = "x"\nvalue = "ok"\nbetter = "up"\n', ["'better' must be \"higher\" or \"lower\""]),
        ('[headline]\nname = "x"\nvalue = "ok"\nwhen = "sometimes"\n', ["'when' must be"]),
        ('[headline]\nvalue = "ok"\n', ["missing required key 'name'"]),
        ('[headline]\nname = "x"\nvalue = "ok"\nper_minute = true\n', ["unknown key 'per_minute' in [headline]"]),
        ('[constants]\n"C-1" = "select 1 from rdb$database"\n', ["constant name 'C-1' must be a plain identifier"]),
        ('[constants]\nC1 = 5\n', ["constant 'C1' must be the SQL that reads it"]),
        ('[constants]\nC1 = "select ? + ? from rdb$database"\n', ["at most one ?"]),
        ('[nurand]\nconstants_sql = "select 1 from rdb$database"\n', ["unknown key 'nurand'", "constants"]),
        ('[[checks]]\nname = "x"\nnames = ["y", "z"]\nsql = "select 0, 0 from rdb$database"\n',
         ["either 'name' or 'names'"]),
        ('[[checks]]\nnames = ["y", "y"]\nsql = "select 0, 0 from rdb$database"\n', ["'names' lists a name twice"]),
        ('[[checks]]\nnames = []\nsql = "select 0 from rdb$database"\n', ["at least one non-empty name"]),
        ('[[checks]]\nnames = ["money is conserved", "new"]\nsql = "select 0, 0 from rdb$database"\n',
         ["check name 'money is conserved' is used twice"]),
    ],
)
def test_headline_and_constants_errors_name_file_line_and_expectation(bank_copy: Path, added: str,
                                                                      expected: list[str]) -> None:
    toml = bank_copy / "workload.toml"
    text = toml.read_text()
    toml.write_text(text + "\n" + added)
    first_line = text.count("\n") + 2  # the added table's header
    with pytest.raises(FbbenchError) as error:
        load_workload(str(bank_copy))
    message = str(error.value)
    assert f"{toml}:" in message, message
    line = int(message.split(f"{toml}:")[1].split(":")[0])
    assert first_line <= line <= first_line + 4, (line, message)
    for fragment in expected:
        assert fragment in message, message


def test_generator_arguments_may_name_run_constants(bank_copy: Path) -> None:
    toml = bank_copy / "workload.toml"
    text = toml.read_text().replace('params = ["uniform(1, ${accounts})", "uniform(1, ${accounts})"',
                                    'params = ["uniform(1, TOP)", "uniform(1, ${accounts})"')
    toml.write_text(text + '\n[constants]\nTOP = "select count(*) from account"\n')
    workload = load_workload(str(bank_copy))
    assert workload.constants == {"TOP": "select count(*) from account"}
    assert workload.unit("transfer").statements[0].params[0].args == (1, "TOP")
    toml.write_text(text.replace("uniform(1, TOP)", "uniform(1, TOPP)") + '\n[constants]\nTOP = "select 1"\n')
    with pytest.raises(FbbenchError, match=r"'TOPP' is not a run constant; \[constants\] defines: TOP"):
        load_workload(str(bank_copy))


def test_headline_per_kind_of_run() -> None:
    orders = load_workload("orders")
    assert orders.headline(fixed_work=True).name == "elapsed" and orders.headline(True).better == "lower"
    assert orders.headline(fixed_work=False).name == "orders"
    assert load_workload(str(BANK)).headline(False).name == "score"  # no [headline]: the score
    assert load_workload(str(BANK)).headline(True).name == "score"
    tpcc = load_workload("tpcc")  # NOPM, as the database counts it, whatever the kind of run
    assert tpcc.headline(False).name == tpcc.headline(True).name == "NOPM"
    assert tpcc.headline(False).value == "metrics.NOPM" and tpcc.headline(False).per == "run"
    assert load_workload("docflow").headline(False).name == "business actions"


def test_a_count_that_is_not_whole_at_this_scale_says_so() -> None:
    with pytest.raises(FbbenchError, match=r"iud/workload\.toml:\d+: unit 'insert': its count is 1\.001 at this "
                                           "scale, not a whole number of executions"):
        load_workload("iud", {"rows": "1001", "batch": "1000"})


def test_one_check_query_may_judge_several_named_conditions(bank_copy: Path) -> None:
    toml = bank_copy / "workload.toml"
    toml.write_text(toml.read_text() + '\n[[checks]]\nnames = ["a", "b"]\nsql = "select 0, 1 from rdb$database"\n')
    checks = load_workload(str(bank_copy)).checks
    assert [check.names for check in checks] == [("money is conserved",), ("every transfer is logged",), ("a", "b")]
    assert checks[2].label == "a + b"


def test_checks_are_taken_unknown_first_then_longest_first() -> None:
    from fbbench.runner.engine.workload_sql import take_order

    labels = ["one", "two", "three", "four"]
    assert take_order(labels, {}) == [0, 1, 2, 3]
    assert take_order(labels, {"one": 0.1, "two": 2.0, "three": 0.5}) == [3, 1, 2, 0]


def test_a_workload_parsed_again_is_the_same_until_a_file_or_the_scale_changes(bank_copy: Path) -> None:
    """A run reads its workload several times over; the parse is kept for the same texts and scale."""
    first = load_workload(str(bank_copy), {"accounts": "200"})
    assert load_workload(str(bank_copy), {"accounts": "200"}) is first
    other_scale = load_workload(str(bank_copy), {"accounts": "300"})
    assert other_scale is not first and other_scale.scale["accounts"] == 300
    schema = bank_copy / "schema.sql"
    schema.write_text(schema.read_text() + "\n-- changed\n")
    changed = load_workload(str(bank_copy), {"accounts": "200"})
    assert changed is not first and changed.files["schema.sql"].endswith("-- changed\n")
    toml = bank_copy / "workload.toml"
    toml.write_text(toml.read_text().replace('name = "bank"', 'name = "bank2"', 1))
    assert load_workload(str(bank_copy), {"accounts": "200"}).name == "bank2"
    schema.unlink()
    with pytest.raises(FbbenchError, match=r"schema\.sql"):
        load_workload(str(bank_copy), {"accounts": "200"})
