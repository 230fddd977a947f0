"""The workload format's "same value again" and its run shapes on real engines, from a
workload.toml through the reader and the core config to the native core: let of a unit and of a
statement, $n, arithmetic, text kept, sequence(); transaction = none / per_n_units; connect =
per_unit; count (fixed work in phases)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fbbench.errors import FbbenchError
from fbbench.runner.engine.core_config import core_config
from fbbench.workloads.spec import load_workload
from tests.test_core import Target, embedded  # noqa: F401  (the module fixture: one database per engine)

SETTINGS = {"connect_rate": 0.0, "warmup": 0.0, "duration": 1.0, "interval": 1.0, "target_rate": None}


def units_of(tmp_path: Path, toml: str) -> list[dict[str, Any]]:
    """The core's units for a workload.toml written into a directory of its own."""
    directory = tmp_path / "workload"
    directory.mkdir(exist_ok=True)
    (directory / "workload.toml").write_text('name = "params"\nscripts = []\n' + toml)
    workload = load_workload(str(directory))
    config = core_config(workload, {**SETTINGS, "connections": 1, "transactions": 1}, "x", "x", ("SYSDBA", None),
                         1, {}, {})
    return list(config["units"])


def run(target: Target, units: list[dict[str, Any]], connections: int = 2, transactions: int | None = 20,
        seed: int = 5) -> dict[str, Any]:
    settings: dict[str, Any] = {"connections": connections, "interval_seconds": 1.0, "seed": seed, "units": units}
    if transactions is not None:
        settings["transactions"] = transactions
    result = target.run(settings)
    assert result["status"] == "completed", result["failure"]
    return result


def test_a_later_statement_reads_exactly_the_range_the_first_drew(embedded: Target, tmp_path: Path) -> None:  # noqa: F811
    units = units_of(tmp_path, '''
[[units]]
name = "range"
weight = 1
let = { id = "uniform(1, 901)", c = "template('###-@@')" }
tally = ["n1", "n2", "lo", "hi", "n3", "n4", "same", "text_same", "seq", "first_id"]

[[units.statements]]
sql = "select count(*) as n1 from numbers where n between ? and ?"
params = ["id", "id + 99"]

[[units.statements]]
sql = """
select count(*) as n2, min(n) - cast(? as integer) as lo, max(n) - cast(? as integer) as hi
from numbers where n between ? and ?"""
params = ["id", "id + 99", "id", "id + 99"]

[[units.statements]]
sql = "select count(*) as n3 from numbers where n between ? and ?"
params = ["uniform(1, 901)", "$1 + 99"]

[[units.statements]]
sql = "select count(*) as n4 from numbers where n between ? and ?"
let = { lo = "uniform(1, 991)" }
params = ["lo", "lo + 9"]
repeat = 3

[[units.statements]]
sql = """
select count(*) as same from rdb$database
where cast(? as bigint) = cast(? as bigint) - 7 and cast(? as bigint) = cast(? as bigint) / 2"""
params = ["lo", "lo + 7", "(lo * 2 + 1) / 2", "lo * 2"]

[[units.statements]]
sql = """
select count(*) as text_same from rdb$database
where cast(? as varchar(10)) = cast(? as varchar(10))
  and substring(cast(? as varchar(10)) from 4 for 1) = '-' and char_length(cast(? as varchar(10))) = 6"""
params = ["c", "c", "c", "c"]

[[units.statements]]
sql = "select cast(? as bigint) as seq, cast(? as bigint) as first_id from rdb$database"
params = ["sequence()", "(attachment() - 1) * 1000 + $1 * 10 + 1"]
''')
    result = run(embedded, units)
    totals = result["units"]["range"]
    ok = totals["ok"]
    assert ok == 40 and totals["errors"] == 0, totals
    tally = totals["tally"]
    assert tally["N1"] == tally["N2"] == tally["N3"] == 100 * ok
    assert tally["LO"] == tally["HI"] == 0
    assert tally["N4"] == 3 * 10 * ok
    assert tally["SAME"] == tally["TEXT_SAME"] == ok
    # sequence() counts each attachment's draws: 0 .. 19, twice; first ids follow from it.
    assert tally["SEQ"] == 2 * sum(range(20))
    assert tally["FIRST_ID"] == sum(1000 * a + 10 * s + 1 for a in (0, 1) for s in range(20))


def test_the_same_seed_draws_the_same_correlated_values(embedded: Target, tmp_path: Path) -> None:  # noqa: F811
    units = units_of(tmp_path, '''
[[units]]
name = "log"
weight = 1
let = { id = "uniform(1, 1000000)" }
sql = "execute procedure log_a(?, ?, ?, ?, ?, ?)"
params = ["const(7)", "attachment()", "id", "id + 99", "special(1, 10000)", "template('##@@')"]
''')

    def logged(run_no: int) -> list[list[Any]]:
        units[0]["statements"][0]["params"][0]["args"] = [run_no]
        run(embedded, units, transactions=15, seed=11)
        return embedded.query(f"select att, a, b, c, s from param_log where run_no = {run_no} order by att, id")

    first, second = logged(71), logged(72)
    assert first == second and len(first) == 30
    assert all(b == a + 99 for _, a, b, _, _ in first)
    assert all(1 <= c <= 10000 and s[:2].isdigit() and s[2:].isalpha() and s[2:].islower()
               for *_, c, s in first)


def test_choice_values_are_kept_by_let_and_dollar_n_with_their_nulls(embedded: Target, tmp_path: Path) -> None:  # noqa: F811
    # issue-22's choice(…) (NULL per draw) through issue-20's let and $n: the same value, NULL included.
    units = units_of(tmp_path, '''
[[units]]
name = "kept"
weight = 1
let = { v = "choice(1, 2, null)", w = "choice('it''s', null)", k = "choice(10, 20) * 3 + 1" }
tally = ["same_v", "same_w", "null_v", "null_w", "k_ok", "same_p"]

[[units.statements]]
sql = """
select iif(cast(? as bigint) is not distinct from cast(? as bigint), 1, 0) as same_v,
       iif(cast(? as varchar(10)) is not distinct from cast(? as varchar(10)), 1, 0) as same_w,
       iif(cast(? as bigint) is null, 1, 0) as null_v,
       iif(cast(? as varchar(10)) is null, 1, 0) as null_w,
       iif(cast(? as bigint) in (31, 61), 1, 0) as k_ok
from rdb$database"""
params = ["v", "v", "w", "w", "v", "w", "k"]

[[units.statements]]
sql = """select iif(cast(? as double precision) is not distinct from cast(? as double precision), 1, 0) as same_p
         from rdb$database"""
params = ["choice(1.5, null, 2)", "$1"]
''')
    result = run(embedded, units, transactions=60)
    totals = result["units"]["kept"]
    ok = totals["ok"]
    assert ok == 120 and totals["errors"] == 0, totals
    tally = totals["tally"]
    assert tally["SAME_V"] == tally["SAME_W"] == tally["K_OK"] == tally["SAME_P"] == ok
    assert 0 < tally["NULL_V"] < ok and 0 < tally["NULL_W"] < ok  # about a third and a half of the units


def test_transaction_none_and_per_n_units(embedded: Target, tmp_path: Path) -> None:  # noqa: F811
    log = ("insert into param_log (id, run_no, att, unit_name, a) "
           "values (next value for log_seq, ?, ?, ?, current_transaction)")
    units = units_of(tmp_path, f'''
[[units]]
name = "autocommit"
weight = 1
transaction = "none"
statements = [{{ sql = "{log}", params = ["const(81)", "attachment()", "const('A')"], repeat = 2 }},
              {{ sql = "{log}", params = ["const(81)", "attachment()", "const('B')"] }}]
''')
    run(embedded, units, transactions=4)
    rows = embedded.query("select count(*), count(distinct a) from param_log where run_no = 81")
    assert rows == [[24, 24]]  # 2 attachments × 4 units × 3 executions, each its own transaction

    units = units_of(tmp_path, f'''
[[units]]
name = "batched"
weight = 1
transaction = "per_n_units"
units_per_transaction = 5
statements = [{{ sql = "{log}", params = ["const(82)", "attachment()", "const('C')"] }}]
''')
    result = run(embedded, units, transactions=12)
    assert result["units"]["batched"]["ok"] == 24
    rows = embedded.query("select att, count(*), count(distinct a) from param_log where run_no = 82 group by att")
    assert rows == [[1, 12, 3], [2, 12, 3]]  # 5 + 5 + 2 (the last committed with the fixed work's end)


def test_per_n_units_counts_the_executions_a_failed_transaction_held(embedded: Target, tmp_path: Path) -> None:  # noqa: F811
    # Every third execution fails: the two before it in the same transaction are rolled back with it.
    units = units_of(tmp_path, '''
[[units]]
name = "failing"
weight = 1
transaction = "per_n_units"
units_per_transaction = 3
sql = """insert into param_log (id, run_no, att, unit_name, a)
         values (next value for log_seq, 83, ?, 'F', 1 / (mod(cast(? as integer), 3) - 2))"""
params = ["attachment()", "sequence()"]
''')
    result = run(embedded, units, connections=1, transactions=9)
    totals = result["units"]["failing"]
    assert (totals["ok"], totals["errors"]) == (0, 9), totals
    assert embedded.query("select count(*) from param_log where run_no = 83") == [[0]]


def test_connect_per_unit_attaches_in_every_execution(embedded: Target, tmp_path: Path) -> None:  # noqa: F811
    units = units_of(tmp_path, '''
[[units]]
name = "connect"
weight = 1
connect = "per_unit"
sql = """insert into param_log (id, run_no, att, unit_name, a)
         values (next value for log_seq, 84, ?, 'X', current_connection)"""
params = ["attachment()"]
''')
    result = run(embedded, units, transactions=6)
    assert result["units"]["connect"]["ok"] == 12
    assert embedded.query("select count(distinct a) from param_log where run_no = 84") == [[12]]


def test_counted_units_run_as_phases_in_order(embedded: Target, tmp_path: Path) -> None:  # noqa: F811
    log = "insert into param_log (id, run_no, att, unit_name) values (next value for log_seq, 85, ?, ?)"
    units = units_of(tmp_path, f'''
[[units]]
name = "first"
count = 7
sql = "{log}"
params = ["attachment()", "const('1')"]

[[units]]
name = "second"
count = "2 * 2"
sql = "{log}"
params = ["attachment()", "const('2')"]
''')
    result = run(embedded, units, connections=3, transactions=None)
    assert result["units"]["first"]["ok"] == 21 and result["units"]["second"]["ok"] == 12
    phases = [row[0] for row in embedded.query("select unit_name from param_log where run_no = 85 order by id")]
    assert phases == ["1"] * 21 + ["2"] * 12  # every attachment finished the first before any began the second


@pytest.mark.parametrize(("toml", "fragment"), [
    ('let = { id = "uniform(1, 10)" }\nsql = "select ? from rdb$database"\nparams = ["idd + 1"]',
     "'idd' is not defined here (defined: id)"),
    ('sql = "select ?, ? from rdb$database"\nparams = ["uniform(1, 10)", "$2"]', "$2 must name an earlier parameter"),
    ('let = { id = "uniform(1, 10)" }\nsql = "select ? from rdb$database"\nparams = ["id / (id - 1)"]',
     "a divisor must be a whole number"),
    ('let = { c = "string(5)" }\nsql = "select ? from rdb$database"\nparams = ["c + 1"]', "c is text"),
    ('let = { c = "choice(1, null)" }\nsql = "select ? from rdb$database"\nparams = ["c + 1"]', "c may be null"),
    ('sql = "select ? from rdb$database"\nparams = ["choice(1.5, 2) * 2"]', "may be a float"),
    ('sql = "select ?, ? from rdb$database"\nparams = ["choice(\'a\', \'b\')", "$1 - 1"]', "$1 is text"),
    ('let = { id = "uniform(1, 10)", id2 = "id * 2" }\nsql = "select ? from rdb$database"\nparams = ["id3"]',
     "(defined: id, id2)"),
    ('transaction = "per_n_units"\nsql = "select 1 from rdb$database"', "needs units_per_transaction"),
    ('connect = "sometimes"\nsql = "select 1 from rdb$database"', "connect 'sometimes' is not one of"),
])
def test_a_reference_that_cannot_be_resolved_is_a_load_time_error_with_file_and_line(
        tmp_path: Path, toml: str, fragment: str) -> None:
    text = '[[units]]\nname = "u"\nweight = 1\n' + toml + "\n"
    with pytest.raises(FbbenchError) as caught:
        units_of(tmp_path, text)
    message = str(caught.value)
    assert fragment in message, message
    assert "workload.toml:" in message and message.split("workload.toml:")[1].split(":")[0].isdigit(), message


def test_counts_are_all_or_none(tmp_path: Path) -> None:
    with pytest.raises(FbbenchError, match="unit 'b' has no count"):
        units_of(tmp_path, '[[units]]\nname = "a"\ncount = 2\nsql = "select 1 from rdb$database"\n'
                           '[[units]]\nname = "b"\nweight = 1\nsql = "select 1 from rdb$database"\n')
