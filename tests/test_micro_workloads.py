"""The field's micro tests as built-in workloads, end to end on real engines (embedded 3.0 / 4.0 /
5.0 and the loopback Firebird 3 server): iud, scan, connect and sysbench's six OLTP scripts, each
at a tiny scale, its checks passing and its headline present; iud leaves its table empty and its
indexes valid; every sysbench script leaves sbtest1 with the rows sysbench's scripts leave."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fbbench.engines import prepare_runtime, run_in_engine
from fbbench.workloads.spec import load_workload
from tests.conftest import ENGINES, run_cli
from tests.fb3server import fb3_server_unavailable

SYSBENCH_SCRIPTS = ["oltp_read_write", "oltp_read_only", "oltp_point_select", "oltp_update_index", "oltp_insert",
                    "oltp_delete"]
TIMED = ("--warmup", "1s", "--duration", "3s", "--interval", "1s")


def run_workload(tmp_path: Path, workload: str, *args: str) -> dict[str, Any]:
    out = tmp_path / f"{workload}.json"
    cli = run_cli("run", workload, *args, "--workdir", str(tmp_path / "work"), "--results",
                  str(tmp_path / "results.sqlite"), "--json", str(out), "--report", str(tmp_path / f"{workload}.html"),
                  "--no-sweep", timeout=300)
    assert cli.returncode == 0, cli.stdout[-4000:] + cli.stderr[-3000:]
    assert "Traceback" not in cli.stdout + cli.stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def passed(doc: dict[str, Any]) -> None:
    """Completed, every check and audit passed, the headline and every figure have a value."""
    assert doc["status"] == "completed", doc.get("failure")
    assert doc["checks"], "the workload has checks"
    for check in [*doc["checks"], *doc.get("audits", [])]:
        assert check["passed"] is not False, check
    figures = [doc["headline"], *doc.get("figures", [])]
    for figure in figures:
        assert figure["value"] is not None and figure["value"] >= 0, figure
    assert doc["headline"]["value"] > 0, doc["headline"]


def figure(doc: dict[str, Any], name: str) -> float:
    return float(next(f["value"] for f in doc.get("figures", []) if f["name"] == name))


@pytest.mark.parametrize("engine", ENGINES)
def test_iud_inserts_updates_and_deletes_in_phases_and_leaves_the_table_empty(tmp_path: Path, engine: str) -> None:
    doc = run_workload(tmp_path, "iud", "--engine", engine, "--scale", "rows=600", "--scale", "batch=200",
                       "--connections", "2", "--keep-database")
    passed(doc)
    assert doc["headline"]["name"] == "rows/s" and doc["headline"]["unit"] == " rows/s"
    assert doc["workload_description"].startswith("insert, update, delete: 600 rows per attachment")
    for operation in ("insert", "update", "delete"):
        assert figure(doc, f"{operation} rows/s") > 0
        assert doc["units"][operation]["ok"] == 6  # 600 / 200 batches, two attachments
    # A difference under a difference's name, a whole number as one: was "rows updated = rows inserted 0.000".
    audit = next(a for a in doc["audits"] if a["name"] == "rows updated − rows inserted")
    assert audit["value"] == 0 and audit["detail"].startswith("0 (") and "required = 0" in audit["detail"], audit
    assert doc["database"]["page_size"] == 16384  # the workload's own default, as the original test
    database = doc["database"]["path"]
    runtime = prepare_runtime(engine, tmp_path / "check")
    assert run_in_engine(runtime, "tests.micro_child:query", database, "select count(*) from iud_test") == [[0]]
    lines = run_in_engine(runtime, "tests.micro_child:validate", database)
    checked = [line for line in lines if "IUD_TEST" in line.upper()]
    assert checked and all("error" not in line.lower() for line in lines), lines
    indexes = run_in_engine(runtime, "tests.micro_child:query", database,
                            "select count(*) from rdb$indices where rdb$relation_name = 'IUD_TEST'")
    assert indexes == [[5]]


@pytest.mark.parametrize("engine", ENGINES)
def test_scan_reads_cold_then_warm(tmp_path: Path, engine: str) -> None:
    doc = run_workload(tmp_path, "scan", "--engine", engine, "--scale", "rows=20000", "--connections", "1")
    passed(doc)
    units = doc["units"]
    assert list(units) == ["natural_cold", "natural_warm", "range_cold", "range_warm"] or \
        set(units) == {"natural_cold", "natural_warm", "range_cold", "range_warm"}
    # The cold scan read the table from outside Firebird's cache; the warm one found it there.
    assert figure(doc, "cold scan page reads") > 100
    assert figure(doc, "warm scan page reads") < figure(doc, "cold scan page reads") / 10
    assert doc["headline"]["unit"] == " MB/s"


@pytest.mark.parametrize("engine", ENGINES)
def test_connect_attaches_per_unit(tmp_path: Path, engine: str) -> None:
    doc = run_workload(tmp_path, "connect", "--engine", engine, "--scale", "connects=30", "--connections", "2")
    passed(doc)
    assert doc["units"]["connect"]["ok"] == 60
    assert doc["headline"]["name"] == "connections/s"


@pytest.mark.parametrize("engine", ENGINES)
def test_sysbench_read_write_leaves_the_row_count(tmp_path: Path, engine: str) -> None:
    doc = run_workload(tmp_path, "sysbench", "--engine", engine, "--scale", "table_size=3000", "--connections", "2",
                       *TIMED)
    passed(doc)
    assert doc["units"]["oltp_read_write"]["ok"] > 0
    # Two transactions that wait for each other's rows end within the unit's lock time-out (1 s),
    # not at Firebird's deadlock scan 10 s later, which stalled both attachments for a whole 3 s run.
    assert doc["units"]["oltp_read_write"]["latency_ms"]["max"] < 5000
    assert doc["metrics"]["rows added"] == 0  # an end-only metric has its end (the planned last boundary)
    assert figure(doc, "statements/s") == pytest.approx(doc["headline"]["value"] * 18)
    assert figure(doc, "queries/s") == pytest.approx(doc["headline"]["value"] * 20)  # sysbench's: BEGIN, COMMIT too
    assert {f["unit"] for f in doc["figures"]} == {"/s"}  # was " /s": "158 /s"


def test_sysbench_transactions_that_lock_rows_wait_less_than_firebirds_deadlock_scan() -> None:
    """oltp_read_write's writes lock rows in random order, so two transactions can deadlock; Firebird
    finds that only after DeadlockTimeout (10 s), so the unit's own lock time-out must end it first."""
    for script in SYSBENCH_SCRIPTS:
        workload = load_workload("sysbench", {"script": script})
        for unit in workload.units:
            writes = [s for s in unit.statements if s.sql.split()[0].upper() in ("UPDATE", "DELETE", "INSERT")]
            if len(writes) > 1 and unit.transaction != "none":
                assert unit.lock_timeout is not None and 0 < unit.lock_timeout < 10, (script, unit.name)


@pytest.mark.parametrize("script", SYSBENCH_SCRIPTS[1:])
def test_every_sysbench_script_runs_its_statements_and_leaves_sysbenchs_row_count(tmp_path: Path, script: str) -> None:
    doc = run_workload(tmp_path, "sysbench", "--engine", "5.0", "--scale", "table_size=3000", "--scale",
                       f"script={script}", "--connections", "2", *TIMED)
    passed(doc)
    assert list(doc["units"]) == [script]
    ok = doc["units"][script]["ok"]
    assert ok > 0
    rows = doc["metrics"]["rows deleted" if script == "oltp_delete" else "rows added"]
    # The metric is read where the window opens and closes, a moment after those boundaries under
    # load: units that commit in between count on one side only. The checks are exact.
    slack = 10 + ok // 10
    if script == "oltp_insert":
        assert abs(rows - ok) <= slack  # every insert added its row
    elif script == "oltp_delete":
        assert 0 <= rows <= ok + slack  # a count of rows deleted, never "rows −345"
    else:
        assert rows == 0


@pytest.mark.server
def test_the_micro_workloads_on_a_server(tmp_path: Path) -> None:
    reason = fb3_server_unavailable()
    if reason:
        pytest.skip(reason)
    server = ("--engine", "server:/usr", "--connections", "2")
    passed(run_workload(tmp_path, "iud", *server, "--scale", "rows=400", "--scale", "batch=100"))
    passed(run_workload(tmp_path, "connect", *server, "--scale", "connects=20"))
    passed(run_workload(tmp_path, "scan", *server, "--scale", "rows=10000"))
    passed(run_workload(tmp_path, "sysbench", *server, "--scale", "table_size=2000", *TIMED))
