"""A user's own application as the workload, end to end on real engines: a docflow database built
by Firebird 3.0 and backed up with gbak stands in for the user's database; docflow's load stands in
for the application, traced on embedded 5.0 (run --trace) and on the loopback Debian 3.0 server
(trace record from another process); the trace becomes a workload that runs on 3.0, 4.0 and 5.0
against the restored backup with the traced transaction mix."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest

from fbbench.engines import parse_engine, prepare_runtime, run_in_engine
from fbbench.trace.parser import parse_file
from fbbench.trace.shapes import select
from fbbench.workloads.spec import load_workload
from tests.conftest import ENGINES, built_once, fb3_server_or_skip, run_cli

SCALE = ["--scale", "workers=4", "--scale", "init_rounds=2"]
CONNECTIONS = 4


def _child(version: str, workdir: Path, target: str, *args: object) -> Any:
    runtime = prepare_runtime(parse_engine(version), workdir)
    try:
        return run_in_engine(runtime, target, *args)
    finally:
        runtime.remove(workdir)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """docflow's database as a 3.0 gbak backup (the user's backup), and a trace of docflow's load
    on a database restored from it on embedded 5.0 (the user's application at work)."""
    with built_once("app", tmp_path_factory) as (directory, done):
        if not done:
            _build_app(directory)
    return {"directory": directory, "backup": directory / "docflow.fbk", "trace": directory / "app.trace",
            "report": directory / "traced.json", "work": directory / "work"}


def _build_app(directory: Path) -> None:
    work = directory / "work"
    built = run_cli("run", "docflow", "--engine", "3.0", *SCALE, "--transactions", "1", "-c", "1", "--no-sweep",
                    "--workdir", str(work), "--results", str(directory / "build.sqlite"), timeout=600)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr
    (population,) = (work / "dbcache").glob("docflow-*.fdb")
    backup = directory / "docflow.fbk"
    _child("3.0", work, "tests.app_child:backup", str(population), str(backup))
    trace, report = directory / "app.trace", directory / "traced.json"
    # An application that leaves the engine room (20 units/s in all, open loop: 5 a second per
    # attachment), as most do: a replay at twice the speed can keep up, and the attachments think
    # between their transactions. At 60 units/s, in a fresh clone's parallel phase on a slower
    # machine, the traced median gap came out at 5.0 ms, on the edge of "did not think" (5 ms).
    traced = run_cli("run", "docflow", "--database-from", str(backup), "--engine", "5.0", *SCALE,
                     "-c", str(CONNECTIONS), "--warmup", "0s", "--duration", "8s", "--interval", "2s", "--seed", "7",
                     "--rate", "20", "--trace", str(trace), "--json", str(report), "--workdir", str(work),
                     "--results", str(directory / "results.sqlite"), timeout=600)
    assert traced.returncode == 0, traced.stdout[-3000:] + traced.stderr


def _committed_by_attachment(trace_path: Path) -> dict[int, int]:
    selection = select(parse_file(trace_path))
    counts: Counter[int] = Counter()
    for transaction in selection.complete:
        if transaction.end == "commit" and transaction.statements[0].sql.startswith("execute procedure docflow_"):
            counts[transaction.attachment] += 1
    return dict(counts)


def test_run_trace_holds_every_committed_unit_with_complete_parameters(app: dict[str, Path]) -> None:
    document = json.loads(app["report"].read_text())
    committed = sum(unit["ok"] for unit in document["units"].values())
    per_attachment = _committed_by_attachment(app["trace"])
    assert len(per_attachment) == CONNECTIONS
    # A unit still running when the measured period ended committed, but the run did not count it.
    assert committed <= sum(per_attachment.values()) <= committed + CONNECTIONS
    trace = parse_file(app["trace"])
    executions = [e for t in select(trace).complete for e in t.statements]
    assert executions and all(e.problems() == [] and not e.sql_truncated for e in executions)
    assert trace.recorded["max_arg_count"] == 65_535 and not trace.suspended
    assert document["trace"]["suspended"] == [] and document["trace"]["file"] == str(app["trace"])


def _replay(app: dict[str, Path], directory: Path, *args: str) -> dict[str, Any]:
    report = directory / f"replay-{len(list(directory.glob('replay-*.json')))}.json"
    result = run_cli("replay", str(app["trace"]), "--database-from", str(app["backup"]), "--interval", "1s",
                     "--json", str(report), "--workdir", str(app["work"]),
                     "--results", str(directory / "results.sqlite"), *args, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    document: dict[str, Any] = json.loads(report.read_text())
    return document


# Alone: a statement the trace shows still running when the next action began runs beside that
# action in the replay too (ordered at its start), so how many such overlaps change rows depends on
# the machine's pace. The same trace replayed strictly diverged in 4 of 454 transactions on a quiet
# machine (twice) and in 23 in the suite's parallel phase (four workers on two cores); a timed
# replay of it, quiet, in 24. The module's traced application is built once, in whichever phase
# comes first (tests/conftest.py built_once).
@pytest.mark.alone
def test_a_strict_replay_replays_every_transaction_and_diverges_in_few(app: dict[str, Path],
                                                                        tmp_path: Path) -> None:
    trace = parse_file(app["trace"])
    complete = len(select(trace).complete)
    document = _replay(app, tmp_path, "--engine", "5.0", "--order", "strict")
    replay = document["replay"]
    assert document["status"] == "completed" and replay["order"] == "strict"
    assert replay["transactions"]["replayed"] == replay["transactions"]["planned"] >= complete
    assert replay["statements"]["executed"] == replay["statements"]["planned"]
    # docflow at the scale it was traced, every action in the order the engine logged it: the same
    # work, nearly. The engine logs a commit a moment after it became visible, so a snapshot taken
    # in that moment saw rows the trace's order puts after it; docflow's service units aggregate
    # what every attachment committed, and documents flow between workers. For the same reason a
    # unit may find no document it can take, or a service unit another attachment still runs, or
    # a row lock the order has not yet released (docflow says so with its exceptions, or waits
    # 3 s and meets a conflict; CI saw one such error on a loaded machine). Those few transactions
    # are listed, each with what was traced and what was replayed; no other error, no failed commit.
    for item in replay["divergence_list"]:
        if item["kind"] == "error":
            detail = item["detail"]
            assert detail["traced_gdscode"] is None, json.dumps(item)
            assert detail["conflict"] or (detail["exception"] or "").startswith("DOCFLOW_"), json.dumps(item)
            continue
        assert item["kind"] == "rows changed", json.dumps(item)
        assert set(item["detail"]) == {"traced", "replayed"}, json.dumps(item)
    assert replay["divergences"] <= 0.02 * replay["transactions"]["replayed"]
    assert replay["stalls"] == 0
    units = document["units"]
    # Every replayed transaction is counted once, an error divergence among the conflicts or errors.
    outcomes = ("ok", "rolled_back", "conflicts", "errors")
    assert sum(u[k] for u in units.values() for k in outcomes) == replay["transactions"]["replayed"], units
    errors = sum(1 for item in replay["divergence_list"] if item["kind"] == "error")
    assert sum(u["conflicts"] + u["errors"] for u in units.values()) >= errors, units
    executions = {row["sql"]: row for row in replay["statement_latency"]}
    assert executions and all(row["traced_ms"]["count"] == row["executions"] for row in executions.values())



STALLING = Path(__file__).parent / "data" / "trace" / "strict-lock-order.trace"


@pytest.mark.alone  # times the stall bound: 10–20 s measured, under 50 s in all
def test_a_strict_order_that_cannot_be_followed_is_given_up_and_reported(tmp_path: Path) -> None:
    """A trace whose strict order the engine cannot follow (tests/data/trace/strict-lock-order.trace,
    written by hand, see tests/data/README.md): attachment 1 updates row 1; attachment 2 updates
    row 1 too and commits; then attachment 1 commits. Replayed in that order, attachment 2's
    update waits for the row lock attachment 1 holds until its commit, which the order puts after
    attachment 2's commit: a deadlock of the replay, not of the engine. The gate waits its stall
    bound (10 s) for the action that cannot come, lets attachment 1 run out of order and says so —
    in the document (a stall, an "order given up" divergence naming both actions) and on the
    console — and both transactions are replayed: the run completes instead of hanging."""
    import psutil

    backup = tmp_path / "acct.fbk"
    _child("5.0", tmp_path / "build", "tests.app_child:make_acct_backup", str(tmp_path / "acct.fdb"), str(backup))
    report = tmp_path / "replay.json"
    began = time.monotonic()
    replay = subprocess.Popen([sys.executable, "-m", "fbbench", "replay", str(STALLING), "--database-from", str(backup),
                               "--engine", "5.0", "--order", "strict", "--no-sweep", "--no-monitor", "--json",
                               str(report), "--workdir", str(tmp_path / "work"),
                               "--results", str(tmp_path / "results.sqlite")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "COLUMNS": "200"})
    try:
        out, err = replay.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        for process in [*psutil.Process(replay.pid).children(recursive=True), psutil.Process(replay.pid)]:
            process.kill()
        out, err = replay.communicate()
        pytest.fail(f"the strict replay did not end within 60 s:\n{out[-3000:]}{err}")
    took = time.monotonic() - began
    assert replay.returncode == 0 and "Traceback" not in out + err, out[-3000:] + err
    document = json.loads(report.read_text())
    measured = document["replay"]
    assert document["status"] == "completed" and measured["order"] == "strict"
    assert measured["transactions"] == {"planned": 2, "replayed": 2}
    assert measured["statements"] == {"planned": 2, "executed": 2}
    assert measured["stalls"] == 1 and measured["divergences_by_kind"] == {"order given up": 1}
    (item,) = measured["divergence_list"]
    # Action 6 (attachment 1's commit) waited for action 5 (attachment 2's commit) the 10 s bound.
    assert item["kind"] == "order given up" and item["attachment"] == 1
    assert item["detail"] == {"action": 6, "for_action": 5, "of_attachment": 2, "waited_seconds": 10.0}
    assert 10 <= document["measure_seconds"] < 20 and took < 50, (document["measure_seconds"], took)
    assert "strict order given up 1 time(s)" in out, out
    assert "order given up: attachment 1: its action 6 waited 10 s for action 5 (attachment 2's), which did not " \
           "come, and ran out of the traced order" in out, out

@pytest.mark.alone  # times the replay against the traced seconds (±25 %)
def test_a_replay_at_double_speed_takes_half_the_time_and_compares_across_engines(app: dict[str, Path],
                                                                                   tmp_path: Path) -> None:
    slow = _replay(app, tmp_path, "--engine", "4.0")
    fast = _replay(app, tmp_path, "--engine", "5.0", "--speed", "2")
    traced = fast["replay"]["seconds"]
    assert slow["measure_seconds"] == pytest.approx(traced, rel=0.25)
    assert fast["measure_seconds"] == pytest.approx(traced / 2, rel=0.25)
    for document in (slow, fast):
        replay = document["replay"]
        assert replay["transactions"]["replayed"] == replay["transactions"]["planned"]
        # Timed, no order across attachments: what diverges is listed, each with where and why.
        assert replay["divergences"] == sum(replay["divergences_by_kind"].values())
        assert replay["divergences_listed"] == min(replay["divergences"], 200)
        for item in replay["divergence_list"]:
            assert item["kind"] in replay["divergences_by_kind"] and item["transaction"] is not None
    compared = tmp_path / "compare.json"
    result = run_cli("compare", slow["run_id"], fast["run_id"], "--axis", "engine", "--force", "--json",
                     str(compared), "--results", str(tmp_path / "results.sqlite"))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    comparison = json.loads(compared.read_text())
    assert comparison["conditions"]["axis_requested"] == ["engine"]
    assert {row["key"] for row in comparison["conditions"]["axis"]} >= {"engine.version"}
    # The replay's speed differs too, and is named as such: the same trace, not the same load.
    assert any(row["key"] == "load.replay" for row in comparison["conditions"]["differences"])


def test_replay_repeat_makes_a_series_per_engine_that_compare_gives_an_interval(app: dict[str, Path],
                                                                               tmp_path: Path) -> None:
    """One replay per engine gives compare a single run a side, "no interval"; --repeat N replays
    N times, each on a fresh copy of the restored backup, as one series."""
    from fbbench.store import ResultsStore

    results = tmp_path / "results.sqlite"
    series = {}
    for version in ("3.0", "5.0"):
        report = tmp_path / f"{version}.json"
        result = run_cli("replay", str(app["trace"]), "--database-from", str(app["backup"]), "--engine", version,
                         "--speed", "4", "--repeat", "2", "--interval", "1s", "--json", str(report),
                         "--workdir", str(app["work"]), "--results", str(results), timeout=900)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr
        documents = [json.loads((tmp_path / f"{version}-{index}.json").read_text()) for index in (1, 2)]
        for document in documents:
            replay = document["replay"]
            assert replay["transactions"]["replayed"] == replay["transactions"]["planned"]
        with ResultsStore(results, create=False) as store:
            (found,) = {store.load_run(d["run_id"])["series_id"] for d in documents}
            assert found is not None and len(store.series_runs(found)) == 2
        assert f"series {found}: 2 of 2 repeat(s) completed" in " ".join(result.stdout.split())
        series[version] = found
    compared = tmp_path / "compare.json"
    result = run_cli("compare", series["3.0"], series["5.0"], "--axis", "engine", "--json", str(compared),
                     "--results", str(results))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    comparison = json.loads(compared.read_text())
    assert [(side["kind"], len(side["runs"])) for side in comparison["sides"]] == [("series", 2), ("series", 2)]
    headline = next(f for f in comparison["figures"] if f["kind"] == "headline")
    assert headline["ratios"]["B"]["low"] is not None and headline["ratios"]["B"]["high"] is not None


def test_a_workload_from_the_trace_runs_everywhere_with_the_traced_mix(app: dict[str, Path], tmp_path: Path) -> None:
    generated = tmp_path / "myapp"
    made = run_cli("workload", "from-trace", str(app["trace"]), "-o", str(generated))
    assert made.returncode == 0, made.stderr
    workload = load_workload(str(generated))  # loads without errors, no scripts, no load steps
    assert not workload.scripts and not workload.load
    readme = (generated / "README.md").read_text()
    assert "## What it covers" in readme and "## What it leaves out, and why" in readme
    traced = Counter({unit.name: unit.weight for unit in workload.units})
    total_traced = sum(traced.values())
    assert all(unit.statements[0].sql.startswith("execute procedure docflow_") for unit in workload.units)
    client_order = workload.unit("docflow_client_order")
    assert str(client_order.statements[0].params[0]) == "home(4)"  # each attachment its worker
    # The traced pace by default; --scale think=off runs the units back to back (the engine's capacity).
    assert workload.scale["think"] == 1 and client_order.think_time > 0  # "on"
    assert all(unit.think_time == 0 for unit in load_workload(str(generated), {"think": "off"}).units)
    # What is asserted is the mix, not the pace: the units run back to back (at the traced pace the
    # 2,000 units of each engine were half a minute of waiting).
    for version in ENGINES:
        report = tmp_path / f"{version}.json"
        result = run_cli("run", str(generated), "--database-from", str(app["backup"]), "--engine", version,
                         "-c", str(CONNECTIONS), "--transactions", "500", "--seed", "11", "--no-sweep",
                         "--scale", "think=off",
                         "--json", str(report), "--workdir", str(app["work"]),
                         "--results", str(tmp_path / "results.sqlite"), timeout=900)
        assert result.returncode == 0, version + result.stdout[-3000:] + result.stderr
        units = json.loads(report.read_text())["units"]
        ran = {name: sum(u[k] for k in ("ok", "rolled_back", "conflicts", "errors")) for name, u in units.items()}
        total = sum(ran.values())
        assert total == 500 * CONNECTIONS
        # The draws are seeded, but a unit's parameters draw from the same stream as the next unit's
        # choice, and what they draw depends on the rows found: the mix differs between machines.
        # So each unit's count is tested against its traced share, exactly (binomial), all of them
        # together at a one-in-a-million false alarm (Bonferroni). A fixed margin of 2 % on 2,000
        # units was two standard deviations for a 32 % share: CI failed it at 2.04 %.
        for name, weight in traced.items():
            share = weight / total_traced
            p_value = binomtest(ran.get(name, 0), total, share).pvalue
            assert p_value >= 1e-6 / len(traced), (version, name, share, ran, traced)
        # No error but DOCFLOW_SERVICE_BUSY in a service unit (a user exception, isc_except): the
        # trace at 20 units/s never met two attachments aggregating at once, so the generated
        # workload does not roll back on it (it knows only the exceptions the trace rolled back on);
        # at full speed on a loaded machine a service unit meets one now and then (seen on 3.0,
        # twice in a row: 1 of 2,000 units). How often follows the machine's pace: in a fresh clone's
        # parallel phase (four workers on two cores) 22 of 2,000 units on 5.0, so no share of all units
        # is asserted, only that most service units got their turn.
        for name, unit in units.items():
            if unit["errors"]:
                assert name.endswith("_saldo") and set(unit["errors_by_gdscode"]) == {"335544517"}, (version, units)
                assert unit["errors"] <= 0.5 * ran[name], (version, name, units)


def test_a_generated_workload_is_written_only_into_a_new_or_empty_directory(app: dict[str, Path],
                                                                             tmp_path: Path) -> None:
    from tests.conftest import assert_clean_error

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my own notes")
    assert_clean_error(run_cli("workload", "from-trace", str(app["trace"]), "-o", str(mine)), "is not empty")
    assert (mine / "notes.txt").read_text() == "my own notes" and len(list(mine.iterdir())) == 1
    assert_clean_error(run_cli("workload", "from-trace", str(tmp_path / "none.trace"), "-o", str(tmp_path / "w")),
                       "no such file")
    assert_clean_error(run_cli("workload", "from-trace", str(app["backup"]), "-o", str(tmp_path / "w")),
                       "holds no Firebird trace event")


FLOW = Path(__file__).parent / "workloads" / "flow"
MISMATCHED = "select sum(touched), sum(iif(touched <> confirmed, 1, 0)) from acct"


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """tests/workloads/flow traced on embedded 5.0 (its unit "pair" gives one drawn id to both of
    its updates, "loose" draws one per select), a backup of the database it ran on, and the
    workload generated from the trace."""
    directory = tmp_path_factory.mktemp("flow")
    work, trace, report = directory / "work", directory / "flow.trace", directory / "traced.json"
    traced = run_cli("run", str(FLOW), "--engine", "5.0", "-c", "2", "--transactions", "100", "--seed", "3",
                     "--no-sweep", "--trace", str(trace), "--keep-database", "--json", str(report),
                     "--workdir", str(work), "--results", str(directory / "results.sqlite"), timeout=600)
    assert traced.returncode == 0, traced.stdout[-3000:] + traced.stderr
    database = json.loads(report.read_text())["database"]["path"]
    backup = directory / "flow.fbk"
    _child("5.0", work, "tests.app_child:backup", database, str(backup))
    ((touched, mismatched),) = _child("5.0", work, "tests.micro_child:query", database, MISMATCHED)
    assert touched > 0 and mismatched == 0  # the traced run kept the two counters of a row equal
    generated = directory / "generated"
    made = run_cli("workload", "from-trace", str(trace), "-o", str(generated))
    assert made.returncode == 0, made.stderr
    return {"directory": directory, "work": work, "backup": backup, "touched": touched, "generated": generated}


def test_a_value_two_statements_of_a_traced_transaction_were_given_is_drawn_once(flow: dict[str, Any]) -> None:
    from fbbench.workloads.generators import Reference

    pair = load_workload(str(flow["generated"])).unit("update_acct")
    ((name, _drawn),) = pair.lets
    assert [s.params for s in pair.statements] == [(Reference(name),), (Reference(name),)]
    readme = (flow["generated"] / "README.md").read_text()
    assert "at most 2 at once, and 2 at once for half of the time" in readme and "--connections 2" in readme
    # Run on the traced database: each unit touches one row with both its updates, so every row's
    # two counters stay equal (two draws apart would part them in nearly every unit).
    report = flow["directory"] / "generated.json"
    result = run_cli("run", str(flow["generated"]), "--database-from", str(flow["backup"]), "--engine", "5.0",
                     "-c", "2", "--transactions", "200", "--seed", "5", "--no-sweep", "--keep-database",
                     "--json", str(report), "--workdir", str(flow["work"]),
                     "--results", str(flow["directory"] / "results.sqlite"), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    document = json.loads(report.read_text())
    ok = document["units"]["update_acct"]["ok"]
    assert ok > 50 and document["units"]["update_acct"]["errors"] == 0
    rows = _child("5.0", flow["work"], "tests.micro_child:query", document["database"]["path"], MISMATCHED)
    assert rows == [[flow["touched"] + ok, 0]]


def test_values_two_statements_were_given_apart_stay_apart(flow: dict[str, Any]) -> None:
    from fbbench.workloads.generators import Generator

    # Drawn apart from three ids, the two selects' values were equal in about a third of the units.
    loose = load_workload(str(flow["generated"])).unit("select_acct")
    assert loose.lets == ()
    first, second = (s.params[0] for s in loose.statements)
    assert isinstance(first, Generator) and isinstance(second, Generator)
    # The three ids were drawn about as often each: a uniform draw over them, each statement its own.
    assert (first.kind, first.args) == (second.kind, second.args) == ("uniform", (1, 3))
    assert "`select_acct`, statement 2" not in (flow["generated"] / "README.md").read_text()  # no flow reported


@pytest.mark.server
def test_trace_record_of_a_server_from_another_process(app: dict[str, Path], tmp_path: Path) -> None:
    """docflow restored from the backup on the loopback Debian 3.0 server (in place, the backup sent
    through the services connection) and run against it, while fbbench trace record — another
    process — traces the server until Ctrl-C: every unit the run committed is in the trace."""
    # The engine suspends a user trace session whose unread output passes MaxUserTraceLogSize
    # (10 MB by default); the run below is not throttled, and on a loaded machine the reader fell
    # that far behind (suspended, 2,055 of 2,607 units traced). An application's DBA sizes it alike.
    with fb3_server_or_skip(tmp_path, {"MaxUserTraceLogSize": "1000"}) as fb3:
        data = tmp_path / "data"
        data.mkdir()
        data.chmod(0o777)  # the server process writes the database file
        password = tmp_path / "password"
        password.write_text(fb3.password + "\n")
        dsn = fb3.dsn(data / "docflow.fdb")
        credentials = ["--user", fb3.user, "--password-file", str(password), "--workdir", str(tmp_path / "work")]
        trace = tmp_path / "server.trace"
        recorder = subprocess.Popen([sys.executable, "-m", "fbbench", "trace", "record", "--engine", dsn, "-o",
                                     str(trace), "--duration", "10m", *credentials],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env={**os.environ, "COLUMNS": "200"})
        try:
            deadline = time.monotonic() + 60
            while not (trace.exists() and "max_arg_count" in trace.read_text()) and time.monotonic() < deadline:
                time.sleep(0.2)
            report = tmp_path / "run.json"
            run = run_cli("run", "docflow", "--database-from", str(app["backup"]), "--engine", dsn, *SCALE,
                          "-c", str(CONNECTIONS), "--warmup", "0s", "--duration", "6s", "--interval", "2s",
                          "--json", str(report), "--results", str(tmp_path / "results.sqlite"), *credentials,
                          timeout=600)
            assert run.returncode == 0, run.stdout[-3000:] + run.stderr
        finally:
            recorder.send_signal(signal.SIGINT)
            out, err = recorder.communicate(timeout=120)
        assert recorder.returncode == 0, out + err
        assert "stopped: interrupted (Ctrl-C)" in out and "statement execution(s)" in out, out
        document = json.loads(report.read_text())
        assert document["population"]["source"] == "restored in place"
        committed = sum(unit["ok"] for unit in document["units"].values())
        per_attachment = _committed_by_attachment(trace)
        assert len(per_attachment) == CONNECTIONS
        assert committed <= sum(per_attachment.values()) <= committed + CONNECTIONS
        trace_text = parse_file(trace)
        assert {a.process for a in trace_text.attachments.values() if a.id not in per_attachment} <= {"fbbench", ""}


def test_a_traced_uniform_draw_becomes_uniform_not_a_list_of_its_draws() -> None:
    """from-trace turned an application's uniform(1, 5) into a 100-element choice(…); values that
    are not drawn evenly, or not every number of their range, stay a choice as often as seen."""
    import random

    from fbbench.workloads.from_trace import fit

    rng = random.Random(31)
    even = fit([(1 + i % 4, ("int", rng.randint(1, 5))) for i in range(300)], attachments=4)
    assert (even.generator.kind, even.generator.args) == ("uniform", (1, 5)), even
    skewed = fit([(1, ("int", value)) for value in [1] * 200 + [2] * 50 + [3] * 50])
    assert skewed.generator.kind == "choice"
    gaps = fit([(1, ("int", value)) for value in [1, 2, 5] * 60])
    assert gaps.generator.kind == "choice"
