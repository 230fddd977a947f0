"""Machine shapes (``--machine``, fbbench/shape/) on real engines, real cgroups and real network
namespaces: each limit takes effect, the run verifies it from what it measured, says it is
emulated, and leaves nothing behind — also when fbbench itself is killed.

Tests that need root or a controller skip, naming what is missing; the bad-input tests run
anywhere (they are refused before anything is built).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fbbench.shape import cgroups, network, segment
from tests.conftest import REPO, assert_clean_error, run_cli
from tests.documented import actual_paths, documented_paths, undocumented_and_missing
from tests.fb3server import fb3_server_unavailable

# The tests that time what the shape let through (IOPS within 10 %, a 2 ms round trip within 0.5 ms)
# run alone; the others check what is counted (the storage's share of the engine's reads, the
# cgroup's high-water mark, the processes in the group) or what is left behind, and run beside
# other tests. The kernel objects they make are fbbench's own: no other module makes a cgroup or a
# run's namespace (the lab's segments, fbbench-seg-*, are test_lab_namespaces' and it checks them).

BANK = Path(__file__).parent / "workloads" / "bank"
TPCC_TINY = ["--scale", "items=2000", "--scale", "customers=300", "--scale", "orders=300"]
QUICK = ["--warmup", "1s", "--interval", "1s", "--no-validate"]


def _missing(needs: set[str]) -> str | None:
    return cgroups.missing(needs)


def _skip_unless_cgroups(*needs: str) -> None:
    why = _missing(set(needs))
    if why:
        pytest.skip(f"machine shapes cannot be made here: {why}")


def _skip_unless_network() -> None:
    why = network.missing(needs_loss=True)
    if why:
        pytest.skip(f"network shapes cannot be made here: {why}")
    reason = fb3_server_unavailable()
    if reason:
        pytest.skip(reason)


def kernel_leftovers() -> list[str]:
    """fbbench's cgroups and network namespaces that exist now."""
    found: list[str] = []
    if cgroups.version() == 2:
        found += [str(p) for p in cgroups.V2_ROOT.glob(cgroups.PREFIX + "*")]
    else:
        for mount in cgroups.v1_mounts().values():
            found += [str(p) for p in mount.glob(cgroups.PREFIX + "*")]
    found += [str(p) for p in network.NETNS_DIR.glob(network.PREFIX + "*") if not p.name.startswith(segment.PREFIX)]
    veths = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    found += [line.split(":")[1].strip() for line in veths.splitlines() if ": fb" in line and "@" in line]
    return found


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    before = set(kernel_leftovers())
    yield
    left = set(kernel_leftovers()) - before
    assert not left, f"left behind: {sorted(left)}"


@pytest.fixture(scope="module")
def shape_work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from fbbench.paths import own_workdir

    return own_workdir(tmp_path_factory.mktemp("shape") / "work").path


Ran = tuple[subprocess.CompletedProcess[str], dict[str, Any]]


def _run(tmp_path: Path, work: Path, name: str, *args: str, timeout: float = 600) -> Ran:
    output = tmp_path / f"{name}.json"
    done = run_cli("run", *args, "--workdir", str(work), "--results", str(tmp_path / "results.sqlite"),
                   "--json", str(output), timeout=timeout)
    document = json.loads(output.read_text()) if output.exists() else {}
    return done, document


# ------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("machine", "said"), [
    ("memory=0", "memory must be more than 0"),
    ("memory=1024", "needs a size with its unit"),
    ("memory=1XB", "needs a size with its unit"),
    ("memory=1TiB", "more than this machine has"),
    ("cpus=99", "more CPUs than this process may use"),
    ("net.loss=150%", "less than 100%"),
    ("net.rtt=2", "needs a time with its unit"),
    ("disk.speed=3", "unknown limit"),
    ("ssd-2042", "neither a preset nor key=value"),
    ("net.rtt=2ms", "an embedded engine has none"),
])
def test_a_shape_that_cannot_be_is_one_line_before_anything_runs(machine: str, said: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    done = run_cli("run", str(BANK), "--transactions", "1", "-c", "1", "--machine", machine,
                   "--workdir", str(work), "--results", str(tmp_path / "r.sqlite"))
    assert_clean_error(done, said)
    assert len([line for line in done.stderr.splitlines() if line.startswith("error:")]) == 1
    assert not (work / "databases").exists()  # nothing was built


def test_a_shape_on_an_external_server_is_refused(tmp_path: Path) -> None:
    done = run_cli("run", str(BANK), "--transactions", "1", "-c", "1", "--machine", "memory=1GiB",
                   "--engine", "dbhost/3050:/data/bench.fdb", "--workdir", str(tmp_path / "w"),
                   "--results", str(tmp_path / "r.sqlite"), env={"ISC_PASSWORD": "x"})
    assert_clean_error(done, "an external server runs elsewhere")


def test_without_root_a_shape_is_one_line_naming_what_is_missing(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        done = subprocess.run([sys.executable, "-c", "from fbbench.shape import cgroups; "
                               "print(cgroups.missing({'memory'}))"], capture_output=True, text=True, cwd=REPO)
    else:  # a real unprivileged process asks the same question
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                               "from fbbench.shape import cgroups, network; print(cgroups.missing({'memory'})); "
                               "print(network.missing(False))"], capture_output=True, text=True, cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    if "No module named 'fbbench'" in done.stderr or "Permission denied" in done.stderr:
        # A checkout in a directory only root may enter (mktemp -d makes one): nobody cannot import it.
        pytest.skip(f"user nobody cannot read the checkout at {REPO}")
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert all("needs root" in line and "uid" in line for line in lines), lines


# ---------------------------------------------------------------------------------- memory, disk


def test_memory_shape_sends_the_engines_reads_to_the_storage(tmp_path: Path, shape_work: Path) -> None:
    _skip_unless_cgroups("memory")
    # A 1-warehouse TPC-C database is about 115 MB: a 96 MiB machine cannot cache it, the host can.
    load = ["tpcc", "-c", "2", "--duration", "6s", *QUICK]
    plain, plain_doc = _run(tmp_path, shape_work, "plain", *load)
    assert plain.returncode == 0, plain.stdout[-3000:] + plain.stderr
    shaped, doc = _run(tmp_path, shape_work, "shaped", *load, "--machine", "memory=96MiB")
    assert shaped.returncode == 0, shaped.stdout[-3000:] + shaped.stderr
    assert plain_doc["os_cache"]["storage_share"] <= 0.05, plain_doc["os_cache"]
    assert doc["os_cache"]["storage_share"] >= 0.5, doc["os_cache"]
    shape = doc["machine_shape"]
    assert shape["verified"] is True and shape["failures"] == []
    measured = doc["host"]["shape"]["measured"]["memory"]
    assert measured["limit"] == 96 << 20 and 0 < measured["peak"] <= 96 << 20
    assert "machine shape: emulated: memory=96MiB" in shaped.stdout
    documented = documented_paths(REPO / "docs" / "run-result.md")
    undocumented, _ = undocumented_and_missing(actual_paths(doc, documented), documented)
    assert not undocumented, f"keys not in docs/run-result.md: {undocumented}"
    # The shape is a condition: compare names it as the difference, and says it is emulated.
    compared = run_cli("compare", plain_doc["run_id"], doc["run_id"], "--results", str(tmp_path / "results.sqlite"),
                       "--json", str(tmp_path / "cmp.json"), "--force")
    assert compared.returncode in (0, 1), compared.stderr
    conditions = json.loads((tmp_path / "cmp.json").read_text())["conditions"]
    text = json.dumps(conditions)
    assert "host.shape.memory" in text and "96MiB (emulated)" in text, text[:3000]
    assert "emulated" in compared.stdout


def test_the_memory_left_counts_a_limit_set_on_an_ancestor_group() -> None:
    """A container's limit often sits on a group above the one its processes are in: the checks'
    side-by-side attachments (one per 128 MiB left) and the run's own memory check must see it."""
    _skip_unless_cgroups("memory")
    limit = 64 << 20
    if cgroups.version() == 2:
        parent = cgroups.V2_ROOT / "fbbench-test-ancestor"
        limit_file = "memory.max"
    else:
        parent = cgroups.v1_mounts()["memory"] / "fbbench-test-ancestor"
        limit_file = "memory.limit_in_bytes"
    child = parent / "leaf"
    child.mkdir(parents=True)
    try:
        (parent / limit_file).write_text(str(limit))
        probe = ("from fbbench.engines import platform; from fbbench.runner.engine import workload_sql;"
                 "print(min((room for room, _ in platform.memory_limits()), default=-1),"
                 "      workload_sql.check_attachments(12))")
        done = subprocess.run(["sh", "-c", 'echo $$ > "$1"; exec "$2" -c "$3" "$1"', "sh",
                               str(child / "cgroup.procs"), sys.executable, probe],
                              capture_output=True, text=True, cwd=REPO, timeout=60)
        assert done.returncode == 0, done.stderr
        room, attachments = (int(field) for field in done.stdout.split())
        assert 0 <= room <= limit
        assert attachments == 1
    finally:
        child.rmdir()
        parent.rmdir()

def test_an_engine_out_of_memory_inside_the_shape_fails_saying_so(tmp_path: Path, shape_work: Path) -> None:
    _skip_unless_cgroups("memory")
    done, _document = _run(tmp_path, shape_work, "oom", str(BANK), "--transactions", "5", "-c", "1",
                          "--machine", "memory=12MiB")
    assert_clean_error(done, "ran out of memory inside the machine shape (memory=12MiB)")
    assert "in the run's own cgroup" in done.stderr


@pytest.mark.alone
def test_a_read_iops_shape_holds_a_cold_scan_at_the_throttle(tmp_path: Path, shape_work: Path) -> None:
    _skip_unless_cgroups("disk")
    iops = 250
    scan = ["scan", "-c", "1", "--scale", "rows=30000", "--file-cache", "off", "--no-validate"]
    # Populated once without the throttle (the work directory caches it): built under it, the index
    # build's reads took 20 s at 250 IOPS, and what the test times is the scan.
    built, _ = _run(tmp_path, shape_work, "build", *scan, "--no-monitor")
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr
    # The file cache off: every page the cold scan reads is one direct read of the device.
    done, doc = _run(tmp_path, shape_work, "scan", *scan, "--machine", f"disk.read_iops={iops}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    page_size = doc["database"]["page_size"]
    allowed = iops * page_size / 1e6
    cold = doc["headline"]["value"]
    assert abs(cold - allowed) <= 0.10 * allowed, (cold, allowed)
    reads = doc["host"]["shape"]["measured"]["disk"]
    device = next(iter(reads.values()))
    assert device["read_iops"]["limit"] == iops and device["read_iops"]["mean_per_second"] <= iops * 1.1
    assert f"(throttle {iops})" in done.stdout


def test_classics_processes_run_inside_the_shape(tmp_path: Path, shape_work: Path) -> None:
    _skip_unless_cgroups("memory", "cpus")
    # Embedded Classic: the engine child forks one process per attachment; each inherits the group.
    done, doc = _run(tmp_path, shape_work, "classic", str(BANK), "--architecture", "classic", "-c", "2",
                     "--transactions", "20", "--machine", "memory=512MiB, cpus=1")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    measured = doc["host"]["shape"]["measured"]
    assert measured["processes_seen"] >= 3, measured  # the engine child and its two attachment processes
    assert measured["cpus"]["engine_may_run_on"] == [sorted(os.sched_getaffinity(0))[0]], measured["cpus"]
    assert doc["machine_shape"]["verified"] is True


# ------------------------------------------------------------------------------------- network


def _p50(document: dict[str, Any], unit: str) -> float:
    return float(document["units"][unit]["latency_ms"]["p50"])


@pytest.mark.alone
def test_a_round_trip_shape_delays_a_managed_servers_link(tmp_path: Path, shape_work: Path) -> None:
    _skip_unless_network()
    # Forced writes off: a commit's wait for the disk would drown a few milliseconds in its noise.
    load = ["tpcc", "--engine", "server:/usr", "-c", "1", "--duration", "5s", "--forced-writes", "off", *TPCC_TINY,
            *QUICK]
    plain, plain_doc = _run(tmp_path, shape_work, "plain", *load)
    assert plain.returncode == 0, plain.stdout[-3000:] + plain.stderr
    shaped, doc = _run(tmp_path, shape_work, "rtt", *load, "--machine", "net.rtt=2ms, net.rate=100mbit")
    assert shaped.returncode == 0, shaped.stdout[-3000:] + shaped.stderr
    # The recorded round trip of the link itself (the relay's echo, through the veth and its qdisc) …
    link = doc["host"]["shape"]["measured"]
    assert abs(link["round_trip"]["min_ms"] - 2.0) <= 0.5, link["round_trip"]
    assert link["round_trip"]["median_ms"] >= 2.0 - 0.5, link["round_trip"]
    assert link["relay_cpu_seconds"] is not None
    # … and a trivial query's, measured by the run through Firebird: it rose by the link's round trip.
    rise = doc["engine"]["round_trip"]["median_ms"] - plain_doc["engine"]["round_trip"]["median_ms"]
    assert 2.0 * 0.9 <= rise <= 2.0 + 1.0, (doc["engine"]["round_trip"], plain_doc["engine"]["round_trip"])
    assert link["counters"]["client_sent_bytes"] > 0  # the tbf qdisc carried the load
    # New-Order is one procedure call: start, execute, commit — at least 3 round trips.
    rise = _p50(doc, "new_order") - _p50(plain_doc, "new_order")
    assert rise >= 3 * 2.0 * 0.9, (rise, _p50(doc, "new_order"), _p50(plain_doc, "new_order"))
    assert "round trip and loss by relay" in shaped.stdout


def _measured_intervals(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        with sqlite3.connect(store, timeout=10) as db:
            return int(db.execute("select count(distinct idx) from intervals where phase = 'measure'").fetchone()[0])
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0


def _wait(condition: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_killed_run_leaves_its_shape_to_the_next_run(tmp_path: Path, shape_work: Path) -> None:
    _skip_unless_network()
    _skip_unless_cgroups("memory")
    store = tmp_path / "results.sqlite"
    with open(tmp_path / "out.txt", "w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "fbbench", "run", "tpcc", "--engine", "server:/usr", "-c", "1", "--duration", "5m",
             *TPCC_TINY, *QUICK, "--machine", "memory=512MiB, net.rtt=1ms, net.loss=0.5%", "--workdir",
             str(shape_work), "--results", str(store)], stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
            start_new_session=True)
    try:
        # The run's own pair (…-srv, …-cli): the namespaces fbbench names and must remove.
        made = _wait(lambda: [p for p in kernel_leftovers() if "fbbench-" in p and "netns" in p
                              and p.endswith(("-srv", "-cli"))], 120, "the run's namespaces")
        _wait(lambda: _measured_intervals(store) >= 1, 120, "the measured period")
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        assert all(Path(path).exists() for path in made)  # nobody removed them yet
        left = kernel_leftovers()
        assert any("memory" in path for path in left), left
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    # The next run in that work directory with that store removes what the killed one recorded.
    next_run = run_cli("run", str(BANK), "-c", "1", "--transactions", "5", "--workdir", str(shape_work),
                       "--results", str(store))
    assert next_run.returncode == 0, next_run.stdout[-2000:] + next_run.stderr
    assert "removed what killed runs or commands left behind" in next_run.stdout, next_run.stdout
    assert all(not Path(path).exists() for path in made)


def test_a_sweep_takes_the_machine_as_an_axis(tmp_path: Path) -> None:
    _skip_unless_cgroups("memory", "cpus")
    spec = tmp_path / "sweep.toml"
    spec.write_text(f'workload = "{BANK}"\nwarmup = "0.5s"\nduration = "1s"\ninterval = "0.5s"\nsweep = false\n'
                    'repeats = 1\n[scale]\naccounts = 200\n[matrix]\nmachine = ["none", "memory=256MiB, cpus=1"]\n')
    done = run_cli("sweep", str(spec), "--results", str(tmp_path / "r.sqlite"), "--workdir", str(tmp_path / "work"),
                   "--json", str(tmp_path / "sweep.json"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    document = json.loads((tmp_path / "sweep.json").read_text())
    axis = {row["key"]: row for row in document["conditions"]["axis"]}
    assert "host.shape.memory" in axis and "host.shape.cpus" in axis, document["conditions"]
    assert "256MiB (emulated)" in json.dumps(axis["host.shape.memory"])


def test_ctrl_c_on_a_shaped_run_removes_the_shape(tmp_path: Path, shape_work: Path) -> None:
    _skip_unless_cgroups("memory", "disk")
    store = tmp_path / "results.sqlite"
    with open(tmp_path / "out.txt", "w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "fbbench", "run", str(BANK), "-c", "1", "--duration", "5m", *QUICK,
             "--machine", "memory=512MiB, disk.write_iops=2000", "--workdir", str(shape_work), "--results", str(store)],
            stdout=out, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True)
    try:
        _wait(lambda: _measured_intervals(store) >= 1, 120, "the measured period")
        assert any(cgroups.PREFIX in path for path in kernel_leftovers())
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(30) == 130, (tmp_path / "out.txt").read_text()[-2000:]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert "interrupted" in (tmp_path / "out.txt").read_text()
