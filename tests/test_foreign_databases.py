"""fbbench never attaches a database it does not own — proved byte for byte (sha256) on the real
engines: embedded 3.0, 4.0, 5.0 and the loopback Firebird 3.0 server.

- The header page reader (``fbbench.database.header``) agrees, field by field, with what each
  engine reports: MON$DATABASE for the settings, gstat -h (Firebird's own header reader) for every
  state the header flags can take and for 64-bit transaction numbers.
- ``db info`` reads a foreign database without attaching; ``db drop`` and ``db create`` refuse
  it; a foreign file put at a path fbbench once registered is told apart by its header; a run
  against a server DSN where a foreign database lives is refused before anything attaches.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fbbench.database import ownership
from fbbench.database.header import FileHeader, parse_gstat_header, parse_header_page, read_header
from fbbench.engines import parse_engine, prepare_runtime, run_in_engine
from fbbench.paths import own_workdir
from tests.conftest import ENGINES, assert_clean_error, fb3_server_or_skip, run_cli
from tests.fb3server import Fb3Server

BANK = Path(__file__).parent / "workloads" / "bank"
# page size, buffers, sweep interval per engine: each a value no engine picks by itself
SETTINGS = {"3.0": (16384, 3000, 12345), "4.0": (32768, 2500, 0), "5.0": (8192, 4000, 777)}
ODS = {"3.0": (12, 0), "4.0": (13, 0), "5.0": (13, 1)}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fingerprint(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return _sha256(path), stat.st_size, stat.st_mtime_ns


def _same_as_gstat(header: FileHeader, gstat: FileHeader) -> None:
    """Every field gstat prints equals ours (gstat prints the creation time to the second)."""
    ours, theirs = header.facts(), gstat.facts()
    for key in ("created_at", "header_source"):
        ours.pop(key), theirs.pop(key)
    assert ours == theirs
    assert header.created is not None and gstat.created == header.created.replace(microsecond=0)
    assert gstat.unknown_attributes == ()


def _same_as_mon(header: FileHeader, mon: dict[str, Any]) -> None:
    assert (header.page_size, header.ods_major, header.ods_minor) == (
        mon["page_size"], mon["ods_major"], mon["ods_minor"])
    assert header.page_buffers == mon["page_buffers"]
    assert header.sweep_interval == mon["sweep_interval"]
    assert header.dialect == mon["sql_dialect"]
    assert header.read_only == bool(mon["read_only"])
    assert header.forced_writes == bool(mon["forced_writes"])
    assert header.reserve_space == bool(mon["reserve_space"])
    assert header.created_at == mon["creation_date"]  # to 1/10000 s, UTC from Firebird 4 on
    assert header.backup_state == {0: "normal", 1: "stalled", 2: "merge"}[mon["backup_state"]]
    assert header.shutdown_mode == "online" and mon["shutdown_mode"] == 0
    if header.ods_major >= 13:
        assert header.guid == mon["guid"]
        assert header.replica_mode == {0: "none", 1: "read-only", 2: "read-write"}[int(mon["replica_mode"])]
    else:
        assert header.guid is None  # Firebird 3 keeps no database GUID


# ------------------------------------------------------------------------------ header page


@pytest.mark.parametrize("version", ENGINES)
def test_header_page_matches_what_the_engine_reports(version: str, tmp_path: Path, workdir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # A zone east of UTC: Firebird 3 stores the creation time in local time, 4.0+ in UTC.
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    page_size, buffers, sweep = SETTINGS[version]
    database = tmp_path / f"known-{version}.fdb"
    created = run_cli("db", "create", str(database), "--engine", version, "--page-size", str(page_size),
                      "--forced-writes", "off", "--page-buffers", str(buffers), "--sweep-interval", str(sweep),
                      "--workdir", str(workdir))
    assert created.returncode == 0, created.stderr
    runtime = prepare_runtime(version, workdir)

    # After one attachment with one transaction: the counters MON$ showed are the ones on disk.
    mon = run_in_engine(runtime, "tests.foundation_child:mon_database", str(database))
    header = read_header(database)
    assert (header.page_size, header.page_buffers, header.sweep_interval) == (page_size, buffers, sweep)
    assert (header.ods_major, header.ods_minor) == ODS[version]
    assert not header.forced_writes and header.dialect == 3
    _same_as_mon(header, mon)
    for key in ("oldest_transaction", "oldest_active", "oldest_snapshot", "next_transaction"):
        assert getattr(header, key) == mon[key], key
    if version != "3.0":
        assert header.next_attachment == int(mon["next_attachment"])
    assert database.stat().st_size // header.page_size == mon["pages"]

    # Every flag the header can carry, each checked against gstat -h and (where one may attach) MON$.
    states = run_in_engine(runtime, "tests.foundation_child:header_states", str(database), version != "3.0")
    expected = {"as created": (False, "online"), "forced writes on": (True, "online"),
                "shutdown multi": (True, "multi"), "shutdown single": (True, "single"),
                "shutdown full": (True, "full")}
    for state in states:
        label = state["label"]
        on_disk = parse_header_page(bytes.fromhex(state["page"]), label)
        _same_as_gstat(on_disk, parse_gstat_header(state["gstat"], label))
        if state["mon"] is not None:
            _same_as_mon(on_disk, state["mon"])
        if label in expected:
            assert (on_disk.forced_writes, on_disk.shutdown_mode) == expected[label], label
    by_label = {state["label"]: parse_header_page(bytes.fromhex(state["page"]), "") for state in states}
    assert not by_label["no reserve"].reserve_space and by_label["read only"].read_only
    assert by_label["backup lock"].backup_state == "stalled"
    if version != "3.0":
        assert by_label["replica read_only"].replica_mode == "read-only"
        assert by_label["replica read_write"].replica_mode == "read-write"
    assert len(states) == (10 if version != "3.0" else 8)

    # Transaction numbers past 32 bits, on a copy nothing attaches: Firebird 4+ keeps the high
    # words apart (Next, OIT, OAT, OST) and the attachment id's high word; Firebird 3 has 32 bits.
    patched = tmp_path / "patched.fdb"
    page = bytearray(database.read_bytes())
    if version == "3.0":
        struct.pack_into("<I", page, 36, 0xFFFFFFF0)
    else:
        struct.pack_into("<I4H", page, 116, 7, 1, 2, 3, 4)
    patched.write_bytes(page)
    wide = read_header(patched)
    _same_as_gstat(wide, parse_gstat_header(run_in_engine(runtime, "tests.foundation_child:gstat_header",
                                                          str(patched)), "patched"))
    if version == "3.0":
        assert wide.next_transaction == 0xFFFFFFF0
    else:
        assert wide.next_transaction >> 32 == 1 and wide.oldest_transaction >> 32 == 2
        assert wide.oldest_active >> 32 == 3 and wide.oldest_snapshot >> 32 == 4
        assert wide.next_attachment >> 32 == 7
    runtime.remove(workdir)


def test_gstat_on_the_header_leaves_the_file_alone(tmp_path: Path, workdir: Path) -> None:
    """The services API's header statistics read the page without attaching (full gstat does not:
    it attaches and changes the header)."""
    database = tmp_path / "looked-at.fdb"
    runtime = prepare_runtime("5.0", workdir)
    run_in_engine(runtime, "tests.foundation_child:create_foreign_database", str(database))
    before = _fingerprint(database)
    lines = run_in_engine(runtime, "tests.foundation_child:gstat_header", str(database))
    assert parse_gstat_header(lines, "x").guid == read_header(database).guid is not None
    assert _fingerprint(database) == before


# ------------------------------------------------------------------------- foreign, embedded


def _create_foreign(version: str, path: Path, workdir: Path) -> None:
    runtime = prepare_runtime(version, workdir)
    run_in_engine(runtime, "tests.foundation_child:create_foreign_database", str(path))
    runtime.remove(workdir)


@pytest.mark.parametrize("version", ENGINES)
def test_foreign_database_is_read_and_refused_untouched(version: str, tmp_path: Path, workdir: Path) -> None:
    foreign = tmp_path / "customer.fdb"
    _create_foreign(version, foreign, workdir)
    before = _fingerprint(foreign)
    header = read_header(foreign)

    shown = run_cli("db", "info", str(foreign), "--json", "--workdir", str(workdir))
    assert shown.returncode == 0, shown.stderr
    info = json.loads(shown.stdout)
    assert info["owned_by_fbbench"] is False
    assert info["ods"] == "{}.{}".format(*ODS[version]) and info["page_size"] == 8192
    assert info["engine_version"] == parse_engine(version).version  # the engine that opens this ODS
    assert info["size_bytes"] == foreign.stat().st_size and info["pages"] == foreign.stat().st_size // 8192
    assert info["next_transaction"] == header.next_transaction > 0
    assert info["created_at"] == header.created_at and info["guid"] == header.guid
    assert (info["guid"] is None) == (version == "3.0")
    assert info["server_version"] is None and info["fbbench_mark"] is None  # only an attachment shows them
    table = run_cli("db", "info", str(foreign), "--workdir", str(workdir))
    assert table.returncode == 0 and "owned by fbbench" in table.stdout and "not attached" in table.stdout
    assert _fingerprint(foreign) == before

    assert_clean_error(run_cli("db", "drop", str(foreign), "--workdir", str(workdir)), "refusing to drop",
                       "did not create")
    assert_clean_error(run_cli("db", "create", str(foreign), "--engine", version, "--workdir", str(workdir)),
                       "already exists")
    assert _fingerprint(foreign) == before

    # A foreign file put where fbbench once created a database: the header tells them apart.
    registered = tmp_path / "bench.fdb"
    created = run_cli("db", "create", str(registered), "--engine", version, "--workdir", str(workdir))
    assert created.returncode == 0, created.stderr
    shutil.copyfile(foreign, registered)  # over fbbench's database, keeping its inode
    swapped = _fingerprint(registered)
    shown = run_cli("db", "info", str(registered), "--json", "--workdir", str(workdir))
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["owned_by_fbbench"] is False
    assert_clean_error(run_cli("db", "drop", str(registered), "--workdir", str(workdir)), "refusing to drop",
                       "not the one fbbench created")
    assert _fingerprint(registered) == swapped
    assert _fingerprint(foreign) == before
    assert ownership.lookup(str(registered)) is not None  # still fbbench's location, not its file


def test_a_copy_with_another_token_is_refused_by_the_mark(tmp_path: Path, workdir: Path) -> None:
    """Second line of defence: a copy of an fbbench database shares its header identity, so the
    header check passes; the token inside then refuses the drop."""
    original, copy = tmp_path / "original.fdb", tmp_path / "copy.fdb"
    assert run_cli("db", "create", str(original), "--workdir", str(workdir)).returncode == 0
    shutil.copyfile(original, copy)
    ownership.register(str(copy), ownership.new_token(), {"purpose": "test"})  # identity read from the copy

    result = run_cli("db", "drop", str(copy), "--workdir", str(workdir))
    assert_clean_error(result, "refusing to drop", "mark")
    assert copy.exists()
    assert run_cli("db", "drop", str(original), "--workdir", str(workdir)).returncode == 0


def test_registry_entries_without_identity_are_refused_unread(tmp_path: Path, workdir: Path) -> None:
    """An entry written before identities were recorded cannot vouch for the file: refused."""
    foreign = tmp_path / "old-entry.fdb"
    _create_foreign("5.0", foreign, workdir)
    before = _fingerprint(foreign)
    registry = Path(os.environ["FBBENCH_HOME"]) / "owned-databases.json"
    data = json.loads(registry.read_text()) if registry.exists() else {}
    data[str(foreign.resolve())] = {"token": ownership.new_token(), "created_at": time.time()}
    registry.write_text(json.dumps(data))
    assert_clean_error(run_cli("db", "drop", str(foreign), "--workdir", str(workdir)), "refusing to drop",
                       "identities")
    shown = json.loads(run_cli("db", "info", str(foreign), "--json", "--workdir", str(workdir)).stdout)
    assert shown["owned_by_fbbench"] is False
    assert _fingerprint(foreign) == before
    ownership.unregister(str(foreign))


# ----------------------------------------------------------------------------- foreign, server


@pytest.fixture(scope="module")
def fb3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fb3Server]:
    with fb3_server_or_skip(tmp_path_factory.mktemp("fb3-foreign")) as server:
        yield server


@pytest.mark.server
def test_foreign_database_on_a_server_is_read_and_refused_untouched(fb3: Fb3Server, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)  # the server process writes the database files
    password_file = tmp_path / "password"
    password_file.write_text(fb3.password + "\n")
    work = own_workdir(tmp_path / "work").path  # as fbbench makes it: the runtime below is made there first
    common = ["--user", fb3.user, "--password-file", str(password_file), "--workdir", str(work)]
    foreign = data / "customer.fdb"
    dsn = fb3.dsn(foreign)
    runtime = prepare_runtime(parse_engine(dsn), work, user=fb3.user, password=fb3.password)
    run_in_engine(runtime, "tests.foundation_child:create_foreign_database", dsn)  # through the server
    runtime.remove(work)
    before = _fingerprint(foreign)
    header = read_header(foreign)

    shown = run_cli("db", "info", dsn, "--json", *common)
    assert shown.returncode == 0, shown.stderr
    info = json.loads(shown.stdout)
    assert info["owned_by_fbbench"] is False
    assert info["ods"] == "12.0" and info["page_size"] == 8192 and info["header_source"] == "gstat"
    assert info["engine_version"].startswith("3.0.") and "3.0" in info["server_version"]
    assert info["next_transaction"] == header.next_transaction and info["guid"] is None
    assert info["created_at"] == str(header.created.replace(microsecond=0))
    assert info["pages"] is None  # the file's size needs an attachment (or the file itself)
    assert _fingerprint(foreign) == before

    assert_clean_error(run_cli("db", "drop", dsn, *common), "refusing to drop", "did not create")
    assert_clean_error(run_cli("db", "create", dsn, *common), "already exists")
    assert _fingerprint(foreign) == before

    # A run against the server DSN of a foreign database: refused before anything attaches.
    results = tmp_path / "results.sqlite"
    refused = run_cli("run", "tpcc", "--engine", dsn, "--results", str(results), "--duration", "2s",
                      "--no-sweep", *common)
    assert_clean_error(refused, "refusing to build a database at", "did not create")
    assert refused.stderr.count("error:") == 1
    assert _fingerprint(foreign) == before

    # A foreign file put at a DSN fbbench once created a database at. The creation time is all a
    # Firebird 3 header tells apart (no GUID; gstat prints seconds): let a second pass.
    time.sleep(1.1)
    registered = data / "bench.fdb"
    registered_dsn = fb3.dsn(registered)
    created = run_cli("db", "create", registered_dsn, *common)
    assert created.returncode == 0, created.stderr
    shutil.copyfile(foreign, registered)
    swapped = _fingerprint(registered)
    shown = run_cli("db", "info", registered_dsn, "--json", *common)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["owned_by_fbbench"] is False
    assert_clean_error(run_cli("db", "drop", registered_dsn, *common), "refusing to drop",
                       "not the one fbbench created")
    assert _fingerprint(registered) == swapped
    assert _fingerprint(foreign) == before


@pytest.mark.server
def test_own_database_on_a_server_is_described_and_dropped(fb3: Fb3Server, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)
    password_file = tmp_path / "password"
    password_file.write_text(fb3.password + "\n")
    common = ["--user", fb3.user, "--password-file", str(password_file), "--workdir", str(tmp_path / "work")]
    database = data / "own.fdb"
    dsn = fb3.dsn(database)
    created = run_cli("db", "create", dsn, "--page-size", "16384", "--page-buffers", "1500", *common)
    assert created.returncode == 0, created.stderr
    info = json.loads(run_cli("db", "info", dsn, "--json", *common).stdout)
    assert info["owned_by_fbbench"] is True and info["page_buffers"] == 1500 and info["page_size"] == 16384
    assert info["architecture"] and info["fbbench_mark"]["fbbench_version"]
    assert info["size_bytes"] == database.stat().st_size
    assert ownership.lookup(dsn)["identity"]["created"] == info["created_at"]
    dropped = run_cli("db", "drop", dsn, *common)
    assert dropped.returncode == 0, dropped.stderr
    assert not database.exists() and ownership.lookup(dsn) is None


@pytest.mark.server
def test_a_run_replaces_its_own_database_on_a_server(fb3: Fb3Server, tmp_path: Path) -> None:
    """The second run at one DSN finds the first run's database (identity recorded while it was
    built), checks header and mark, and builds anew."""
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)
    password_file = tmp_path / "password"
    password_file.write_text(fb3.password + "\n")
    dsn = fb3.dsn(data / "bench.fdb")
    common = ["--engine", dsn, "--user", fb3.user, "--password-file", str(password_file), "--workdir",
              str(tmp_path / "work"), "--results", str(tmp_path / "results.sqlite"), "--no-sweep",
              "--connections", "2", "--interval", "1s", "--warmup", "1s", "--duration", "2s"]
    tokens = []
    for _ in range(2):
        done = run_cli("run", str(BANK), *common)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr
        tokens.append(ownership.lookup(dsn)["token"])
    assert tokens[0] != tokens[1]
