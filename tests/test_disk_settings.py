"""Disk-honest settings on real engines: --file-cache writes the key each engine version reads
(read back from RDB$CONFIG on 4.0 / 5.0) and is one condition across versions; --target-size
lands near the size asked and reuses the population cache; --drop-caches drops the OS page
cache as root and is refused otherwise, with the reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fbbench.analysis import conditions
from fbbench.errors import FbbenchError
from fbbench.store import ResultsStore
from tests import chromium
from tests.conftest import REPO, assert_clean_error, run_cli

TINY = ("--scale", "connects=5", "--connections", "1", "--no-sweep")


def run(tmp_path: Path, workload: str, *args: str, name: str = "run") -> dict[str, Any]:
    out = tmp_path / f"{name}.json"
    cli = run_cli("run", workload, *args, "--workdir", str(tmp_path / "work"), "--results",
                  str(tmp_path / "results.sqlite"), "--json", str(out), "--report", str(tmp_path / f"{name}.html"))
    assert cli.returncode == 0, cli.stdout[-3000:] + cli.stderr[-3000:]
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def test_file_cache_off_writes_each_versions_key_and_is_one_condition(tmp_path: Path) -> None:
    docs = {engine: run(tmp_path, "connect", "--engine", engine, "--file-cache", "off", *TINY, name=engine)
            for engine in ("3.0", "4.0", "5.0")}
    conf3 = docs["3.0"]["engine"]["firebird_conf"]
    assert conf3["FileSystemCacheThreshold"] == "1" and "UseFileSystemCache" not in conf3
    for engine in ("4.0", "5.0"):  # read back from RDB$CONFIG: every key the engine has
        conf = docs[engine]["engine"]["firebird_conf"]
        assert docs[engine]["engine"]["firebird_conf_source"] == "RDB$CONFIG"
        assert conf["UseFileSystemCache"] == "false", conf.get("UseFileSystemCache")
    with ResultsStore(tmp_path / "results.sqlite", create=False) as store:
        records = {engine: conditions.record(store.load_run(doc["run_id"])) for engine, doc in docs.items()}
    for record in records.values():
        assert record["database.file_cache"] == "off"
        assert not set(conditions.FILE_CACHE_KEYS) & set(record)
    on_axis, others = conditions.axis(conditions.diff(records), ["engine"])
    assert not [row for row in [*on_axis, *others] if row.key in (*conditions.FILE_CACHE_KEYS, "database.file_cache")]
    # The default (the OS cache in play) is a different condition, and the lint would name it.
    default = run(tmp_path, "connect", "--engine", "5.0", *TINY, name="default")
    with ResultsStore(tmp_path / "results.sqlite", create=False) as store:
        assert conditions.record(store.load_run(default["run_id"]))["database.file_cache"] == "on"


def test_target_size_lands_near_the_size_asked_and_reuses_the_cache(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    target = 30_000_000
    doc = run(tmp_path, "scan", "--engine", "5.0", "--target-size", "30MB", "--connections", "1", "--no-sweep")
    size = doc["database"]["size_bytes_before"]
    assert abs(size - target) / target < 0.15, size
    chosen = doc["settings"]["scale"]["rows"] if "settings" in doc else None
    with ResultsStore(tmp_path / "results.sqlite", create=False) as store:
        stored = store.load_run(doc["run_id"])
        rows = stored["settings"]["scale"]["rows"]
        record = conditions.record(stored)
    assert record["scale.rows"] == f"{int(rows):g}" and int(rows) > 1000, (rows, chosen)
    again = run(tmp_path, "scan", "--engine", "5.0", "--target-size", "30MB", "--connections", "1", "--no-sweep",
                name="again")
    assert again["population"]["source"] == "copy of cached population"
    assert again["database"]["size_bytes_before"] == size
    # The room check before a run: once the measuring population is cached it knows the scale
    # --target-size will choose, and with that scale's population cached only the run's copy is
    # still to be written; --fresh builds both again, which a disk of 1.5 copies cannot hold.
    from fbbench.runner import limits
    from fbbench.runner import run as runner
    from fbbench.runner.settings import from_sources

    real = limits.room

    def small(directory: Path) -> limits.Room:
        found = real(directory)
        return replace(found, free=found.reserve + 1.5 * size)

    monkeypatch.setattr(limits, "room", small)
    flags = {"workload": "scan", "engine": "5.0", "target_size": "30MB", "workdir": str(tmp_path / "work"),
             "results": str(tmp_path / "results.sqlite")}
    runner.check(from_sources(None, flags))
    with pytest.raises(FbbenchError, match=r"--target-size 30 MB needs about") as caught:
        runner.check(from_sources(None, {**flags, "fresh": True}))
    assert f"the file system of {tmp_path / 'work'}" in str(caught.value)


@pytest.mark.parametrize(("args", "fragments"), [
    (("iud", "--target-size", "1GB"), ["does not say which scale", "size_scale"]),
    (("scan", "--target-size", "1GB", "--scale", "rows=10"), ["chooses rows itself"]),
    (("scan", "--target-size", "lots"), ["--target-size must be a size such as 4GB"]),
    (("scan", "--target-size", "100TB"), ["--target-size 100 TB needs about", "the file system of"]),
    (("scan", "--file-cache", "on", "--set", "UseFileSystemCache=false"), ["contradicts", "UseFileSystemCache"]),
    (("scan", "--engine", "localhost/3050:/nowhere.fdb", "--file-cache", "off"),
     ["does not write the firebird.conf"]),
    (("scan", "--engine", "localhost/3050:/nowhere.fdb", "--drop-caches"), ["drops this machine's page cache"]),
])
def test_disk_settings_refuse_what_they_cannot_do(tmp_path: Path, args: tuple[str, ...], fragments: list[str]) -> None:
    result = run_cli("run", *args, "--workdir", str(tmp_path / "work"), "--results", str(tmp_path / "r.sqlite"),
                     env={"ISC_PASSWORD": "x"})
    assert_clean_error(result, *fragments)


def test_drop_caches_is_refused_for_another_user_with_the_reason() -> None:
    """The check itself, as user nobody (this machine runs the tests as root)."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to become another user")
    probe = ("from fbbench.engines.platform import page_cache_drop_refusal; "
             "print(page_cache_drop_refusal())")
    nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    result = subprocess.run([*nobody, sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    if "No module named 'fbbench'" in result.stderr or "Permission denied" in result.stderr:
        # A checkout in a directory only root may enter (mktemp -d makes one): nobody cannot import it.
        pytest.skip(f"user nobody cannot read the checkout at {REPO}")
    assert result.returncode == 0, result.stderr
    assert "needs root" in result.stdout and "drop_caches" in result.stdout, result.stdout


def test_drop_caches_refusal_reaches_the_user_as_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from fbbench.runner import run as runner
    from fbbench.runner.settings import from_sources

    settings = from_sources(None, {"workload": "connect", "drop_caches": True, "workdir": str(tmp_path / "w"),
                                   "results": str(tmp_path / "r.sqlite")})
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    refused = r"--drop-caches: dropping the OS page cache needs root .* uid 1000"
    with pytest.raises(FbbenchError, match=refused) as caught:
        runner.check(settings)
    assert caught.value.hint and "root" in caught.value.hint


def test_drop_caches_drops_the_page_cache_before_the_measured_period(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("dropping the OS page cache needs root")
    doc = run(tmp_path, "connect", "--engine", "5.0", "--drop-caches", *TINY)
    with ResultsStore(tmp_path / "results.sqlite", create=False) as store:
        stored = store.load_run(doc["run_id"])
    before = next(p for p in stored["phases"] if p["name"] == "before")
    dropped = before["detail"]["drop_caches"]
    assert dropped["page_cache_after"] < dropped["page_cache_before"], dropped
    assert conditions.record(stored)["load.drop_caches"] == "on"


def test_iud_on_3_0_against_5_0_with_forced_writes_and_no_file_cache_gets_a_verdict(tmp_path: Path) -> None:
    """The issue's "Done when": iud on 3.0 and on 5.0, forced writes on and the file cache off,
    compared with --axis engine: a verdict (not withheld), no error outside the axis, and the
    storage and cache conditions of both sides in the JSON and on the rendered page."""
    store = tmp_path / "results.sqlite"
    series = {}
    for engine in ("3.0", "5.0"):
        cli = run_cli("run", "iud", "--engine", engine, "--forced-writes", "on", "--file-cache", "off", "--scale",
                      "rows=2000", "--scale", "batch=500", "-c", "1", "--repeat", "2", "--no-sweep", "--workdir",
                      str(tmp_path / "work"), "--results", str(store))
        assert cli.returncode == 0, cli.stdout[-3000:] + cli.stderr[-3000:]
        with ResultsStore(store, create=False) as opened:
            series[engine] = str(opened.load_run("last")["series_id"])
    document, page = tmp_path / "cmp.json", tmp_path / "page.html"
    compared = run_cli("compare", series["3.0"], series["5.0"], "--axis", "engine", "--results", str(store),
                       "--report", str(page), "--json", str(document))
    assert compared.returncode == 0, compared.stdout[-3000:] + compared.stderr[-3000:]
    doc = json.loads(document.read_text())
    assert doc["valid"] and not [f for f in doc["lint"] if f["severity"] == "error"], doc["invalid_because"]
    assert doc["conditions"]["differences"] == []  # nothing differs outside the axis
    assert "engine.version" in {row["key"] for row in doc["conditions"]["axis"]}
    verdict = doc["verdicts"]["B"]
    assert verdict["figure"] == "rows/s" and not verdict["withheld"], verdict
    assert verdict["text"].startswith(("no difference resolved", "B (5.0")), verdict  # a verdict, whichever it is
    assert verdict["resolved"] == (verdict["word"] is not None)
    ratio = next(row for row in doc["figures"] if row["kind"] == "headline")["ratios"]["B"]
    assert ratio["basis"] == "repeats" and 0 < ratio["low"] <= ratio["ratio"] <= ratio["high"], ratio
    assert "verdict B (5.0" in " ".join(compared.stdout.split())
    # The storage and the cache conditions: the same on both sides, so among the equal ones.
    equal = doc["conditions"]["equal"]
    assert equal["database.forced_writes"] == "on" and equal["database.file_cache"] == "off", equal
    storage = [f"host.disk.{name}" for name in ("device", "medium", "filesystem", "mount_options", "scheduler")]
    assert all(equal.get(key) for key in storage), {key: equal.get(key) for key in storage}
    with ResultsStore(store, create=False) as opened:
        disk = opened.load_run("last")["host"]["database_disk"]
    assert equal["host.disk.filesystem"] == disk["filesystem"] and equal["host.disk.mount_options"] == disk[
        "mount_options"]
    # The page, as a reader's browser draws it: the equal conditions' table holds them, with their values.
    body = chromium.render_ok(page, tmp_path / "chromium").body
    rows = {}
    for row in body.by_id("equal-table").all("tr"):
        cells = [cell.text.strip() for cell in row.all("td")]
        if len(cells) == 2:
            rows[cells[0]] = cells[1]
    for key in ("database.forced_writes", "database.file_cache", *storage):
        assert rows.get(key) == equal[key], (key, rows.get(key))
