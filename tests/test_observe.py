"""fbbench.observe on real engines: MON$ sampling, gstat before/after, firebird.log findings.

Engine work runs in engine child processes (tests/observe_child.py). Captured engine output lives
in tests/data (see its README: what is real and what is written from the engines' format strings).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fbbench.analysis import gstat as gstat_judgement
from fbbench.engines import prepare_runtime, run_in_engine
from fbbench.observe import firebird_log, gstat
from fbbench.report.console import engine_lines
from tests.conftest import ENGINES, fb3_server_or_skip
from tests.fb3server import Fb3Server

CHILD = "tests.observe_child"
DATA = Path(__file__).parent / "data"
ODS = {"3.0": "12.0", "4.0": "13.0", "5.0": "13.1"}


def rows_by_key(rows: list[list[Any]]) -> dict[tuple[str, str], float]:
    return {(source, name): value for source, name, value in rows}


@pytest.fixture(scope="module")
def fb3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fb3Server]:
    with fb3_server_or_skip(tmp_path_factory.mktemp("observe-server")) as server:
        yield server


def server_runtime(server: Fb3Server, tmp_path: Path, name: str) -> tuple[Any, str, str]:
    """A client runtime for the server, the database's DSN and its path on the server."""
    database = tmp_path / f"{name}.fdb"
    dsn = server.dsn(database)
    return prepare_runtime(dsn, tmp_path / "work", user=server.user, password=server.password), dsn, str(database)


# ------------------------------------------------------------------------------------------ sampler


def check_reading(reading: dict[str, Any], version: str) -> dict[tuple[str, str], float]:
    """What every architecture must show after 200 inserts, 50 updates and two reads."""
    delta = rows_by_key(reading["rows"])
    assert delta[("io", "page_fetches")] > 0
    assert delta[("record", "inserts")] >= 200
    assert delta[("table:ITEMS", "inserts")] == 200
    assert delta[("table:ITEMS", "updates")] == 50
    assert delta[("table:ITEMS", "seq_reads")] + delta[("table:ITEMS", "idx_reads")] >= 200
    assert delta[("table:NOT_THERE", "inserts")] == 0  # a table never touched still has its row
    # Levels: as they are, not as differences.
    header = {name: value for (source, name), value in delta.items() if source == "header"}
    assert {"oit", "oat", "ost", "next", "next_minus_oit", "next_minus_oat", "pages", "page_buffers"} <= set(header)
    assert header["next"] >= header["oat"] >= header["oit"] > 0
    assert header["next_minus_oit"] == header["next"] - header["oit"]
    assert header["pages"] > 0
    assert delta[("sample", "seconds")] == reading["second"]["seconds"] < 1.0
    assert reading["first"]["seconds"] < 1.0
    assert reading["first"]["attachment_id"] == reading["second"]["attachment_id"] > 0
    assert ("imgc" in reading["record_names"]) == (version != "3.0")
    assert (("record", "imgc") in delta) == (version != "3.0")
    return delta


@pytest.mark.parametrize("version", ENGINES)
def test_sampler_embedded(version: str, tmp_path: Path, workdir: Path) -> None:
    runtime = prepare_runtime(version, workdir)
    reading = run_in_engine(runtime, f"{CHILD}:sampler_reading", str(tmp_path / "sampled.fdb"))
    delta = check_reading(reading, version)
    assert reading["per_attachment"] is False
    assert delta[("database", "per_attachment_sums")] == 0
    assert delta[("memory", "used")] > 0 and delta[("memory", "attachments_used")] > 0  # SuperServer pool
    # The sampler's own reading touches no records, and only a few pages (transaction start/end).
    assert delta[("sampler", "seq_reads")] == delta[("sampler", "idx_reads")] == 0
    assert 0 < delta[("sampler", "page_fetches")] < 50


def test_sampler_classic_sums_over_attachments(tmp_path: Path, workdir: Path) -> None:
    """In Classic the database-level rows only count the sampler's own engine instance; the
    sampler notices (no shared memory pool) and sums the other attachments instead."""
    runtime = prepare_runtime("5.0", workdir, conf={"ServerMode": "Classic"})
    reading = run_in_engine(runtime, f"{CHILD}:sampler_reading", str(tmp_path / "classic.fdb"))
    delta = check_reading(reading, "5.0")
    assert reading["per_attachment"] is True
    assert delta[("database", "per_attachment_sums")] == 1
    assert delta[("record", "inserts")] == 200  # the sampler's attachment is not in the sums
    assert delta[("memory", "used")] == 0 and delta[("memory", "attachments_used")] > 0


@pytest.mark.server
def test_sampler_server(fb3: Fb3Server, tmp_path: Path) -> None:
    runtime, dsn, _ = server_runtime(fb3, tmp_path, "sampled")
    reading = run_in_engine(runtime, f"{CHILD}:sampler_reading", dsn)
    delta = check_reading(reading, "3.0")
    assert reading["per_attachment"] is False and delta[("memory", "used")] > 0


def test_sampler_thread_answers_boundaries_without_blocking(tmp_path: Path, workdir: Path) -> None:
    runtime = prepare_runtime("5.0", workdir)
    result = run_in_engine(runtime, f"{CHILD}:sampler_thread", str(tmp_path / "thread.fdb"))
    assert result["ready"] and not result["errors"] and not result["running"] and result["taken_again"] == []
    assert max(result["boundary_call_seconds"]) < 0.01
    # The zero read on request, waited for (a held load reads its baseline so), then the intervals.
    assert result["zero_made"] and result["received"][0][0] == -1
    received = result["received"][1:]
    intervals = [interval for interval, _ in received]
    assert intervals == sorted(intervals) and intervals[0] >= 0 and intervals[-1] == 7
    # Every boundary is answered exactly once; queued ones by a reading that spans them.
    covered = [rows_by_key(rows)[("sample", "intervals_covered")] for _, rows in received]
    assert sum(covered) == 8
    inserts = [rows_by_key(rows)[("table:ITEMS", "inserts")] for _, rows in received]
    assert min(inserts) >= 0 and sum(inserts) == 150  # 3 × 50 rows between the boundaries
    assert all(rows_by_key(rows)[("sample", "delay_seconds")] >= 0 for _, rows in received)


def test_sampler_thread_keeps_failures_to_itself(tmp_path: Path, workdir: Path) -> None:
    runtime = prepare_runtime("5.0", workdir)
    result = run_in_engine(runtime, f"{CHILD}:sampler_thread_without_database", str(tmp_path / "missing.fdb"))
    assert result["ready"] is False and result["taken"] == [] and not result["running"]
    assert result["seen"][0] is None and set(result["seen"][1:]) <= {-1, 0, 1} and len(result["seen"]) >= 2
    assert result["zero_made"] is False and result["zero_seconds"] < 10  # a failed reading is answered at once
    assert all("missing.fdb" in error for error in result["errors"])


# -------------------------------------------------------------------------------------------- gstat


def check_before_after(before: gstat.GstatSnapshot, after: gstat.GstatSnapshot, ods: str) -> None:
    for snapshot in (before, after):
        assert snapshot.usable and not snapshot.skipped, (snapshot.parse_error, snapshot.skipped)
        assert snapshot.header["ods_version"] == ods
        assert {"WAREHOUSE", "DISTRICT", "CUSTOMER", "ORDER_LINE", "BIG_DOC"} <= set(snapshot.tables)
        assert snapshot.tables["CUSTOMER"].records == 1000 and snapshot.tables["ORDER_LINE"].records == 3000
        assert snapshot.tables["BIG_DOC"].fragments == 20  # every row is larger than a page
        assert snapshot.indices["CUSTOMER_LAST"].table == "CUSTOMER"
        assert snapshot.indices["CUSTOMER_LAST"].nodes == 1000 and snapshot.indices["CUSTOMER_LAST"].depth >= 1
        assert "CUSTOMER_LAST" in snapshot.tables["CUSTOMER"].indices
    assert before.tables["CUSTOMER"].versions == 0
    assert after.tables["CUSTOMER"].versions >= 1200  # 600 rows updated 3 times under one snapshot
    change = gstat_judgement.delta(before, after)
    assert change["table:CUSTOMER"]["versions"] == after.tables["CUSTOMER"].versions
    assert change["table:CUSTOMER"]["records"] == 0
    assert change["header"]["next_transaction"] > 0
    found = {(flag.rule, flag.table): flag for flag in gstat_judgement.flags(before, after)}
    assert found[("versions", "CUSTOMER")].new and found[("versions", "DISTRICT")].new
    assert found[("versions", "CUSTOMER")].before == 0
    assert ("versions", "ORDER_LINE") not in found


@pytest.mark.parametrize("version", ENGINES)
def test_gstat_real_before_after(version: str, tmp_path: Path, workdir: Path) -> None:
    runtime = prepare_runtime(version, workdir)
    texts = run_in_engine(runtime, f"{CHILD}:gstat_before_after", str(tmp_path / "tpcc.fdb"))
    check_before_after(gstat.parse(texts["before"]), gstat.parse(texts["after"]), ODS[version])


@pytest.mark.server
def test_gstat_real_before_after_server(fb3: Fb3Server, tmp_path: Path) -> None:
    runtime, dsn, database = server_runtime(fb3, tmp_path, "tpcc")
    services_host = f"{fb3.host}/{fb3.port}"
    texts = run_in_engine(runtime, f"{CHILD}:gstat_before_after", dsn, services_host, database)
    check_before_after(gstat.parse(texts["before"]), gstat.parse(texts["after"]), "12.0")


@pytest.mark.parametrize("version", ["3", "4", "5"])
def test_gstat_captured_output(version: str) -> None:
    """Exact figures of the captured outputs: 3.0 keeps every version, 4.0+ collect the
    intermediate ones (1,200 versions of 600 rows updated three times, not 1,800)."""
    before = gstat.parse((DATA / "gstat" / f"fb{version}-before.txt").read_text())
    after = gstat.parse((DATA / "gstat" / f"fb{version}-after.txt").read_text())
    check_before_after(before, after, ODS[f"{version}.0"])
    versions, max_versions = (1800, 3) if version == "3" else (1200, 2)
    assert (after.tables["CUSTOMER"].versions, after.tables["CUSTOMER"].max_versions) == (versions, max_versions)
    assert after.tables["DISTRICT"].versions == 10 * max_versions
    assert after.header["next_transaction"] == 8 and before.header["next_transaction"] == 3


@pytest.mark.parametrize("name", ["fb4-replica.txt", "fb5-replica.txt", "fb3-blobs-spaced-path.txt",
                                  "fb4-blobs-spaced-path.txt", "fb5-blobs-spaced-path.txt"])
def test_gstat_lines_firebird_lib_cannot_read(name: str) -> None:
    """Real output firebird-lib 2.1.0 stops at; when this starts to pass through firebird-lib
    itself, the workaround in fbbench.observe.gstat can go."""
    from firebird.lib.gstat import StatDatabase

    text = (DATA / "gstat" / name).read_text()
    with pytest.raises(ValueError):
        StatDatabase().parse(text.splitlines())
    snapshot = gstat.parse(text)
    assert snapshot.usable and not snapshot.skipped
    if "replica" in name:
        assert snapshot.attributes == ["force write", "read-only replica"]
        assert snapshot.tables["CUSTOMER"].records == 1000
    else:
        assert snapshot.database is not None and " blobs.fdb" in snapshot.database
        assert snapshot.tables["DOC"].records == 9


def test_gstat_blob_level_lines_of_5_0_are_not_mixed_in() -> None:
    """5.0 prints one line per blob level; firebird-lib reads each over the table's totals."""
    from firebird.lib.gstat import StatDatabase

    lines = (DATA / "gstat" / "fb5-blobs-spaced-path.txt").read_text().splitlines()
    totals = next(line for line in lines if line.strip().startswith("Blobs:"))
    assert "total length: 5060500" in totals
    stats = StatDatabase()
    stats.parse([line for line in lines if not line.startswith('Database "')])
    assert stats.tables[0].blobs_total_length == 5000000  # level 2's figure, not the table's
    assert gstat.parse("\n".join(lines)).tables["DOC"].records == 9


def test_gstat_parse_failure_is_recorded_not_raised() -> None:
    text = (DATA / "gstat" / "fb5-after.txt").read_text()
    # gstat cut short inside a table: firebird-lib fails at the end of its input.
    cut = "\n".join(text.splitlines()[:40])
    snapshot = gstat.parse(cut)
    assert snapshot.parse_error and "firebird-lib" in snapshot.parse_error
    assert snapshot.raw == cut and not snapshot.tables and not snapshot.usable
    assert gstat_judgement.flags(None, snapshot) == []
    assert gstat_judgement.delta(snapshot, gstat.parse(text))["header"]["next_transaction"] is None
    garbage = gstat.parse("this is not gstat output\n")
    assert garbage.parse_error and garbage.raw == "this is not gstat output\n"
    # One line firebird-lib rejects (written here: a header item of some future engine) is left
    # out and listed; the rest still counts.
    future = text.replace("\tDatabase dialect", "\tSome future item\t1\n\tDatabase dialect")
    snapshot = gstat.parse(future)
    assert snapshot.usable and len(snapshot.skipped) == 1 and "Some future item" in snapshot.skipped[0]
    assert snapshot.tables["CUSTOMER"].versions == 1200


@pytest.mark.parametrize("version", ENGINES)
def test_gstat_flags_fire(version: str, tmp_path: Path, workdir: Path) -> None:
    runtime = prepare_runtime(version, workdir)
    texts = run_in_engine(runtime, f"{CHILD}:gstat_flagged", str(tmp_path / "flagged.fdb"))
    before, after = gstat.parse(texts["before"]), gstat.parse(texts["after"])
    assert before.usable and after.usable
    found = {(flag.rule, flag.index or flag.table): flag for flag in gstat_judgement.flags(before, after)}
    assert found[("versions", "HOT")].value > 100
    assert found[("max_versions", "HOT")].value > 100 and found[("max_versions", "HOT")].new
    assert found[("low_fill", "SPARSE")].value < 50 and found[("low_fill", "SPARSE")].new
    assert found[("low_fill", "SPARSE")].before is not None and found[("low_fill", "SPARSE")].before >= 50
    depth = found[("index_depth", "WIDE_K")]
    assert depth.value >= 4 and depth.table == "WIDE" and not depth.new  # it was that deep before the run
    assert all(flag.why.endswith(".") and flag.text for flag in found.values())
    assert ("low_fill", "HOT") not in found  # one page: mostly empty by nature, not flagged


def test_gstat_collect_failure_is_recorded(tmp_path: Path, workdir: Path) -> None:
    runtime = prepare_runtime("5.0", workdir)
    snapshot = run_in_engine(runtime, f"{CHILD}:gstat_of", "", str(tmp_path / "missing.fdb"))
    assert snapshot["error"] and "missing.fdb" in snapshot["error"]
    assert snapshot["raw"] == "" and snapshot["parse_error"] is None and snapshot["tables"] == {}


# ------------------------------------------------------------------------------------- firebird.log


@pytest.mark.parametrize("version", ENGINES)
def test_log_watch_embedded_reports_only_what_was_added(version: str, tmp_path: Path, workdir: Path) -> None:
    runtime = prepare_runtime(version, workdir)
    result = run_in_engine(runtime, f"{CHILD}:log_watch_embedded", str(tmp_path / "logged.fdb"))
    assert result["nothing"] == ""
    assert "Sweep is started" in result["log"]  # written before the watch started
    added = result["added"]
    assert "Sweep is" not in added and "Validation started" in added and "Validation finished" in added
    kinds = {finding.kind: finding for finding in firebird_log.findings(added)}
    assert set(kinds) == {"validation: Validation started",
                          "validation: Validation finished: <errors> errors, <warnings> warnings, <fixed> fixed"}
    assert all(finding.severity == "info" and finding.count == 1 for finding in kinds.values())


@pytest.mark.server
def test_log_watch_server_reports_only_what_was_added(fb3: Fb3Server, tmp_path: Path) -> None:
    runtime, dsn, database = server_runtime(fb3, tmp_path, "logged")
    result = run_in_engine(runtime, f"{CHILD}:log_watch_server", f"{fb3.host}/{fb3.port}", dsn, database, fb3.port)
    assert result["before"] == "" and not result["rotated"]
    added = result["added"]
    assert "setsockopt" in result["log"] and "setsockopt" not in added  # logged at server start
    assert "INET/inet_error: read errno = 104" in added and "Sweep is finished" in added
    found = {finding.kind: finding for finding in firebird_log.findings(added)}
    inet = found["net: INET/inet_error: <error> errno = <err_code>"]
    assert inet.severity == "error" and inet.count == 1 and "errno = 104" in inet.example
    assert not firebird_log.fatal(list(found.values()))


def test_log_watch_notices_a_rotated_log(tmp_path: Path) -> None:
    log = tmp_path / "firebird.log"
    log.write_text("\nvm\tMon Nov 23 21:05:15 2026\n\tfirst entry\n\n")
    watch = firebird_log.LogWatch(log_file=log)
    with log.open("a") as out:
        out.write("\nvm\tMon Nov 23 21:05:16 2026\n\tsecond entry\n\n")
    assert watch.added().strip().endswith("second entry") and "first entry" not in watch.added()
    assert not watch.rotated
    log.write_text("\nvm\tMon Nov 23 21:06:00 2026\n\tafter rotation, a longer entry than before\n")
    assert "after rotation" in watch.added() and watch.rotated
    log.write_text("")
    assert watch.added() == "" and watch.rotated


@pytest.mark.parametrize("name", ["fb3-embedded.log", "fb4-embedded.log", "fb5-embedded.log", "fb3-server.log"])
def test_findings_on_captured_logs(name: str) -> None:
    found = firebird_log.findings((DATA / "firebird_log" / name).read_text())
    kinds = {finding.kind: finding for finding in found}
    started, finished = kinds["sweep: Sweep is started by <user>"], kinds["sweep: Sweep is finished"]
    assert started.count == finished.count == 1 and started.severity == finished.severity == "info"
    assert started.first is not None and started.first == started.last
    # The kind has <name> for a value; what is shown has the value the log had.
    assert started.text == "sweep: Sweep is started by SYSDBA" and not started.values_vary
    assert not firebird_log.fatal(found)
    if "server" in name:
        inet = kinds["net: INET/inet_error: <error> errno = <err_code>"]
        assert inet.severity == "error" and inet.text == "net: INET/inet_error: read errno = 104"
        assert found[0].severity == "error"  # worst first
    else:
        assert kinds["validation: Validation started"].count == 1


def test_a_finding_shows_the_values_its_entries_had() -> None:
    """Two entries of one kind with other values (written from the engine's format string
    "Operating system call {syscall} failed. Error code {error_code}"): one finding, shown with the
    first entry's values and saying the others differ, never with the placeholders."""
    text = ("host (Client)\tMon Nov 23 21:05:15 2026\n\tOperating system call pthread_mutex_lock failed. "
            "Error code 22\n\nhost (Client)\tMon Nov 23 21:05:16 2026\n\tOperating system call fsync failed. "
            "Error code 5\n")
    [found] = firebird_log.findings(text)
    assert found.kind == "system: Operating system call <syscall> failed. Error code <error_code>" and found.count == 2
    assert found.text == "system: Operating system call pthread_mutex_lock failed. Error code 22" and found.values_vary
    document = {"log_findings": [{"kind": found.kind, "severity": found.severity, "count": found.count,
                                  "detail": {"text": found.text, "values_vary": found.values_vary}}]}
    line = engine_lines(document)[-1]
    assert "pthread_mutex_lock failed. Error code 22 (and other values) ×2" in line and "<syscall>" not in line


def test_findings_know_the_5_0_sweep_message_firebird_lib_does_not() -> None:
    """5.0 adds "1 workers, time … sec" to "Sweep is finished": firebird-lib files it as UNKNOWN."""
    from firebird.lib.log import LogParser
    from firebird.lib.logmsgs import Severity

    text = (DATA / "firebird_log" / "fb5-embedded.log").read_text()
    parsed = [message for message in LogParser().parse(text.splitlines()) if "Sweep is finished" in message.message]
    assert parsed and parsed[0].level is Severity.UNKNOWN
    kinds = {finding.kind: finding.severity for finding in firebird_log.findings(text)}
    assert kinds["sweep: Sweep is finished"] == "info"


def test_findings_restart_storm_and_fatal_entries() -> None:
    """Texts written from the engines' format strings and the research note's seed case (not
    captured: see tests/data/README.md)."""
    found = firebird_log.findings((DATA / "firebird_log" / "not-reproduced-here.log").read_text())
    restarts = [finding for finding in found if finding.kind == "read_consistency_restarts"]
    by_statement = {finding.statement: finding for finding in restarts}
    seed = by_statement["execute procedure CREATE_100_ORDERS(9)"]
    assert seed.count == 2 and seed.attempts == 10 and seed.severity == "warning"
    assert seed.first is not None and seed.last is not None and seed.first < seed.last
    assert "update stock set s_quantity = s_quantity - 1 where s_i_id = 17 and s_w_id = 1" in by_statement
    fatal = firebird_log.fatal(found)
    assert {finding.example.splitlines()[-1] for finding in fatal} == {
        "internal Firebird consistency check (decompression overran buffer (179), file: sqz.cpp line: 293)",
        "to terminate abnormally."}
    assert [finding.severity for finding in found[:2]] == ["fatal", "fatal"]  # worst first
    # firebird-lib files the bugcheck under a catch-all ("Database: {database}\n{err_msg}"): the
    # error text, not the catch-all, names the kind.
    assert "system: internal Firebird consistency check (decompression overran buffer (179), " \
           "file: sqz.cpp line: 293)" in {finding.kind for finding in fatal}


def test_findings_tolerate_what_firebird_lib_rejects() -> None:
    from firebird.base.types import Error
    from firebird.lib.log import LogParser

    real = (DATA / "firebird_log" / "fb3-server.log").read_text()
    middle = real[real.index("\tOIT 1"):]  # a diff can begin inside an entry
    header_only = "\nvm\tMon Nov 23 21:05:17 2026\n\n"
    for text, firebird_lib_error in (("", Error), (middle, Error), (header_only, IndexError)):
        with pytest.raises(firebird_lib_error):
            list(LogParser().parse(text.splitlines()))
    assert firebird_log.findings("") == []
    leftovers = {finding.kind: finding for finding in firebird_log.findings(middle)}
    assert leftovers["unknown: OIT 1, OAT 2, OST 2, Next 2"].first is None  # the entry's end, without its header
    assert "sweep: Sweep is finished" in leftovers
    assert [f.kind for f in firebird_log.findings(header_only)] == ["unknown: (empty entry)"]
