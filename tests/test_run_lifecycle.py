"""The life of ``fbbench run`` as a user lives it: Ctrl-C, kill -9, the same seed twice, bad input,
and an external server — always the real CLI in its own process, on real engines.

- Ctrl-C (SIGINT to the process group, as a terminal sends it, or to fbbench alone): the run ends
  within seconds with exit code 130, and the store keeps it as ``interrupted`` with what it measured.
- kill -9: the store shows the run as ``incomplete`` with the intervals it finished, and no engine
  child is left running the load unobserved.
- A fixed seed and fixed work give the same units, outcomes, tallies and DB-side figures.
- Bad input ends with one ``error:`` line and no traceback (extends tests/test_run_errors.py).
- Against the private loopback Firebird 3 server: db create/info with --user/--password-file, a
  wrong password and an unreachable server explained, and the password nowhere on disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fbbench.engines.template import CHILD_NAME, HOST_VARIABLE, TEMPLATE_NAME
from tests import chromium
from tests.conftest import (
    REPO,
    assert_clean_error,
    bank_with_waiting_checks,
    fb3_server_or_skip,
    process_running,
    run_cli,
    template_host,
)
from tests.fb3server import Fb3Server

BANK = Path(__file__).parent / "workloads" / "bank"
TPCC_TINY = ["--scale", "items=2000", "--scale", "customers=300", "--scale", "orders=300"]
EXIT_WITHIN = 10.0  # seconds from the signal to the end of the whole process tree


# ------------------------------------------------------------------------------------ helpers


@pytest.fixture(scope="module")
def shared_work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One work directory for the module: populated databases are built once, then copied."""
    return tmp_path_factory.mktemp("lifecycle-work")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        with contextlib.suppress(OSError):
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return found


def _descendants(pid: int) -> set[int]:
    seen: set[int] = set()
    todo = _children(pid)
    while todo:
        child = todo.pop()
        if child not in seen:
            seen.add(child)
            todo += _children(child)
    return seen


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _wait_until(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def _query(store: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Read the results store as another process would, while the run writes it."""
    if not store.exists():
        return []
    try:
        db = sqlite3.connect(store, timeout=10)
        try:
            return db.execute(sql, args).fetchall()
        finally:
            db.close()
    except sqlite3.OperationalError:  # the schema is not there yet
        return []


def _measured_intervals(store: Path) -> int:
    rows = _query(store, "select count(distinct idx) from intervals where phase = 'measure'")
    return int(rows[0][0]) if rows else 0


class RunningCli:
    """``fbbench run`` started in the background, in its own session (like a job in a terminal)."""

    def __init__(self, tmp_path: Path, work: Path, *args: str, env: dict[str, str] | None = None,
                 umask: int = -1) -> None:
        self.store = tmp_path / "results.sqlite"
        self.stdout_path, self.stderr_path = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
        self.seen: set[int] = set()
        with open(self.stdout_path, "w") as out, open(self.stderr_path, "w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "fbbench", "run", *args, "--results", str(self.store), "--workdir", str(work)],
                stdout=out, stderr=err, cwd=REPO, start_new_session=True, umask=umask,
                env={**os.environ, "COLUMNS": "200", **(env or {})},
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return self.stdout_path.read_text(errors="replace") + self.stderr_path.read_text(errors="replace")

    def watch(self) -> set[int]:
        """Every process below fbbench seen so far (checked for leftovers at the end)."""
        self.seen |= _descendants(self.pid)
        return self.seen

    def engine_child(self) -> int | None:
        # Forked from its engine's template (fbbench.engines.template), or a new interpreter.
        return next((pid for pid in sorted(self.watch())
                     if _comm(pid) == CHILD_NAME or "child_main" in _cmdline(pid)), None)

    def wait_measuring(self, intervals: int = 2, timeout: float = 120) -> None:
        def measuring() -> bool:
            self.watch()
            if self.process.poll() is not None:
                raise AssertionError(f"fbbench ended early ({self.process.returncode}):\n{self.output()}")
            return _measured_intervals(self.store) >= intervals

        _wait_until(measuring, timeout, f"{intervals} measured intervals", interval=0.2)

    def wait_exit(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"fbbench still running {timeout:.0f} s after the signal:\n{self.output()}") from None

    def leftovers(self) -> list[str]:
        return [f"{pid}: {_cmdline(pid)}" for pid in sorted(self.seen) if process_running(pid)]

    def cleanup(self) -> None:
        for pid in [self.pid, *self.seen]:
            if process_running(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        self.process.wait(10)


@pytest.fixture
def background() -> Iterator[Callable[..., RunningCli]]:
    started: list[RunningCli] = []

    def start(tmp_path: Path, work: Path, *args: str, **options: Any) -> RunningCli:
        started.append(RunningCli(tmp_path, work, *args, **options))
        return started[-1]

    yield start
    for run in started:  # never leave a load running behind a failed test
        run.cleanup()


def _run_row(store: Path) -> tuple[str, str, int | None, str | None]:
    rows = _query(store, "select run_id, status, pid, failure from runs")
    assert len(rows) == 1, rows
    return rows[0]


def _show_json(store: Path, run_id: str, tmp_path: Path) -> dict[str, Any]:
    target = tmp_path / f"show-{run_id}.json"
    shown = run_cli("results", "show", run_id, "--results", str(store), "--json", str(target))
    assert shown.returncode == 0, shown.stderr
    assert "Traceback" not in shown.stdout + shown.stderr
    return json.loads(target.read_text())


LONG_BANK_RUN = (str(BANK), "--connections", "2", "--warmup", "1s", "--duration", "60s", "--interval", "1s")


# ------------------------------------------------------------------------------------- Ctrl-C


@pytest.mark.parametrize("target", ["process group", "fbbench alone"])
@pytest.mark.alone  # times the end: within EXIT_WITHIN of Ctrl-C
def test_ctrl_c_during_measure_keeps_what_was_measured(target: str, tmp_path: Path, shared_work: Path,
                                                       background: Callable[..., RunningCli]) -> None:
    run = background(tmp_path, shared_work, *LONG_BANK_RUN)
    run.wait_measuring(2)
    child = run.engine_child()
    assert child is not None, run.watch()

    signalled = time.time()
    if target == "process group":  # what a terminal does on Ctrl-C
        os.killpg(run.pid, signal.SIGINT)
    else:
        os.kill(run.pid, signal.SIGINT)
    code = run.wait_exit(EXIT_WITHIN)
    assert time.time() - signalled < EXIT_WITHIN
    assert code == 130, run.output()
    assert "Traceback" not in run.output()
    _wait_until(lambda: not run.leftovers(), 5, "the engine child to end")

    run_id, status, pid, _failure = _run_row(run.store)
    assert status == "interrupted"
    assert pid == child  # the engine child had claimed the run
    assert f"run {run_id} — interrupted" in run.output()

    stored = _show_json(run.store, run_id, tmp_path)
    assert stored["status"] == "interrupted"
    measured = {i["index"] for i in stored["intervals"] if i["phase"] == "measure"}
    assert len(measured) >= 2
    assert set(stored["units"]) == {"transfer", "balance"}
    assert stored["units"]["transfer"]["ok"] > 0 and stored["units"]["balance"]["ok"] > 0
    # Unit totals cover the measured period: at least what the stored measure intervals counted.
    for unit, totals in stored["units"].items():
        counted = sum(i["ok"] for i in stored["intervals"] if i["phase"] == "measure" and i["unit"] == unit)
        assert totals["ok"] >= counted > 0, (unit, totals, counted)
    assert 1.5 <= stored["measure_seconds"] < 60

    # The workers stopped promptly: the measure phase (core stopped, end metrics read) ended within
    # a few seconds of the signal (the core's own bound is 2 s; the rest is slack for a busy machine).
    phase = _query(run.store, "select started_at, seconds from phases where name = 'measure'")
    assert phase and phase[0][1] is not None
    assert phase[0][0] + phase[0][1] - signalled < 4.0, phase
    # An interrupted run skips the after phase: no checks ran on a half-done load.
    assert not _query(run.store, "select * from phases where name = 'after'")


@pytest.mark.alone  # times the end: within EXIT_WITHIN of Ctrl-C
def test_ctrl_c_during_a_check_that_runs_for_minutes_ends_the_run_at_once(tmp_path: Path,
                                                                         background: Callable[..., RunningCli]) -> None:
    """A check inside the engine holds its thread in the client library: the Ctrl-C still ends the
    run within seconds (it waited for the check to end: here, 5 minutes), recorded as interrupted,
    its database copy removed."""
    workload = bank_with_waiting_checks(tmp_path, checks=1, together=99, seconds=300)
    work = tmp_path / "work"
    run = background(tmp_path, work, str(workload), "--connections", "2", "--warmup", "0s", "--duration", "2s",
                     "--interval", "1s", "--no-sweep")

    def checking() -> bool:
        run.watch()
        assert run.process.poll() is None, run.output()
        return bool(_query(run.store, "select 1 from phases where name = 'after' and seconds is null"))

    _wait_until(checking, 120, "the checks")
    time.sleep(3)  # past the snapshot and gstat, into the waiting check (it waits 300 s)
    signalled = time.time()
    os.killpg(run.pid, signal.SIGINT)
    assert run.wait_exit(EXIT_WITHIN) == 130, run.output()
    assert time.time() - signalled < EXIT_WITHIN
    assert "Traceback" not in run.output(), run.output()
    _wait_until(lambda: not run.leftovers(), 5, "the engine child to end")
    assert _run_row(run.store)[1] == "interrupted"
    assert list((work / "databases").iterdir()) == []
    # Its measured period was whole: the summary shows it (it said "nothing was measured").
    output = run.output()
    assert "per unit (measured period)" in output and "nothing was measured" not in output, output


@pytest.mark.alone  # times the end: within EXIT_WITHIN of Ctrl-C
def test_ctrl_c_during_the_warm_up_shows_nothing_measured_not_zeros(tmp_path: Path, shared_work: Path,
                                                                   background: Callable[..., RunningCli]) -> None:
    # Stopped in its warm-up, a run counted nothing: its per-unit table says so with "–" in every
    # cell (it printed 0 units and 0.00 ms latencies, as if measured), on the console and in the report.
    run = background(tmp_path, shared_work, str(BANK), "--connections", "2", "--warmup", "60s", "--duration", "10s",
                     "--interval", "1s")

    def warming_up() -> bool:
        run.watch()
        assert run.process.poll() is None, run.output()
        return bool(_query(run.store, "select 1 from intervals where phase = 'warmup'"))

    _wait_until(warming_up, 120, "a warm-up interval")
    os.killpg(run.pid, signal.SIGINT)
    assert run.wait_exit(EXIT_WITHIN) == 130, run.output()
    output = run.output()
    assert "Traceback" not in output and "None" not in output, output
    table = output[output.index("per unit: nothing was measured"):]
    rows = [line for line in table.splitlines() if line.startswith(("│ transfer", "│ balance"))]
    assert len(rows) == 2 and all(set(cell.strip() for cell in row.split("│")[2:-1]) == {"–"} for row in rows), rows
    run_id = _run_row(run.store)[0]
    page = tmp_path / "interrupted.html"
    shown = run_cli("results", "show", run_id, "--results", str(run.store), "--report", str(page))
    assert shown.returncode == 0 and "per unit: nothing was measured" in shown.stdout, shown.stdout
    units = chromium.render_ok(page, tmp_path / "chromium").body.by_id("units-table")
    cells = [cell.text for row in units.all("tr") for cell in row.all("td")[1:]]
    assert cells and set(cells) == {"–"}, cells
    assert "Nothing was measured: the run interrupted before its measured period." in units.text


@pytest.mark.alone  # times the end: within EXIT_WITHIN of Ctrl-C
def test_ctrl_c_while_populating_is_an_interruption_not_a_failure(tmp_path: Path,
                                                                  background: Callable[..., RunningCli]) -> None:
    # libfbclient answers SIGINT by shutting down every attachment: the population then fails with
    # "connection shutdown", which must still be recorded as the user's interruption.
    run = background(tmp_path, tmp_path / "work", str(BANK), "--scale", "accounts=400000", "--scale", "branches=4",
                     "--load-connections", "2", "--fresh", "--connections", "1", "--duration", "60s")

    def populating() -> bool:
        run.watch()
        assert run.process.poll() is None, run.output()
        return bool(_query(run.store, "select 1 from phases where name = 'database' and seconds is null"))

    _wait_until(populating, 120, "the database phase")
    time.sleep(0.5)  # inside the load steps
    os.killpg(run.pid, signal.SIGINT)
    code = run.wait_exit(EXIT_WITHIN)
    assert code == 130, run.output()
    assert "Traceback" not in run.output()
    _run_id, status, _pid, failure = _run_row(run.store)
    assert (status, failure) == ("interrupted", "interrupted by the user")
    assert not _query(run.store, "select 1 from phases where name = 'measure'")
    _wait_until(lambda: not run.leftovers(), 5, "the engine child to end")


# ------------------------------------------------------------------------------------ kill -9


@pytest.mark.parametrize("victims", ["parent and engine child", "parent only"])
def test_kill_9_during_measure_leaves_an_incomplete_run(victims: str, tmp_path: Path, shared_work: Path,
                                                        background: Callable[..., RunningCli]) -> None:
    run = background(tmp_path, shared_work, *LONG_BANK_RUN)
    run.wait_measuring(2)
    child = run.engine_child()
    assert child is not None, run.watch()

    os.killpg(run.pid, signal.SIGKILL)  # fbbench's group; the engine child runs in a group of its own
    if victims == "parent and engine child":
        os.killpg(child, signal.SIGKILL)
    # "parent only": the child notices its parent's death (PR_SET_PDEATHSIG) and dies too.
    assert run.wait_exit(EXIT_WITHIN) == -signal.SIGKILL
    _wait_until(lambda: not run.leftovers(), EXIT_WITHIN, f"no process left of {sorted(run.seen)}")

    stored_intervals = _measured_intervals(run.store)
    assert stored_intervals >= 2
    run_id, raw_status, pid, _failure = _run_row(run.store)
    assert raw_status == "running" and pid == child  # as the killed process left it

    listed = run_cli("results", "list", "--results", str(run.store))
    assert listed.returncode == 0, listed.stderr
    assert "incomplete" in listed.stdout and "running" not in listed.stdout, listed.stdout

    shown = run_cli("results", "show", run_id, "--results", str(run.store))
    assert shown.returncode == 0, shown.stderr
    assert f"run {run_id} — incomplete" in shown.stdout
    stored = _show_json(run.store, run_id, tmp_path)
    assert stored["status"] == "incomplete"
    assert len({i["index"] for i in stored["intervals"] if i["phase"] == "measure"}) == stored_intervals
    assert all(i["ok"] + i["rolled_back"] > 0 for i in stored["intervals"] if i["unit"] == "transfer")
    # The engine's figures of the finished intervals were stored as they came, too.
    sampled = {s["index"] for s in stored["engine_samples"] if s["phase"] == "measure"}
    assert len(sampled) >= stored_intervals - 1, (sampled, stored_intervals)
    assert all(s["io"]["page_fetches"] > 0 for s in stored["engine_samples"] if s["index"] in sampled)

    # The killed run could not clean up; the next run with the same store and work directory does.
    leftovers = [shared_work / "databases" / f"{run_id}.fdb", shared_work / "runtimes" / run_id]
    assert all(path.exists() for path in leftovers), leftovers
    next_run = run_cli("run", str(BANK), "--connections", "1", "--transactions", "5", "--results", str(run.store),
                       "--workdir", str(shared_work))
    assert next_run.returncode == 0, next_run.stdout[-2000:] + next_run.stderr
    assert "removed what killed runs or commands left behind" in next_run.stdout, next_run.stdout
    assert run_id in next_run.stdout, next_run.stdout
    assert not any(path.exists() for path in leftovers), leftovers
    assert _show_json(run.store, run_id, tmp_path)["status"] == "incomplete"  # what it measured stays


@pytest.mark.alone  # times the orphan's end: within EXIT_WITHIN of its parent's
def test_kill_9_while_the_engine_child_starts_leaves_no_orphan(tmp_path: Path, shared_work: Path,
                                                               background: Callable[..., RunningCli]) -> None:
    # Killed before the child could ask for a death signal: the child must not run the load unobserved.
    run = background(tmp_path, shared_work, *LONG_BANK_RUN)
    child = _wait_until(run.engine_child, 60, "the engine child", interval=0.005)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait_exit(EXIT_WITHIN)
    _wait_until(lambda: not process_running(child), EXIT_WITHIN, f"the orphaned engine child {child} to end")
    assert _measured_intervals(run.store) == 0
    rows = _query(run.store, "select run_id from runs")
    if rows:  # the run row exists once the runtime was prepared; nobody finished it
        listed = run_cli("results", "list", "--results", str(run.store))
        assert "incomplete" in listed.stdout, listed.stdout


# --------------------------------------------------------------------------- fixed seed, fixed work


def _figures(document: dict[str, Any], store: Path) -> dict[str, Any]:
    units = {name: {key: unit[key] for key in ("ok", "rolled_back", "conflicts", "errors")}
             for name, unit in document["units"].items()}
    tallies = {name: unit.get("tally") or {} for name, unit in document["units"].items()}
    rows = _query(store, "select start_value, end_value from metrics where run_id = ? and name = 'NOPM'",
                  document["run_id"])
    assert rows and None not in rows[0], rows
    return {"units": units, "tallies": tallies, "NOPM delta": rows[0][1] - rows[0][0]}


def test_same_seed_same_work_same_figures(tmp_path: Path, shared_work: Path) -> None:
    store = tmp_path / "results.sqlite"
    figures = []
    for number, seed in enumerate(("7", "7", "8")):
        target = tmp_path / f"run{number}.json"
        result = run_cli("run", "tpcc", "--engine", "5.0", *TPCC_TINY, "--connections", "1", "--transactions", "120",
                         "--seed", seed, "--no-sweep", "--json", str(target), "--results", str(store),
                         "--workdir", str(shared_work))
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr
        document = json.loads(target.read_text())
        assert document["status"] == "completed" and document["seed"] == int(seed)
        figures.append(_figures(document, store))

    first, again, other = figures
    units = first["units"]
    assert sum(u["ok"] + u["rolled_back"] for u in units.values()) == 120
    assert units["new_order"]["ok"] > 0 and units["payment"]["ok"] > 0
    assert first["tallies"]["new_order"]["OL_CNT"] >= 5 * units["new_order"]["ok"]  # 5..15 lines per order
    assert "BY_NAME" in first["tallies"]["payment"]
    # Committed new orders, counted by the database: sum(d_next_o_id) grew by exactly that much.
    assert first["NOPM delta"] == units["new_order"]["ok"]

    assert again == first
    assert other != first


# ---------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["./no-such-workload-dir"], ["unknown workload './no-such-workload-dir'", "workload.toml"]),
        (["tpcc", "--scale", "warehouses=abc"], ["scale 'warehouses' must be a number", "'abc'"]),
        (["tpcc", "--scale", "nosuchknob=1"], ["unknown scale parameter 'nosuchknob' for workload tpcc",
                                               "known: customers, items, orders"]),
        (["tpcc", "--scale", "warehouses"], ["--scale 'warehouses' must look like key=value"]),
        (["tpcc", "--scale", "warehouses=0"], ["scale 'warehouses' must be more than 0", "default is 1"]),
        (["tpcc", "--connections", "-3"], ["--connections must be at least 1"]),
        (["tpcc", "--transactions", "0"], ["--transactions must be at least 1"]),
        (["tpcc", "--duration", "0"], ["--duration must be longer than 0"]),
        (["tpcc", "--warmup", "-5s"], ["--warmup cannot be negative"]),
        (["tpcc", "--interval", "1ms"], ["--interval must be a duration"]),
        (["tpcc", "--load-connections", "0"], ["--load-connections must be at least 1"]),
        (["tpcc", "--seed", "-1"], ["--seed must be between 0 and 2^63 - 1"]),
        (["tpcc", "--spec", "/nonexistent/run.toml"], ["cannot read the spec file /nonexistent/run.toml"]),
    ],
)
def test_bad_run_input_more(args: list[str], fragments: list[str], tmp_path: Path) -> None:
    store = tmp_path / "results.sqlite"
    result = run_cli("run", *args, "--results", str(store), "--workdir", str(tmp_path / "work"))
    assert_clean_error(result, *fragments)
    assert result.stderr.strip().splitlines()[0].startswith("error:")
    assert len([line for line in result.stderr.splitlines() if line.startswith("error:")]) == 1
    assert not _query(store, "select run_id from runs")  # nothing was recorded as a run


@pytest.mark.parametrize(
    ("old", "new", "section", "expected"),
    [
        ("scripts = ", "scriptz = ", "the top level", ["scripts", "units", "metrics"]),
        ("rollback_on = ", "rolback_on = ", "[[units]] #1", ["rollback_on", "isolation", "weight"]),
        ('isolation = "snapshot"', 'isolaton = "snapshot"', "[[units]] #2", ["isolation", "read_only"]),
        ("for_each = ", "foreach = ", "[[load]] #1", ["for_each", "params", "script", "sql"]),
    ],
)
def test_typo_in_workload_file_names_file_line_and_expected_keys(old: str, new: str, section: str,
                                                                  expected: list[str], tmp_path: Path) -> None:
    workload = tmp_path / "bank"
    shutil.copytree(BANK, workload)
    toml = workload / "workload.toml"
    text = toml.read_text()
    assert text.count(old) == 1
    line = text[: text.index(old)].count("\n") + 1
    toml.write_text(text.replace(old, new))
    typo = new.split(" =")[0]
    result = run_cli("run", str(workload), "--results", str(tmp_path / "r.sqlite"), "--workdir", str(tmp_path / "w"))
    assert_clean_error(result, f"{toml}:{line}: unknown key '{typo}' in {section}", "expected one of:", *expected)
    assert f"did you mean '{old.split(' =')[0]}'" in result.stderr


# ------------------------------------------------------------------------------- client/server


@pytest.fixture(scope="module")
def fb3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fb3Server]:
    with fb3_server_or_skip(tmp_path_factory.mktemp("fb3-lifecycle")) as server:
        yield server


def _files_containing(root: Path, secret: bytes) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                if secret in path.read_bytes():
                    found.append(str(path))
            except OSError:
                pass
    return found


@pytest.mark.server
def test_db_commands_against_a_server(fb3: Fb3Server, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)  # the server process writes the database file
    password_file = tmp_path / "password"
    password_file.write_text(fb3.password + "\n")
    wrong_file = tmp_path / "wrong"
    wrong_file.write_text("not-" + fb3.password)
    dsn = fb3.dsn(data / "db.fdb")
    common = ["--user", fb3.user, "--workdir", str(tmp_path / "work")]

    created = run_cli("db", "create", dsn, "--password-file", str(password_file), "--page-size", "16384", *common)
    assert created.returncode == 0, created.stderr
    assert "Firebird 3.0" in created.stdout and "page size 16384" in created.stdout
    info = run_cli("db", "info", dsn, "--password-file", str(password_file), "--json", *common)
    assert info.returncode == 0, info.stderr
    details = json.loads(info.stdout)
    assert details["page_size"] == 16384 and details["owned_by_fbbench"] is True
    assert details["engine_version"].startswith("3.0")

    for command in (["db", "info", dsn], ["db", "create", fb3.dsn(data / "other.fdb")]):
        refused = run_cli(*command, "--password-file", str(wrong_file), *common)
        assert_clean_error(refused, f"login to {command[2]} failed", "hint:", "--password-file")
        assert refused.stderr.count("error:") == 1
    assert not (data / "other.fdb").exists()

    # Nothing listens on loopback port 9 (discard); db create is covered in test_database.py.
    nowhere = run_cli("db", "info", "127.0.0.1/9:/tmp/nowhere.fdb", "--password-file", str(password_file), *common)
    assert_clean_error(nowhere, "cannot reach the server of 127.0.0.1/9:/tmp/nowhere.fdb", "hint:", "listens")


@pytest.mark.server
def test_run_against_a_server_keeps_the_password_off_disk(fb3: Fb3Server, tmp_path: Path) -> None:
    home, work, store = tmp_path / "home", tmp_path / "work", tmp_path / "results" / "results.sqlite"
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)
    secrets_dir = tmp_path / "secrets"  # outside everything searched below
    secrets_dir.mkdir()
    password_file = secrets_dir / "password"
    password_file.write_text(fb3.password + "\n")
    wrong = "wrong-" + secrets.token_hex(6)
    wrong_file = secrets_dir / "wrong"
    wrong_file.write_text(wrong + "\n")
    env = {"FBBENCH_HOME": str(home)}
    common = ["--user", fb3.user, "--results", str(store), "--workdir", str(work), "--no-sweep",
              "--connections", "2", "--interval", "1s"]

    refused = run_cli("run", str(BANK), "--engine", fb3.dsn(data / "refused.fdb"), "--password-file", str(wrong_file),
                      "--duration", "2s", *common, env=env)
    assert_clean_error(refused, "the run failed: login to", "hint:", "--password-file")
    assert refused.returncode == 1

    nowhere = run_cli("run", str(BANK), "--engine", "127.0.0.1/9:/tmp/nowhere.fdb", "--password-file",
                      str(password_file), "--duration", "2s", *common, env=env)
    assert_clean_error(nowhere, "the run failed: cannot reach the server of 127.0.0.1/9", "hint:")

    target = tmp_path / "results" / "run.json"
    done = run_cli("run", str(BANK), "--engine", fb3.dsn(data / "bench.fdb"), "--password-file", str(password_file),
                   "--warmup", "1s", "--duration", "2s", "--json", str(target), *common, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    document = json.loads(target.read_text())
    assert document["status"] == "completed"
    assert document["engine"]["version"].startswith("LI-V3.0")
    assert document["units"]["transfer"]["ok"] > 0
    assert all(check["passed"] for check in document["checks"]), document["checks"]

    statuses = [row[0] for row in _query(store, "select status from runs order by started_at")]
    assert statuses == ["failed", "failed", "completed"]
    for secret in (fb3.password, wrong):
        for output in (refused, nowhere, done):
            assert secret not in output.stdout + output.stderr
        # The store (with its WAL), reports, JSON, fbbench's home (registry) and work directory.
        for root in (home, work, store.parent, data):
            assert _files_containing(root, secret.encode()) == [], root


@pytest.mark.alone  # times Ctrl-C against the interpreter's start: on a loaded machine 0.1 s is still in Python's own
@pytest.mark.parametrize("delay", [0.1, 0.2])
def test_ctrl_c_while_the_cli_loads_is_quiet(delay: float) -> None:
    # Loading typer, rich and the runner takes a few tenths of a second on these machines.
    process = subprocess.Popen([sys.executable, "-m", "fbbench", "--help"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert "Traceback" not in stderr, stderr
    assert process.returncode != 0 or stderr == "", (process.returncode, stderr)


def test_the_engine_process_peak_memory_is_its_own_not_the_cli_s(tmp_path: Path, shared_work: Path) -> None:
    """peak_rss_bytes is the engine child's own high-water mark (VmHWM). getrusage's ru_maxrss
    survives exec: a child's was the peak of the fbbench process that started it wherever that was
    larger, so a CLI that had once held 600 MiB reported a 600 MiB engine."""
    held = 600 << 20
    start = (f"x = bytearray({held}); del x\n"  # resident (bytearray fills it), then given back
             "import runpy, sys\nsys.argv = ['fbbench', *sys.argv[1:]]\n"
             "runpy.run_module('fbbench', run_name='__main__', alter_sys=True)\n")
    document = tmp_path / "run.json"
    done = subprocess.run([sys.executable, "-c", start, "run", "connect", "-c", "1", "--scale", "connects=5",
                           "--workdir", str(shared_work), "--results", str(tmp_path / "r.sqlite"),
                           "--json", str(document)], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(document.read_text())
    peak = result["peak_rss_bytes"]
    assert 10 << 20 < peak < held, peak  # the embedded engine and Python, far below what the CLI held
    assert result["engine_process"] == "a new interpreter"  # one run: no template (fbbench.engines.template)


# ------------------------------------------------------------------------- the engine's template


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def test_a_series_forks_every_engine_child_from_one_template_and_leaves_none(
        tmp_path: Path, shared_work: Path, background: Callable[..., RunningCli]) -> None:
    """``run --repeat 3``: one template for the engine, each run's child forked from it (its own
    process group, named fbbench-engine), every run's peak memory alike, nothing left after. (A
    single run's child is a new interpreter: the peak-memory test above.)"""
    run = background(tmp_path, shared_work, "connect", "-c", "1", "--scale", "connects=200", "--repeat", "3")
    children: set[int] = set()
    templates: set[int] = set()
    while run.process.poll() is None:
        for pid in run.watch():
            if _comm(pid) == TEMPLATE_NAME and _parent(pid) == run.pid:  # a child just forked still has its name
                templates.add(pid)
            elif _comm(pid) == CHILD_NAME and _parent(pid) in templates:
                assert os.getpgid(pid) == pid  # a process group of its own, as a new interpreter's
                children.add(pid)
        time.sleep(0.01)
    assert run.process.returncode == 0, run.output()[-3000:]
    assert len(templates) == 1 and len(children) == 3, (templates, children, run.output()[-2000:])
    assert not run.leftovers(), run.leftovers()
    rows = _query(run.store, "select json_extract(summary_json, '$.peak_rss_bytes'), "
                             "json_extract(summary_json, '$.engine_process') from runs")
    assert [row[1] for row in rows] == ["forked from its engine's template"] * 3, rows
    peaks = [row[0] for row in rows]
    assert max(peaks) - min(peaks) < 4 << 20, peaks


@pytest.mark.parametrize("after", [0.0, 0.3, 0.8])
def test_ctrl_c_while_a_series_starts_its_template_is_a_clean_interruption(
        after: float, tmp_path: Path, shared_work: Path, background: Callable[..., RunningCli]) -> None:
    """Ctrl-C as the template imports (``after`` seconds from its start) or forks the first child:
    exit 130, no traceback of the template's or the CLI's, nothing left running."""
    run = background(tmp_path, shared_work, *LONG_BANK_RUN, "--repeat", "2")

    def template_started() -> bool:
        assert run.process.poll() is None, run.output()
        return any("template_server" in _cmdline(pid) or _comm(pid) == TEMPLATE_NAME for pid in run.watch())

    _wait_until(template_started, 120, "the series' template to start", interval=0.005)
    time.sleep(after)
    os.killpg(run.pid, signal.SIGINT)
    assert run.wait_exit(EXIT_WITHIN) == 130, run.output()[-3000:]
    assert "Traceback" not in run.output(), run.output()[-3000:]
    _wait_until(lambda: not run.leftovers(), EXIT_WITHIN, f"no process left of {sorted(run.seen)}")


@pytest.mark.alone  # times the template's end: within EXIT_WITHIN of its parent's
def test_kill_9_in_a_series_ends_the_template_and_its_child(tmp_path: Path, shared_work: Path,
                                                            background: Callable[..., RunningCli]) -> None:
    run = background(tmp_path, shared_work, *LONG_BANK_RUN, "--repeat", "2")
    child = _wait_until(run.engine_child, 60, "the engine child", interval=0.005)
    template = _parent(child)
    assert _comm(template) == TEMPLATE_NAME
    run.wait_measuring(1)
    os.kill(run.pid, signal.SIGKILL)  # fbbench alone: the template and the child are in groups of their own
    run.wait_exit(EXIT_WITHIN)
    _wait_until(lambda: not process_running(child) and not process_running(template), EXIT_WITHIN,
                "the template and its child to end")
    _wait_until(lambda: not run.leftovers(), EXIT_WITHIN, f"no process left of {sorted(run.seen)}")


# ---------------------------------------------------------- templates kept across commands (a host)


def _engine_processes(store: Path) -> list[str]:
    return [row[0] for row in _query(store, "select json_extract(summary_json, '$.engine_process') from runs "
                                            "order by started_at")]


@pytest.mark.alone  # times the end of a killed command's child
def test_a_template_host_forks_the_runs_of_many_commands_and_stops_a_killed_one_s_child(
        tmp_path: Path, shared_work: Path, background: Callable[..., RunningCli]) -> None:
    """With FBBENCH_ENGINE_TEMPLATES naming a host, every engine child — a single run's too — is
    forked from the template the host keeps for its engine; a command killed with -9 has its
    child stopped by the template, which serves on; the host's end ends its templates."""
    store = tmp_path / "results.sqlite"
    with template_host(tmp_path) as (host, address):
        assert address is not None
        for _ in range(2):
            done = run_cli("run", "connect", "-c", "1", "--scale", "connects=20", "--workdir", str(shared_work),
                           "--results", str(store), env={HOST_VARIABLE: address})
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert _engine_processes(store) == ["forked from its engine's template"] * 2
        templates = [pid for pid in _children(host.pid) if _comm(pid) == TEMPLATE_NAME]
        assert len(templates) == 1, templates  # one engine, one template, for both commands

        (tmp_path / "killed").mkdir()
        run = background(tmp_path / "killed", shared_work, *LONG_BANK_RUN, env={HOST_VARIABLE: address}, umask=0o027)
        child = _wait_until(lambda: next((pid for pid in _children(templates[0]) if _comm(pid) == CHILD_NAME), None),
                            60, "the killed command's child, forked from the host's template", interval=0.01)
        run.wait_measuring(1)
        # What a new interpreter would have inherited from the command, not from the template
        # (read once the child measures: it sets the umask after its name).
        assert "Umask:\t0027" in Path(f"/proc/{child}/status").read_text()
        os.kill(run.pid, signal.SIGKILL)
        run.wait_exit(EXIT_WITHIN)
        _wait_until(lambda: not process_running(child), EXIT_WITHIN, "the killed command's child to end")
        assert process_running(templates[0])
        listed = run_cli("results", "list", "--results", str(run.store))
        assert "incomplete" in listed.stdout and "running" not in listed.stdout, listed.stdout
    _wait_until(lambda: not process_running(templates[0]), EXIT_WITHIN, "the host's template to end with it")
    assert not os.path.lexists(address)


def test_a_template_host_serves_no_process_in_another_namespace(tmp_path: Path, shared_work: Path) -> None:
    """A forked child would be in its template's namespaces and cgroup, not its command's: a
    command in a network namespace of its own starts its child as a new interpreter."""
    if subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare --net is not allowed here (a network namespace needs CAP_SYS_ADMIN)")
    store = tmp_path / "results.sqlite"
    with template_host(tmp_path) as (host, address):
        assert address is not None
        done = subprocess.run(["unshare", "--net", sys.executable, "-m", "fbbench", "run", "connect", "-c", "1",
                               "--scale", "connects=5", "--workdir", str(shared_work), "--results", str(store)],
                              capture_output=True, text=True, cwd=REPO, timeout=300,
                              env={**os.environ, HOST_VARIABLE: address})
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert _engine_processes(store) == ["a new interpreter"]
        assert not [pid for pid in _children(host.pid) if _comm(pid) == TEMPLATE_NAME]


def test_a_template_host_refuses_a_path_that_is_there(tmp_path: Path) -> None:
    taken = tmp_path / "host.sock"
    taken.write_text("the user's")
    done = subprocess.run([sys.executable, "-m", "fbbench.engines.template_host", str(taken)],
                          capture_output=True, text=True, cwd=REPO, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and done.stderr.startswith("error:") and "Traceback" not in done.stderr, done.stderr
    assert taken.read_text() == "the user's"


@pytest.mark.parametrize("version", ["3.0", "5.0"])
def test_a_forked_child_s_environment_survives_a_library_setting_a_new_variable(tmp_path: Path, version: str) -> None:
    """Firebird 4.0/5.0's client sets ICU_TIMEZONE_FILES_DIR at its first attachment while the
    run's other attachment threads read the environment. In a child forked from a template whose
    environment was rewritten, that setenv freed the array those threads walked (SIGSEGV in
    getenv, 1 round in 12 of test_core_params under load); a new interpreter's array is never freed,
    and a forked child's must not be either."""
    from fbbench.engines import prepare_runtime, run_in_engine
    from fbbench.engines.template import use_host

    runtime = prepare_runtime(version, tmp_path / "work", {})
    with template_host(tmp_path) as (_, address):
        assert address is not None
        previous = use_host(address)
        try:
            seen = run_in_engine(runtime, "tests.foundation_child:environment_array_after_a_new_variable")
        finally:
            use_host(previous)
    assert seen["parent"] == TEMPLATE_NAME, seen  # forked, not a new interpreter
    assert seen["moved"] and seen["intact"], seen
