"""Populations that would not fit (issue "Hardening", item 2): ``--scale warehouses=1e9`` once grew
the engine child to 24 GB until the kernel killed it.

A load step's work list is drawn one iteration at a time, never listed in memory; a population is
estimated (disk and time) from the nearest measured build before anything is built, and refused
with the figures when it cannot fit; a first build with no measurement is watched while it grows
and stopped cleanly, as a failed run with one line, before it fills the disk or runs for days.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tests.conftest import REPO, assert_clean_error, run_cli
from tests.test_hardening import TPCC_TINY, _runs

BANK = Path(__file__).parent / "workloads" / "bank"
MB = 1 << 20


class Watched:
    """``fbbench ARGS`` in its own session, the peak RSS of each of its descendants sampled while it
    runs; killed (all of it) when one grows past ``kill_above`` bytes, so that a regression cannot
    take the machine's memory."""

    def __init__(self, tmp_path: Path, *args: str, kill_above: float = 1024 * MB) -> None:
        self.out = tmp_path / "output.txt"
        self.kill_above = kill_above
        self.peak: dict[int, int] = {}
        self.killed_for: str | None = None
        with open(self.out, "w") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "fbbench", *args], stdout=out,
                                            stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True,
                                            env={**os.environ, "COLUMNS": "200"})

    def sample(self) -> None:
        try:
            children = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.Error:
            return
        for child in children:
            try:
                rss = child.memory_info().rss
            except psutil.Error:
                continue
            self.peak[child.pid] = max(self.peak.get(child.pid, 0), rss)
            if rss > self.kill_above and self.killed_for is None:
                self.killed_for = f"process {child.pid} reached {rss / MB:,.0f} MB"
                os.killpg(self.process.pid, signal.SIGKILL)

    def watch(self, seconds: float) -> bool:
        """Sample for up to ``seconds``; True when fbbench ended meanwhile."""
        self.watch_until(lambda: False, seconds)
        return self.process.poll() is not None

    def watch_until(self, reached: Callable[[], bool], seconds: float) -> bool:
        """Sample until ``reached()`` (True), fbbench ends or ``seconds`` pass (False)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.process.poll() is None:
            self.sample()
            if reached():
                return True
            time.sleep(0.2)
        return False

    def interrupt(self, within: float = 20) -> int:
        """Ctrl-C as a terminal sends it; the exit code."""
        os.killpg(self.process.pid, signal.SIGINT)
        return self.process.wait(within)

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    @property
    def largest(self) -> int:
        return max(self.peak.values(), default=0)


def test_a_huge_load_step_is_not_listed_in_memory(tmp_path: Path) -> None:
    """5,000,000 iterations of one load step: the old list of them (and its queue) took the engine
    child from about 80 MB to 546 MB; drawn one at a time, it stays where a small step leaves it."""
    work = tmp_path / "work"
    run = Watched(tmp_path, "run", str(BANK), "--scale", "branches=5000000", "--scale", "accounts=5000000",
                  "--load-connections", "2", "--connections", "1", "--duration", "5s",
                  "--workdir", str(work), "--results", str(tmp_path / "r.sqlite"))
    first_size: list[int] = []

    def rows_going_in() -> bool:
        """The step's rows are going in: the database grew 1 MB past its size when first seen. The old
        list of the iterations was made before the first of them ran, and was held all the step."""
        building = list((work / "dbcache").glob("*.building.fdb"))
        if not building:
            return False
        size = building[0].stat().st_size
        if not first_size:
            first_size.append(size)
        return size >= first_size[0] + MB

    try:
        assert run.watch_until(rows_going_in, 60), run.output()
        ended = run.watch(1)  # a few more samples, well inside the step of 5,000,000 iterations
        assert not ended, run.output()
        assert run.interrupt() == 130, run.output()
    finally:
        if run.process.poll() is None:
            os.killpg(run.process.pid, signal.SIGKILL)
    assert run.killed_for is None, run.killed_for
    assert run.peak, "no engine child was seen"
    assert run.largest < 250 * MB, {pid: rss // MB for pid, rss in run.peak.items()}
    assert "Traceback" not in run.output()


QUICK = ["--connections", "1", "--transactions", "1", "--no-sweep", "--no-monitor"]


def _files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir()) if folder.is_dir() else []


@pytest.mark.alone  # times the refusal: within 15 s
def test_warehouses_1e9_is_refused_in_seconds_from_a_measured_build(tmp_path: Path) -> None:
    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    common = ["--workdir", str(work), "--results", str(store)]
    first = run_cli("run", "tpcc", *TPCC_TINY, *QUICK, *common)
    assert first.returncode == 0, first.stdout + first.stderr
    cached = _files(work / "dbcache")
    started = time.monotonic()
    huge = run_cli("run", "tpcc", *TPCC_TINY, "--scale", "warehouses=1e9", *common)
    elapsed = time.monotonic() - started
    assert_clean_error(huge, "the tpcc population at warehouses=1,000,000,000 needs about", " PB",
                       f"the file system of {work / 'dbcache'} has", "GB free",
                       "estimated from its build at warehouses=1 on 5.0", "this scale has 31,000,000,010")
    assert huge.stderr.count("error:") == 1, huge.stderr
    assert elapsed < 15, elapsed  # the CLI's start-up and reading one cache entry; nothing is built
    assert _files(work / "dbcache") == cached and _files(work / "databases") == []
    assert len(_runs(store)) == 1  # refused before the run was recorded


@pytest.mark.alone  # times the refusal: within 15 s
def test_warehouses_1e9_is_refused_at_once_on_a_fresh_machine_from_the_declared_build(tmp_path: Path) -> None:
    """Issue 31: with no build to estimate from, 1e9 warehouses built for seconds and failed; now the
    build tpcc declares (its population.json) refuses it before anything is made. A workload whose
    load no longer matches its declaration (other knobs, another shape) is not estimated from it."""
    from fbbench.runner import population_cache
    from fbbench.workloads.spec import load_workload

    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    started = time.monotonic()
    huge = run_cli("run", "tpcc", "--scale", "warehouses=1e9", "--workdir", str(work), "--results", str(store))
    assert_clean_error(huge, "the tpcc population at warehouses=1,000,000,000 needs about", " PB",
                       "estimated from the build its workload declares (population.json) at warehouses=1 on 5.0")
    assert time.monotonic() - started < 15
    assert not work.exists() and not store.exists()  # refused before anything was made
    tiny = dict(item.split("=") for item in TPCC_TINY[1::2])
    assert population_cache.declared(load_workload("tpcc", {}))
    assert population_cache.declared(load_workload("tpcc", tiny)) == []


def test_every_built_in_declaration_matches_its_workload_s_population_now() -> None:
    """A population.json whose workload's load changed since is ignored, never used: an absurd scale
    would then be built for seconds on a fresh machine before it is refused (the test above, slower
    to tell why). Said here, at once, with what to run."""
    from fbbench.runner import population_cache
    from fbbench.workloads.spec import load_workload

    builtin = REPO / "fbbench" / "workloads" / "builtin"
    declaring = sorted(path.parent.name for path in builtin.glob("*/population.json"))
    assert {"tpcc", "sysbench", "scan", "docflow"} <= set(declaring), declaring
    stale = [name for name in declaring if not population_cache.declared(load_workload(name, {}))]
    assert not stale, f"run benchmarks/population_declared.py --workloads {' '.join(stale)}"


def test_an_estimate_lands_near_the_build(tmp_path: Path) -> None:
    """The estimate of 3 warehouses from the build of 1, against the build of 3 (tiny knobs):
    benchmarks/population_estimate.py measured 0.98-1.02 at 1-8 tiny warehouses and 1 → 2, 4 real ones."""
    from fbbench.runner import limits, population_cache
    from fbbench.workloads.spec import load_workload

    work = tmp_path / "work"
    common = [*QUICK, "--workdir", str(work), "--results", str(tmp_path / "r.sqlite")]
    assert run_cli("run", "tpcc", *TPCC_TINY, *common).returncode == 0
    tiny = {"items": "2000", "customers": "300", "orders": "300"}
    cache = population_cache.cache_dir(work)
    three = load_workload("tpcc", {**tiny, "warehouses": "3"})
    measured = population_cache.measurements(cache, three)
    assert [m.scale["warehouses"] for m in measured] == [1]
    estimate = limits.nearest_estimate(three, measured, "5.0", None)
    assert estimate is not None
    assert estimate.iterations == 10 + 3 * 31 and estimate.basis_iterations == 41
    assert run_cli("run", "tpcc", *TPCC_TINY, "--scale", "warehouses=3", *common).returncode == 0
    built = next(m for m in population_cache.measurements(cache, three) if m.scale["warehouses"] == 3)
    assert 1 / limits.ESTIMATE_MARGIN < estimate.size_bytes / built.size_bytes < limits.ESTIMATE_MARGIN
    # Another shape (fewer items per tenth) is not estimated from these builds.
    other = load_workload("tpcc", {**tiny, "items": "1000", "warehouses": "3"})
    assert population_cache.measurements(cache, other) == []


def test_a_first_build_that_cannot_fit_stops_cleanly(tmp_path: Path) -> None:
    """No measured build: the population starts, and the watch stops it within seconds of the
    step that would need petabytes, as a failed run with one line; the engine child's memory
    stays flat (the work list of 10**9 iterations is not made), nothing is left behind."""
    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    run = Watched(tmp_path, "run", "tpcc", *TPCC_TINY, "--scale", "warehouses=1e9", "--workdir", str(work),
                  "--results", str(store))
    try:
        ended = run.watch(90)
    finally:
        if run.process.poll() is None:
            os.killpg(run.process.pid, signal.SIGKILL)
    output = run.output()
    assert run.killed_for is None, run.killed_for
    assert ended and run.process.returncode == 1, output
    assert "Traceback" not in output
    assert "error: the run failed: the population stopped at step 'warehouses and districts' (" in output
    assert "of 1,000,000,000 iterations" in output and "the file system of" in output
    assert run.largest < 250 * MB, {pid: rss // MB for pid, rss in run.peak.items()}
    (_run_id, status, failure), = _runs(store)
    assert status == "failed" and failure.startswith("the population stopped at step")
    assert [name for name in _files(work / "dbcache") if not name.endswith(".lock")] == []
    assert _files(work / "databases") == []


def _small_filesystem(folder: Path, size: str) -> bool:
    folder.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


def test_a_build_on_a_small_disk_stops_before_filling_it(tmp_path: Path) -> None:
    """50 tiny warehouses (about 300 MB) in a 64 MB work directory: stopped before the disk is full."""
    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    if not _small_filesystem(work, "64m"):
        pytest.skip("cannot mount a tmpfs here")
    try:
        result = run_cli("run", "tpcc", *TPCC_TINY, "--scale", "warehouses=50", *QUICK, "--workdir", str(work),
                         "--results", str(store), timeout=120)
        free = shutil.disk_usage(work).free
        left = {folder: _files(work / folder) for folder in ("dbcache", "databases")}
    finally:
        subprocess.run(["umount", "-l", str(work)], check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "error: the run failed: the population stopped at step" in result.stderr, result.stderr
    assert f"the file system of {work / 'dbcache'} has" in result.stderr
    assert result.stderr.count("error:") == 1, result.stderr
    assert "cannot be written" not in result.stderr and "I/O error" not in result.stderr  # stopped before
    assert [name for name in left["dbcache"] if not name.endswith(".lock")] == [] and left["databases"] == []
    assert free > 60 * MB  # the half-built database is gone


def test_the_runs_copy_of_a_cached_population_must_fit(tmp_path: Path) -> None:
    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    common = [*QUICK, "--workdir", str(work), "--results", str(store)]
    first = run_cli("run", str(BANK), "--scale", "accounts=100000", *common)
    assert first.returncode == 0, first.stderr
    databases = work / "databases"
    if not _small_filesystem(databases, "1m"):
        pytest.skip("cannot mount a tmpfs here")
    try:
        result = run_cli("run", str(BANK), "--scale", "accounts=100000", *common)
    finally:
        subprocess.run(["umount", "-l", str(databases)], check=False)
    assert_clean_error(result, "the run's copy of the cached bank population needs",
                       f"the file system of {databases} has")
    assert len(_runs(store)) == 1


# ------------------------------------------------------------------------------------- time

SLOW_LOAD = Path(__file__).parent / "workloads" / "slow_load"


def test_a_population_that_would_take_days_is_refused_unless_yes(tmp_path: Path) -> None:
    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    common = ["--workdir", str(work), "--results", str(store)]
    # A first build with no measurement: stopped by its projected time.
    run = Watched(tmp_path, "run", str(SLOW_LOAD), "--scale", "rounds=1000000000", "--load-connections", "2", *QUICK,
                  *common)
    try:
        ended = run.watch(90)
    finally:
        if run.process.poll() is None:
            os.killpg(run.process.pid, signal.SIGKILL)
    assert ended and run.process.returncode == 1, run.output()
    assert "error: the run failed: the population stopped at step 'spin' (" in run.output()
    assert "the build would take about" in run.output() and "more than 24 h 00 min" in run.output()
    assert "--yes to build it however long it takes" in run.output()
    # Measured at 4 rounds, 1,000,000,000 are refused before anything starts.
    assert run_cli("run", str(SLOW_LOAD), *QUICK, *common).returncode == 0
    refused = run_cli("run", str(SLOW_LOAD), "--scale", "rounds=1000000000", *QUICK, *common)
    assert_clean_error(refused, "this run is planned to take about", "days", "the population about",
                       "estimated from its build at rounds=4", "more than 24 h 00 min", "add --yes if you mean it")
    assert len(_runs(store)) == 2
    # --yes: it builds (neither refused nor stopped by the time it projects), until Ctrl-C.
    yes = Watched(tmp_path, "run", str(SLOW_LOAD), "--scale", "rounds=1000000000", "--yes", "--load-connections", "2",
                  *QUICK, *common)
    try:
        assert not yes.watch(12), yes.output()  # past the 5 s after which a step's pace is projected
        assert yes.interrupt() == 130, yes.output()
    finally:
        if yes.process.poll() is None:
            os.killpg(yes.process.pid, signal.SIGKILL)
    assert _runs(store)[-1][1:] == ("interrupted", "interrupted by the user")


@pytest.mark.parametrize(("args", "planned"), [
    (["--duration", "25h"], "about 25 h 00 min (1 × 25 h 00 min of warm-up and measurement)"),
    (["--repeat", "1000", "--duration", "5m", "--warmup", "30s"], "about 3 days 19 h (1000 × 5 min 30 s"),
])
def test_a_run_planned_for_more_than_a_day_needs_yes(args: list[str], planned: str, tmp_path: Path) -> None:
    work, store = tmp_path / "work", tmp_path / "r.sqlite"
    result = run_cli("run", str(BANK), *args, "--workdir", str(work), "--results", str(store))
    assert_clean_error(result, f"this run is planned to take {planned}", "add --yes if you mean it")
    assert not store.exists()


def test_load_connections_are_checked_like_connections(tmp_path: Path) -> None:
    result = run_cli("run", str(BANK), "--load-connections", "100000", "--results", str(tmp_path / "r.sqlite"))
    assert_clean_error(result, "--load-connections 100,000 needs")
