"""The Firebird trace read as a record of an application, from real trace output of embedded 3.0,
4.0 and 5.0: awkward parameter values are read exactly or reported as not replayable, never
silently wrong; a trace cut by small limits is recognised as cut."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fbbench.engines import parse_engine, prepare_runtime, run_in_engine
from fbbench.trace.config import database_pattern, session_config
from fbbench.trace.model import NotReplayable, Param, Tpb
from fbbench.trace.parser import parse_file, parse_text
from tests.conftest import ENGINES


def _child(version: str, workdir: Path, target: str, *args: object) -> Any:
    runtime = prepare_runtime(parse_engine(version), workdir)
    try:
        return run_in_engine(runtime, target, *args)
    finally:
        runtime.remove(workdir)


@pytest.fixture(scope="module", params=ENGINES)
def edge_trace(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, list]:
    version = request.param
    directory = tmp_path_factory.mktemp(f"trace-{version}")
    sent = _child(version, directory / "work", "tests.app_child:traced_statements", str(directory / "edge.fdb"),
                  str(directory / "edge.trace"), int(version[0]))
    return version, directory / "edge.trace", sent


def _inserts(path: Path) -> dict[int, Any]:
    trace = parse_file(path)
    found = {}
    for execution in trace.executions:
        if execution.sql.startswith("insert into edge"):
            found[int(execution.params[0].text or 0)] = execution
    return found


def test_awkward_values_are_read_exactly(edge_trace: tuple[str, Path, list]) -> None:
    version, path, sent = edge_trace
    inserts = _inserts(path)
    by_id = {row["id"]: row for row in sent if "id" in row}
    for number in (1, 2, 3, 4, 6):
        (value,) = [p for p in inserts[number].params[1:]]
        assert value.replay_value() == ("text", by_id[number]["s"]), number
        assert not value.truncated  # fbbench recorded it: its own limit says the "..." is data
    assert inserts[5].params[1].replay_value() == ("null", None)
    typed = {p.index: p for p in inserts[7].params}
    assert typed[1].replay_value() == ("text", "12.34")  # NUMERIC: its digits, exact
    assert typed[2].approximate and typed[2].replay_value()[1] == pytest.approx(1 / 3, rel=1e-14)
    assert typed[3].replay_value() == ("text", "2024-02-29")
    assert typed[4].replay_value() == ("text", "23:59:58.1234")
    assert typed[5].replay_value() == ("text", "2024-02-29 23:59:58.1234")
    assert typed[6].replay_value() == ("text", "TRUE")
    blob = inserts[8].params[1]
    with pytest.raises(NotReplayable, match="blob"):
        blob.replay_value()
    assert any("blob" in problem for problem in inserts[8].problems())
    assert inserts[1].problems() == [] and inserts[7].problems() == []
    if version != "3.0":
        big, decfloat = inserts[9].params[1:]
        assert big.replay_value() == ("text", str(2**100))  # INT128 beyond BIGINT: its digits
        assert decfloat.replay_value()[0] == "text" and "E+100" in str(decfloat.replay_value()[1]).upper()
        zoned = inserts[10].params[1]
        with pytest.raises(NotReplayable, match="unknown"):
            zoned.replay_value()
    summary = sent[-1]["summary"]
    assert summary["suspended"] == [] and summary["session_errors"] == []
    # The statements came from an attachment under fbbench's own process name: not counted as an
    # application's, and named as left out.
    assert summary["statements"] == 0 and list(summary["own_attachments"].values()) == ["fbbench's own process"]


def test_the_capture_knows_its_attachments_and_transactions(edge_trace: tuple[str, Path, list]) -> None:
    _version, path, sent = edge_trace
    trace = parse_file(path)
    assert trace.recorded["max_arg_length"] == 65_535 and trace.recorded["stopped"] == "the test is done"
    # fbbench's own attachment (its process name) is there, and is marked as fbbench's.
    assert {a.process for a in trace.attachments.values()} == {"fbbench"}
    (transaction,) = [t for t in trace.transactions if any(e.sql.startswith("insert into edge")
                                                           for e in t.statements)]
    assert transaction.end == "commit" and transaction.tpb.isolation == "snapshot"
    assert len([e for e in transaction.statements if e.sql.startswith("insert")]) == len(sent) - 1
    assert all(e.tables.get("EDGE", {}).get("insert") == 1 for e in transaction.statements
               if e.sql.startswith("insert"))


@pytest.mark.parametrize("version", ["3.0", "5.0"])
def test_a_trace_cut_by_its_limits_is_not_taken_for_whole(version: str, tmp_path: Path) -> None:
    _child(version, tmp_path / "work", "tests.app_child:traced_with_limits", str(tmp_path / "cut.fdb"),
           str(tmp_path / "cut.trace"))
    trace = parse_file(tmp_path / "cut.trace")
    assert trace.recorded == {}  # not recorded by fbbench: its limits are unknown
    (execution,) = [e for e in trace.executions if e.sql.startswith("insert into cut")]
    assert execution.arguments_skipped == 2 and len(execution.params) == 2
    assert execution.params[0].truncated
    problems = execution.problems()
    assert any("skipped 2 of its arguments" in p for p in problems)
    assert any("cut short" in p for p in problems)


def test_transaction_parameters_as_the_trace_prints_them() -> None:
    assert Tpb.parse("CONCURRENCY | WAIT | READ_WRITE") == Tpb("snapshot", None, False,
                                                               "CONCURRENCY | WAIT | READ_WRITE")
    assert Tpb.parse("READ_COMMITTED | REC_VERSION | WAIT 3 | READ_ONLY").lock_timeout == 3
    assert Tpb.parse("READ_COMMITTED | NO_REC_VERSION | NOWAIT | READ_WRITE").isolation == \
        "read_committed_no_rec_version"
    assert Tpb.parse("READ_COMMITTED | READ_CONSISTENCY | WAIT | READ_WRITE").isolation == "read_consistency"
    assert Tpb.parse("CONSISTENCY | NOWAIT | READ_ONLY") == Tpb("serializable", 0, True,
                                                                "CONSISTENCY | NOWAIT | READ_ONLY")


def test_values_the_trace_cannot_carry() -> None:
    for param, fragment in ((Param(0, "blob", "0000000000000001"), "blob"), (Param(0, "db_key", "0A"), "DB_KEY"),
                            (Param(0, "<type26>", "<unknown>"), "unknown"),
                            (Param(0, "varchar(10)", "ab\udcff"), "not UTF-8"),
                            (Param(0, "varchar(90)", "abc...", truncated=True), "cut short")):
        with pytest.raises(NotReplayable, match=fragment):
            param.replay_value()


def test_session_config_raises_every_limit_and_escapes_the_name() -> None:
    text = session_config("/data/my_app (2).fdb")
    assert "time_threshold = 0" in text and "max_sql_length = 10485760" in text
    assert "max_arg_length = 65535" in text and "max_arg_count = 65535" in text
    assert "print_perf = true" in text and "log_trigger_start = false" in text
    # SIMILAR TO: its special characters escaped, a dot left alone (escaping it is an error).
    assert database_pattern("/data/my_app (2).fdb") == "%[\\\\/]my\\_app \\(2\\).fdb"
    assert session_config(None).startswith("database\n{")


def test_a_text_without_events_is_refused(tmp_path: Path) -> None:
    from fbbench.errors import FbbenchError

    empty = tmp_path / "notes.txt"
    empty.write_text("nothing to see\n")
    with pytest.raises(FbbenchError, match="holds no Firebird trace event"):
        parse_file(empty)
    with pytest.raises(FbbenchError, match="no such file"):
        parse_file(tmp_path / "missing.trace")
    assert parse_text("").events == {}
