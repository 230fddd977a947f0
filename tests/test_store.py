"""The results store: schema versioning, runs written as they go, incomplete runs."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from fbbench.errors import FbbenchError
from fbbench.store import SCHEMA_VERSION, ResultsStore


def test_new_store_has_the_current_schema(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    ResultsStore(path).close()
    assert sqlite3.connect(path).execute("pragma user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_new_store_opened_by_several_processes_at_once(tmp_path: Path) -> None:
    # compare --paired starts two runs that open the store together, and a user may list results
    # while a run creates it: whoever comes second must find the schema made, not fail to make it.
    script = ("import sys, time; from pathlib import Path; from fbbench.store import ResultsStore\n"
              "start = float(sys.argv[2])\n"
              "while time.time() < start: pass\n"
              "ResultsStore(Path(sys.argv[1])).close()\n")
    for attempt in range(6):
        path = tmp_path / f"r{attempt}.sqlite"
        start = str(time.time() + 0.5)  # all four past their start-up, then at once
        openers = [subprocess.Popen([sys.executable, "-c", script, str(path), start], stderr=subprocess.PIPE,
                                    text=True) for _ in range(4)]
        errors = [opener.communicate(timeout=60)[1] for opener in openers]
        assert all(opener.returncode == 0 for opener in openers), [e for e in errors if e][:1]
        assert sqlite3.connect(path).execute("pragma user_version").fetchone()[0] == SCHEMA_VERSION


def test_newer_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    db = sqlite3.connect(path)
    db.execute(f"pragma user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(FbbenchError, match="newer fbbench"):
        ResultsStore(path)


def test_run_recorded_as_it_goes(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "r.sqlite") as store:
        store.begin_run("r1", "bank", {"connections": 2}, {"cpu_count": 2})
        store.record_interval("r1", {"index": 0, "phase": "warmup", "start_offset": 0.0, "seconds": 1.0,
                                     "units": {"transfer": {"ok": 5, "rolled_back": 1, "conflicts": 0, "errors": 0}}})
        run = store.load_run("r1")
        assert run["status"] == "running"  # this process is alive
        assert run["intervals"][0]["ok"] == 5
        store.finish_run("r1", "interrupted", "interrupted by the user")
        assert store.load_run("r")["status"] == "interrupted"  # unique prefix


def test_a_ctrl_c_anywhere_in_a_write_leaves_the_store_writable(tmp_path: Path) -> None:
    # A Ctrl-C in an engine child lands between any two lines of a write; one that came between
    # "begin immediate" and the body left the connection inside a transaction, and every later
    # write of the run — its end among them — failed ("cannot start a transaction within a
    # transaction"): the run stayed "running" after its process had gone. Interrupt the k-th line
    # the store executes, for every k until the write gets through uninterrupted.
    store_module = sys.modules[ResultsStore.__module__].__file__
    with ResultsStore(tmp_path / "r.sqlite") as store:
        store.begin_run("r1", "bank", {}, {})
        for k in range(1, 200):
            lines = 0

            def interrupt_at_k(frame: types.FrameType, event: str, _arg: object, k: int = k) -> object:
                nonlocal lines
                if frame.f_code.co_filename == store_module and event == "line":
                    lines += 1
                    if lines == k:
                        raise KeyboardInterrupt
                return interrupt_at_k

            sys.settrace(interrupt_at_k)
            try:
                store.record_phase("r1", "measure", 1.0, float(k), {"k": k})
                interrupted = False
            except KeyboardInterrupt:
                interrupted = True
            finally:
                sys.settrace(None)
            # All or nothing, and the next write goes through.
            phase = [p for p in store.load_run("r1")["phases"] if p["name"] == "measure"]
            assert phase == [] or phase[0]["seconds"] in (float(k), float(k - 1)), (k, phase)
            store.record_phase("r1", "measure", 1.0, float(k), {"k": k})
            if not interrupted:
                break
        else:
            pytest.fail("the write never got through")
        store.finish_run("r1", "interrupted", "interrupted by the user")
        assert store.load_run("r1")["status"] == "interrupted"
        assert k > 3  # it was interrupted at several places before getting through


def test_run_of_a_dead_process_is_incomplete(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    code = (f"from fbbench.store import ResultsStore; from pathlib import Path; "
            f"s = ResultsStore(Path({str(path)!r})); s.begin_run('dead', 'bank', {{}}, {{}})")
    subprocess.run([sys.executable, "-c", code], check=True)
    with ResultsStore(path) as store:
        assert store.load_run("dead")["status"] == "incomplete"
        assert store.list_runs()[0]["status"] == "incomplete"
        with pytest.raises(FbbenchError, match="no run 'zzz'"):
            store.load_run("zzz")


def test_a_schema_1_store_is_migrated_with_its_runs(tmp_path: Path) -> None:
    from fbbench.store.schema import MIGRATIONS

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[1] + "\npragma user_version = 1;")
    db.execute("insert into runs (run_id, started_at, status, workload, settings_json) "
               "values ('old-run', 1.0, 'completed', 'bank', '{}')")
    db.execute("insert into metrics values ('old-run', 'NOPM', 1, 2, 3, 1, 'd')")
    db.commit()
    db.close()
    with ResultsStore(path) as store:
        run = store.load_run("old-run")
        assert run["status"] == "completed" and run["series_id"] is None
        assert run["metrics"]["NOPM"]["value"] == 3 and run["metrics"]["NOPM"]["window_start"] is None
        assert run["engine_samples"] == {} and run["findings"] == [] and run["gstat"] == {}
        store.record_samples("old-run", 0, [("io", "page_reads", 5.0)])
        assert store.load_run("old-run")["engine_samples"] == {0: {"io": {"page_reads": 5.0}}}
    assert sqlite3.connect(path).execute("pragma user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_schema_2_store_gains_the_audits_sampling_interval(tmp_path: Path) -> None:
    from fbbench.store.schema import MIGRATIONS

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[1] + MIGRATIONS[2] + "\npragma user_version = 2;")
    db.execute("insert into runs (run_id, started_at, status, workload, settings_json) "
               "values ('old-run', 1.0, 'completed', 'bank', '{}')")
    db.execute("insert into checks values ('old-run', 'audit', 'mix', 1, 4.5, '4.5 %')")
    db.commit()
    db.close()
    with ResultsStore(path) as store:
        [old] = store.load_run("old-run")["checks"]
        assert old["passed"] is True and (old["low"], old["high"], old["n"]) == (None, None, None)
        store.record_check("old-run", "audit", "rolled back", None, 0.0, "too few transactions to judge", 0.0, 24.7,
                           13)
        new = store.load_run("old-run")["checks"][1]
        assert (new["name"], new["passed"], new["low"], new["high"], new["n"]) == ("rolled back", None, 0.0, 24.7, 13)
    assert sqlite3.connect(path).execute("pragma user_version").fetchone()[0] == SCHEMA_VERSION


def test_last_and_steps_back_and_series_ids(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "r.sqlite") as store:
        for n in range(3):
            store.begin_run(f"r{n}", "bank", {}, {}, "s-one" if n else None, n or None)
        assert [store.resolve_run_id(t) for t in ("last", "last~0", "last~1", "last~2")] == ["r2", "r2", "r1", "r0"]
        with pytest.raises(FbbenchError, match=r"no run 'last~3' .*: it holds 3 run"):
            store.resolve_run_id("last~3")
        with pytest.raises(FbbenchError, match="after last~ comes a number"):
            store.resolve_run_id("last~x")
        assert store.resolve_series_id("s-o") == "s-one" and store.resolve_series_id("s-two") is None
        assert store.series_runs("s-one") == ["r1", "r2"]


def test_the_typed_view_of_a_stored_run_names_what_the_store_returns(tmp_path: Path) -> None:
    # store/model.py types what reports read; a column added, renamed or dropped must show here.
    from dataclasses import fields

    from fbbench.runner.settings import RunSettings
    from fbbench.store.model import RecordedSettings, StoredRun

    assert set(RecordedSettings.__annotations__) == {f.name for f in fields(RunSettings)} - {"json", "report",
                                                                                            "overwrite", "origins"}
    settings = RunSettings(workload="bank", engine="5.0")
    with ResultsStore(tmp_path / "r.sqlite") as store:
        store.begin_run("r1", "bank", settings.recorded(), {"cpu_count": 2})
        run = store.load_run("r1")
    assert set(run) == set(StoredRun.__annotations__)
    assert set(run["settings"]) == set(RecordedSettings.__annotations__)


def test_a_process_whose_first_thread_ended_while_another_runs_still_owns_its_files(tmp_path: Path) -> None:
    """SIGKILL on an engine child whose threads are writing pages: its first thread can be a zombie
    while the others still exit, holding its files and locks until they do. Until its last thread
    is gone, the files it recorded are not a killed run's leftovers."""
    from fbbench.engines.platform import process_alive
    from fbbench.store.results import RunFiles

    path, release = tmp_path / "r.sqlite", tmp_path / "release"
    code = f"""
import ctypes, os, threading, time
from pathlib import Path
from fbbench.store import ResultsStore
from fbbench.store.results import RunFiles
store = ResultsStore(Path({str(path)!r}))
store.begin_run("r", "bank", {{}}, {{}}, files=RunFiles("work", os.getpid(), {{"/w/db.fdb": "database"}}))
store.close()
def last_thread():
    while not os.path.exists({str(release)!r}):
        time.sleep(0.01)
    os._exit(0)
threading.Thread(target=last_thread).start()
print("ready", flush=True)
ctypes.CDLL("libc.so.6").pthread_exit(None)
"""
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        deadline = time.monotonic() + 10
        while Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the first thread did not end"
            time.sleep(0.01)
        assert process_alive(process.pid)
        with ResultsStore(path) as store:
            assert store.files_to_remove("work") == {}
        release.touch()
        process.wait(10)
        assert not process_alive(process.pid)
        with ResultsStore(path) as store:
            assert store.files_to_remove("work") == {"r": RunFiles("work", process.pid, {"/w/db.fdb": "database"})}
    finally:
        release.touch()
        process.kill()
        process.wait(10)
