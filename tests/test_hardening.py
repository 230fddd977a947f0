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

from fbbench.engines import prepare_runtime, run_in_engine
from fbbench.paths import own_workdir
from tests.conftest import assert_clean_error, bank_with_waiting_checks, run_cli

BANK = Path(__file__).parent / "workloads" / "bank"
QUICK = ["--connections", "2", "--warmup", "1s", "--duration", "2s", "--interval", "1s", "--no-sweep"]


def _runs(store: Path) -> list[tuple[str, str, str | None]]:
    if not store.exists():
        return []
    with contextlib.closing(sqlite3.connect(store)) as db:
        return db.execute("select run_id, status, failure from runs order by started_at").fetchall()


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


@contextlib.contextmanager
def _tmpfs(path: Path, size: int | str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted over ``path`` (as root); skipped where mounting is not allowed."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _owned(work: Path) -> Path:
    """``work`` made an fbbench work directory, as a run would, so that a tmpfs can be mounted in
    it before the run (an unmarked directory that is not empty is refused)."""
    return own_workdir(work).path


def _fill(directory: Path) -> None:
    with open(directory / "filler", "wb", buffering=0) as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"\0" * 4096)


@pytest.fixture
def tiny_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs (mounted by the test, as root); skipped where mounting is not allowed."""
    with _tmpfs(tmp_path / "tiny", "2m") as mount:
        yield mount


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


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="checks run side by side only with 2 cores or more")
def test_checks_run_side_by_side_and_are_recorded_in_their_order(tmp_path: Path) -> None:
    """Two checks that pass only while both run at once (each waits up to 60 s for the other):
    run one after the other, both would fail after a minute each."""
    workload = bank_with_waiting_checks(tmp_path, checks=2, together=2, seconds=60)
    store = tmp_path / "r.sqlite"
    started = time.monotonic()
    result = run_cli("run", str(workload), *QUICK, "--results", str(store), "--workdir", str(tmp_path / "work"),
                     "--fail-on-checks")
    assert result.returncode == 0, result.stdout + result.stderr
    assert time.monotonic() - started < 60
    with contextlib.closing(sqlite3.connect(store)) as db:
        checks = db.execute("select name, passed from checks where kind = 'check' order by rowid").fetchall()
    assert checks == [("together 1", 1), ("together 2", 1), ("money is conserved", 1),
                      ("every transfer is logged", 1)], checks


# ---------------------------------------------------------------------------------- results commands


def test_read_only_commands_do_not_create_a_store(tmp_path: Path) -> None:
    store = tmp_path / "none" / "results.sqlite"
    listed = run_cli("results", "list", "--results", str(store))  # nothing recorded yet: an empty list
    assert listed.returncode == 0 and "no runs yet" in listed.stdout and not listed.stderr, listed.stderr
    assert_clean_error(run_cli("results", "show", "last", "--results", str(store)), "no results store at", str(store))
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


@pytest.mark.alone  # times the failure: a full disk ends a 20 s run within 60 s
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


def test_the_engine_child_needs_no_disk_to_take_its_request_and_hand_over_its_result(tmp_path: Path) -> None:
    """A full disk under the runtime (the work directory) once the run is under way: the child's
    request and its result travel through pipes, so the hand-over still works — where a result
    file failed with ENOSPC and the parent then fell over reading it (two tracebacks)."""
    with _tmpfs(tmp_path / "work", "16m") as mount:
        runtime = prepare_runtime("3.0", mount)  # copied in: another file system than the engine cache
        _fill(mount)
        assert shutil.disk_usage(mount).free < 4096
        assert "libfbclient.so.2" in run_in_engine(runtime, "os:listdir", str(runtime.root))
        # Both ways more than a pipe holds (64 KiB): neither side may wait for the other to read.
        assert run_in_engine(runtime, "textwrap:dedent", "  line\n" * 50_000) == "line\n" * 50_000


# ------------------------------------------------------------- a full disk, phase by phase (issue item 5)


def _one_failed_run(result: subprocess.CompletedProcess[str], store: Path, *fragments: str) -> str:
    """One clear error line naming ``fragments``, no traceback, and the run recorded as failed."""
    assert_clean_error(result, *fragments)
    assert result.returncode == 1 and result.stderr.count("error:") == 1, result.stderr
    (_run_id, status, failure), = _runs(store)
    assert status == "failed", (status, failure)
    for fragment in fragments:
        assert fragment.lower() in failure.lower(), failure
    return failure


def test_a_full_disk_while_the_runtime_is_built_fails_the_run(tmp_path: Path) -> None:
    """Was: a traceback from shutil.copy2, and the run stayed 'incomplete' though fbbench had ended."""
    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    with _tmpfs(_owned(work) / "runtimes", "1m"):
        result = run_cli("run", str(BANK), *QUICK, "--results", str(store), "--workdir", str(work))
        assert _left_in(work) == []
    _one_failed_run(result, store, "cannot build the runtime root", "no space left on device")
    assert "hint: free space on the file system of" in result.stderr


def test_a_disk_too_small_for_the_populations_copy_is_refused_before_the_run(tmp_path: Path) -> None:
    """Was: 'internal error in the engine process: OSError …' with a traceback file, once the copy
    met the full disk; the copy's size is known, so the run is refused before it is recorded."""
    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    first = run_cli("run", str(BANK), *QUICK, "--results", str(tmp_path / "first.sqlite"), "--workdir", str(work))
    assert first.returncode == 0, first.stderr  # the populated cache, on the roomy disk
    with _tmpfs(work / "databases", "1m"):
        result = run_cli("run", str(BANK), *QUICK, "--results", str(store), "--workdir", str(work))
        assert _left_in(work) == []
    assert_clean_error(result, "the run's copy of the cached bank population needs", "free")
    assert result.returncode == 2 and result.stderr.count("error:") == 1, result.stderr
    assert "hint: free some space" in result.stderr
    assert _runs(store) == []


def test_a_full_disk_while_the_population_is_built_fails_the_run(tmp_path: Path) -> None:
    """The engine's own write error, said as a write (it read 'cannot open …') with what to do."""
    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    with _tmpfs(_owned(work) / "dbcache", "1600k"):
        result = run_cli("run", str(BANK), *QUICK, "--fresh", "--results", str(store), "--workdir", str(work))
        assert list((work / "dbcache").glob("*.fdb")) == []  # no half-built population is kept
    _one_failed_run(result, store, "cannot write", "no space left on device")
    assert "cannot open" not in result.stderr and "hint: the file system that holds it is full" in result.stderr


def test_a_full_disk_during_the_checks_fails_the_run(tmp_path: Path) -> None:
    """After measuring, a check that needs the database to grow meets a full disk: the engine's
    write error fails the run (it was a check 'failed' with 'could not run', the run completed)."""
    workload = _bank_copy(tmp_path, edit=('[[checks]]\nname = "money is conserved"',
                                          '[[checks]]\nname = "room to grow"\n'
                                          'sql = "select violations from grow_ballast(40000)"\n\n'
                                          '[[checks]]\nname = "money is conserved"'))
    (workload / "schema.sql").write_text((workload / "schema.sql").read_text() + """
create table ballast (filler varchar(1000));
set term ^ ;
create procedure grow_ballast (p_rows integer) returns (violations integer)
as
declare i integer = 0;
begin
  while (i < p_rows) do
  begin
    insert into ballast values (rpad('', 1000, uuid_to_char(gen_uuid())));  -- no run of equal bytes to compress
    i = i + 1;
  end
  violations = 0;
  suspend;
end^
set term ; ^
""")
    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    # Fixed work: the database grows by the same few pages whatever the machine's speed (3 timed
    # seconds of transfers once filled the 8 MB of room before the checks began).
    fixed = ["--connections", "2", "--transactions", "200", "--interval", "1s", "--no-sweep"]
    first = run_cli("run", str(workload), *fixed, "--results", str(tmp_path / "first.sqlite"), "--workdir", str(work))
    assert first.returncode == 0, first.stderr  # on the roomy disk: the check passes
    cached = max((work / "dbcache").glob("*.fdb"), key=lambda p: p.stat().st_size)
    with _tmpfs(work / "databases", cached.stat().st_size + 8 * 1024 * 1024):
        result = run_cli("run", str(workload), *fixed, "--results", str(store), "--workdir", str(work))
        assert _left_in(work) == []
    _one_failed_run(result, store, "the database cannot be written", "check 'room to grow'")
    with contextlib.closing(sqlite3.connect(store)) as db:
        assert db.execute("select count(*) from intervals").fetchone()[0] > 0  # what was measured is kept


def test_a_full_disk_under_the_report_leaves_no_broken_file(tiny_filesystem: Path, tmp_path: Path) -> None:
    """The run is measured and recorded in full; its page cannot be written: one line says so and
    how to make it later, the exit code says it, and no truncated file is left in its place (an
    earlier report of that name stays as it was)."""
    report, document = tiny_filesystem / "r.html", tiny_filesystem / "r.json"
    earlier = ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
               '<meta name="generator" content="fbbench">\n<title>an earlier report</title>')
    report.write_text(earlier)  # fbbench's, so the run may replace it
    _fill(tiny_filesystem)
    store = tmp_path / "r.sqlite"
    result = run_cli("run", str(BANK), *QUICK, "--report", str(report), "--json", str(document),
                     "--results", str(store), "--workdir", str(tmp_path / "work"))
    assert result.returncode == 2 and "Traceback" not in result.stdout + result.stderr, result.stderr
    assert f"error: cannot write the HTML report {report}: No space left on device" in result.stderr
    assert f"error: cannot write the JSON file {document}: No space left on device" in result.stderr
    assert "hint: the run is recorded: fbbench results show" in result.stderr
    assert report.read_text() == earlier and not document.exists()
    assert sorted(p.name for p in tiny_filesystem.iterdir()) == ["filler", "r.html"]
    (_run_id, status, _failure), = _runs(store)
    assert status == "completed"


def test_a_sweep_on_a_full_disk_records_its_failed_runs_and_says_how_to_resume(tmp_path: Path) -> None:
    """Was: the first run's traceback aborted the sweep, without its summary or the --resume hint."""
    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    spec = tmp_path / "sweep.toml"
    spec.write_text(f'workload = "{BANK}"\nwarmup = "1s"\nduration = "1s"\ninterval = "1s"\nsweep = false\n'
                    f'workdir = "{work}"\nrepeats = 1\n[matrix]\nconnections = [1, 2]\n')
    with _tmpfs(_owned(work) / "runtimes", "1m"):
        result = run_cli("sweep", str(spec), "--results", str(store), "--report", str(tmp_path / "s.html"))
        assert _left_in(work) == []
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output[-3000:]
    assert "sweep: run 2 of 2" in result.stdout  # the sweep went on after the first failure
    assert result.stdout.count("failed; – — cannot build the runtime root") == 2
    assert "error: 2 of 2 run(s) failed" in result.stderr
    assert "hint: once the cause is fixed, run them again: fbbench sweep --resume w" in result.stderr
    assert [status for _id, status, _failure in _runs(store)] == ["failed", "failed"]
    assert (tmp_path / "s.html").exists()  # the sweep's summary and page, with its failed runs
    assert "sweep overhead" not in result.stdout  # was "+-99.5 %": warm-ups counted that never ran


@pytest.mark.parametrize("damage", ['{bad', '[]', 'null', '{"fb5": 7}', '{"engines": {"fb5": {"directory": 5}}}'])
def test_a_damaged_registry_in_fbbench_s_home_is_one_line_and_nothing_runs(tmp_path: Path, damage: str) -> None:
    """engines.json and owned-databases.json edited by hand (or half-written by another tool): one
    line naming the file, before a run makes anything — no traceback, no database left behind."""
    home = tmp_path / "home"
    home.mkdir()
    engines = home / "engines.json"
    engines.write_text(damage if damage.startswith(("{b", "[", "n", '{"e')) else '{"engines": ' + damage + "}")
    assert_clean_error(run_cli("engines", "list", env={"FBBENCH_HOME": str(home)}),
                       f"cannot read the engine registry {engines}")
    engines.unlink()
    owned = home / "owned-databases.json"
    owned.write_text(damage)
    assert_clean_error(run_cli("run", "connect", "-c", "1", "--scale", "connects=5", env={"FBBENCH_HOME": str(home)}),
                       f"cannot read fbbench's record of the databases it made, {owned}")
    assert owned.read_text() == damage and sorted(p.name for p in home.iterdir()) == ["owned-databases.json"]
