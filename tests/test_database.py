"""Database lifecycle through the CLI: create, info, drop, and refusing foreign databases."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from fbbench.database import ownership
from fbbench.engines import prepare_runtime, run_in_engine
from fbbench.errors import NotOwnedError
from tests.conftest import ENGINES, assert_clean_error, run_cli

EXPECTED = {"3.0": ("3.0.14", "12.0"), "4.0": ("4.0.7", "13.0"), "5.0": ("5.0.4", "13.1")}


@pytest.mark.parametrize("version", ENGINES)
def test_create_info_drop(version: str, tmp_path: Path, workdir: Path) -> None:
    database = tmp_path / f"bench-{version}.fdb"
    page_size = "16384"
    created = run_cli("db", "create", str(database), "--engine", version, "--page-size", page_size,
                      "--forced-writes", "off", "--page-buffers", "3000", "--sweep-interval", "0",
                      "--workdir", str(workdir))
    assert created.returncode == 0, created.stderr
    assert database.exists()

    shown = run_cli("db", "info", str(database), "--json", "--workdir", str(workdir))
    assert shown.returncode == 0, shown.stderr
    info = json.loads(shown.stdout)
    engine_version, ods = EXPECTED[version]
    assert info["engine_version"] == engine_version
    assert info["ods"] == ods
    assert info["page_size"] == int(page_size)
    assert info["forced_writes"] is False
    assert info["page_buffers"] == 3000
    assert info["sweep_interval"] == 0
    assert info["owned_by_fbbench"] is True
    assert info["next_transaction"] >= info["oldest_transaction"] > 0
    assert info["size_bytes"] == database.stat().st_size

    table = run_cli("db", "info", str(database), "--workdir", str(workdir))
    assert engine_version in table.stdout and "owned by fbbench" in table.stdout

    dropped = run_cli("db", "drop", str(database), "--workdir", str(workdir))
    assert dropped.returncode == 0, dropped.stderr
    assert not database.exists()
    assert ownership.lookup(str(database)) is None


def test_info_picks_the_engine_from_the_file(tmp_path: Path, workdir: Path) -> None:
    database = tmp_path / "fb4.fdb"
    assert run_cli("db", "create", str(database), "-e", "4.0", "--workdir", str(workdir)).returncode == 0
    info = json.loads(run_cli("db", "info", str(database), "--json", "--workdir", str(workdir)).stdout)
    assert info["engine_version"] == "4.0.7"  # not upgraded by opening it with 5.0
    refused = run_cli("db", "info", str(database), "-e", "5.0", "--workdir", str(workdir))
    assert_clean_error(refused, "ODS 13.0", "--engine 4.0")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_foreign_database_is_refused_untouched(tmp_path: Path, workdir: Path) -> None:
    foreign = tmp_path / "customer.fdb"
    runtime = prepare_runtime("5.0", workdir)
    run_in_engine(runtime, "tests.foundation_child:create_foreign_database", str(foreign))
    before = _sha256(foreign)

    result = run_cli("db", "drop", str(foreign), "--workdir", str(workdir))
    assert_clean_error(result, "refusing to drop", "did not create")
    with pytest.raises(NotOwnedError, match="refusing to populate"):
        ownership.require_owned(str(foreign), "populate")

    assert foreign.exists()
    assert _sha256(foreign) == before


def test_replaced_file_at_an_owned_path_is_refused(tmp_path: Path, workdir: Path) -> None:
    """The registry alone is not enough: the header of the file there must be the one fbbench
    recorded (checked before attaching; tests/test_foreign_databases.py has the rest)."""
    database = tmp_path / "swapped.fdb"
    assert run_cli("db", "create", str(database), "--workdir", str(workdir)).returncode == 0
    database.unlink()
    runtime = prepare_runtime("5.0", workdir)
    run_in_engine(runtime, "tests.foundation_child:create_foreign_database", str(database))
    before = _sha256(database)

    result = run_cli("db", "drop", str(database), "--workdir", str(workdir))
    assert_clean_error(result, "refusing to drop", "not the one fbbench created")
    assert _sha256(database) == before


def test_create_never_overwrites(tmp_path: Path, workdir: Path) -> None:
    existing = tmp_path / "exists.fdb"
    existing.write_bytes(b"not a database")
    result = run_cli("db", "create", str(existing), "--workdir", str(workdir))
    assert_clean_error(result, "already exists")
    assert existing.read_bytes() == b"not a database"


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--engine", "6.0"], ["unknown engine version '6.0'"]),
        (["--page-size", "1234"], ["invalid page size 1234"]),
        (["--engine", "3.0", "--page-size", "32768"], ["needs Firebird 4.0"]),
    ],
)
def test_bad_create_input(args: list[str], fragments: list[str], tmp_path: Path, workdir: Path) -> None:
    result = run_cli("db", "create", str(tmp_path / "bad.fdb"), *args, "--workdir", str(workdir))
    assert_clean_error(result, *fragments)
    assert not (tmp_path / "bad.fdb").exists()


def test_unreachable_server(workdir: Path) -> None:
    # Port 9 (discard) on loopback: nothing listens there.
    result = run_cli("db", "create", "127.0.0.1/9:/tmp/nowhere.fdb", "--workdir", str(workdir),
                     env={"ISC_PASSWORD": "x"})
    assert_clean_error(result, "cannot reach")
    assert "hint:" in result.stderr


def test_info_of_missing_and_non_database_files(tmp_path: Path, workdir: Path) -> None:
    assert_clean_error(run_cli("db", "info", str(tmp_path / "none.fdb"), "--workdir", str(workdir)),
                       "does not exist")
    junk = tmp_path / "junk.fdb"
    junk.write_bytes(b"\0" * 4096)
    assert_clean_error(run_cli("db", "info", str(junk), "--workdir", str(workdir)), "not a Firebird database")
