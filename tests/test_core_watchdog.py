"""The load core when the engine goes wrong: a database that cannot be written fails the run at
once, and an attachment the engine does not give back is abandoned within the watchdog bound.

Both on embedded Firebird 5.0 with real causes (tests/workloads_core/watchdog_child.py): a full
disk, and a statement blocked in a network read that fb_cancel_operation cannot break.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from fbbench.engines import prepare_runtime, run_in_engine
from fbbench.workloads.figures import OUTCOMES
from tests.test_core import Target, embedded_target

# Alone: each test times the end of a run (at once on a full disk, within the watchdog's bound of
# an attachment not given back), which another test's load would stretch.
pytestmark = pytest.mark.alone

CHILD = "tests.workloads_core.watchdog_child"
MiB = 1 << 20


def measured_totals_kept(result: dict[str, Any], unit: str) -> list[dict[str, Any]]:
    """The measured intervals, after checking that the totals are exactly their sum."""
    measured = [i for i in result["intervals"] if i["phase"] == "measure"]
    for key in OUTCOMES:
        assert result["units"][unit][key] == sum(i["units"][unit][key] for i in measured), key
    assert sum(i["seconds"] for i in measured) == pytest.approx(result["measured_seconds"], abs=1e-6)
    return measured


# ------------------------------------------------------------------------------------ disk full


@contextmanager
def small_disk(path: Path, size: int) -> Iterator[str | None]:
    """A tmpfs of ``size`` bytes at ``path``; yields None, or why it could not be mounted."""
    path.mkdir()
    try:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                                 capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as error:
        yield f"cannot run mount: {error}"
        return
    if mounted.returncode != 0:
        yield f"mount refused: {(mounted.stderr or mounted.stdout).strip()}"
        return
    try:
        yield None
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.mark.parametrize("mechanism", ["tmpfs", "rlimit"])
def test_a_full_disk_fails_the_run_at_once(mechanism: str, tmp_path: Path) -> None:
    """tmpfs: the database on a 16 MiB tmpfs the test mounts (skipped, saying why, where mount is
    not permitted); rlimit: RLIMIT_FSIZE on the engine process, which needs no privilege."""
    runtime = prepare_runtime("5.0", tmp_path / "work")
    # About 3 MiB of room for rows of 7,000 bytes (one 8 KiB page each) at 150 units/s: the
    # file stops growing after two seconds or so of measuring.
    room = 3 * MiB
    settings = {"connections": 2, "warmup_seconds": 0.5, "measure_seconds": 30.0, "interval_seconds": 0.5,
                "target_rate": 150.0, "watchdog_seconds": 3.0, "seed": 11,
                "units": [{"name": "fat", "statements": [{
                    "sql": "insert into fat values (next value for fat_seq, ?)",
                    "params": [{"kind": "string", "args": [7000]}]}]}]}
    if mechanism == "tmpfs":
        disk = tmp_path / "disk"
        with small_disk(disk, 16 * MiB) as refused:
            if refused is not None:
                pytest.skip(f"cannot mount a small tmpfs ({refused}); the rlimit variant covers a full disk")
            dsn = str(disk / "fat.fdb")
            run_in_engine(runtime, f"{CHILD}:create_fat", dsn)
            # Ballast leaves exactly `room` free on the small disk.
            free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
            (disk / "ballast").write_bytes(b"\0" * (free - room))
            result = run_in_engine(runtime, f"{CHILD}:fill_until_full", dsn, settings, None)
        expected = "No space left on device"
    else:
        dsn = str(tmp_path / "fat.fdb")
        # The limit holds for every file of the process: the engine's shared memory files (a
        # 4 MiB TIP cache block) must fit under it too.
        limit = max(run_in_engine(runtime, f"{CHILD}:create_fat", dsn) + room, 5 * MiB)
        result = run_in_engine(runtime, f"{CHILD}:fill_until_full", dsn, settings, limit)
        expected = "File too large"

    failure = result["failure"] or ""
    assert result["status"] == "failed", result["failure"]
    assert failure.startswith("the database cannot be written (attachment "), failure
    assert expected in failure and "Error while trying to write to file" in failure, failure
    # The first write error ends the run: nothing is counted as a unit error.
    assert result["units"]["fat"]["errors"] == 0, result["units"]["fat"]["errors_by_code"]
    # It ends at once, or at the latest when the watchdog gives up on an attachment stuck in
    # the broken engine (embedded 5.0 may keep one spinning on its write errors).
    # (Margins: the Python side polls every 0.1 s on a shared 2-core machine.)
    assert result["_test"]["after_end"] < (settings["watchdog_seconds"] if result["abandoned"] else 1.0) + 1.0, \
        result["_test"]
    if result["abandoned"]:
        assert "did not return within 3 s after the run failed" in failure, failure
    # What was measured before is kept.
    assert 0.3 < result["measured_seconds"] < 10.0, result["measured_seconds"]
    measured = measured_totals_kept(result, "fat")
    assert result["units"]["fat"]["ok"] > 0 and any(i["units"]["fat"]["ok"] for i in measured)


# ------------------------------------------------------------------------------------- watchdog


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Target:
    return embedded_target("5.0", tmp_path_factory.mktemp("core-watchdog"))


def stuck_run(target: Target, settings: dict[str, Any], interrupt_after: float | None = None) -> dict[str, Any]:
    return run_in_engine(target.runtime, f"{CHILD}:stuck_attachment", target.dsn, settings, 20, interrupt_after)


def check_abandoned_attachment_1(result: dict[str, Any]) -> None:
    # Attachment 1 was really inside the engine when the run returned, then came back when its
    # network read failed, detached, and left the process sound for a second, normal run.
    assert result["abandoned"] == [1] and result["_test"]["typed_abandoned"] == [1]
    assert result["_test"]["attachments_left_after_return"] == 1
    assert result["_test"]["attachments_left_after_release"] == 0
    first, second = result["attachments"]
    assert first["error"] == result["failure"] and second["error"] is None
    assert first["units"] == 19  # the units it recorded before its 20th got stuck
    normal = result["_test"]["second_run"]
    assert normal["status"] == "completed" and normal["failure"] is None and normal["abandoned"] == []
    assert normal["units"]["maybe_hang"]["ok"] > 0 and normal["units"]["maybe_hang"]["errors"] == 0


def test_an_attachment_the_engine_does_not_give_back_is_abandoned(target: Target) -> None:
    settings = {"connections": 2, "warmup_seconds": 0.5, "measure_seconds": 1.5, "interval_seconds": 0.5,
                "watchdog_seconds": 1.5, "seed": 5}
    result = stuck_run(target, settings)
    assert result["status"] == "failed"
    assert result["failure"].startswith(
        "attachment 1 did not return within 1.5 s after the end of the measured period"), result["failure"]
    # The run outlives its period by the bound, not more.
    assert settings["watchdog_seconds"] <= result["_test"]["after_end"] < settings["watchdog_seconds"] + 1.0, \
        result["_test"]
    measured = measured_totals_kept(result, "maybe_hang")
    assert len(measured) == 3 and all(i["units"]["maybe_hang"]["ok"] > 0 for i in measured)
    assert result["measured_seconds"] == pytest.approx(1.5)
    check_abandoned_attachment_1(result)


def test_a_stop_with_an_attachment_stuck_is_still_a_stop(target: Target) -> None:
    settings = {"connections": 2, "warmup_seconds": 0.5, "measure_seconds": 30.0, "interval_seconds": 0.5,
                "watchdog_seconds": 1.5, "seed": 6}
    result = stuck_run(target, settings, interrupt_after=2.0)
    assert result["status"] == "stopped"
    assert result["failure"].startswith("attachment 1 did not return within 1.5 s after the stop"), \
        result["failure"]
    assert settings["watchdog_seconds"] <= result["_test"]["after_end"] < settings["watchdog_seconds"] + 1.0, \
        result["_test"]
    assert result["_test"]["after_interrupt"] < settings["watchdog_seconds"] + 1.5, result["_test"]
    assert result["measured_seconds"] < 2.0
    assert result["units"]["maybe_hang"]["ok"] > 0
    measured_totals_kept(result, "maybe_hang")
    check_abandoned_attachment_1(result)
