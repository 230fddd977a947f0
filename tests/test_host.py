"""The machine in the conditions: a host's stable name, its CPU and virtualisation, the storage
under the database and the temp directory (read from /proc/self/mountinfo and /sys/block), and
the round trip of a run over the network — on real mounts and real runs."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fbbench.analysis import conditions
from fbbench.engines.platform import storage_of, virtualization
from fbbench.store import ResultsStore
from tests.conftest import REPO, assert_clean_error, run_cli
from tests.fb3server import fb3_server_unavailable

BANK = str(REPO / "tests" / "workloads" / "bank")
TINY = ["-c", "2", "--warmup", "0.5s", "--duration", "1s", "--interval", "0.5s", "--no-sweep", "--scale",
        "accounts=200"]


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real tmpfs mounted for the test (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "memory"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m,noatime", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _root_filesystem(path: Path) -> str:
    best, kind = "", ""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, point, fstype, *_ = line.split()
        if (str(path) + "/").startswith(point.rstrip("/") + "/") and len(point) >= len(best):
            best, kind = point, fstype
    return kind


def test_storage_of_a_tmpfs_and_of_the_disk(tmpfs: Path, tmp_path: Path) -> None:
    memory = storage_of(tmpfs / "not" / "yet" / "there")  # a directory a run will create
    assert memory["filesystem"] == "tmpfs" and memory["medium"] == "memory" and memory["scheduler"].startswith("none")
    assert "noatime" in memory["mount_options"] and "size=262144k" in memory["mount_options"]
    assert memory["mount_point"] == str(tmpfs) and 0 < memory["free_bytes"] <= 256 * 2**20

    disk = storage_of(tmp_path)
    assert disk["filesystem"] == _root_filesystem(tmp_path) != "tmpfs"
    assert disk["free_bytes"] > 0 and disk["mount_options"]
    if disk.get("block_device"):  # a real block device: what /sys says of it
        queue = Path("/sys/block") / disk["block_device"] / "queue"
        assert disk["rotational"] == ((queue / "rotational").read_text().strip() == "1")
        assert disk["medium"] in ("rotational", "solid-state")
        assert f"[{disk['scheduler']}]" in (queue / "scheduler").read_text() or disk["scheduler"] == "none"


def test_a_run_records_its_host_name_and_the_storage_under_database_and_temp(tmpfs: Path, tmp_path: Path) -> None:
    store, temp = tmp_path / "r.sqlite", tmp_path / "sort-files"
    temp.mkdir()
    cli = run_cli("run", BANK, *TINY, "--host-name", "box-1", "--workdir", str(tmpfs / "work"), "--results",
                  str(store), "--set", f"TempDirectories={temp}")
    assert cli.returncode == 0, cli.stdout + cli.stderr
    with ResultsStore(store, create=False) as opened:
        run = opened.load_run("last")
    record = conditions.record(run)
    assert record["host.name"] == "box-1" and run["host"]["hostname"] == os.uname().nodename
    assert record["host.disk.medium"] == "memory" and record["host.disk.filesystem"] == "tmpfs"
    assert record["host.disk.scheduler"] == "none (no block device)"
    assert "((" not in record["host.temp_disk.device"]  # a device without a model file: its driver, once
    assert record["host.temp_disk.filesystem"] == _root_filesystem(temp) != "tmpfs"
    assert record["host.cpus"].startswith(f"{os.cpu_count()} threads")
    assert record["host.hypervisor"] and record["host.container"]
    # Where the space is free and which mount point is not a condition.
    assert not any("free" in key or "mount_point" in key for key in record)
    assert "network.round_trip" not in record  # embedded: no network


def test_virtualization_is_asked_once_per_boot_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """systemd-detect-virt is asked once per boot; a kept answer that is not one is asked again."""
    monkeypatch.setenv("FBBENCH_CACHE", str(tmp_path / "cache"))
    found = virtualization()
    assert set(found) == {"hypervisor", "container"} and all(found.values()), found
    [kept] = (tmp_path / "cache" / "virtualization").iterdir()
    assert json.loads(kept.read_text()) == found
    kept.write_text(json.dumps({"hypervisor": "kept", "container": "kept"}))
    assert virtualization() == {"hypervisor": "kept", "container": "kept"}  # not asked again
    kept.write_text("{not json")
    assert virtualization() == found and json.loads(kept.read_text()) == found
    kept.unlink()
    (tmp_path / "cache" / "virtualization").rmdir()
    (tmp_path / "cache" / "virtualization").write_text("")  # where the cache would go is a file: asked, no error
    assert virtualization() == found


def test_a_bad_host_name_is_refused_in_one_line(tmp_path: Path) -> None:
    assert_clean_error(run_cli("run", BANK, "--host-name", "two words", "--workdir", str(tmp_path)),
                       "--host-name must be a name")
    spec = tmp_path / "run.toml"
    spec.write_text(f'workload = "{BANK}"\nhost = "a/b"\n')
    assert_clean_error(run_cli("run", "--spec", str(spec), "--workdir", str(tmp_path)), "run.toml:2: host")


@pytest.mark.server
def test_a_run_over_the_network_records_its_round_trip(tmp_path: Path) -> None:
    store = tmp_path / "r.sqlite"
    reason = fb3_server_unavailable()
    if reason:
        pytest.skip(reason)
    cli = run_cli("run", BANK, *TINY, "--engine", "server:/usr", "--workdir", str(tmp_path / "work"), "--results",
                  str(store))
    assert cli.returncode == 0, cli.stdout + cli.stderr
    with ResultsStore(store, create=False) as opened:
        run = opened.load_run("last")
    trip = run["engine"]["round_trip"]
    assert trip["server"] == "127.0.0.1" and trip["loopback"] and trip["queries"] == 200
    assert 0 < trip["median_ms"] <= trip["p99_ms"] < 1000
    assert conditions.record(run)["network.round_trip"] == "loopback"
    assert "network: round trip to 127.0.0.1 median" in cli.stdout


def test_compare_flags_storage_that_differs_outside_the_axis(tmpfs: Path, tmp_path: Path) -> None:
    """Two runs on different storage (a tmpfs and the disk under the test's directory) that also
    differ in the axis: the storage is an error of the comparison, and the verdict is withheld."""
    store, document, page = tmp_path / "r.sqlite", tmp_path / "cmp.json", tmp_path / "cmp.html"
    ids = []
    for connections, workdir in (("1", tmpfs / "work"), ("2", tmp_path / "work")):
        cli = run_cli("run", BANK, *TINY, "-c", connections, "--workdir", str(workdir), "--results", str(store))
        assert cli.returncode == 0, cli.stdout + cli.stderr
        with ResultsStore(store, create=False) as opened:
            ids.append(str(opened.load_run("last")["run_id"]))
    compared = run_cli("compare", *ids, "--axis", "connections", "--results", str(store), "--json", str(document),
                       "--report", str(page))
    assert document.is_file(), compared.stdout[-3000:] + compared.stderr[-3000:]
    doc = json.loads(document.read_text())
    assert [row["key"] for row in doc["conditions"]["axis"]] == ["load.connections"]
    outside = {row["key"]: row["values"] for row in doc["conditions"]["differences"]}
    assert outside["host.disk.filesystem"]["A"] == "tmpfs" != outside["host.disk.filesystem"]["B"], outside
    assert outside["host.disk.medium"]["A"] == "memory", outside
    # Each storage key that differs is an error of its own (FB006: the host differs), naming the key.
    # The storage is the only error: the runs are alike in every other condition.
    errors = [f for f in doc["lint"] if f["severity"] == "error"]
    assert {(f["rule"], f["scope"]) for f in errors} == {("FB006", "comparison")}, errors
    named = {f["evidence"]["key"] for f in errors}
    assert {"host.disk.filesystem", "host.disk.medium", "host.disk.mount_options"} <= named, errors
    assert named <= {key for key in outside if key.startswith(("host.disk.", "host.temp_disk."))}, named
    message = next(f["message"] for f in errors if f["evidence"]["key"] == "host.disk.filesystem")
    assert "host.disk.filesystem differs outside the axis" in message and "tmpfs" in message
    assert not doc["valid"] and any(line.startswith("FB006 host.disk.") for line in doc["invalid_because"])
    verdict = doc["verdicts"]["B"]
    assert verdict["withheld"] and verdict["word"] is None, verdict
    assert verdict["text"].startswith("verdict withheld: the comparison is invalid (FB006"), verdict
    assert all(not (v or {}).get("word") for row in doc["figures"] for v in row["verdicts"].values())
    assert compared.returncode == 0, compared.stderr[-2000:]  # an invalid comparison is still a comparison
    assert "verdict withheld" in " ".join(compared.stdout.split())
