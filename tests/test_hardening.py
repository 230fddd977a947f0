"""What a careful, slightly adversarial new user tried (issue "Hardening"), each case on the real CLI.

Absurd attachment counts, a newline in a firebird.conf value, wrong types in a spec file, output
paths that cannot be written, a results store on a full file system, a workload without metrics,
a script outside its workload, a check whose SQL does not prepare, failed checks in CI, and
read-only commands that must not create a store. Every case ends with one clear error line (or an
honest failed run) and leaves nothing behind in the work directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import assert_clean_error, run_cli

BANK = Path(__file__).parent / "workloads" / "bank"
QUICK = ["--connections", "2", "--warmup", "1s", "--duration", "2s", "--interval", "1s", "--no-sweep"]


def _runs(store: Path) -> list[tuple[str, str, str | None]]:
    if not store.exists():
        return []
    with contextlib.closing(sqlite3.connect(store)) as db:
        return db.execute("select run_id, status, failure from runs").fetchall()


def _left_in(work: Path) -> list[str]:
    """Run databases and runtime roots still in the work directory (the cache may stay)."""
    found = []
    for folder in ("databases", "runtimes"):
        if (work / folder).is_dir():
            found += [str(p) for p in (work / folder).iterdir()]
    return found


def _bank_copy(tmp_path: Path, edit: tuple[str, str] | None = None, drop_from: str | None = None) -> Path:
    workload = tmp_path / "bank"
    shutil.copytree(BANK, workload)
    toml = workload / "workload.toml"
    text = toml.read_text()
    if drop_from is not None:
        text = text[: text.index(drop_from)]
    if edit is not None:
        assert edit[0] in text
        text = text.replace(edit[0], edit[1])
    toml.write_text(text)
    return workload


# ---------------------------------------------------------------------------------- connections


def test_absurd_connection_count_is_refused_before_anything_starts(tmp_path: Path) -> None:
    store, work = tmp_path / "r.sqlite", tmp_path / "work"
    many = run_cli("run", str(BANK), "--connections", "100000", "--results", str(store), "--workdir", str(work))
    assert_clean_error(many, "--connections 100,000 is more than 1,000 attachments", "--allow-many-connections")
    forced = run_cli("run", str(BANK), "--connections", "100000", "--allow-many-connections",
                     "--results", str(store), "--workdir", str(work))
    assert_clean_error(forced, "--connections 100,000 needs about", "GB", "attachments fit here")
    fits = int(forced.stderr.split("at most about ")[1].split(" ")[0].replace(",", ""))
    assert 100 < fits < 100_000  # the machine has GBs, not hundreds of GBs
    assert not store.exists() and not work.exists()


def test_spec_file_connection_limits_name_the_file(tmp_path: Path) -> None:
    spec = tmp_path / "run.toml"
    spec.write_text(f'workload = "{BANK}"\nconnections = 5000\n')
    result = run_cli("run", "--spec", str(spec), "--results", str(tmp_path / "r.sqlite"))
    assert_clean_error(result, f"{spec}:2: connections 5,000 is more than 1,000")


# ---------------------------------------------------------------------------------- --set values


@pytest.mark.parametrize(
    ("setting", "fragments"),
    [
        ("ServerMode=Super\nServerMode=Classic", ["--set ServerMode must be a single line"]),
        ("DefaultDbCachePages=-5", ["DefaultDbCachePages cannot be negative"]),
        ("DefaultDbCachePages=lots", ["DefaultDbCachePages must be a whole number"]),
        ("ReadConsistency=on", ["ReadConsistency must be true or false", "would mean false"]),
        ("GCPolicy=sometimes", ["invalid GCPolicy 'sometimes'", "cooperative"]),
        ("ServerMode=Turbo", ["invalid ServerMode 'Turbo'", "SuperClassic"]),
    ],
)
def test_firebird_conf_values_are_checked_by_type(setting: str, fragments: list[str], tmp_path: Path) -> None:
    store, work = tmp_path / "r.sqlite", tmp_path / "work"
    result = run_cli("run", str(BANK), "--set", setting, "--results", str(store), "--workdir", str(work))
    assert_clean_error(result, *fragments)
    assert not _runs(store)


def test_documented_negative_value_is_accepted(tmp_path: Path) -> None:
    """MaxUnflushedWrites documents -1 (disabled): a careful check must not refuse it."""
    store, work = tmp_path / "r.sqlite", tmp_path / "work"
    result = run_cli("run", str(BANK), *QUICK, "--set", "MaxUnflushedWrites=-1", "--results", str(store),
                     "--workdir", str(work))
    assert result.returncode == 0, result.stdout + result.stderr


def test_negative_page_buffers_fail_early_and_leave_nothing(tmp_path: Path) -> None:
    store, work = tmp_path / "r.sqlite", tmp_path / "work"
    result = run_cli("run", str(BANK), "--page-buffers", "-1", "--results", str(store), "--workdir", str(work))
    assert_clean_error(result, "--page-buffers must be at least 0, got -1")
    assert not _runs(store) and _left_in(work) == []


# ---------------------------------------------------------------------------------- spec types


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('connections = "two"', 'connections must be a whole number, got "two"'),
        ("engine = 5.0", "engine must be a string, got 5.0"),
        ('seed = "abc"', 'seed must be a whole number, got "abc"'),
        ('tags = "hello"', 'tags must be a list of strings such as ["nightly", "nvme"], got "hello"'),
        ('fresh = "no"', 'fresh must be true or false (without quotes), got "no"'),
        ('warmup = true', "warmup must be a duration such as 30s or 5m, got true"),
        ("[set]\nDefaultDbCachePages = [1, 2]", "'DefaultDbCachePages' must be a single value"),
        ('forced_writes = "maybe"', 'forced_writes must be true or false (or "on" / "off"), got "maybe"'),
    ],
)
def test_spec_type_errors_name_file_line_and_expected_type(line: str, expected: str, tmp_path: Path) -> None:
    spec = tmp_path / "run.toml"
    spec.write_text(f'workload = "{BANK}"\nduration = "5s"\n{line}\n')
    store = tmp_path / "r.sqlite"
    result = run_cli("run", "--spec", str(spec), "--results", str(store), "--workdir", str(tmp_path / "w"))
    assert_clean_error(result, f"{spec}:3: ", expected)
    assert not _runs(store)


def test_spec_values_of_the_right_type_are_used(tmp_path: Path) -> None:
    spec = tmp_path / "run.toml"
    spec.write_text(f'workload = "{BANK}"\nengine = "5.0"\nconnections = 2\nwarmup = "1s"\nduration = 2\n'
                    'interval = "1s"\nsweep = false\ntags = ["from-spec"]\nforced_writes = "off"\nseed = 7\n'
                    "[scale]\naccounts = 200\n[set]\nDefaultDbCachePages = 512\n")
    out = tmp_path / "r.json"
    result = run_cli("run", "--spec", str(spec), "--tag", "from-flag", "--json", str(out),
                     "--results", str(tmp_path / "r.sqlite"), "--workdir", str(tmp_path / "w"))
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads(out.read_text())
    assert document["tags"] == ["from-spec", "from-flag"]
    assert document["seed"] == 7 and document["connections"] == 2
    assert document["settings"]["scale"] == {"accounts": "200"} and document["settings"]["sweep"] is False
    assert document["database"]["forced_writes"] is False
    assert document["engine"]["firebird_conf"]["DefaultDbCachePages"] == "512"


# ---------------------------------------------------------------------------------- output paths


@pytest.mark.parametrize("kind", ["directory", "read-only file", "under a file"])
def test_unwritable_json_is_refused_before_the_run(kind: str, tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    if kind == "directory":
        target.mkdir()
    elif kind == "read-only file":
        target.write_text("{}")
        target.chmod(0o444)
    else:
        (tmp_path / "plain").write_text("x")
        target = tmp_path / "plain" / "out.json"
    if kind == "read-only file" and os.geteuid() == 0:
        pytest.skip("root writes read-only files anyway")
    store, work = tmp_path / "r.sqlite", tmp_path / "work"
    result = run_cli("run", str(BANK), *QUICK, "--json", str(target), "--results", str(store), "--workdir", str(work))
    assert_clean_error(result, "--json", str(target))
    assert not _runs(store) and not work.exists()


def test_unwritable_report_directory_is_refused_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    result = run_cli("run", str(BANK), *QUICK, "--report", str(tmp_path / "plain" / "sub" / "r.html"),
                     "--results", str(tmp_path / "r.sqlite"), "--workdir", str(tmp_path / "work"))
    assert_clean_error(result, "--report", "is not a directory")


@pytest.fixture
def tiny_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs (mounted by the test, as root); skipped where mounting is not allowed."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_results_store_on_a_full_file_system_fails_cleanly(tiny_filesystem: Path, tmp_path: Path) -> None:
    store = tiny_filesystem / "results.sqlite"
    filler = tiny_filesystem / "filler"
    with open(filler, "wb") as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"\0" * 65536)
    work = tmp_path / "work"
    result = run_cli("run", str(BANK), *QUICK, "--results", str(store), "--workdir", str(work))
    assert_clean_error(result, "results store", str(store))
    assert result.stderr.count("error:") == 1, result.stderr
    assert _left_in(work) == []
    # The same with room for the store's start but not for the run: the run ends, never hangs.
    filler.unlink()
    with open(filler, "wb") as handle, contextlib.suppress(OSError):
        handle.truncate(0)
        handle.write(b"\0" * (2 * 1024 * 1024 - 160 * 1024))
    result = run_cli("run", str(BANK), "--connections", "2", "--warmup", "1s", "--duration", "4s",
                     "--interval", "0.2s", "--no-sweep", "--results", str(store), "--workdir", str(work))
    assert result.returncode != 0
    assert "Traceback" not in result.stdout + result.stderr
    assert "results store" in result.stderr
    assert _left_in(work) == []


# ---------------------------------------------------------------------------------- workloads


def test_workload_without_metrics_runs(tmp_path: Path) -> None:
    workload = _bank_copy(tmp_path, drop_from="[[metrics]]")
    out = tmp_path / "r.json"
    result = run_cli("run", str(workload), *QUICK, "--json", str(out), "--results", str(tmp_path / "r.sqlite"),
                     "--workdir", str(tmp_path / "work"))
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads(out.read_text())
    assert document["status"] == "completed" and document["metrics"] == {}
    assert document["headline"]["value"] > 0


def test_script_outside_the_workload_is_refused(tmp_path: Path) -> None:
    workload = _bank_copy(tmp_path, edit=('scripts = ["schema.sql"]', 'scripts = ["../../../etc/hostname"]'))
    result = run_cli("run", str(workload), "--results", str(tmp_path / "r.sqlite"))
    assert_clean_error(result, "workload.toml:5:", "'../../../etc/hostname' is outside the workload directory")


def test_audit_naming_an_unknown_unit_is_refused_at_load(tmp_path: Path) -> None:
    workload = _bank_copy(tmp_path, edit=("transfer.tally.AMOUNT / transfer.ok",
                                          "transfers.tally.AMOUNT / transfer.ok"))
    result = run_cli("run", str(workload), "--results", str(tmp_path / "r.sqlite"))
    assert_clean_error(result, "workload.toml:", "unknown name 'transfers.tally.AMOUNT'",
                       "did you mean 'transfer.tally.AMOUNT'")


def test_check_that_does_not_prepare_stops_the_run_before_measuring(tmp_path: Path) -> None:
    workload = _bank_copy(tmp_path, edit=("select count(*) from account a", "select count(*) from acount a"))
    store, work = tmp_path / "r.sqlite", tmp_path / "work"
    result = run_cli("run", str(workload), *QUICK, "--results", str(store), "--workdir", str(work))
    assert result.returncode == 1
    assert "the SQL of check 'every transfer is logged' does not prepare" in result.stderr
    assert "ACOUNT" in result.stderr.upper() and "Traceback" not in result.stderr
    (_run_id, status, _failure), = _runs(store)
    assert status == "failed"
    with contextlib.closing(sqlite3.connect(store)) as db:
        assert db.execute("select count(*) from intervals").fetchone()[0] == 0  # nothing was measured
    assert _left_in(work) == []  # the run's database copy, made before the failure, is gone


def test_a_run_failing_in_its_schema_script_shows_what_it_never_read_as_unknown(tmp_path: Path) -> None:
    # It failed before its database existed: no page size, no buffers. The summary says "?" where
    # it printed Python's None.
    workload = _bank_copy(tmp_path)
    schema = workload / "schema.sql"
    schema.write_text("create tablex oops (x integer);\n" + schema.read_text())
    result = run_cli("run", str(workload), *QUICK, "--results", str(tmp_path / "r.sqlite"), "--workdir",
                     str(tmp_path / "work"))
    assert result.returncode == 1 and "schema.sql:1" in result.stderr and "Traceback" not in result.stderr
    assert "None" not in result.stdout, result.stdout
    assert "page size ?, buffers ?, forced writes ?" in " ".join(result.stdout.split()), result.stdout


def test_fail_on_checks_gives_exit_code_3(tmp_path: Path) -> None:
    workload = _bank_copy(tmp_path, edit=("select iif(sum(balance) = ${accounts} * 100, 0, 1)",
                                          "select iif(sum(balance) = ${accounts} * 100, 1, 0)"))
    common = [str(workload), *QUICK, "--results", str(tmp_path / "r.sqlite"), "--workdir", str(tmp_path / "work")]
    plain = run_cli("run", *common)
    assert plain.returncode == 0, plain.stderr  # failed checks are shown, not fatal, unless asked
    assert "FAIL" in plain.stdout
    strict = run_cli("run", *common, "--fail-on-checks")
    assert strict.returncode == 3, strict.stdout + strict.stderr
    assert "1 check(s) failed: money is conserved" in strict.stderr


# ---------------------------------------------------------------------------------- results commands


def test_read_only_commands_do_not_create_a_store(tmp_path: Path) -> None:
    store = tmp_path / "none" / "results.sqlite"
    for args in (["results", "list"], ["results", "show", "last"]):
        result = run_cli(*args, "--results", str(store))
        assert_clean_error(result, "no results store at", str(store))
    assert not store.exists() and not store.parent.exists()


# ---------------------------------------------------------------------------------- a full disk

TPCC_TINY = ["--scale", "items=2000", "--scale", "customers=300", "--scale", "orders=300"]


def _limit_files_and_ignore_sigxfsz(limit: int) -> Callable[[], None]:
    def apply() -> None:
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_full_disk_during_measure_fails_the_run_within_its_bound(tmp_path: Path) -> None:
    """The user's report: a full disk while measuring hung the run for ever. Now the engine's
    write error fails the run at once, and the watchdog bounds how long it may take to end.

    Only the run's database copy lands on the full file system: a small tmpfs mounted over the
    work directory's ``databases`` folder (as root); where mounting is not allowed, a file-size
    limit (RLIMIT_FSIZE) on the whole fbbench process instead — the test says which one ran.
    """
    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    first = run_cli("run", "tpcc", *TPCC_TINY, "--connections", "1", "--transactions", "1", "--no-sweep",
                    "--results", str(store), "--workdir", str(work))
    assert first.returncode == 0, first.stderr  # the populated cache now exists, outside the tmpfs
    cached = max((work / "dbcache").glob("*.fdb"), key=lambda p: p.stat().st_size)
    room = cached.stat().st_size + 3 * 1024 * 1024  # the copy, then a little room to grow
    databases = work / "databases"
    databases.mkdir(exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={room}", "tmpfs", str(databases)],
                             capture_output=True)
    mechanism = "tmpfs" if mounted.returncode == 0 else "RLIMIT_FSIZE"
    print(f"full disk made by: {mechanism}")
    args = ["run", "tpcc", *TPCC_TINY, "--connections", "4", "--warmup", "2s", "--duration", "20s",
            "--interval", "2s", "--no-sweep", "--results", str(store), "--workdir", str(work)]
    try:
        started = time.monotonic()
        result = subprocess.run([sys.executable, "-m", "fbbench", *args], capture_output=True, text=True,
                                timeout=120, env={**os.environ, "COLUMNS": "200"},
                                preexec_fn=None if mechanism == "tmpfs" else _limit_files_and_ignore_sigxfsz(room))
        elapsed = time.monotonic() - started
    finally:
        if mechanism == "tmpfs":
            subprocess.run(["umount", "-l", str(databases)], check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-3000:]
    assert "Traceback" not in output
    assert "the database cannot be written" in result.stderr, result.stderr
    # 2 s warm-up + 20 s measured at most, plus start-up; the run stops at the first write error.
    assert elapsed < 60, elapsed
    (_run_id, status, failure), *_ = [row for row in _runs(store) if row[1] != "completed"]
    assert status == "failed" and "cannot be written" in failure
    with contextlib.closing(sqlite3.connect(store)) as db:
        intervals = db.execute("select count(distinct idx) from intervals where run_id = ?", (_run_id,)).fetchone()[0]
    assert intervals >= 1  # what was measured before the disk filled up is kept
    assert _left_in(work) == []
