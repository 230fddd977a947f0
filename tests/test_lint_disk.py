"""The disk lint on real runs: each rule fires on a run made to trigger it and stays silent on
the quickstart's kind of run (TPC-C on embedded 5.0 with its defaults)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from fbbench.analysis import lint, lint_disk, lint_rules
from fbbench.engines import platform as host_os
from fbbench.runner.cleanup import databases_dir
from fbbench.store import ResultsStore
from tests.conftest import run_cli

DISK_RULES = {"FB023", "FB024", "FB025", "FB026", "FB027", "FB028", "FB045"}


def run(tmp_path: Path, workload: str, *args: str, name: str = "run") -> dict[str, Any]:
    out = tmp_path / f"{name}.json"
    cli = run_cli("run", workload, *args, "--workdir", str(tmp_path / "work"), "--results",
                  str(tmp_path / "results.sqlite"), "--json", str(out), "--report", str(tmp_path / f"{name}.html"),
                  "--no-sweep", timeout=300)
    assert cli.returncode == 0, cli.stdout[-3000:] + cli.stderr[-3000:]
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def rules(doc: dict[str, Any]) -> set[str]:
    return {finding["rule"] for finding in doc["lint"]}


def stored(tmp_path: Path, doc: dict[str, Any]) -> Any:
    with ResultsStore(tmp_path / "results.sqlite", create=False) as store:
        return store.load_run(doc["run_id"])


def test_file_cache_off_with_the_database_in_firebirds_cache(tmp_path: Path) -> None:
    doc = run(tmp_path, "connect", "--engine", "5.0", "--file-cache", "off", "--scale", "connects=5", "-c", "1")
    finding = next(f for f in doc["lint"] if f["rule"] == "FB023")
    assert "fits in Firebird's page cache" in finding["message"] and finding["severity"] == "warning"
    assert "FB022" not in rules(doc)  # the sharper rule says it, once


def test_a_disk_test_inside_the_os_cache_and_not_when_it_is_off(tmp_path: Path) -> None:
    doc = run(tmp_path, "scan", "--engine", "5.0", "--scale", "rows=20000", "-c", "1", name="cached")
    finding = next(f for f in doc["lint"] if f["rule"] == "FB024")
    assert "a disk test with the OS file cache on" in finding["message"]
    # The same test with the file cache off: the database (≈ 10 MB) fits in 2,048 × 8 KB: FB023, not FB024.
    off = run(tmp_path, "scan", "--engine", "5.0", "--scale", "rows=20000", "-c", "1", "--file-cache", "off",
              name="off")
    assert "FB024" not in rules(off) and "FB023" in rules(off)


def test_forced_writes_off_in_a_disk_comparison(tmp_path: Path) -> None:
    args = ("iud", "--scale", "rows=200", "--scale", "batch=100", "-c", "1", "--forced-writes", "off")
    first = run(tmp_path, *args, "--engine", "4.0", name="four")
    second = run(tmp_path, *args, "--engine", "5.0", name="five")
    out = tmp_path / "compare.json"
    compared = run_cli("compare", first["run_id"], second["run_id"], "--axis", "engine", "--results",
                       str(tmp_path / "results.sqlite"), "--json", str(out), "--report", str(tmp_path / "c.html"),
                       "--force")
    assert out.is_file(), compared.stdout[-2000:] + compared.stderr[-2000:]
    found = [f for f in json.loads(out.read_text())["lint"] if f["rule"] == "FB025"]
    assert len(found) == 1 and "forced writes were off in 2 of the 2" in found[0]["message"]


def test_page_buffers_below_the_working_set(tmp_path: Path) -> None:
    """60 tables in use need 60 pointer and 60 index-root pages: 50 buffers cannot hold them."""
    directory = tmp_path / "many_tables"
    directory.mkdir()
    tables = [f"t{i:02d}" for i in range(60)]
    (directory / "schema.sql").write_text("".join(f"create table {t} (id integer not null primary key, v integer);\n"
                                                  f"insert into {t} values (1, 1);\n" for t in tables))
    union = " union all ".join(f"select v from {t}" for t in tables)
    (directory / "workload.toml").write_text(f'name = "many_tables"\nscripts = ["schema.sql"]\n[[units]]\n'
                                             f'name = "touch"\nweight = 1\nsql = "select sum(v) from ({union})"\n')
    doc = run(tmp_path, str(directory), "--engine", "5.0", "--page-buffers", "50", "--transactions", "20", "-c", "1")
    finding = next(f for f in doc["lint"] if f["rule"] == "FB026")
    assert finding["evidence"]["tables"] >= 60 and finding["evidence"]["total"] > 120, finding["evidence"]
    assert "working set" in finding["message"]


def _file_system(path: Path) -> str:
    """The type of the file system that holds ``path`` (its longest mount point in /proc/mounts)."""
    found, longest = "", -1
    for line in Path("/proc/mounts").read_text().splitlines():
        _, point, kind, *_ = line.split()
        if (path == Path(point) or Path(point) in path.parents) and len(point) > longest:
            found, longest = kind, len(point)
    return found


def _evict_in_turns(databases: Path, stop: threading.Event, span: float = 2.0, every: float = 0.02) -> list[int]:
    """Once the run's database appears under ``databases``: turns of ``span`` seconds, one in
    which its pages are evicted from the OS cache every ``every`` seconds (POSIX_FADV_DONTNEED,
    this file only) and one left alone, until ``stop``. Returns the evictions per turn."""
    while not (found := sorted(databases.glob("*.fdb"))):
        if stop.wait(0.05):
            return []
    fd = os.open(found[0], os.O_RDONLY)
    turns: list[int] = []
    try:
        while not stop.is_set():
            evictions, ends = 0, time.monotonic() + span
            while time.monotonic() < ends and not stop.wait(every):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                evictions += 1
            turns.append(evictions)
            stop.wait(span)
    finally:
        os.close(fd)
    return turns


@pytest.mark.alone  # times the OS cache's turns against the sampler's 0.5 s readings
def test_os_cache_that_moves_during_a_run(tmp_path: Path) -> None:
    """A table larger than Firebird's cache, scanned again and again through the OS cache, in
    turns of 2 s: in one the table's pages are evicted from the OS cache every 20 ms, so every
    scan reads it from the storage; in the next it stays cached. Each turn holds whole 0.5 s
    readings, wherever the turns fall against the sampler's boundaries: one with most bytes from
    the storage and one with almost none. (A few whole-cache drops were not enough: the 40 MB
    table came back from a virtio disk within a fraction of one reading.)"""
    if not hasattr(os, "posix_fadvise"):
        pytest.skip("evicting one file from the OS cache needs posix_fadvise")
    if _file_system(tmp_path) in ("tmpfs", "ramfs"):
        pytest.skip(f"{tmp_path} is on {_file_system(tmp_path)}: its pages cannot leave the memory")
    directory = tmp_path / "rescan"
    directory.mkdir()
    (directory / "schema.sql").write_text(
        "create table big (id integer not null primary key, pad varchar(1000));\n"
        "set term ^ ;\nexecute block as declare i integer = 0; begin while (i < 40000) do begin "
        "insert into big values (:i, rpad('x', 1000, 'abcdefghij')); i = i + 1; end end^\nset term ; ^\n")
    (directory / "workload.toml").write_text('name = "rescan"\nscripts = ["schema.sql"]\n[[units]]\nname = "scan"\n'
                                             'weight = 1\nread_only = true\n'
                                             'sql = "select count(*), sum(char_length(pad)) from big"\n')
    stop = threading.Event()
    turns: list[int] = []
    evictor = threading.Thread(target=lambda: turns.extend(_evict_in_turns(databases_dir(tmp_path / "work"), stop)),
                               daemon=True)
    evictor.start()
    try:
        doc = run(tmp_path, str(directory), "--engine", "5.0", "--page-buffers", "256", "-c", "1", "--warmup", "1s",
                  "--duration", "11s", "--interval", "0.5s")
    finally:
        stop.set()
        evictor.join()
    cache = doc["os_cache"]
    assert len(turns) >= 3 and min(turns[:-1]) > 20, turns  # the evictions kept up with their 20 ms
    assert cache["storage_share_min"] is not None and cache["storage_share_min"] <= lint_disk.CACHED_SHARE, cache
    assert cache["storage_share_max"] >= lint_disk.STORAGE_SHARE, cache
    assert "FB027" in rules(doc), (cache, sorted(rules(doc)))


def test_os_cache_that_differed_between_runs(tmp_path: Path) -> None:
    if host_os.page_cache_drop_refusal():
        pytest.skip("dropping the OS page cache needs root")
    scan = ("scan", "--engine", "5.0", "--scale", "rows=40000", "-c", "1", "--page-buffers", "256")
    cold = stored(tmp_path, run(tmp_path, *scan, "--drop-caches", name="cold"))
    warm = stored(tmp_path, run(tmp_path, *scan, name="warm"))
    found = lint_disk.lint_os_cache_series([cold, warm], "series")
    assert [f.rule for f in found] == ["FB028"], [f.text for f in found]
    assert lint_disk.lint_os_cache_series([warm, warm]) == []


def test_paired_ratios_that_trend_and_that_do_not() -> None:
    def pair(a: float, b: float) -> tuple[dict[str, Any], dict[str, Any]]:
        return ({"summary": {"headline": {"result": a}}}, {"summary": {"headline": {"result": b}}})

    drifting = [pair(1000, 1000 * r) for r in (0.60, 0.66, 0.71, 0.78, 0.84, 0.90, 0.95, 1.00)]
    found = lint.lint_pairs(drifting)  # type: ignore[arg-type]
    assert [f.rule for f in found] == ["FB045"] and "from 0.600 to 1.000" in found[0].message
    quiet = [pair(1000, 1000 * r) for r in (1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.00)]
    assert lint.lint_pairs(quiet) == []  # type: ignore[arg-type]


def test_silent_on_the_quickstart(tmp_path: Path) -> None:
    doc = run(tmp_path, "tpcc", "--engine", "5.0", "--scale", "items=1000", "--scale", "customers=100", "--scale",
              "orders=100", "-c", "2", "--warmup", "1s", "--duration", "4s", "--interval", "1s")
    assert not rules(doc) & DISK_RULES, sorted(rules(doc))
    assert doc["os_cache"]["readings"] >= 4
    assert doc["storage"]["file_cache"] == "on" and doc["storage"]["database"]


def test_every_rule_has_a_severity_and_a_why() -> None:
    for rule_id in DISK_RULES:
        rule = lint_rules.RULES[rule_id]
        assert rule.severity in lint_rules.SEVERITIES and len(rule.why) > 60 and rule.why.endswith(".")


ROW = b"x" * 99 + b"\n"  # one record of the external table: char(99) and the newline as char(1)


def _paired_spec(directory: Path, side: str, external: Path) -> Path:
    path = directory / f"{side}.toml"
    path.write_text(f'workload = "{directory / "external_scan"}"\nengine = "5.0"\nconnections = 1\nwarmup = "0.5s"\n'
                    f'duration = "1.5s"\ninterval = "0.5s"\n[scale]\nfile = "{side}"\n'
                    f'[set]\nExternalFileAccess = "Restrict {external}"\n')
    return path


@pytest.mark.alone  # measures rates: A's within 2× over six pairs, B's falling 3×
def test_paired_ratios_that_trend_on_a_real_paired_series(tmp_path: Path) -> None:
    """A real compare --paired whose B gets slower from pair to pair while A does not: each side
    counts the rows of an external table, A's file fixed at 20,000 rows and B's starting equal
    and grown 1.7-fold by the test as each pair ends (the pairs run one after another, and the
    next pair's engines start after its line is printed, so pair k reads 1.7^(k-1) times A's
    rows). B's work per unit grows 1.7-fold per pair (its rate falls at least as much), far beyond
    the pairs' own noise (about ±15 % between pairs of identical sides here): FB045, with the
    slope's interval below 0. (Its negative, ratios without a trend, is the
    constructed-numbers test above: a real control series would cross its 95 % line now and
    then by chance.)"""
    external, workload = tmp_path / "external", tmp_path / "external_scan"
    external.mkdir()
    workload.mkdir()
    (workload / "workload.toml").write_text(
        'name = "external_scan"\nscripts = ["schema.sql"]\n[scale]\nfile = { default = "a", choices = ["a", "b"] }\n'
        '[[units]]\nname = "count"\nweight = 1\nread_only = true\nsql = "select count(*) from ext"\n')
    (workload / "schema.sql").write_text(
        f"create table ext external file '{external}/${{file}}.dat' (v char(99), nl char(1));\n")
    start, growth, pairs = 20_000, 1.7, 6
    for side in ("a", "b"):
        (external / f"{side}.dat").write_bytes(ROW * start)
    a, b = _paired_spec(tmp_path, "a", external), _paired_spec(tmp_path, "b", external)
    document = tmp_path / "paired.json"
    command = [sys.executable, "-m", "fbbench", "compare", "--paired", str(a), str(b), "--pairs", str(pairs),
               "--axis", "scale.file", "--workdir", str(tmp_path / "work"), "--results",
               str(tmp_path / "results.sqlite"), "--json", str(document)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "COLUMNS": "200"})
    timer = threading.Timer(240, process.kill)
    timer.start()
    lines, rows = [], [start]
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if line.startswith("pair ") and f" of {pairs} " in line and not line.startswith(f"pair {pairs} "):
                rows.append(round(rows[-1] * growth))  # before the next pair's engines have started
                with (external / "b.dat").open("ab") as grown:
                    grown.write(ROW * (rows[-1] - rows[-2]))
        stderr = process.stderr.read() if process.stderr else ""
        process.wait()
    finally:
        timer.cancel()
        process.kill()
    output = "".join(lines)
    assert process.returncode == 0, output[-3000:] + stderr[-3000:]
    assert len(rows) == pairs, output  # B's file grew after every pair but the last
    doc = json.loads(document.read_text())
    assert doc["pairing"]["complete"] == pairs
    headline = next(row for row in doc["figures"] if row["kind"] == "headline")
    runs_a, runs_b = headline["runs"]["A"], headline["runs"]["B"]
    assert runs_b[-1] < runs_b[0] / 3 and runs_a[0] / 2 < runs_a[-1] < runs_a[0] * 2, (runs_a, runs_b)
    found = [f for f in doc["lint"] if f["rule"] == "FB045"]
    assert len(found) == 1 and found[0]["scope"] == "comparison" and found[0]["severity"] == "warning", found
    evidence = found[0]["evidence"]
    assert evidence["low"] <= evidence["slope"] <= evidence["high"] < 0, evidence  # the interval excludes 0
    ratios = evidence["ratios"]
    assert ratios == pytest.approx([b / a for a, b in zip(runs_a, runs_b, strict=True)]) and ratios[-1] < ratios[0]
    assert "the per-pair ratios trend by -" in found[0]["message"]
    assert "FB045 warning" in " ".join(output.split())
