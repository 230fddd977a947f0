"""The native load core (fbbench._core via fbbench.core) on real engines: determinism, outcome
classes, transaction parameters, the stop flag, and the client/server path with a server that dies.

Each scenario runs in an engine child process (tests/workloads_core/child.py) against a tiny
database with forced writes off; phases are a few seconds at most.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from fbbench import _core, loadcore
from fbbench.engines import prepare_runtime, run_in_engine
from fbbench.engines.runtime import Runtime
from fbbench.workloads.figures import OUTCOMES
from tests.conftest import ENGINES, fb3_server_or_skip
from tests.fb3server import Fb3Server

CHILD = "tests.workloads_core.child"
CONFLICT_CODES = {335544345, 335544336, 335544878, 335544451, 335544510}
ISC_EXCEPT = 335544517
ARITH_EXCEPT = 335544321


class Target:
    """A database the tests drive, and the engine runtime whose child processes reach it."""

    def __init__(self, runtime: Runtime, dsn: str) -> None:
        self.runtime, self.dsn = runtime, dsn
        created = self.call("create", dsn)
        self.exceptions: dict[str, int] = created["exceptions"]
        self.engine_version: str = created["engine_version"]

    def call(self, function: str, *args: Any, **kwargs: Any) -> Any:
        return run_in_engine(self.runtime, f"{CHILD}:{function}", *args, **kwargs)

    def run(self, settings: dict[str, Any], interrupt_after: float | None = None) -> dict[str, Any]:
        return self.call("run", self.dsn, settings, interrupt_after)

    def query(self, sql: str) -> list[list[Any]]:
        return self.call("query", self.dsn, sql)


def embedded_target(version: str, workdir: Path) -> Target:
    # ReadConsistency=0 on 4.0+, so that read_committed and read_consistency stay distinct
    # (by default the engine silently upgrades every read-committed transaction).
    runtime = prepare_runtime(version, workdir, {} if version.startswith("3") else {"ReadConsistency": "0"})
    return Target(runtime, str(workdir / f"core-{version}.fdb"))


@pytest.fixture(scope="module", params=ENGINES)
def embedded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Target:
    return embedded_target(request.param, tmp_path_factory.mktemp(f"core-{request.param}"))


def statement(sql: str, *params: tuple[str, list[Any]], repeat: int = 1) -> dict[str, Any]:
    return {"sql": sql, "repeat": repeat, "params": [{"kind": kind, "args": args} for kind, args in params]}


def unit(name: str, *statements: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {"name": name, "statements": list(statements), **options}


def outcome_units(target: Target) -> list[dict[str, Any]]:
    by_design = target.exceptions["EX_BY_DESIGN"]
    return [
        unit("by_design", statement("execute procedure by_design"), rollback_on=[by_design]),
        unit("other_exception", statement("execute procedure other_exception"), rollback_on=[by_design]),
        # The by-design exception where it is not by design: an error of the same gdscode as
        # other_exception's (every PSQL exception is isc_except), shown with its own text.
        unit("by_design_elsewhere", statement("execute procedure by_design")),
        unit("div_zero", statement("select 1 / (cast(? as integer) - cast(? as integer)) from rdb$database",
                                   ("const", [1]), ("const", [1]))),
        # Both attachments update row 1 without waiting and keep their transaction open a
        # moment (a 10,000-row join), so they run into each other's row lock.
        unit("bump", statement("update counter set n = n + 1 where id = 1"),
             statement("select count(*) from items a cross join items b"), weight=3, isolation="snapshot",
             lock_timeout=0),
        unit("tally", statement("execute procedure two"), statement("select qty from items where id <= 3"),
             tally=["N", "qty"]),
    ]


def check_outcomes(result: dict[str, Any]) -> None:
    assert result["status"] == "completed", result["failure"]
    units = result["units"]

    assert units["by_design"]["rolled_back"] > 0
    assert units["by_design"]["ok"] == units["by_design"]["errors"] == units["by_design"]["conflicts"] == 0

    other = units["other_exception"]
    assert other["errors"] > 0 and other["rolled_back"] == 0
    assert [e["gdscode"] for e in other["errors_by_code"]] == [ISC_EXCEPT]
    assert "EX_OTHER" in other["errors_by_code"][0]["message"]
    elsewhere = units["by_design_elsewhere"]
    assert elsewhere["errors"] > 0 and [e["gdscode"] for e in elsewhere["errors_by_code"]] == [ISC_EXCEPT]
    assert "EX_BY_DESIGN" in elsewhere["errors_by_code"][0]["message"], elsewhere["errors_by_code"]
    assert "EX_OTHER" not in elsewhere["errors_by_code"][0]["message"]

    div = units["div_zero"]
    assert div["errors"] > 0 and div["ok"] == 0
    assert div["errors_by_code"][0]["gdscode"] == ARITH_EXCEPT
    assert div["errors_by_code"][0]["count"] == div["errors"]
    assert "arithmetic exception" in div["errors_by_code"][0]["message"]

    bump = units["bump"]
    assert bump["ok"] > 0 and bump["conflicts"] > 0 and bump["errors"] == 0, bump
    assert {c["gdscode"] for c in bump["conflicts_by_code"]} <= CONFLICT_CODES
    assert sum(c["count"] for c in bump["conflicts_by_code"]) == bump["conflicts"]
    assert "lock conflict" in bump["conflicts_by_code"][0]["message"] or "deadlock" in \
        bump["conflicts_by_code"][0]["message"]

    tally = units["tally"]
    assert tally["ok"] > 0
    assert tally["tally"] == {"N": 2 * tally["ok"], "QTY": 6 * tally["ok"]}

    # Totals are exactly the sum of the measured intervals; histograms hold every counted unit.
    measured = [i for i in result["intervals"] if i["phase"] == "measure"]
    assert [i["phase"] for i in result["intervals"]][:1] == ["warmup"]
    for name, totals in units.items():
        for key in OUTCOMES:
            assert totals[key] == sum(i["units"][name][key] for i in measured), (name, key)
        summary = loadcore.histogram_summary([i["units"][name]["histogram"] for i in measured])
        assert summary["count"] == sum(totals[key] for key in OUTCOMES)
        assert loadcore.histogram_summary([totals["histogram"]]) == summary
        if summary["count"]:
            assert 0 < totals["latency_ms"]["p50"] <= totals["latency_ms"]["max"]
    assert result["measured_seconds"] == pytest.approx(2.0, abs=0.01)
    assert result["client_cpu_seconds"] > 0
    assert result["thread_cpu_seconds"] >= result["client_cpu_seconds"]
    assert [a["index"] for a in result["attachments"]] == [1, 2]
    assert all(a["units"] > 0 and a["error"] is None for a in result["attachments"])
    assert {"warmup", "measure", "done"} <= set(result["_test"]["phases_seen"])


def test_outcome_classes(embedded: Target) -> None:
    result = embedded.run({"connections": 2, "warmup_seconds": 0.5, "measure_seconds": 2.0,
                           "interval_seconds": 0.5, "seed": 3, "units": outcome_units(embedded)})
    check_outcomes(result)


def logging_units() -> list[dict[str, Any]]:
    """Two units that log every parameter they get (procedures log_a, log_b): what a seed drew."""
    return [
        unit("A", statement("execute procedure log_a(?, ?, ?, ?, ?, ?)", ("const", [0]), ("attachment", []),
                            ("uniform", [1, 1_000_000]), ("nurand", [255, 0, 999, 123]), ("seed", []),
                            ("string", [12])), weight=2),
        unit("B", statement("execute procedure log_b(?, ?, ?, ?)", ("const", [0]), ("attachment", []),
                            ("home", [2]), ("seed", []), repeat=2), weight=1),
    ]


def test_same_seed_same_units_and_parameters(embedded: Target) -> None:
    units = logging_units()

    def logged(run_no: int, seed: int) -> dict[int, list[tuple[Any, ...]]]:
        for u in units:
            u["statements"][0]["params"][0]["args"] = [run_no]
        result = embedded.run({"connections": 2, "transactions": 30, "interval_seconds": 1.0, "seed": seed,
                               "units": units})
        assert result["status"] == "completed", result["failure"]
        assert sum(u["ok"] for u in result["units"].values()) == 60
        rows = embedded.query(f"select att, unit_name, a, b, c, s from param_log where run_no = {run_no} order by id")
        per_attachment: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
        for att, *rest in rows:
            per_attachment[att].append(tuple(rest))
        return per_attachment

    first, second, other_seed = logged(1, 77), logged(2, 77), logged(3, 78)
    assert sorted(first) == [1, 2]
    assert first == second
    assert first[1] != first[2]
    assert first[1] != other_seed[1] and first[2] != other_seed[2]
    for att, rows in first.items():
        units_drawn = [r[0] for r in rows]
        assert units_drawn.count("A") + units_drawn.count("B") // 2 == 30
        assert all(r[1] == att for r in rows if r[0] == "B")  # home(2) of attachment 1 and 2
        assert all(1 <= r[1] <= 1_000_000 and 0 <= r[2] <= 999 and len(r[4]) == 12 for r in rows if r[0] == "A")


def test_an_open_loop_behind_its_schedule_stops_serving_at_the_end(embedded: Target) -> None:
    """Arrivals far faster than the engine serves them: each attachment falls behind its schedule.
    Once the measured period is over it serves no more of them (a unit counts when it ends, so
    they would never be counted): every unit that reached the engine is counted, but the one each
    attachment was running as the period ended."""
    units = logging_units()[:1]
    units[0]["statements"][0]["params"][0]["args"] = [100]
    result = embedded.run({"connections": 2, "warmup_seconds": 0.0, "measure_seconds": 1.0, "interval_seconds": 0.5,
                           "seed": 5, "target_rate": 1_000_000.0, "units": units})
    assert result["status"] == "completed", result["failure"]
    counted = sum(totals[key] for totals in result["units"].values() for key in OUTCOMES)
    (served,) = embedded.query("select count(*) from param_log where run_no = 100")[0]
    assert counted > 100, counted
    assert counted <= served <= counted + 2, (counted, served)


def test_transaction_parameters(embedded: Target) -> None:
    """Each isolation / wait mode reaches the engine as MON$TRANSACTIONS shows it."""
    me = "select mon$isolation_mode, mon$lock_timeout, mon$read_only from mon$transactions " \
         "where mon$transaction_id = current_transaction"
    tally = ["MON$ISOLATION_MODE", "MON$LOCK_TIMEOUT", "MON$READ_ONLY"]
    units = [
        unit("snapshot_nowait", statement(me), isolation="snapshot", lock_timeout=0, tally=tally),
        unit("rc_timeout", statement(me), isolation="read_committed", lock_timeout=7, tally=tally),
        unit("serializable_ro", statement(me), isolation="serializable", read_only=True, tally=tally),
    ]
    fb3 = embedded.engine_version.startswith("3.")
    consistency = unit("consistency", statement(me), isolation="read_consistency", tally=tally)
    result = embedded.run({"connections": 1, "transactions": 40, "seed": 1, "units": [*units, consistency]})
    if fb3:
        # Firebird 3 has no read consistency: the run fails up front, naming the unit.
        assert result["status"] == "failed"
        assert "unit consistency" in result["failure"]
        result = embedded.run({"connections": 1, "transactions": 30, "seed": 1, "units": units})
    assert result["status"] == "completed", result["failure"]
    expected = {"snapshot_nowait": (1, 0, 0), "rc_timeout": (2, 7, 0), "serializable_ro": (0, -1, 1),
                "consistency": (4, -1, 0)}
    for name, totals in result["units"].items():
        ok = totals["ok"]
        assert ok > 0, name
        assert tuple(totals["tally"][column] / ok for column in tally) == expected[name], name


def test_closing_sql_runs_on_each_attachment_once_the_end_is_read(tmp_path: Path) -> None:
    """closing_sql (--profile's FINISH_SESSION): each attachment runs it once after its load, in a
    transaction of its own, only once the caller has read the end (open_closing); without that it
    is skipped after half the watchdog bound, and after a stop it does not run at all."""
    target = embedded_target("5.0", tmp_path)
    closing = "insert into param_log values (next value for log_seq, 900, current_connection, 'Z', 0, 0, 0, '')"
    units = [unit("select", statement("select qty from items where id = ?", ("uniform", [1, 100])))]
    settings = {"connections": 3, "warmup_seconds": 0.0, "measure_seconds": 1.0, "interval_seconds": 0.5,
                "seed": 4, "watchdog_seconds": 2.0, "closing_sql": closing, "units": units}

    def counted() -> int:
        return int(target.query("select count(*) from param_log where run_no = 900")[0][0])

    result = target.call("run", target.dsn, settings, None, False, True)
    assert result["status"] == "completed", result["failure"]
    opened = result["_test"]["opened_at"]
    ends = [a["closing"] for a in result["attachments"]]
    assert all(c is not None and c["error"] is None for c in ends), ends
    # After the planned end was read, never before it.
    assert 1.0 <= opened <= min(c["at_seconds"] for c in ends), (opened, ends)
    assert counted() == 3

    # Nobody reads the end: each attachment waits half the watchdog bound, then detaches without it.
    result = target.call("run", target.dsn, settings)
    assert result["status"] == "completed", result["failure"]
    ends = [a["closing"] for a in result["attachments"]]
    assert all(c is not None and c["error"].startswith("not run: the caller did not read the end") for c in ends), ends
    assert all(1.9 < c["at_seconds"] < 3.5 for c in ends), ends
    assert counted() == 3

    # Stopped: no closing statement, and the stop is as quick as ever.
    result = target.call("run", target.dsn, {**settings, "measure_seconds": 30.0}, 1.0, False, True)
    assert result["status"] == "stopped" and result["_test"]["after_interrupt"] < 2.5, result["_test"]
    assert [a["closing"] for a in result["attachments"]] == [None] * 3
    assert counted() == 3
    # A plain run's attachments carry no closing at all.
    plain = target.call("run", target.dsn, {k: v for k, v in settings.items() if k != "closing_sql"})
    assert all("closing" not in a for a in plain["attachments"])


@pytest.mark.alone  # times the stop: within 2 s of the flag, 1.5–2.6 s measured
def test_stop_flag_ends_a_long_run_quickly(tmp_path: Path) -> None:
    target = embedded_target("5.0", tmp_path)
    units = [
        unit("select", statement("select qty from items where id = ?", ("uniform", [1, 100])), weight=5),
        # Attachment 1 updates row 2, which the blocker holds: it waits for ever, so the stop
        # has to cancel that wait. Attachment 2 updates row 3 and keeps working.
        unit("touch", statement("update counter set n = n + 1 where id = ? + 1", ("attachment", []))),
    ]
    settings = {"connections": 2, "warmup_seconds": 0.5, "measure_seconds": 60.0, "interval_seconds": 0.5,
                "seed": 9, "units": units}
    result = target.call("run_while_row_locked", target.dsn, "update counter set n = n where id = 2", settings, 2.5)
    assert result["status"] == "stopped"
    assert result["failure"] is None
    assert result["_test"]["after_interrupt"] < 2.0, result["_test"]
    assert 1.5 < result["measured_seconds"] < 2.6
    assert result["units"]["select"]["ok"] > 0
    assert result["units"]["touch"]["errors"] == 0
    measured = [i for i in result["intervals"] if i["phase"] == "measure"]
    assert sum(i["seconds"] for i in measured) == pytest.approx(result["measured_seconds"], abs=1e-6)
    assert result["units"]["select"]["ok"] == sum(i["units"]["select"]["ok"] for i in measured)


def test_bad_config_is_refused_up_front() -> None:
    base = {"client_library": "/nonexistent/libfbclient.so.2", "database": "/tmp/x.fdb", "connections": 1,
            "measure_seconds": 1.0, "units": [unit("u", statement("select 1 from rdb$database"))]}
    with pytest.raises(ValueError, match="uniform"):
        loadcore.run_load({**base, "units": [unit("u", statement("select ? from rdb$database", ("uniform", [5, 1])))]})
    with pytest.raises(ValueError, match="either measure_seconds or transactions"):
        loadcore.run_load({**base, "measure_seconds": None})
    # A client library that cannot be loaded fails the run (it does not raise).
    result = loadcore.run_load(base)
    assert result["status"] == "failed" and "cannot load the Firebird client library" in (result["failure"] or "")
    assert sum(result["units"]["u"][key] for key in OUTCOMES) == 0 and result["intervals"] == []


def test_python_asks_the_core_for_its_timeline() -> None:
    """Classic's coordinator and the sampler take intervals and boundaries from the core."""
    base = {"client_library": "/x/libfbclient.so.2", "database": "/tmp/x.fdb", "connections": 1,
            "units": [unit("u", statement("select 1 from rdb$database"))]}
    timed = _core.Timeline(json.dumps({**base, "warmup_seconds": 25.0, "measure_seconds": 30.0}))
    assert (timed.warmup_intervals, timed.end, timed.measure_start_boundary) == (3, 55.0, 4)
    assert [timed.boundary_offset(b) for b in range(9)] == [None, 0.0, 10.0, 20.0, 25.0, 35.0, 45.0, 55.0, None]
    assert [timed.interval_closed_by(b) for b in range(4)] == [None, None, 0, 1]
    fixed = _core.Timeline(json.dumps({**base, "transactions": 5, "interval_seconds": 2.0}))
    assert (fixed.warmup_intervals, fixed.end, fixed.measure_start_boundary) == (0, None, 1)
    assert fixed.boundary_offset(1000) == 1998.0
    with pytest.raises(ValueError, match="interval_seconds"):
        _core.Timeline(json.dumps({**base, "measure_seconds": 1.0, "interval_seconds": 0}))


# ------------------------------------------------------------------ the loopback Firebird 3 server


@pytest.fixture
def fb3(tmp_path: Path) -> Any:
    with fb3_server_or_skip(tmp_path / "server") as server:
        yield server


def server_target(server: Fb3Server, tmp_path: Path) -> Target:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    dsn = server.dsn(data / "core.fdb")
    runtime = prepare_runtime(dsn, tmp_path / "work", user=server.user, password=server.password)
    return Target(runtime, dsn)


@pytest.mark.server
@pytest.mark.alone  # times the end: within 6 s of a killed server
def test_client_server_outcomes_and_a_killed_server(fb3: Fb3Server, tmp_path: Path) -> None:
    target = server_target(fb3, tmp_path)
    assert target.engine_version.startswith("3.0")
    result = target.run({"connections": 2, "warmup_seconds": 0.5, "measure_seconds": 2.0, "interval_seconds": 0.5,
                         "seed": 4, "units": outcome_units(target)})
    check_outcomes(result)

    units = [unit("select", statement("select qty from items where id = ?", ("uniform", [1, 100])))]
    killer = threading.Timer(2.5, fb3.kill)
    killer.start()
    try:
        result = target.run({"connections": 2, "warmup_seconds": 0.5, "measure_seconds": 30.0,
                             "interval_seconds": 0.5, "seed": 4, "units": units})
    finally:
        killer.cancel()
    assert result["status"] == "failed"
    assert "connection lost" in result["failure"]
    assert "Error reading data from the connection" in result["failure"] or "network" in result["failure"]
    # Stopped right there: no flood of errors, and what was measured before is kept.
    assert result["_test"]["seconds"] < 6.0
    assert result["units"]["select"]["errors"] == 0
    assert result["units"]["select"]["ok"] > 0
    # The timer also covers the child start and the connects, so only bound the measured time loosely.
    assert 0.2 < result["measured_seconds"] < 3.5


def test_choice_draws_each_of_its_values_nulls_included(embedded: Target) -> None:
    """choice(…) binds numbers, floats and strings (a quote inside kept), and null as NULL: with
    values that add up to distinguishable sums, every value was drawn and bound as given."""
    units = [
        unit("numbers", statement("select coalesce(cast(? as integer), 1000) as v from rdb$database",
                                  ("choice", [2, 5, None])), tally=["V"]),
        unit("strings", statement("select char_length(coalesce(cast(? as varchar(20)), 'twenty characters..!'))"
                                  " as l, iif(cast(? as varchar(5)) = 'it''s', 1, 0) as q from rdb$database",
                                  ("choice", ["ab", "abcd", None]), ("choice", ["it's"])), tally=["L", "Q"]),
        unit("floats", statement("select cast(? as double precision) * 2 as f from rdb$database",
                                 ("choice", [0.5, 1.5])), tally=["F"]),
    ]
    result = embedded.run({"connections": 1, "transactions": 180, "seed": 5, "units": units})
    assert result["status"] == "completed", result["failure"]
    numbers, strings = result["units"]["numbers"], result["units"]["strings"]
    n, total = numbers["ok"], int(numbers["tally"]["V"])
    nulls, rest = divmod(total, 1000)  # 2a + 5b < 1000
    fives = (rest - 2 * (n - nulls)) // 3
    twos = n - nulls - fives
    assert min(twos, fives, nulls) > 5 and 2 * twos + 5 * fives + 1000 * nulls == total, (n, total)
    m, lengths = strings["ok"], int(strings["tally"]["L"])
    assert strings["tally"]["Q"] == m  # 'it''s' arrived as it's
    assert 2 * m < lengths < 20 * m and (lengths - 2 * m) % 2 == 0
    floats = result["units"]["floats"]
    threes = (floats["tally"]["F"] - floats["ok"]) / 2  # 1 per 0.5 drawn, 3 per 1.5
    assert 0 < threes < floats["ok"] and threes == int(threes)
