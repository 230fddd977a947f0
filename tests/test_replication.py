"""``--replication off|async|sync`` on the real embedded 4.0 and 5.0 engines (docs/replication.md).

- async: the run completes, the journal (and, with a short archive timeout, the archive) receives
  segments during the measured period, the figures are recorded, publication is on for every table
  of the workload; the next run from the same population cache has no publication.
- sync: a local replica the engine attaches in the run's own process receives every change.
- refused before anything runs: 3.0, a server, an unknown or fbbench-owned key; a table without a
  primary key is named.
- compare: replication as the axis, and an error (FB012) when it differs outside the axis.
- Ctrl-C: the run ends interrupted and leaves nothing behind, inside or outside the work directory.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fbbench.engines import prepare_runtime, run_in_engine
from fbbench.store import ResultsStore
from tests.conftest import REPO, assert_clean_error, run_cli
from tests.documented import actual_paths, documented_paths, undocumented_and_missing
from tests.test_run_lifecycle import EXIT_WITHIN, RunningCli, _wait_until, background  # noqa: F401

BANK = Path(__file__).parent / "workloads" / "bank"
ORDERS_TABLES = ["CUSTOMERS", "INVENTORY", "ORDERS", "ORDER_LINES", "PRODUCTS"]
SMALL = ["--scale", "customers=100", "--scale", "products=1000", "--scale", "orders=10", "-c", "1"]
TIMED = ["--warmup", "1s", "--duration", "4s", "--interval", "1s"]


@dataclass
class Replicated:
    store: Path
    work: Path
    out: Path
    ids: dict[str, str] = field(default_factory=dict)

    def cli(self, *args: str, code: int | None = 0) -> Any:
        result = run_cli(*args, "--results", str(self.store), timeout=300)
        assert "Traceback" not in result.stdout + result.stderr, result.stderr
        if code is not None:
            assert result.returncode == code, result.stdout[-3000:] + result.stderr[-3000:]
        return result

    def run(self, name: str, *args: str) -> dict[str, Any]:
        target = self.out / f"{name}.json"
        self.cli("run", "orders", *SMALL, *args, "--workdir", str(self.work), "--json", str(target),
                 "--report", str(self.out / f"{name}.html"))
        document = json.loads(target.read_text())
        self.ids[name] = document["run_id"]
        return document

    def publication(self, engine: str, database: Path) -> dict[str, Any]:
        runtime = prepare_runtime(engine, self.work / "inspect", name=f"inspect-{engine}")
        try:
            return run_in_engine(runtime, "tests.replication_child:publication", str(database))
        finally:
            shutil.rmtree(runtime.base, ignore_errors=True)


@pytest.fixture(scope="module")
def replicated(tmp_path_factory: pytest.TempPathFactory) -> Replicated:
    base = tmp_path_factory.mktemp("replication")
    lab = Replicated(base / "results.sqlite", base / "work", base / "out")
    lab.out.mkdir()
    for engine in ("4.0", "5.0"):
        # An archive timeout of 1 s: the measured 4 s see segments archived, not only journaled.
        lab.run(f"async-{engine}", "--engine", engine, *TIMED, "--replication", "async", "--set-replication",
                "journal_archive_timeout=1", "--keep-database")
        lab.run(f"off-{engine}", "--engine", engine, *TIMED, "--keep-database")
    return lab


@pytest.mark.parametrize("engine", ["4.0", "5.0"])
def test_async_journals_the_measured_period_and_leaves_the_cache_unpublished(replicated: Replicated,
                                                                            engine: str) -> None:
    lab = replicated
    document = json.loads((lab.out / f"async-{engine}.json").read_text())
    assert document["status"] == "completed"
    replication = document["replication"]
    assert replication["mode"] == "async" and replication["settings"] == {"journal_archive_timeout": "1"}
    assert replication["publication_active"] and replication["published_tables"] == ORDERS_TABLES
    # The journal received the measured period's changes, and the archive its segments.
    assert replication["journal_bytes"] > 0 and replication["journal_bytes_per_second"] > 0
    assert replication["journal_bytes_per_second"] == pytest.approx(replication["journal_bytes"]
                                                                    / document["measure_seconds"])
    assert replication["segments_archived"] >= 1 and replication["archive_bytes"] > 0
    measured = {i["index"] for i in document["intervals"] if i["phase"] == "measure"}
    journaled = {i["index"] for i in replication["intervals"] if i["journal_bytes"]}
    assert measured & journaled, (measured, journaled)
    assert "nothing consumes the archive" in replication["text"]
    documented = documented_paths(REPO / "docs" / "run-result.md")
    undocumented, _ = undocumented_and_missing(actual_paths(document, documented), documented)
    assert not undocumented, f"keys not in docs/run-result.md: {undocumented}"
    # replication.conf is kept with the run; its paths are the run's, inside the work directory.
    conf = replication["conf_text"]
    assert "journal_archive_timeout = 1" in conf
    run_id = document["run_id"]
    kept = lab.work / "databases" / f"{run_id}.replication"
    for key in ("journal_directory", "journal_archive_directory"):
        assert f"{key} = {kept}/" in conf, conf
    assert any(kept.joinpath("journal").iterdir()) and any(kept.joinpath("archive").iterdir())
    # Every table of the workload is published on the run's database ...
    found = lab.publication(engine, lab.work / "databases" / f"{run_id}.fdb")
    assert found["active"] and found["tables"] == ORDERS_TABLES
    # ... and the next run, from the same cached population, has none.
    other = json.loads((lab.out / f"off-{engine}.json").read_text())
    assert other["population"]["source"] == "copy of cached population"
    assert other["replication"]["mode"] == "off"
    unpublished = lab.publication(engine, lab.work / "databases" / f"{other['run_id']}.fdb")
    assert not unpublished["active"] and unpublished["tables"] == []
    assert not (lab.work / "databases" / f"{other['run_id']}.replication").exists()


def test_replication_is_the_axis_and_an_error_outside_it(replicated: Replicated) -> None:
    lab = replicated
    target = lab.out / "compare.json"
    lab.cli("compare", lab.ids["off-5.0"], lab.ids["async-5.0"], "--json", str(target),
            "--report", str(lab.out / "compare.html"))
    compared = json.loads(target.read_text())
    assert compared["conditions"]["axis_requested"] is None
    axis = {row["key"]: row["values"] for row in compared["conditions"]["axis"]}
    assert set(axis) == {"replication", "replication.journal_archive_timeout"}
    assert list(axis["replication"].values()) == ["off", "async"]
    assert not [f for f in compared["lint"] if f["severity"] == "error"]
    # Engines on the axis, replication differing too: an error of its own, the verdict withheld.
    linted = lab.cli("lint", lab.ids["off-4.0"], lab.ids["async-5.0"], "--axis", "engine", code=1)
    assert "FB012 error" in linted.stdout and "replication differs outside the axis" in linted.stdout
    same = lab.cli("lint", lab.ids["off-4.0"], lab.ids["off-5.0"], "--axis", "engine", code=None)
    assert "FB012" not in same.stdout


@pytest.mark.parametrize("engine", ["4.0", "5.0"])
def test_sync_commits_on_a_local_replica(replicated: Replicated, engine: str) -> None:
    lab = replicated
    document = lab.run(f"sync-{engine}", "--engine", engine, "--transactions", "5", "--replication", "sync")
    assert document["status"] == "completed"
    replication = document["replication"]
    assert replication["mode"] == "sync" and replication["publication_active"]
    assert "sync_replica = " in replication["conf_text"] and replication["replica"]["size_bytes"] > 0
    check = next(c for c in document["checks"] if c["name"] == "replica in step with the primary")
    assert check["passed"], check
    assert check["detail"].startswith("5 tables")
    # The replica went with the run, and fbbench no longer counts it among its databases.
    replica = Path(replication["replica"]["path"])
    assert replica.is_relative_to(lab.work) and not replica.parent.exists()
    registry = json.loads((Path(os.environ["FBBENCH_HOME"]) / "owned-databases.json").read_text())
    assert str(replica) not in registry


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--engine", "3.0", "--replication", "async"], ["Firebird 3.0 has no built-in replication"]),
        (["--replication", "async", "--set-replication", "jornal_segment_size=1048576"],
         ["unknown replication.conf key 'jornal_segment_size'", "did you mean journal_segment_size"]),
        (["--replication", "async", "--set-replication", "journal_segment_size=16M"], ["no K or M"]),
        (["--replication", "async", "--set-replication", "journal_directory=/tmp/elsewhere"],
         ["fbbench sets it itself"]),
        (["--replication", "async", "--set-replication", "journal_archive_command=cp $(pathname) /x"],
         ["journal_archive_command is not taken in a run", "shell command"]),
        (["--replication", "sync", "--set-replication", "source_guid=x"], ["a replica-side key"]),
        (["--set-replication", "buffer_size=4194304"], ["has no effect without replication"]),
        (["--replication", "async", "--engine", "127.0.0.1/3050:/tmp/x.fdb"], ["needs an embedded engine"]),
    ],
)
def test_refused_before_anything_runs(args: list[str], fragments: list[str], tmp_path: Path) -> None:
    results = tmp_path / "results.sqlite"
    result = run_cli("run", str(BANK), "--transactions", "1", *args, "--results", str(results),
                     "--workdir", str(tmp_path / "work"), env={"ISC_PASSWORD": "unused"})
    assert_clean_error(result, *fragments)
    assert len(result.stderr.strip().splitlines()) <= 2  # the error and its hint
    assert not results.exists() or not ResultsStore(results, create=False).list_runs(1)


def test_a_table_without_a_primary_key_is_named(tmp_path: Path) -> None:
    workload = tmp_path / "bank"
    shutil.copytree(BANK, workload)
    schema = workload / "schema.sql"
    schema.write_text(schema.read_text() + "\ncreate table audit_note (note varchar(40));\n")
    result = run_cli("run", str(workload), "--engine", "5.0", "--transactions", "1", "--replication", "async",
                     "--results", str(tmp_path / "results.sqlite"), "--workdir", str(tmp_path / "work"))
    assert_clean_error(result, "table AUDIT_NOTE has no primary key")
    assert "Traceback" not in result.stdout
    assert not list((tmp_path / "work" / "databases").iterdir())


@pytest.mark.alone  # times the end: within EXIT_WITHIN of Ctrl-C
def test_ctrl_c_leaves_nothing_behind(tmp_path: Path, background: Callable[..., RunningCli]) -> None:  # noqa: F811
    work = tmp_path / "work"
    run = background(tmp_path, work, "orders", *SMALL, "--engine", "5.0", "--replication", "async",
                     "--warmup", "1s", "--duration", "60s", "--interval", "1s")
    run.wait_measuring(intervals=2)
    os.killpg(run.pid, signal.SIGINT)
    assert run.wait_exit(EXIT_WITHIN) == 130, run.output()
    _wait_until(lambda: not run.leftovers(), 5, "the engine child to end")
    with ResultsStore(run.store, create=False) as store:
        stored = store.load_run(store.list_runs(1)[0]["run_id"])
    assert stored["status"] == "interrupted"
    # What it measured is kept, the journal's figures with it.
    assert (stored["summary"].get("replication") or {}).get("journal_bytes", 0) > 0
    # Everything the engine was told to write was inside the work directory ...
    conf = stored["engine"]["replication_conf_text"]
    named = [line.split("=", 1)[1].strip() for line in conf.splitlines() if "=" in line and not line.startswith("#")]
    paths = [Path(value) for value in named if value.startswith("/")]
    assert len(paths) == 3 and all(path.is_relative_to(work) for path in paths), conf
    # ... and none of it is left there: no database, no journal, no runtime root.
    assert not list((work / "databases").iterdir())
    assert not list((work / "runtimes").iterdir())
    registry = json.loads((Path(os.environ["FBBENCH_HOME"]) / "owned-databases.json").read_text())
    assert not [location for location in registry if location.startswith(str(work / "databases"))]


def test_a_killed_replicated_run_is_cleaned_by_the_next_run(tmp_path: Path,
                                                            background: Callable[..., RunningCli]) -> None:  # noqa: F811
    # The replication directory (journal, archive, the sync replica) is recorded with the run's
    # files before it is made, so the next run in the work directory removes it (runner/cleanup.py).
    work = tmp_path / "work"
    run = background(tmp_path, work, "orders", *SMALL, "--engine", "5.0", "--replication", "sync",
                     "--warmup", "1s", "--duration", "60s", "--interval", "1s")
    run.wait_measuring(intervals=2)
    child = run.engine_child()
    assert child is not None, run.watch()
    os.killpg(run.pid, signal.SIGKILL)
    os.killpg(child, signal.SIGKILL)
    assert run.wait_exit(EXIT_WITHIN) == -signal.SIGKILL
    _wait_until(lambda: not run.leftovers(), EXIT_WITHIN, "no process left of the killed run")
    directories = list((work / "databases").glob("*.replication"))
    assert len(directories) == 1 and (directories[0] / "replica.fdb").exists(), directories
    next_run = run_cli("run", "orders", *SMALL, "--transactions", "1", "--results", str(run.store),
                       "--workdir", str(work))
    assert next_run.returncode == 0, next_run.stdout[-2000:] + next_run.stderr
    assert "removed what killed runs or commands left behind" in next_run.stdout, next_run.stdout
    assert not list((work / "databases").iterdir())
    registry = json.loads((Path(os.environ["FBBENCH_HOME"]) / "owned-databases.json").read_text())
    assert not [location for location in registry if location.startswith(str(work / "databases"))]


def test_a_disk_with_room_for_the_copy_but_not_the_sync_replica_is_refused(tmp_path: Path) -> None:
    # A sync run copies the populated database twice (its copy, then the replica): both must fit.
    from tests.test_hardening import _left_in, _tmpfs

    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    first = run_cli("run", "orders", *SMALL, "--transactions", "1", "--results", str(store), "--workdir", str(work))
    assert first.returncode == 0, first.stderr  # the populated cache, on the roomy disk
    size = max(path.stat().st_size for path in (work / "dbcache").glob("*.fdb"))
    with _tmpfs(work / "databases", size * 3 // 2):
        result = run_cli("run", "orders", *SMALL, "--transactions", "1", "--replication", "sync",
                         "--results", str(store), "--workdir", str(work))
        assert _left_in(work) == []
    assert_clean_error(result, "the run's copy and its sync replica of the cached orders population need")


def test_replication_is_a_sweep_axis_checked_per_cell(tmp_path: Path) -> None:
    spec = tmp_path / "replication.toml"
    spec.write_text('workload = "orders"\nengine = "5.0"\ntransactions = 5\nconnections = 1\n'
                    '[matrix]\nreplication = ["off", "async", "sync"]\n')
    planned = run_cli("sweep", str(spec), "--dry-run", "--results", str(tmp_path / "results.sqlite"))
    assert planned.returncode == 0, planned.stderr
    for mode in ("off", "async", "sync"):
        assert f"replication={mode}" in planned.stdout
    # Every cell is checked before the first run: 3.0 with replication is refused by its cell.
    spec.write_text('workload = "orders"\nreplication = "async"\ntransactions = 5\n[matrix]\nengine = ["3.0", "5.0"]\n')
    refused = run_cli("sweep", str(spec), "--dry-run", "--results", str(tmp_path / "results.sqlite"))
    assert_clean_error(refused, "cell engine=3.0", "Firebird 3.0 has no built-in replication")


def test_replication_needs_a_work_directory_its_conf_can_name(tmp_path: Path) -> None:
    # replication.conf reads '#' as a comment: refused before anything runs, nothing created.
    work = tmp_path / "odd#work"
    result = run_cli("run", "orders", "--transactions", "1", "--replication", "async", "--workdir", str(work),
                     "--results", str(tmp_path / "results.sqlite"))
    assert_clean_error(result, "replication needs a work directory whose path has no '#'")
    assert not work.exists()


def test_each_log_has_its_own_summary_line() -> None:
    from fbbench.report.console import engine_lines

    findings = [{"source": "firebird.log", "kind": "sweep: Sweep is finished", "severity": "info", "count": 1},
                {"source": "replication.log", "kind": "replication warning", "severity": "warning", "count": 9}]
    lines = engine_lines({"log_findings": findings})
    assert lines == ["firebird.log: sweep: Sweep is finished ×1", "replication.log: [yellow]replication warning ×9[/]"]
