"""The work directory is fbbench's by construction: a directory the user names becomes fbbench's only
when fbbench makes it or adopts it empty (a marker file), and clean-up deletes only what a run of
*that* work directory recorded that it created — never files whose names look like fbbench's.
Real runs on embedded 5.0, through the CLI.

- A user's directory holding files named like a run's (``databases/<run id>.fdb``,
  ``runtimes/<run id>/…``, ``dbcache/….building.fdb``) is refused, and nothing in it changes.
- The same look-alikes put into fbbench's own work directory are not taken for leftovers.
- What a run killed with -9 left (its copy, its runtime root, a half-built population) is removed
  by the next run in that work directory.
- The default work directory of an older fbbench (unmarked, holding only its own folders) is adopted.
- Runs made in two work directories have the same conditions.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from fbbench.paths import WORKDIR_MARKER, cache_dir
from tests.conftest import assert_clean_error, run_cli
from tests.test_run_lifecycle import (  # noqa: F401 (background: a fixture)
    EXIT_WITHIN,
    LONG_BANK_RUN,
    RunningCli,
    _query,
    _wait_until,
    background,
)

BANK = Path(__file__).parent / "workloads" / "bank"
QUICK = ["--connections", "1", "--transactions", "5", "--no-sweep"]


def _listing(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every entry under ``root`` (symlinks not followed): its kind, size and mtime in ns."""
    found = {}
    for directory, names, files in os.walk(root):
        for name in names + files:
            path = Path(directory) / name
            stat = path.lstat()
            kind = "link" if path.is_symlink() else "dir" if path.is_dir() else "file"
            found[str(path.relative_to(root))] = (kind, 0 if kind == "dir" else stat.st_size, stat.st_mtime_ns)
    return found


def _run_ids(store: Path) -> list[str]:
    with closing(sqlite3.connect(store)) as db:
        return [row[0] for row in db.execute("select run_id from runs order by started_at")]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A results store holding one run that completed in another work directory: look-alike files
    are named after it."""
    base = tmp_path_factory.mktemp("workdir-finished")
    store = base / "results.sqlite"
    result = run_cli("run", str(BANK), *QUICK, "--results", str(store), "--workdir", str(base / "work"))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    return store, _run_ids(store)[-1]


def _plant_look_alikes(root: Path, run_id: str) -> list[Path]:
    """Files a user might have, named as fbbench names a run's database, runtime root and a
    population being built."""
    planted = [root / "databases" / f"{run_id}.fdb", root / "runtimes" / run_id / "notes.txt",
               root / "dbcache" / "bank-0123456789abcdef.building.fdb"]
    for number, path in enumerate(planted):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"the user's own data %d\n" % number)
    return planted


@pytest.mark.parametrize("named", ["as given", "through a symlink", "as ~"])
def test_a_users_directory_with_look_alike_files_is_refused_untouched(named: str, finished: tuple[Path, str],
                                                                      tmp_path: Path) -> None:
    store, run_id = finished
    mine = tmp_path / "mine"
    _plant_look_alikes(mine, run_id)
    (mine / ".profile").write_text("# a home directory's file\n")
    before = _listing(mine)
    env = {}
    if named == "through a symlink":
        given = str(tmp_path / "link")
        (tmp_path / "link").symlink_to(mine)
    elif named == "as ~":
        given, env = "~", {"HOME": str(mine), "FBBENCH_CACHE": str(cache_dir())}
    else:
        given = str(mine)
    ran = run_cli("run", str(BANK), *QUICK, "--results", str(store), "--workdir", given, env=env)
    assert_clean_error(ran, "not empty", str(mine), "fbbench did not make")
    assert ran.stderr.count("error:") == 1, ran.stderr
    assert _listing(mine) == before
    # The db commands and doctor take the work directory by the same rule.
    for command in (["db", "create", str(tmp_path / "x.fdb")], ["db", "info", str(tmp_path / "x.fdb")],
                    ["doctor", "5.0"]):
        assert_clean_error(run_cli(*command, "--workdir", given, env=env), "not empty")
    assert _listing(mine) == before
    assert not (tmp_path / "x.fdb").exists()


def test_a_file_or_an_unwritable_directory_is_no_work_directory(tmp_path: Path) -> None:
    store = tmp_path / "results.sqlite"
    plain = tmp_path / "plain.txt"
    plain.write_text("not a directory\n")
    assert_clean_error(run_cli("run", str(BANK), *QUICK, "--results", str(store), "--workdir", str(plain)),
                       "not a directory")
    assert plain.read_text() == "not a directory\n"
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who may write anywhere (root without a user namespace)")
        assert_clean_error(run_cli("run", str(BANK), *QUICK, "--results", str(store), "--workdir", str(locked)),
                           str(locked))
    finally:
        locked.chmod(0o700)


def test_look_alike_files_in_fbbench_own_work_directory_are_not_leftovers(finished: tuple[Path, str],
                                                                          tmp_path: Path) -> None:
    store, run_id = finished
    work = tmp_path / "work"
    first = run_cli("run", str(BANK), *QUICK, "--results", str(store), "--workdir", str(work))
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr
    assert (work / WORKDIR_MARKER).is_file()
    planted = _plant_look_alikes(work, run_id)  # run_id completed in another work directory
    contents = {path: path.read_bytes() for path in planted}
    second = run_cli("run", str(BANK), *QUICK, "--results", str(store), "--workdir", str(work))
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr
    assert "removed what killed runs left behind" not in second.stdout, second.stdout
    assert {path: path.read_bytes() for path in planted if path.exists()} == contents


def test_a_run_killed_while_populating_is_cleaned_by_the_next_run(
        tmp_path: Path, background: Callable[..., RunningCli]) -> None:  # noqa: F811
    work = tmp_path / "work"
    run = background(tmp_path, work, str(BANK), "--scale", "accounts=400000", "--scale", "branches=4",
                     "--load-connections", "2", "--fresh", "--connections", "1", "--duration", "60s")

    def building() -> list[Path]:
        run.watch()
        assert run.process.poll() is None, run.output()
        return sorted((work / "dbcache").glob("*.building.fdb"))

    half_built = _wait_until(building, 120, "a population being built")
    os.killpg(run.pid, signal.SIGKILL)
    if (child := run.engine_child()) is not None:
        os.killpg(child, signal.SIGKILL)
    run.wait_exit(EXIT_WITHIN)
    _wait_until(lambda: not run.leftovers(), EXIT_WITHIN, "no process left of the killed run")
    (run_id,) = (row[0] for row in _query(run.store, "select run_id from runs"))
    runtime = work / "runtimes" / run_id
    assert runtime.is_dir() and all(path.exists() for path in half_built), (runtime, half_built)
    leftovers = [*half_built, runtime, work / "databases" / f"{run_id}.fdb"]

    following = run_cli("run", str(BANK), *QUICK, "--results", str(run.store), "--workdir", str(work))
    assert following.returncode == 0, following.stdout[-2000:] + following.stderr
    assert "removed what killed runs left behind" in following.stdout, following.stdout
    assert not any(path.exists() for path in leftovers), [p for p in leftovers if p.exists()]
    # Its store says what was removed: a later run finds nothing more to do.
    again = run_cli("run", str(BANK), *QUICK, "--results", str(run.store), "--workdir", str(work))
    assert again.returncode == 0 and "removed what killed runs" not in again.stdout, again.stdout


def test_an_older_fbbench_default_work_directory_is_adopted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    old = home / "work"
    for folder in ("databases", "dbcache", "runtimes"):
        (old / folder).mkdir(parents=True)
    (old / "dbcache" / "bank-0123456789abcdef.fdb").write_bytes(b"an older population\n")
    before = _listing(old)
    env = {"FBBENCH_HOME": str(home)}
    ran = run_cli("run", str(BANK), *QUICK, env=env)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr
    assert (old / WORKDIR_MARKER).is_file()
    assert all(_listing(old).get(name) == entry for name, entry in before.items() if "." in name)

    # Anything else in it, and it is no longer one that only fbbench wrote.
    other = tmp_path / "other"
    (other / "work" / "databases").mkdir(parents=True)
    (other / "work" / "mine.txt").write_text("mine\n")
    assert_clean_error(run_cli("run", str(BANK), *QUICK, env={"FBBENCH_HOME": str(other)}), "not empty",
                       "mine.txt")
    assert not (other / "work" / WORKDIR_MARKER).exists()


def test_runs_from_two_work_directories_have_the_same_conditions(tmp_path: Path) -> None:
    store = tmp_path / "results.sqlite"
    for name in ("one", "another"):
        ran = run_cli("run", str(BANK), *QUICK, "--results", str(store), "--workdir", str(tmp_path / name))
        assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr
    document = tmp_path / "compare.json"
    compared = run_cli("compare", "last~1", "last", "--results", str(store), "--json", str(document))
    assert compared.returncode == 0, compared.stdout[-2000:] + compared.stderr
    conditions = json.loads(document.read_text())["conditions"]
    assert conditions["axis"] == [] and conditions["differences"] == [], conditions
    assert not any(str(tmp_path) in str(value) for value in conditions["equal"].values()), conditions["equal"]


def _runtime_roots(store: Path) -> list[str]:
    with closing(sqlite3.connect(store)) as db:
        rows = db.execute("select detail_json from phases where name = 'runtime'").fetchall()
    return [json.loads(row[0])["root"] for row in rows]


def test_sweep_and_paired_take_the_work_directory_as_run_does(tmp_path: Path) -> None:
    store, work = tmp_path / "results.sqlite", tmp_path / "work"
    spec = tmp_path / "sweep.toml"
    spec.write_text(f'workload = "{BANK}"\nconnections = 1\ntransactions = 5\nsweep = false\nrepeats = 1\n'
                    "[matrix]\nconnections = [1, 2]\n")
    swept = run_cli("sweep", str(spec), "--results", str(store), "--workdir", str(work))
    assert swept.returncode == 0, swept.stdout[-2000:] + swept.stderr
    roots = _runtime_roots(store)
    assert len(roots) == 2 and all(root.startswith(f"{work}/runtimes/") for root in roots), roots

    sides = []
    for name in ("a", "b"):
        sides.append(tmp_path / f"{name}.toml")
        sides[-1].write_text(f'workload = "{BANK}"\nconnections = 1\nwarmup = "1s"\nduration = "2s"\n'
                             'interval = "1s"\nsweep = false\n')
    paired = run_cli("compare", "--paired", *map(str, sides), "--pairs", "1", "--results", str(store),
                     "--workdir", str(work), "--json", str(tmp_path / "paired.json"), timeout=240)
    assert paired.returncode == 0, paired.stdout[-2000:] + paired.stderr
    assert "another fbbench run" not in paired.stdout  # the other run of its pair is no stranger
    roots = _runtime_roots(store)
    assert len(roots) == 4 and all(root.startswith(f"{work}/runtimes/") for root in roots), roots

    mine = tmp_path / "mine"
    _plant_look_alikes(mine, "20200101-000000-abcd")
    before = _listing(mine)
    assert_clean_error(run_cli("sweep", str(spec), "--results", str(store), "--workdir", str(mine)), "not empty")
    assert_clean_error(run_cli("compare", "--paired", *map(str, sides), "--results", str(store),
                               "--workdir", str(mine)), "not empty")
    assert _listing(mine) == before
    with closing(sqlite3.connect(store)) as db:
        assert db.execute("select count(*) from sweeps").fetchone()[0] == 1  # the refused one never began


def test_a_run_started_while_another_measures_says_so(
        tmp_path: Path, background: Callable[..., RunningCli]) -> None:  # noqa: F811
    work = tmp_path / "work"
    busy = background(tmp_path, work, *LONG_BANK_RUN)
    busy.wait_measuring(1)
    (busy_id,) = (row[0] for row in _query(busy.store, "select run_id from runs"))
    # Seen in the results store (another work directory), and in the work directory (another store).
    for store, directory in ((busy.store, tmp_path / "elsewhere"), (tmp_path / "other.sqlite", work)):
        ran = run_cli("run", str(BANK), *QUICK, "--results", str(store), "--workdir", str(directory))
        assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr
        warning = next((line for line in ran.stdout.splitlines() if "another fbbench run" in line), "")
        assert warning.startswith("warning:") and busy_id in warning, ran.stdout[:3000]
    os.killpg(busy.pid, signal.SIGINT)
    busy.wait_exit(EXIT_WITHIN)
    alone = run_cli("run", str(BANK), *QUICK, "--results", str(busy.store), "--workdir", str(work))
    assert alone.returncode == 0 and "another fbbench run" not in alone.stdout, alone.stdout[:3000]


def test_a_recorded_path_that_now_leads_out_of_the_work_directory_is_left_alone(
        tmp_path: Path, background: Callable[..., RunningCli]) -> None:  # noqa: F811
    work = tmp_path / "work"
    killed = background(tmp_path, work, *LONG_BANK_RUN)
    killed.wait_measuring(1)
    child = killed.engine_child()
    os.killpg(killed.pid, signal.SIGKILL)
    if child is not None:
        os.killpg(child, signal.SIGKILL)
    killed.wait_exit(EXIT_WITHIN)
    _wait_until(lambda: not killed.leftovers(), EXIT_WITHIN, "no process left of the killed run")
    (run_id,) = (row[0] for row in _query(killed.store, "select run_id from runs"))
    # Its runtime root and database replaced by links to the user's files elsewhere.
    outside = tmp_path / "outside"
    (outside / run_id).mkdir(parents=True)
    (outside / run_id / "keep.txt").write_text("the user's\n")
    (outside / "data.fdb").write_text("the user's database\n")
    for recorded, target in ((work / "runtimes" / run_id, outside / run_id),
                             (work / "databases" / f"{run_id}.fdb", outside / "data.fdb")):
        if recorded.is_dir():
            shutil.rmtree(recorded)
        else:
            recorded.unlink()
        recorded.symlink_to(target)
    before = _listing(outside)
    following = run_cli("run", str(BANK), *QUICK, "--results", str(killed.store), "--workdir", str(work))
    assert following.returncode == 0, following.stdout[-2000:] + following.stderr
    assert _listing(outside) == before
