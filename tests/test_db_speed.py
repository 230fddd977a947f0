"""``fbbench db readspeed`` and ``db backupspeed`` on real engines: MB/s for any database, and a
foreign database left byte for byte as it was (checksum, size and mtime); a backup of a foreign
database only of a copy. (gstat -d -i through the services API, the first way readspeed read,
changed the header and a TIP page of such a database on 3.0, 4.0 and 5.0: the checksum below
caught it.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fbbench.engines import prepare_runtime, run_in_engine
from fbbench.engines.catalog import parse_engine
from fbbench.sizes import size_text
from tests.conftest import ENGINES, assert_clean_error, fb3_server_or_skip, run_cli
from tests.fb3server import Fb3Server
from tests.test_foreign_databases import _fingerprint
from tests.test_hardening import _fill, _tmpfs


def _foreign(version: str, path: Path, workdir: Path) -> None:
    runtime = prepare_runtime(version, workdir)
    run_in_engine(runtime, "tests.foundation_child:create_foreign_database", str(path))
    runtime.remove(workdir)


@pytest.mark.parametrize("version", ENGINES)
def test_readspeed_reads_a_foreign_database_and_leaves_it_unchanged(version: str, tmp_path: Path,
                                                                     workdir: Path) -> None:
    foreign = tmp_path / "customer.fdb"
    _foreign(version, foreign, workdir)
    before = _fingerprint(foreign)
    result = run_cli("db", "readspeed", str(foreign), "--json", "--workdir", str(workdir))
    assert result.returncode == 0, result.stdout + result.stderr
    read = json.loads(result.stdout)
    assert read["size_bytes"] == foreign.stat().st_size
    assert read["seconds"] > 0 and read["mb_per_second"] == pytest.approx(read["size_bytes"] / 1e6 / read["seconds"])
    assert read["page_size"] == 8192 and not read["direct"]
    assert read["engine"].startswith(f"Firebird {version}")  # the engine its ODS names, so nothing upgrades it
    text = run_cli("db", "readspeed", str(foreign), "--workdir", str(workdir))
    assert "MB/s (size / time" in text.stdout and "not dropped" in text.stdout, text.stdout
    direct = run_cli("db", "readspeed", str(foreign), "--direct", "--workdir", str(workdir))
    assert direct.returncode == 0 and "O_DIRECT" in direct.stdout, direct.stdout + direct.stderr
    assert _fingerprint(foreign) == before
    # A backup starts a transaction: refused for a foreign database, done on a copy when asked.
    assert_clean_error(run_cli("db", "backupspeed", str(foreign), "--workdir", str(workdir)), "refusing to back up",
                       "--copy")
    copied = run_cli("db", "backupspeed", str(foreign), "--copy", "--json", "--workdir", str(workdir))
    assert copied.returncode == 0, copied.stdout + copied.stderr
    backup = json.loads(copied.stdout)
    assert backup["copied"] and backup["mb_per_second"] > 0 and backup["copy_seconds"] >= 0
    assert _fingerprint(foreign) == before
    assert not list((workdir / "backupspeed").iterdir())  # the copy is gone


def test_backupspeed_of_fbbenchs_own_database(tmp_path: Path, workdir: Path) -> None:
    own = tmp_path / "own.fdb"
    assert run_cli("db", "create", str(own), "--engine", "5.0", "--workdir", str(workdir)).returncode == 0
    result = run_cli("db", "backupspeed", str(own), "--workdir", str(workdir))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "MB/s (gbak -b -g to /dev/null)" in result.stdout and "a copy" not in result.stdout


def test_backupspeed_copy_left_by_a_killed_fbbench_is_removed_by_the_next(tmp_path: Path, workdir: Path) -> None:
    """kill -9 while the copy is backed up: no finally runs, the copy and the runtime root stay.
    The next backupspeed in that work directory removes them — they were recorded before they
    existed — and nothing it did not make (a file of the user's beside the copy)."""
    foreign = tmp_path / "customer.fdb"
    _foreign("5.0", foreign, workdir)
    copies, runtimes = workdir / "backupspeed", workdir / "runtimes"
    process = subprocess.Popen([sys.executable, "-m", "fbbench", "db", "backupspeed", str(foreign), "--copy",
                                "--workdir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (any(copies.glob("*.fdb")) and any(runtimes.glob("*/root"))):
            assert process.poll() is None, "backupspeed ended before its copy and runtime root were seen"
            assert time.monotonic() < deadline, "the copy never appeared"
            time.sleep(0.005)
    finally:
        process.kill()
        process.wait()
    left = sorted(copies.glob("*.fdb")) + sorted(runtimes.iterdir())
    assert len(left) == 2  # what kill -9 leaves
    theirs = copies / "theirs.fdb"
    theirs.write_bytes(b"a file fbbench did not make")
    again = run_cli("db", "backupspeed", str(foreign), "--copy", "--workdir", str(workdir))
    assert again.returncode == 0, again.stdout + again.stderr
    assert sorted(copies.iterdir()) == [theirs] and not list(runtimes.iterdir()), sorted(workdir.rglob("*"))
    assert all(str(path) in again.stderr for path in left), again.stderr  # it says what it removed
    assert "MB/s (gbak -b -g to /dev/null)" in again.stdout


def test_backupspeed_copy_without_room_is_refused_with_figures(tmp_path: Path, workdir: Path) -> None:
    """The copy's file system full (a tmpfs mounted where the copy goes, then filled): refused
    before copying, saying how large the copy is and what is free; nothing is written there."""
    foreign = tmp_path / "customer.fdb"
    _foreign("5.0", foreign, workdir)
    with _tmpfs(workdir / "backupspeed", "1m") as mount:
        _fill(mount)
        result = run_cli("db", "backupspeed", str(foreign), "--copy", "--workdir", str(workdir))
        assert_clean_error(result, "no room for the copy", f"({size_text(foreign.stat().st_size)})", "0 bytes free")
        assert [entry.name for entry in mount.iterdir()] == ["filler"]


def test_readspeed_cold_drops_the_cache_as_root(tmp_path: Path, workdir: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("dropping the OS page cache needs root")
    foreign = tmp_path / "customer.fdb"
    _foreign("5.0", foreign, workdir)
    before = _fingerprint(foreign)
    result = run_cli("db", "readspeed", str(foreign), "--drop-caches", "--json", "--workdir", str(workdir))
    assert result.returncode == 0, result.stderr
    cache = json.loads(result.stdout)["os_cache"]
    assert cache["dropped"] and cache["page_cache_after"] < cache["page_cache_before"]
    assert _fingerprint(foreign) == before


def test_readspeed_of_nothing_is_a_clean_error(tmp_path: Path, workdir: Path) -> None:
    assert_clean_error(run_cli("db", "readspeed", str(tmp_path / "none.fdb"), "--workdir", str(workdir)),
                       "does not exist")
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    assert_clean_error(run_cli("db", "readspeed", str(text), "--workdir", str(workdir)))


@pytest.fixture(scope="module")
def fb3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fb3Server]:
    with fb3_server_or_skip(tmp_path_factory.mktemp("fb3-speed")) as server:
        yield server


@pytest.mark.server
def test_readspeed_of_a_server_database_only_for_fbbenchs_own(fb3: Fb3Server, tmp_path: Path,
                                                               workdir: Path) -> None:
    """A server's file is out of reach: readspeed reads it through gstat, which attaches — so a
    foreign database there is refused untouched, and fbbench's own is read."""
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)
    password_file = tmp_path / "password"
    password_file.write_text(fb3.password + "\n")
    work = workdir  # as fbbench makes it: the runtime below is made there first
    common = ["--user", fb3.user, "--password-file", str(password_file), "--workdir", str(work)]
    foreign = data / "customer.fdb"
    runtime = prepare_runtime(parse_engine(fb3.dsn(foreign)), work, user=fb3.user, password=fb3.password)
    run_in_engine(runtime, "tests.foundation_child:create_foreign_database", fb3.dsn(foreign))
    runtime.remove(work)
    before = _fingerprint(foreign)
    assert_clean_error(run_cli("db", "readspeed", fb3.dsn(foreign), *common), "refusing to read through gstat")
    assert_clean_error(run_cli("db", "readspeed", fb3.dsn(foreign), "--drop-caches", *common), "on its server")
    assert _fingerprint(foreign) == before
    own = fb3.dsn(data / "own.fdb")
    assert run_cli("db", "create", own, *common).returncode == 0
    read = run_cli("db", "readspeed", own, "--json", *common)
    assert read.returncode == 0, read.stderr
    result = json.loads(read.stdout)
    assert result["pages_read"] > 0 and result["mb_per_second"] > 0 and "gstat" in result["method"]
