"""A user's own database as a gbak backup, restored by fbbench into a database it owns
(``fbbench db restore``, ``fbbench run --database-from``), on the real embedded engines."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from fbbench.database import ownership
from fbbench.engines import parse_engine, prepare_runtime, run_in_engine
from tests.conftest import ENGINES, assert_clean_error, run_cli

CUSTOMER_WORKLOAD = """
name = "customers"
description = "reads the customer table of a restored database"

[[units]]
name = "balance"
weight = 1
sql = "select balance from customer where id = ?"
params = ["uniform(1, 500)"]

[[checks]]
name = "all customers there"
sql = "select 500 - count(*) from customer"
"""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def foreign_backup(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A gbak backup made on Firebird 3.0 of a database fbbench did not create."""
    directory = tmp_path_factory.mktemp("backup")
    runtime = prepare_runtime(parse_engine("3.0"), directory / "work")
    try:
        run_in_engine(runtime, "tests.app_child:make_foreign_backup", str(directory / "app.fdb"),
                      str(directory / "app.fbk"))
    finally:
        runtime.remove(directory / "work")
    (directory / "app.fdb").unlink()
    return directory / "app.fbk"


def _child(version: str, workdir: Path, target: str, *args: object) -> object:
    runtime = prepare_runtime(parse_engine(version), workdir)
    try:
        return run_in_engine(runtime, target, *args)
    finally:
        runtime.remove(workdir)


@pytest.mark.parametrize("version", ENGINES)
def test_a_foreign_backup_is_restored_into_a_database_fbbench_owns(version: str, foreign_backup: Path,
                                                                   workdir: Path) -> None:
    before = (_sha256(foreign_backup), foreign_backup.stat().st_mtime_ns)
    done = run_cli("db", "restore", str(foreign_backup), "--engine", version, "--workdir", str(workdir))
    assert done.returncode == 0, done.stderr
    assert "restored in" in done.stdout and "owned by fbbench" in done.stdout
    restored = next((workdir / "dbcache").glob("restored-*.fdb"))
    facts = _child(version, workdir, "tests.app_child:restored_facts", str(restored))
    assert isinstance(facts, dict)
    assert facts["rows"] == 500 and facts["balance"] == "1252500.00"
    assert facts["ods_major"] == (12 if version == "3.0" else 13)  # the engine's own on-disk structure
    mark = facts["mark"]
    assert mark is not None and mark["settings"]["purpose"] == "restored"
    assert mark["settings"]["sha256"] == before[0]
    assert ownership.lookup(str(restored))["token"] == mark["token"]  # type: ignore[index]
    # Asked again: the cached restore, not a second one.
    again = run_cli("db", "restore", str(foreign_backup), "--engine", version, "--workdir", str(workdir))
    assert again.returncode == 0 and "already restored" in again.stdout
    assert list((workdir / "dbcache").glob("restored-*.fdb")) == [restored]
    assert (_sha256(foreign_backup), foreign_backup.stat().st_mtime_ns) == before


def _damaged(backup: Path, directory: Path) -> dict[str, Path]:
    data = backup.read_bytes()
    truncated, corrupt = directory / "truncated.fbk", directory / "corrupt.fbk"
    truncated.write_bytes(data[: len(data) // 2])
    damaged = bytearray(data)
    damaged[100:400] = bytes(300)
    corrupt.write_bytes(bytes(damaged))
    return {"truncated": truncated, "corrupt": corrupt}


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_damaged_backup_is_one_line_and_leaves_nothing_behind(damage: str, foreign_backup: Path, tmp_path: Path,
                                                                workdir: Path) -> None:
    backup = _damaged(foreign_backup, tmp_path)[damage]
    registry_file = Path(os.environ["FBBENCH_HOME"], "owned-databases.json")
    registry = json.loads(registry_file.read_text()) if registry_file.exists() else {}
    before = _sha256(backup)
    result = run_cli("db", "restore", str(backup), "--engine", "5.0", "--workdir", str(workdir), timeout=120)
    assert_clean_error(result, f"cannot restore {damage}.fbk")
    assert len(result.stderr.strip().splitlines()) == 2  # the error and its hint, one line each
    if damage == "truncated":  # embedded gbak ends "successfully" on a backup cut short: told apart anyway
        assert "incomplete or damaged" in result.stderr
        assert "Press return" not in result.stderr and "Name:" not in result.stderr  # gbak's prompt for a volume
    assert not [p for p in (workdir / "dbcache").iterdir() if not p.name.endswith(".lock")]
    assert (json.loads(registry_file.read_text()) if registry_file.exists() else {}) == registry
    assert _sha256(backup) == before


def test_a_backup_of_a_newer_firebird_is_said_to_be_one(tmp_path: Path, workdir: Path) -> None:
    """3.0 restoring a 5.0 backup echoed gbak: "Expected backup version 1..10. Found 11"."""
    _child("5.0", tmp_path / "work5", "tests.app_child:make_foreign_backup", str(tmp_path / "app.fdb"),
           str(tmp_path / "app.fbk"))
    result = run_cli("db", "restore", str(tmp_path / "app.fbk"), "--engine", "3.0", "--workdir", str(workdir),
                     timeout=120)
    assert_clean_error(result, "cannot restore app.fbk: this backup is from a newer Firebird (backup format 11; "
                               "this engine reads formats 1 to 10)", "the Firebird version that made it")
    assert "Expected backup version" not in result.stderr


def test_a_run_on_a_restored_database_skips_the_workload_s_build(foreign_backup: Path, tmp_path: Path,
                                                                 workdir: Path) -> None:
    workload = tmp_path / "customers"
    workload.mkdir()
    (workload / "workload.toml").write_text(CUSTOMER_WORKLOAD)
    before = _sha256(foreign_backup)
    report = tmp_path / "r.json"
    result = run_cli("run", str(workload), "--database-from", str(foreign_backup), "--engine", "4.0",
                     "-c", "2", "--warmup", "0s", "--duration", "2s", "--interval", "1s", "--json", str(report),
                     "--workdir", str(workdir), "--results", str(tmp_path / "r.sqlite"), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads(report.read_text())
    assert document["population"]["restored_from"]["sha256"] == before
    assert document["population"]["source"] == "restored (now cached)"
    assert [(c["name"], c["passed"]) for c in document["checks"]] == [("all customers there", True)]
    assert document["units"]["balance"]["ok"] > 0 and document["units"]["balance"]["errors"] == 0
    assert _sha256(foreign_backup) == before
    # The restore is a condition: a run from another backup would differ in it.
    from fbbench.analysis.conditions import record
    from fbbench.store import ResultsStore

    with ResultsStore(tmp_path / "r.sqlite", create=False) as store:
        conditions = record(store.load_run(document["run_id"]))
    assert conditions["database.restored_from"] == f"backup sha256 {before[:16]}"
    # The restore's cache entry was built as the run's recorded file, and the run's copy of it is
    # recorded as its database: the clean-up removed both (the entry itself stays, cached).
    import sqlite3

    files = dict(sqlite3.connect(tmp_path / "r.sqlite").execute(
        "select kind, path from run_files where run_id = ? and removed_at is not null", (document["run_id"],)))
    assert files["building"].endswith(".building.fdb") and "/dbcache/restored-" in files["building"], files
    assert Path(files["database"]).parent.name == "databases" and not Path(files["database"]).exists(), files
    assert document["population"]["text"].startswith(f"database: restored (now cached): {foreign_backup.name} ")
    assert len(list((workdir / "dbcache").glob("restored-*.fdb"))) == 1
    # Not a file, and growing a population that is restored: one line each.
    assert_clean_error(run_cli("run", str(workload), "--database-from", str(tmp_path), "--workdir", str(workdir)),
                       "is not a file")
    assert_clean_error(run_cli("run", str(workload), "--database-from", str(foreign_backup), "--grow", "rows",
                               "--workdir", str(workdir)), "--grow", "restores the database")
