"""The Firebird trace read as a record of an application, from real trace output of embedded 3.0,
4.0 and 5.0: awkward parameter values are read exactly or reported as not replayable, never
silently wrong; a trace cut by small limits is recognised as cut."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fbbench.engines import parse_engine, prepare_runtime, run_in_engine
from fbbench.trace.config import database_pattern, session_config
from fbbench.trace.model import NotReplayable, Param, Tpb
from fbbench.trace.parser import parse_file, parse_text
from tests.conftest import ENGINES, fb3_server_or_skip


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


def _ended(recorder: subprocess.Popen[str], within: float, after: str) -> tuple[str, float]:
    """The recorder's output once it ended; a recorder (and its engine child) that did not end
    ``within`` seconds is killed and the test fails."""
    began = time.monotonic()
    try:
        out, err = recorder.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        children = subprocess.run(["pgrep", "-P", str(recorder.pid)], capture_output=True, text=True).stdout.split()
        for pid in [*children, str(recorder.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        out, err = recorder.communicate()
        pytest.fail(f"trace record did not end {within:g} s after {after}:\n{out}{err}")
    assert "Traceback" not in out + err, out + err
    return out, time.monotonic() - began


def _recording(recorder: subprocess.Popen[str], trace: Path) -> None:
    """Until the session runs: the file's opening lines are written out once the reader first
    finds nothing more to read."""
    deadline = time.monotonic() + 60
    while "max_arg_count" not in (trace.read_text(errors="replace") if trace.exists() else ""):
        assert recorder.poll() is None, recorder.communicate()
        assert time.monotonic() < deadline, "the session did not start within 60 s"
        time.sleep(0.1)


@pytest.mark.alone  # times the end: within 5 s of a second Ctrl-C
def test_trace_record_stops_on_ctrl_c_at_any_moment(tmp_path: Path) -> None:
    """fbbench trace record of the loopback Debian 3.0 server, stopped at chosen moments. Ctrl-C
    right after a load (the reader behind): the session is read to the end and stopped, every
    committed insert is in the file — the client library's own Ctrl-C handling used to cut the
    reader's connection (the rest lost) and, 1 stop in ~15, deadlocked the engine child's exit
    (the recorder never ended). A second Ctrl-C stops it at once; a Ctrl-C while the attach waits
    for a server that does not answer ends it; a server killed while recording ends it."""
    with fb3_server_or_skip(tmp_path) as fb3:
        data = tmp_path / "data"
        data.mkdir()
        data.chmod(0o777)  # the server process writes the database file
        password = tmp_path / "password"
        password.write_text(fb3.password + "\n")
        dsn = fb3.dsn(data / "traced.fdb")
        runtime = prepare_runtime(parse_engine(dsn), tmp_path / "load", user=fb3.user, password=fb3.password)
        run_in_engine(runtime, "tests.app_child:make_database", dsn)

        def record(name: str) -> tuple[subprocess.Popen[str], Path]:
            trace = tmp_path / f"{name}.trace"
            recorder = subprocess.Popen([sys.executable, "-m", "fbbench", "trace", "record", "--engine", dsn, "-o",
                                         str(trace), "--duration", "10m", "--user", fb3.user, "--password-file",
                                         str(password), "--workdir", str(tmp_path / "work")],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env={**os.environ, "COLUMNS": "200"})
            return recorder, trace

        # Right after a load that left the reader behind.
        recorder, trace = record("after")
        _recording(recorder, trace)
        committed = run_in_engine(runtime, "tests.app_child:insert_load", dsn, 2.0)
        recorder.send_signal(signal.SIGINT)
        out, _took = _ended(recorder, 30, "Ctrl-C")
        assert recorder.returncode == 0 and "stopped: interrupted (Ctrl-C)" in out, out
        assert "the session ended" not in out, out  # its connection was not cut under the reader
        inserts = [e for e in parse_file(trace).executions if e.sql.startswith("insert into loaded ")]
        assert len(inserts) == committed

        # A second Ctrl-C while the first one's stop reads on.
        recorder, trace = record("twice")
        _recording(recorder, trace)
        run_in_engine(runtime, "tests.app_child:insert_load", dsn, 2.0)
        recorder.send_signal(signal.SIGINT)
        time.sleep(0.2)
        recorder.send_signal(signal.SIGINT)
        out, took = _ended(recorder, 30, "a second Ctrl-C")
        assert recorder.returncode == 0 and "stopped: interrupted (Ctrl-C)" in out, out
        assert took < 5, (took, out)

        # Ctrl-C while the attach waits for a server that does not answer (stopped: SIGSTOP).
        frozen = fb3.processes()
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        try:
            recorder, trace = record("frozen")
            time.sleep(4)
            recorder.send_signal(signal.SIGINT)
            out, took = _ended(recorder, 30, "Ctrl-C")
        finally:
            for pid in frozen:
                os.kill(pid, signal.SIGCONT)
        assert recorder.returncode in (0, 130), out
        assert took < 5, (took, out)

        # The server killed while recording.
        recorder, trace = record("gone")
        _recording(recorder, trace)
        fb3.kill()
        out, took = _ended(recorder, 30, "the server was killed")
        assert recorder.returncode == 0 and "stopped: the server went away" in out, out
        assert took < 10, (took, out)
        runtime.remove(tmp_path / "load")


def _applications_commits(trace: Path) -> int:
    """Committed transactions of attachments that are not fbbench's own that inserted into
    ``loaded``, as far as the file holds them (it may still be written)."""
    from fbbench.errors import FbbenchError

    try:
        parsed = parse_file(trace)
    except FbbenchError:  # no event written out yet
        return 0
    return sum(1 for transaction in parsed.transactions
               if transaction.end == "commit" and parsed.attachments[transaction.attachment].process != "fbbench"
               and any(e.sql.startswith("insert into loaded ") for e in transaction.statements))


@pytest.mark.parametrize("gone", ["stopped", "killed", "session stopped elsewhere"])
@pytest.mark.alone  # times the end: within 10 s of the server going away
def test_trace_record_ends_when_the_server_goes_away_and_tells_what_it_captured(gone: str, tmp_path: Path) -> None:
    """fbbench trace record -d 5m of the loopback Debian 3.0 server, which is shut down (SIGTERM:
    it ends the session's output or breaks its connection, either) or killed (SIGKILL: the
    connection breaks) while the recording runs: the command ends within seconds, exit 0 (what
    was captured is a trace like any other), no traceback; its summary says the server went away
    and what the trace holds (the application's attachments, transactions, statements), and the
    file keeps all of it, ending with fbbench's closing lines. A session stopped from elsewhere
    while the server runs on ends its output alike: said as such (a shutdown that ended the
    output was once reported as "stopped: stopped", 1 run in 6)."""
    with fb3_server_or_skip(tmp_path) as fb3:
        data = tmp_path / "data"
        data.mkdir()
        data.chmod(0o777)  # the server process writes the database file
        dsn = fb3.dsn(data / "traced.fdb")
        runtime = prepare_runtime(parse_engine(dsn), tmp_path / "load", user=fb3.user, password=fb3.password)
        run_in_engine(runtime, "tests.app_child:make_database", dsn)
        trace = tmp_path / "gone.trace"
        recorder = subprocess.Popen([sys.executable, "-m", "fbbench", "trace", "record", "--engine", dsn, "-d", "5m",
                                     "-o", str(trace), "--user", fb3.user, "--workdir", str(tmp_path / "work")],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env={**os.environ, "COLUMNS": "200", "ISC_PASSWORD": fb3.password})
        _recording(recorder, trace)
        committed = run_in_engine(runtime, "tests.app_child:application_load", dsn, 50, 2)
        assert committed == 100
        # The reader caught up with the application: what the engine held is in the file (a
        # server that goes away takes what its reader had not read with it).
        deadline = time.monotonic() + 30
        while _applications_commits(trace) < committed:
            assert time.monotonic() < deadline, "the reader did not catch up within 30 s"
            time.sleep(0.2)
        if gone == "session stopped elsewhere":
            assert run_in_engine(runtime, "tests.app_child:stop_trace_sessions", fb3.services_host) == [1]
            why = "the session was stopped from elsewhere (the server still answers)"
        else:
            fb3.stop() if gone == "stopped" else fb3.kill()
            why = "the server went away"
        out, took = _ended(recorder, 30, f"the server was {gone}")
        assert took < 10, (took, out)
        assert recorder.returncode == 0, out
        lines = out.splitlines()
        (stopped,) = [line for line in lines if "stopped: " in line]
        assert stopped.startswith(f"trace {trace}: ") and stopped.endswith(f"; stopped: {why}"), out
        assert "  2 attachment(s), 100 transaction(s) started (100 committed, 0 rolled back), " \
               "100 statement execution(s)" in lines, out
        runtime.remove(tmp_path / "load")
        parsed = parse_file(trace)
        assert parsed.recorded["stopped"] == why and parsed.recorded["suspended"] is False
        assert _applications_commits(trace) == committed


def test_trace_record_reports_a_session_the_engine_suspended(tmp_path: Path) -> None:
    """The engine suspends a user trace session whose unread output passes MaxUserTraceLogSize
    (1 MB here) and says so in the output; what the application did meanwhile is missing. The
    recording's reader is paused (SIGSTOP of its engine child's process group) while a load
    writes a few MB of trace a second, then resumed and stopped with Ctrl-C: the summary reports
    the suspension, the file carries the engine's line and fbbench's closing lines say it."""
    with fb3_server_or_skip(tmp_path, {"MaxUserTraceLogSize": "1"}) as fb3:
        data = tmp_path / "data"
        data.mkdir()
        data.chmod(0o777)  # the server process writes the database file
        password = tmp_path / "password"
        password.write_text(fb3.password + "\n")
        dsn = fb3.dsn(data / "traced.fdb")
        runtime = prepare_runtime(parse_engine(dsn), tmp_path / "load", user=fb3.user, password=fb3.password)
        run_in_engine(runtime, "tests.app_child:make_database", dsn)
        trace = tmp_path / "suspended.trace"
        recorder = subprocess.Popen([sys.executable, "-m", "fbbench", "trace", "record", "--engine", dsn, "-d", "5m",
                                     "-o", str(trace), "--user", fb3.user, "--password-file", str(password),
                                     "--workdir", str(tmp_path / "work")],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env={**os.environ, "COLUMNS": "200"})
        _recording(recorder, trace)
        (reader,) = subprocess.run(["pgrep", "-P", str(recorder.pid)], capture_output=True, text=True).stdout.split()
        os.killpg(int(reader), signal.SIGSTOP)  # the engine child runs in a process group of its own
        try:
            committed = run_in_engine(runtime, "tests.app_child:insert_load", dsn, 2.0)
        finally:
            os.killpg(int(reader), signal.SIGCONT)
        runtime.remove(tmp_path / "load")
        time.sleep(1)
        recorder.send_signal(signal.SIGINT)
        out, _took = _ended(recorder, 30, "Ctrl-C")
        assert recorder.returncode == 0 and "stopped: interrupted (Ctrl-C)" in out, out
        assert "the engine suspended the session (--- Session " in out and "is suspended as its log is full ---)" \
            in out and "missing from the trace" in out, out
        parsed = parse_file(trace)
        assert parsed.recorded["suspended"] is True
        assert len(parsed.suspended) >= 1 and parsed.suspended[0].endswith("is suspended as its log is full ---")
        # The application's inserts while the session was suspended are not in the trace.
        inserts = [e for e in parsed.executions if e.sql.startswith("insert into loaded ")]
        assert 0 < len(inserts) < committed, (len(inserts), committed)


def test_trace_record_of_a_server_it_cannot_reach_leaves_no_file(tmp_path: Path) -> None:
    """Nothing recorded, nothing left: a trace file holding only fbbench's opening lines would make
    the retry with the same -o refuse to overwrite it."""
    import socket

    from tests.conftest import assert_clean_error, run_cli

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]  # free once closed: nothing listens there
    trace = tmp_path / "none.trace"
    assert_clean_error(run_cli("trace", "record", "--engine", f"127.0.0.1/{port}:/data/app.fdb", "-d", "5s",
                               "-o", str(trace), "--workdir", str(tmp_path / "work"), env={"ISC_PASSWORD": "x"}),
                       "cannot reach the server")
    assert not trace.exists()
