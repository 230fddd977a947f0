"""``--architecture super|superclassic|classic`` end to end, as a user runs it.

Embedded 5.0 and 4.0 run a short TPC-C under each architecture — Classic as one process per
attachment — with every check passing, and the architecture the engine really ran, read from
MON$ATTACHMENTS and MON$MEMORY_USAGE while measuring, recorded and equal to the request.
Ctrl-C during a Classic run ends it within seconds, every attachment process gone, what was
measured kept. ``--architecture`` and ``--set ServerMode`` must agree.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fbbench import loadcore
from fbbench.engines.template import ATTACHMENT_NAME
from fbbench.errors import FbbenchError
from fbbench.runner import limits
from fbbench.runner.settings import RunSettings, from_sources
from fbbench.store import ResultsStore
from fbbench.workloads.figures import OUTCOMES
from tests.conftest import assert_clean_error, process_running, run_cli
from tests.test_run_tpcc import assert_checks_and_audits, assert_contract, assert_engine_observed

TPCC = ("tpcc", "--scale", "items=2000", "--scale", "customers=300", "--scale", "orders=300", "-c", "3",
        "--warmup", "1s", "--duration", "4s", "--interval", "1s")
MODES = {"super": "Super", "superclassic": "SuperClassic", "classic": "Classic"}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("architecture") / "results.sqlite"


def run_architecture(out: Path, results: Path, engine: str, architecture: str) -> tuple[dict[str, Any], str]:
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / f"{engine}-{architecture}.json"
    cli = run_cli("run", *TPCC, "--engine", engine, "--architecture", architecture, "--results", str(results),
                  "--json", str(json_path), "--report", str(out / f"{engine}-{architecture}.html"), timeout=300)
    assert cli.returncode == 0, cli.stdout[-4000:] + cli.stderr[-4000:]
    assert "Traceback" not in cli.stdout + cli.stderr, cli.stderr
    return json.loads(json_path.read_text()), cli.stdout


@pytest.mark.parametrize("engine", ["5.0", "4.0"])
@pytest.mark.parametrize("architecture", ["super", "superclassic", "classic"])
def test_tpcc_under_each_architecture(engine: str, architecture: str, results: Path, tmp_path: Path) -> None:
    doc, output = run_architecture(tmp_path, results, engine, architecture)
    try:
        assert_contract(doc)
    except AssertionError as failed:
        raise AssertionError(f"{failed}\n{_what_the_run_saw(doc)}") from failed
    assert_checks_and_audits(doc)
    if architecture == "super":
        assert_engine_observed(doc)
    else:
        assert_observed_per_attachment(doc)

    recorded = doc["engine"]["architecture"]
    assert recorded["requested"] == recorded["verified"] == architecture, recorded
    evidence = recorded["evidence"]
    assert evidence["attachments"] == 3
    # Classic: a server process per attachment, none of them the observer's; the threads of
    # SuperServer and SuperClassic: the observer's own process.
    assert evidence["server_processes"] == (3 if architecture == "classic" else 1), evidence
    assert evidence["shares_process_with_observer"] is (architecture != "classic")
    assert (evidence["database_pool_bytes"] > 0) is (architecture == "super")  # only SuperServer shares a pool
    assert doc["engine"]["mode"] == MODES[architecture]  # RDB$CONFIG: the engine read the ServerMode
    assert doc["settings"]["architecture"] == architecture
    # Firebird's default cache follows the architecture: 2048 pages shared, 256 per attachment.
    assert doc["database"]["page_buffers"] == (2048 if architecture == "super" else 256)
    assert f"architecture {architecture} (verified: 3 attachment(s) in " in output

    processes = recorded["processes"]
    if architecture != "classic":
        assert processes is None
        return
    assert [p["index"] for p in processes] == [1, 2, 3] and len({p["pid"] for p in processes}) == 3
    assert all(p["returncode"] == 0 and not p["killed"] and p["peak_pss_bytes"] > 0 for p in processes)
    # Merged exactly: the stored per-unit totals are the sum of the stored measured intervals,
    # their histograms included.
    with ResultsStore(results, create=False) as store:
        run = store.load_run(doc["run_id"])
    measured = [row for row in run["intervals"] if row["phase"] == "measure"]
    for name, totals in run["units"].items():
        rows = [row for row in measured if row["unit"] == name]
        for key in OUTCOMES:
            assert totals[key] == sum(row[key] for row in rows), (name, key)
        merged = loadcore.histogram_summary([row["histogram"] for row in rows])
        assert merged["count"] == sum(totals[key] for key in OUTCOMES) > 0, name
        assert loadcore.histogram_summary([totals["histogram"]]) == merged


def _what_the_run_saw(doc: dict[str, Any]) -> str:
    """What a failed contract needs beside it to be understood: a Classic 5.0 run once measured
    no unit at all in 4 s (25 in its warm-up, no error), and its document was gone with the test's
    temporary directory."""
    units = [(row["index"], row["phase"], row["unit"], *(row.get(key) for key in OUTCOMES))
             for row in doc.get("intervals", [])]
    samples = [(s.get("index"), s.get("sample"), s.get("record"), s.get("process"))
               for s in doc.get("engine_samples") or []]
    return (f"units per interval: {units}\nengine samples: {samples}\nactivity: {doc.get('engine_activity')}\n"
            f"log: {doc.get('log_findings')}\nprocesses: {doc['engine']['architecture'].get('processes')}\n"
            f"phases: {doc.get('phases')}")


def assert_observed_per_attachment(doc: dict[str, Any]) -> None:
    """SuperClassic and Classic: the sampler sums the attachments' own counters (there are no
    database-level ones), the attachment processes' included. The attachments detach right at the
    end of the measured period, taking their counters with them before the last reading, so the
    last interval has no I/O or record figures (a known limit of per-attachment sums)."""
    measured = sorted({row["index"] for row in doc["intervals"] if row["phase"] == "measure"})
    samples = {sample["index"]: sample for sample in doc["engine_samples"]}
    for index in measured[:-1]:
        sample = samples[index]
        assert sample["database"]["per_attachment_sums"] == 1
        assert sample["io"]["page_fetches"] > 0 and sample["record"]["inserts"] > 0, sample
        assert sample["tables"]["ORDER_LINE"]["inserts"] > 0


def _attachment_processes(root: int) -> list[int]:
    """Classic's attachment processes among the descendants of ``root``: forked from the run's
    attachment template (by their name), or new interpreters (by their command)."""
    children: dict[int, list[int]] = {}
    commands: dict[int, bytes] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                commands[int(entry.name)] = (entry / "cmdline").read_bytes()
                names[int(entry.name)] = (entry / "comm").read_text().strip()
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            if names.get(child) == ATTACHMENT_NAME or b"classic_worker" in commands.get(child, b""):
                found.append(child)
    return sorted(found)


@pytest.mark.alone  # times the end: within 10 s of Ctrl-C
def test_ctrl_c_during_a_classic_run(results: Path, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "fbbench", "run", *TPCC[:7], "-c", "3", "--warmup", "1s", "--duration", "120s",
               "--interval", "1s", "--no-sweep", "--architecture", "classic", "--results", str(results),
               "--report", str(tmp_path / "r.html")]
    cli = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "COLUMNS": "200"})
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(cli.stdout.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        deadline = time.monotonic() + 120
        workers: list[int] = []
        while time.monotonic() < deadline:
            workers = _attachment_processes(cli.pid)
            if len(workers) == 3 and sum(" measure " in line for line in lines) >= 2:
                break
            assert cli.poll() is None, "".join(lines)[-3000:]
            time.sleep(0.2)
        assert len(workers) == 3, "".join(lines)[-3000:]
        cli.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends to fbbench
        signalled = time.monotonic()
        cli.wait(timeout=60)
        ended = time.monotonic() - signalled
    finally:
        if cli.poll() is None:
            cli.kill()
    reader.join(5)
    stderr = cli.stderr.read() if cli.stderr else ""  # type: ignore[union-attr]
    output = "".join(lines)
    assert cli.returncode == 130, output[-3000:] + stderr
    assert "Traceback" not in output + stderr, stderr
    assert ended < 10, ended
    assert not any(process_running(pid) for pid in workers)
    with ResultsStore(results, create=False) as store:
        run_id = next(r["run_id"] for r in store.list_runs() if (r.get("settings") or {}).get("duration") == 120)
        run = store.load_run(run_id)
    assert run["status"] == "interrupted"
    measured = [row for row in run["intervals"] if row["phase"] == "measure"]
    assert len({row["index"] for row in measured}) >= 2 and sum(row["ok"] for row in measured) > 0


def test_architecture_and_server_mode_must_agree(tmp_path: Path) -> None:
    result = run_cli("run", "tpcc", "--architecture", "classic", "--set", "ServerMode=Super", "--workdir",
                     str(tmp_path))
    assert_clean_error(result, "--architecture classic contradicts --set ServerMode=Super")
    assert len([line for line in result.stderr.splitlines() if line.strip()]) == 1, result.stderr
    spec = tmp_path / "run.toml"
    spec.write_text('workload = "tpcc"\narchitecture = "superclassic"\n')
    result = run_cli("run", "--spec", str(spec), "--set", "ServerMode=ThreadedDedicated", "--workdir",
                     str(tmp_path))
    assert_clean_error(result, f"{spec}:2: architecture superclassic contradicts --set "
                               "ServerMode=ThreadedDedicated (which is super)")
    assert_clean_error(run_cli("run", "tpcc", "--architecture", "turbo"),
                       "--architecture must be super, superclassic or classic")


def test_either_one_sets_the_other() -> None:
    settings = RunSettings(architecture="Classic").validate()
    assert settings.architecture == "classic" and settings.conf == {}
    assert settings.engine_conf(local=True) == {"ServerMode": "Classic"}
    assert settings.engine_conf(local=False) == {}  # an external server's conf is its own: only verified
    settings = from_sources(None, {"workload": "tpcc"}, conf=["servermode=ThreadedShared"])
    assert settings.architecture == "superclassic"
    assert settings.engine_conf(local=True) == {"servermode": "ThreadedShared"}  # the user's spelling stays
    assert RunSettings().validate().architecture is None  # the engine decides: Super when local
    with pytest.raises(FbbenchError, match="contradicts"):
        replace(settings, architecture="classic").validate()


def test_classic_checks_memory_and_the_process_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    classic = {"ServerMode": "Classic"}
    need = limits.estimate(100, "5.0", "classic", classic, 8192, None)
    # An engine and a Python per attachment, plus its own 256-page cache.
    assert need.per_attachment > 3 * limits.estimate(100, "5.0", "super", {}, 8192, None).per_attachment
    assert need.cache_per_attachment == 256 * 8192 and need.shared_cache == 0
    assert limits.estimate(1, "5.0", "classic", {"DefaultDbCachePages": "1K"}, 8192, None).cache_per_attachment \
        == 1024 * 8192
    monkeypatch.setattr(limits, "thread_limit", lambda: (500.0, "the process/thread limit (ulimit -u)"))
    monkeypatch.setattr(limits, "available_memory", lambda: (1e12, "available memory"))
    limits.check(400, "Firebird 5.0 embedded", "5.0", "super", {}, None, None)  # threads: 400 fit
    with pytest.raises(FbbenchError, match="a process of up to 8 threads per attachment") as error:
        limits.check(100, "Firebird 5.0 embedded", "5.0", "classic", classic, None, None)
    assert "at most about 58 attachments" in (error.value.hint or "")
    limits.check(100, "a server", None, "classic", classic, None, None)  # an external server's processes are its own


def test_conditions_compare_the_architecture_that_ran() -> None:
    """What a comparison diffs: the verified architecture, one spelling whatever ServerMode said."""
    from fbbench.analysis import conditions

    def run(mode: str, verified: str | None) -> dict[str, Any]:
        return {"run_id": "r1", "settings": {"engine": "5.0", "connections": 2},
                "engine": {"server_mode": mode, "engine_version": "5.0.4",
                           "architecture_verified": {"architecture": verified} if verified else None},
                "database": {"before": {}}, "host": {}}

    assert conditions.record(run("ThreadedShared", "superclassic"))["architecture"] == "SuperClassic"
    assert conditions.record(run("Classic", "classic"))["architecture"] == "Classic"
    assert conditions.record(run("Super", None))["architecture"] == "Super"  # a run from before verification


def test_what_the_monitoring_tables_say_and_a_mismatch() -> None:
    """observe.architecture's judgement of MON$ATTACHMENTS rows (id, server pid, system flag,
    current_connection) and the shared pool; a run fails with the mismatch's text."""
    from fbbench.observe import architecture

    system = [(1, 10, 1, 9), (2, 10, 1, 9)]  # the engine's own attachments (cache writer, GC)
    observer = (9, 10, 0, 9)
    threads = [*system, observer, (20, 10, 0, 9), (21, 10, 0, 9)]
    assert architecture.judge(threads, 5_000_000, set())["architecture"] == "super"
    assert architecture.judge(threads, 0, set())["architecture"] == "superclassic"
    forks = [(9, 30, 0, 9), (20, 31, 0, 9), (21, 32, 0, 9), (22, 33, 0, 9)]
    seen = architecture.judge(forks, 0, {22})  # 22: another observer of ours, not the load's
    assert (seen["architecture"], seen["attachments"], seen["server_processes"]) == ("classic", 2, 2)
    assert architecture.judge([(9, 30, 0, 9), (20, 31, 0, 9), (21, 31, 0, 9)], 0, set())["architecture"] == "unknown"
    assert architecture.judge([observer], 0, set())["architecture"] is None  # no load attachment to judge
    assert architecture.mismatch("classic", seen) is None
    failure = architecture.mismatch("classic", architecture.judge(threads, 0, set()))
    assert failure == ("the engine ran SuperClassic, not the requested Classic: 2 attachment(s) in 1 server "
                       "process(es) shared with the observer, shared database pool 0 bytes")
    assert architecture.mismatch("super", None) is None and architecture.mismatch(None, seen) is None
