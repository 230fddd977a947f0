"""``fbbench track`` on real engines through the real CLI: a series over three builds whose plan
changes in 5.0, an application team's series over commits of its workload (an index dropped and
restored), points relative to a reference build, Ctrl-C and resuming, a new series when the
conditions differ, and bad suites refused before anything runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from fbbench.engines import EmbeddedEngine
from fbbench.engines import install as installer
from tests.builds import official_installation
from tests.chromium import first_screen, render_ok
from tests.conftest import REPO, assert_clean_error, run_cli
from tests.documented import actual_paths, documented_paths, undocumented_and_missing
from tests.test_hardening import _tmpfs

OUTER_JOIN = REPO / "tests" / "workloads" / "outer_join"
# Fixed work, one attachment, a fixed seed: the engine's work per unit repeats run to run.
BENCHMARK = ('[[benchmark]]\nname = "{name}"\nworkload = "{workload}"\ntransactions = 200\nconnections = 1\n'
             'seed = 1\nsweep = false\nvalidate = false\n')


def _suite(directory: Path, body: str, name: str = "track.toml") -> Path:
    path = directory / name
    path.write_text(body)
    return path


def _track(*args: str, store: Path, home: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return run_cli("track", *args, "--results", str(store), env={"FBBENCH_HOME": str(home)}, timeout=timeout)


def _show(suite: Path, store: Path, home: Path, tmp: Path) -> dict[str, Any]:
    out = tmp / f"show-{time.monotonic_ns()}.json"
    result = _track("show", str(suite), "--json", str(out), store=store, home=home)
    assert result.returncode == 0, result.stdout + result.stderr
    document: dict[str, Any] = json.loads(out.read_text())
    return document


RELEASES = {"3.0": "3.0.14", "4.0": "4.0.7", "5.0": "5.0.4"}


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A series over three builds, 3.0.14 → 4.0.7 → 5.0.4, each an installation directory
    registered with ``fbbench engines add`` (embedded, from its own files), of a query whose plan
    5.0 changes (OuterJoinConversion)."""
    tmp = tmp_path_factory.mktemp("track-builds")
    suite = _suite(tmp, 'name = "builds"\nrepeats = 3\n' + BENCHMARK.format(name="outer_join", workload=OUTER_JOIN))
    store, home = tmp / "r.sqlite", tmp / "home"
    for major, version in RELEASES.items():
        runtime = installer.install(EmbeddedEngine(version), quiet=True)
        installation = official_installation(runtime, tmp / f"opt-{version}" / "firebird", version)
        added = run_cli("engines", "add", f"fb{major}", str(installation), env={"FBBENCH_HOME": str(home)})
        assert added.returncode == 0, added.stdout + added.stderr
    outputs = {}
    for version in RELEASES:
        result = _track("run", str(suite), "--engine", f"fb{version}", "--label", version, store=store, home=home)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr
        outputs[version] = result.stdout
    check = _track("check", str(suite), "--json", str(tmp / "check.json"), "--markdown", str(tmp / "check.md"),
                   store=store, home=home)
    return {"tmp": tmp, "suite": suite, "store": store, "home": home, "outputs": outputs, "check": check,
            "document": _show(suite, store, home, tmp)}


def test_a_plan_change_between_builds_is_found_there_with_its_cause(builds: dict[str, Any]) -> None:
    [series] = builds["document"]["series"]
    assert [p["label"] for p in series["points"]] == ["3.0", "4.0", "5.0"]
    assert [p["engine_build"].split()[0] for p in series["points"]] == \
        ["LI-V3.0.14.33856", "LI-V4.0.7.3271", "LI-V5.0.4.1812"]
    assert [p["engine"] for p in series["points"]] == ["fb3.0", "fb4.0", "fb5.0"]
    assert len({p["engine_binaries"] for p in series["points"]}) == 3 and all(p["engine_binaries"]
                                                                           for p in series["points"])
    fetches = [c for c in series["changes"] if c["figure"] == "page fetches per unit"]
    # 3.0 and 4.0 read every customer through the outer join; 5.0 starts from the region's index.
    assert [(c["before"]["label"], c["after"]["label"]) for c in fetches] == [("4.0", "5.0")]
    assert fetches[0]["detail"]["ratio"] < 0.2 and fetches[0]["detail"]["p_value"] <= 0.001
    [event] = [e for e in series["events"] if e["after"]["label"] == "5.0"]
    assert event["before"]["label"] == "4.0"
    assert "plan changed: region_customers statement 1" in event["cause"]
    [plan] = [p for p in event["plans"] if p["change"] == "plan"]
    assert 'Table "CUSTOMER" as "C" Full Scan' in plan["before"]
    assert 'Index "REGION_CODE"' in plan["after"]
    assert not any(p for e in series["events"] if e["after"]["label"] == "4.0" for p in e["plans"])
    # The console says it as the change is found, and show names the cause.
    assert "page fetches per unit" in builds["outputs"]["5.0"] and "change" in builds["outputs"]["5.0"]


def test_the_document_is_what_docs_tracking_md_lists(builds: dict[str, Any]) -> None:
    documented = documented_paths(REPO / "docs" / "tracking.md")
    undocumented, missing = undocumented_and_missing(actual_paths(builds["document"], documented), documented)
    assert not undocumented, f"keys not in docs/tracking.md: {undocumented}"
    assert not missing, f"keys docs/tracking.md lists that the document lacks: {missing}"


def test_check_passes_an_improvement_and_says_the_plan_changed(builds: dict[str, Any]) -> None:
    check = builds["check"]
    assert check.returncode == 0, check.stdout + check.stderr
    verdict = json.loads((builds["tmp"] / "check.json").read_text())
    assert verdict["passed"] is True and verdict["failures"] == []
    assert any(note["kind"] == "plan" and note["point"] == "5.0" for note in verdict["notes"])
    summary = (builds["tmp"] / "check.md").read_text()
    assert summary.splitlines()[1] == "## fbbench track check: builds — passed"
    assert "| 5.0 | fb5.0 |" in summary and "plan changed" in summary


def test_outputs_replace_only_what_fbbench_wrote_or_an_empty_file(builds: dict[str, Any]) -> None:
    tmp, suite = builds["tmp"], str(builds["suite"])
    foreign = tmp / "notes.md"
    foreign.write_text("my notes\n")
    refused = _track("check", suite, "--markdown", str(foreign), store=builds["store"], home=builds["home"])
    assert_clean_error(refused, "not a file fbbench wrote")
    assert foreign.read_text() == "my notes\n"
    summary = tmp / "step-summary.md"
    summary.touch()  # as a CI runner makes $GITHUB_STEP_SUMMARY
    for _ in range(2):  # empty the first time, fbbench's own the second
        written = _track("check", suite, "--markdown", str(summary), "--json", str(tmp / "check.json"),
                         store=builds["store"], home=builds["home"])
        assert written.returncode == 0, written.stderr
        assert "## fbbench track check: builds" in summary.read_text()


def _page_data(page: Path) -> dict[str, Any]:
    text = page.read_text()
    start = text.index('<script type="application/json" id="page-data">') + len('<script type="application/json" '
                                                                               'id="page-data">')
    data: dict[str, Any] = json.loads(text[start:text.index("</script>", start)])
    return data


def test_publish_shows_the_change_first_and_again_adds_nothing(builds: dict[str, Any], tmp_path: Path) -> None:
    site = builds["tmp"] / "site"
    published = _track("publish", str(builds["suite"]), "-o", str(site), store=builds["store"], home=builds["home"])
    assert published.returncode == 0, published.stdout + published.stderr
    screen = first_screen(site / "index.html", tmp_path / "profile")
    assert screen.shows("latest-changes"), screen.layout
    index = render_ok(site / "index.html", tmp_path / "profile").body
    first = index.by_id("latest-changes").all("li")[0].text
    assert "4.0 → 5.0" in first and "page fetches per unit −99" in first and "plan changed" in first
    [series] = list((site / "series").glob("*.html"))
    drawn = render_ok(series, tmp_path / "profile").body
    assert "4.0 → 5.0" in drawn.by_id("change-list").text
    data = _page_data(series)
    runs = [run for point in data["points"] for run in point["runs"]]
    assert len(runs) == 9 and {run["side"] for run in runs} == {"B"}  # 3 points of 3 runs
    for run in runs:
        assert (series.parent / run["page"]).resolve().is_file(), run
    opened = render_ok((series.parent / runs[-1]["page"]).resolve(), tmp_path / "profile").body
    assert runs[-1]["run_id"] in opened.text
    [change] = [p for p in (site / "changes").glob("*.html") if "Full Scan" in p.read_text()]
    page = render_ok(change, tmp_path / "profile").body
    assert "Full Scan" in page.by_id("plans").text and "CUSTOMER" in page.by_id("tables-table").text
    root = ElementTree.parse(site / "feed.xml").getroot()
    atom = "{http://www.w3.org/2005/Atom}"
    ids = [entry.find(f"{atom}id").text for entry in root.findall(f"{atom}entry")]  # type: ignore[union-attr]
    assert len(ids) == len(set(ids)) == len(data["events"]) >= 1
    regressions = json.loads((site / "regressions.json").read_text())
    assert all(r["figure"] != "page fetches per unit" for r in regressions["regressions"])  # an improvement
    feed = (site / "feed.xml").read_text()
    again = _track("publish", str(builds["suite"]), "-o", str(site), store=builds["store"], home=builds["home"])
    assert again.returncode == 0, again.stderr
    assert "1 file(s) written" in again.stdout and "0 run report(s) rendered" in again.stdout, again.stdout
    assert (site / "feed.xml").read_text() == feed  # the same changes: the same entries, the same feed
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine\n")
    refused = _track("publish", str(builds["suite"]), "-o", str(foreign), store=builds["store"], home=builds["home"])
    assert_clean_error(refused, "holds files fbbench did not write", "notes.txt")
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    # A system directory is refused by its top level, without a walk (a traceback in /proc, seconds in /usr).
    assert_clean_error(_track("publish", str(builds["suite"]), "-o", "/proc", store=builds["store"],
                              home=builds["home"], timeout=30), "holds files fbbench did not write")
    (site / "stray.html").write_text("someone's page\n")
    assert_clean_error(_track("publish", str(builds["suite"]), "-o", str(site), store=builds["store"],
                              home=builds["home"]), "stray.html")


def test_a_publish_cut_short_leaves_a_site_the_next_publish_completes(builds: dict[str, Any],
                                                                      tmp_path: Path) -> None:
    """A publish cut short — a full file system, kill -9 part way — says so in one line (the
    full file system) or not at all (kill -9), and the next publish takes the files it wrote as the site's own
    (each is journalled before it is written), completes the site and leaves nothing of the cut.
    Before, the next publish refused its own directory as holding files fbbench did not write."""
    whole = tmp_path / "whole"
    assert _track("publish", str(builds["suite"]), "-o", str(whole), store=builds["store"],
                  home=builds["home"]).returncode == 0

    def files(directory: Path) -> list[str]:
        return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if not p.is_dir())

    def completes(site: Path) -> None:
        (site / "notes.txt").write_text("mine\n")  # a file of the user's is still not the site's
        assert_clean_error(_track("publish", str(builds["suite"]), "-o", str(site), store=builds["store"],
                                  home=builds["home"]), "notes.txt")
        (site / "notes.txt").unlink()
        again = _track("publish", str(builds["suite"]), "-o", str(site), store=builds["store"], home=builds["home"])
        assert again.returncode == 0, again.stdout + again.stderr
        assert files(site) == files(whole)  # the journal gone, no part of a write left

    # A full file system part way: a tmpfs of half the site's size, mounted as root (skipped where
    # mounting is not allowed); run reports are copied there, not linked (another file system).
    full = tmp_path / "full"
    size = sum((whole / name).stat().st_size for name in files(whole))
    with _tmpfs(full, size // 2):
        cut = _track("publish", str(builds["suite"]), "-o", str(full), store=builds["store"], home=builds["home"])
        assert_clean_error(cut, f"cannot publish into {full}", "free space")
        assert len(cut.stderr.strip().splitlines()) == 2, cut.stderr  # the error and its hint
        assert (full / "fbbench-site.pending").is_file() and any((full / "runs").iterdir()), files(full)
        subprocess.run(["mount", "-o", f"remount,size={2 * size}", str(full)], check=True)
        completes(full)
    # kill -9 once a few files are journalled (a fresh site journals every file it writes).
    killed = tmp_path / "killed"
    journal = killed / "fbbench-site.pending"
    command = [sys.executable, "-m", "fbbench", "track", "publish", str(builds["suite"]), "--results",
               str(builds["store"]), "-o"]
    env = {**os.environ, "COLUMNS": "200", "FBBENCH_HOME": str(builds["home"])}
    for _attempt in range(20):
        shutil.rmtree(killed, ignore_errors=True)
        publishing = subprocess.Popen([*command, str(killed)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      env=env)
        while publishing.poll() is None:
            if journal.is_file() and journal.read_text().count("\n") >= 3:
                publishing.kill()
                break
            time.sleep(0.0005)
        if publishing.wait(60) == -signal.SIGKILL:
            break
    assert publishing.returncode == -signal.SIGKILL and journal.is_file(), "never caught part way in 20 publishes"
    completes(killed)


def test_a_bundle_of_track_points_gives_the_same_series_and_changes(builds: dict[str, Any], tmp_path: Path) -> None:
    bundle = tmp_path / "builds.fbbundle"
    home = {"FBBENCH_HOME": str(builds["home"])}
    exported = run_cli("results", "export", "track:builds", "-o", str(bundle), "--results", str(builds["store"]),
                       env=home)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    # Nine runs: three points of three (a later test of this module may add a series to the suite).
    assert re.search(r"wrote (9|1[0-9]) run\(s\) and [12] track series", exported.stdout), exported.stdout
    other = tmp_path / "other.sqlite"
    for _ in range(2):  # the second time: everything is there already, nothing changes
        imported = run_cli("results", "import", str(bundle), "--results", str(other), env=home)
        assert imported.returncode == 0, imported.stdout + imported.stderr
    theirs = _show(builds["suite"], other, builds["home"], tmp_path)
    mine = builds["document"]

    def shape(document: dict[str, Any]) -> list[Any]:
        return [(s["series_id"], [p["point_id"] for p in s["points"]],
                 sorted((c["change_id"], c["state"], c["first_seen"]) for c in s["changes"]),
                 [e["cause"] for e in s["events"]]) for s in document["series"] if s["benchmark"] == "outer_join"
                and s["series_id"] == mine["series"][0]["series_id"]]

    assert shape(theirs) == shape(mine) and shape(mine)
    assert_clean_error(run_cli("results", "export", "track:nope", "-o", str(tmp_path / "x.fbbundle"), "--results",
                               str(builds["store"]), env=home), "no track suite 'nope'", "builds")


def test_running_a_point_again_makes_nothing_and_show_finds_the_same_changes(builds: dict[str, Any]) -> None:
    result = _track("run", str(builds["suite"]), "--engine", "fb5.0", "--label", "5.0", store=builds["store"],
                    home=builds["home"])
    assert result.returncode == 0, result.stderr
    assert "skipped — it has a point for 5.0 already" in result.stdout
    again = _show(builds["suite"], builds["store"], builds["home"], builds["tmp"])
    before = [c["change_id"] for c in builds["document"]["series"][0]["changes"]]
    assert [c["change_id"] for c in again["series"][0]["changes"]] == before


def test_a_point_under_other_conditions_starts_a_new_series_and_says_why(builds: dict[str, Any]) -> None:
    changed = _suite(builds["tmp"], builds["suite"].read_text().replace("connections = 1", "connections = 2"))
    result = _track("run", str(changed), "--engine", "fb5.0", "--label", "5.0-two", store=builds["store"],
                    home=builds["home"])
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert "a new series" in result.stdout and "load.connections" in result.stdout
    document = _show(changed, builds["store"], builds["home"], builds["tmp"])
    assert len(document["series"]) == 2
    assert "load.connections" in document["series"][1]["reason"]
    assert [p["label"] for p in document["series"][1]["points"]] == ["5.0-two"]


def test_the_same_build_under_two_names_is_one_series_without_a_change(builds: dict[str, Any]) -> None:
    """5.0.4's files registered a second time, as a tarball under another name: the same build
    (version, build number, binaries), so its points join one series, and nothing changes."""
    from tests.builds import official_tarball

    home, tmp = builds["home"], builds["tmp"]
    tarball = official_tarball(tmp / "opt-5.0.4" / "firebird", tmp / "Firebird-5.0.4.1812-0-linux-x64.tar.gz",
                               "Firebird-5.0.4.1812-0-linux-x64")
    added = run_cli("engines", "add", "nightly-5", str(tarball), env={"FBBENCH_HOME": str(home)})
    assert added.returncode == 0, added.stdout + added.stderr
    suite = _suite(tmp, builds["suite"].read_text().replace('name = "builds"', 'name = "same"'), "same.toml")
    for engine in ("fb5.0", "nightly-5"):
        result = _track("run", str(suite), "--engine", engine, store=builds["store"], home=home)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    document = _show(suite, builds["store"], home, tmp)
    [series] = document["series"]
    assert [p["engine"] for p in series["points"]] == ["fb5.0", "nightly-5"]
    assert series["points"][0]["engine_binaries"] == series["points"][1]["engine_binaries"]
    counters = {name for name, figure in series["points"][0]["figures"].items() if figure["kind"] == "counter"}
    assert not [c for c in series["changes"] if c["figure"] in counters], series["changes"]


def _bisect(builds: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return _track("bisect", str(builds["suite"]), "--pairs", "2", *args, store=builds["store"], home=builds["home"])


def _run_count(store: Path) -> int:
    with closing(sqlite3.connect(store)) as db:
        count: int = db.execute("select count(*) from runs").fetchone()[0]
    return count


def test_bisect_finds_the_first_bad_build_among_aliases(builds: dict[str, Any]) -> None:
    """Five names, three builds: 4.0.7 and 5.0.4 registered a second time under other names."""
    for alias, version in (("fb4b", "4.0.7"), ("fb5b", "5.0.4")):
        added = run_cli("engines", "add", alias, str(builds["tmp"] / f"opt-{version}" / "firebird"),
                        env={"FBBENCH_HOME": str(builds["home"])})
        assert added.returncode == 0, added.stdout + added.stderr
    found = _bisect(builds, "--good", "fb3.0", "--bad", "fb5b", "fb4.0", "fb4b", "fb5.0",
                    "--figure", "page fetches per unit")
    assert found.returncode == 0, found.stdout[-3000:] + found.stderr
    assert "first bad build: fb5.0 (after fb4b; 2 step(s))" in found.stdout, found.stdout
    assert "step 1: fb4b is good" in found.stdout and "step 2: fb5.0 is bad" in found.stdout
    assert "used again" not in found.stdout
    # Page reads per unit rise at 4.0 and again at 5.0: the middle build differs from both ends.
    # The same builds under their first names: every comparison is a pair series the first
    # bisection made (fb3.0 against fb5b is fb3.0 against fb5.0), used again; read on another figure.
    runs = _run_count(builds["store"])
    undecided = _bisect(builds, "--good", "fb3.0", "--bad", "fb5.0", "fb4.0", "--figure", "page reads per unit")
    assert undecided.returncode == 1, undecided.stdout[-2000:] + undecided.stderr
    assert "cannot decide at fb4.0: it differs from both ends" in undecided.stderr
    assert "Traceback" not in undecided.stderr
    assert undecided.stdout.count("used again") == 3 and _run_count(builds["store"]) == runs, undecided.stdout
    # Two names of one build as the ends: refused before anything is measured.
    same = _bisect(builds, "--good", "fb5.0", "--bad", "fb5b", "--figure", "page fetches per unit")
    assert_clean_error(same, "fb5.0 and fb5b are one build under two names", "nothing to bisect")
    assert _run_count(builds["store"]) == runs
    # Step 2 of the first bisection measured fb5.0 against fb4b: used again, or with --remeasure
    # measured anew (2 pairs, 4 runs).
    kept = _bisect(builds, "--good", "fb4b", "--bad", "fb5.0", "--figure", "page fetches per unit")
    assert kept.returncode == 0 and kept.stdout.count("used again") == 1, kept.stdout[-2000:] + kept.stderr
    assert _run_count(builds["store"]) == runs
    again = _bisect(builds, "--good", "fb4b", "--bad", "fb5.0", "--figure", "page fetches per unit", "--remeasure")
    assert again.returncode == 0 and "first bad build: fb5.0" in again.stdout, again.stdout[-2000:] + again.stderr
    assert "used again" not in again.stdout and _run_count(builds["store"]) == runs + 4, again.stdout
    backwards = _bisect(builds, "--good", "fb5.0", "--bad", "fb3.0", "fb4.0")
    assert_clean_error(backwards, "not in the order given: fb4.0 (4.0.7.3271) comes after fb5.0 (5.0.4.1812)")
    assert_clean_error(_bisect(builds, "--good", "fb3.0", "--bad", "fb5.0", "--figure", "NOPM"),
                       "figure 'NOPM' is not one workload outer_join produces")


def _commit(repo: Path, message: str) -> str:
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m",
                    message], check=True, capture_output=True)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_an_application_series_gates_the_commit_that_dropped_an_index(tmp_path: Path) -> None:
    """A workload directory committed 6 times, an index dropped in the 4th and restored in the 7th:
    check fails at the 4th, naming the plan change and the fetches; the 5th and 6th do not alert
    again; the restored index is found as a change back."""
    repo = tmp_path / "app"
    shutil.copytree(OUTER_JOIN, repo / "workload")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    schema = repo / "workload" / "schema.sql"
    index = "create index customer_region on customer (region_id);\n"
    suite = _suite(tmp_path, 'name = "app"\naxis = "workload"\nrepeats = 2\nthreshold = "10%"\nmin_magnitude = "50%"\n'
                   + BENCHMARK.format(name="customers", workload=repo / "workload"))
    store, home = tmp_path / "r.sqlite", tmp_path / "home"
    edits = [lambda: None,
             lambda: (repo / "workload" / "README.md").write_text("customers by region\n"),
             lambda: (repo / "workload" / "README.md").write_text("customers by region, faster\n"),
             lambda: schema.write_text(schema.read_text().replace(index, "")),
             lambda: (repo / "workload" / "README.md").write_text("customers by region (no index)\n"),
             lambda: (repo / "workload" / "README.md").write_text("customers by region, again\n"),
             lambda: schema.write_text(schema.read_text().replace("create index region_code", index
                                                                  + "create index region_code"))]
    exits = []
    for number, edit in enumerate(edits, 1):
        edit()
        commit = _commit(repo, f"commit {number}")
        made = _track("run", str(suite), "--engine", "5.0", "--label", commit, store=store, home=home)
        assert made.returncode == 0, made.stdout[-3000:] + made.stderr
        check = _track("check", str(suite), "--json", str(tmp_path / f"check{number}.json"), store=store, home=home)
        exits.append(check.returncode)
        if number == 4:
            assert "check failed" in check.stdout, check.stdout
            verdict = json.loads((tmp_path / "check4.json").read_text())
            assert {f["figure"] for f in verdict["failures"]} >= {"page fetches per unit"}
            assert all("plan changed: region_customers statement 1" in f["cause"] for f in verdict["failures"])
    assert exits == [0, 0, 0, 1, 0, 0, 0], exits
    document = _show(suite, store, home, tmp_path)
    [series] = document["series"]
    assert len(series["points"]) == 7 and series["axis"] == "workload"
    fetches = [c for c in series["changes"] if c["figure"] == "page fetches per unit" and c["state"] == "current"]
    labels = [p["label"] for p in series["points"]]
    assert [(c["before"]["label"], c["after"]["label"]) for c in fetches] == [(labels[2], labels[3]),
                                                                           (labels[5], labels[6])]
    assert fetches[0]["detail"]["ratio"] > 1.5 and fetches[1]["detail"]["ratio"] < 0.7


def test_points_relative_to_a_reference_are_pair_ratios(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 'name = "rel"\npairs = 2\n' + BENCHMARK.format(name="oj", workload=OUTER_JOIN))
    store, home = tmp_path / "r.sqlite", tmp_path / "home"
    result = _track("run", str(suite), "--engine", "5.0", "--reference", "4.0", "--label", "snapshot", store=store,
                    home=home)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    document = _show(suite, store, home, tmp_path)
    [series] = document["series"]
    assert series["kind"] == "relative" and series["reference"] == "4.0"
    [point] = series["points"]
    fetches = point["figures"]["page fetches per unit"]
    assert len(fetches["samples"]) == 2 and fetches["value"] < 0.2  # 5.0 / 4.0, each pair's own ratio
    assert all(s == pytest.approx(b / r) for s, b, r in zip(fetches["samples"], fetches["build"],
                                                              fetches["reference"], strict=True))
    with closing(sqlite3.connect(store)) as db:
        timeshared = db.execute("select count(*) from runs where settings_json like '%\"timeshare\": {%'").fetchone()
    assert timeshared[0] == 4
    # A regression of the build against its reference fails the check: here the reference is 5.0.
    backwards = _track("run", str(suite), "--engine", "4.0", "--reference", "5.0", "--label", "older", store=store,
                       home=home)
    assert backwards.returncode == 0, backwards.stderr
    assert "a new series" in backwards.stdout  # another reference build: never the same series
    check = _track("check", str(suite), "--json", str(tmp_path / "check.json"), store=store, home=home)
    assert check.returncode == 1, check.stdout
    verdict = json.loads((tmp_path / "check.json").read_text())
    assert any(f["kind"] == "against the reference" and f["figure"] == "page fetches per unit"
               for f in verdict["failures"])


def _wait_for(store: Path, sql: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with closing(sqlite3.connect(store)) as db:
                if db.execute(sql).fetchone()[0]:
                    return
        except sqlite3.Error:
            pass
        time.sleep(0.1)
    raise AssertionError(f"not seen within {seconds} s: {sql}")


def test_ctrl_c_keeps_the_points_made_and_running_again_completes_the_rest(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 'name = "stop"\nrepeats = 1\n'
                   + BENCHMARK.format(name="first", workload=OUTER_JOIN)
                   + BENCHMARK.format(name="second", workload=OUTER_JOIN).replace("transactions = 200\n",
                                                                                 'duration = "3s"\nwarmup = "0s"\n'))
    store, home = tmp_path / "r.sqlite", tmp_path / "home"
    args = [sys.executable, "-m", "fbbench", "track", "run", str(suite), "--engine", "5.0", "--results", str(store)]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                               start_new_session=True, env={**os.environ, "FBBENCH_HOME": str(home)})
    try:
        _wait_for(store, "select count(*) from runs where status = 'running' and settings_json like "
                         "'%track:stop:second%'")
        os.killpg(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, stdout[-2000:] + stderr[-2000:]
    assert "interrupted: 1 point(s) made now are kept" in stderr and "Traceback" not in stderr
    with closing(sqlite3.connect(store)) as db:
        assert db.execute("select benchmark from track_points").fetchall() == [("first",)]
    again = _track("run", str(suite), "--engine", "5.0", store=store, home=home)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr
    assert "first: skipped" in again.stdout
    with closing(sqlite3.connect(store)) as db:
        assert sorted(db.execute("select benchmark from track_points").fetchall()) == [("first",), ("second",)]


BAD_SUITES = [
    ('[[benchmark]]\nname = "x"\nworkload = "no-such-workload"\n', ["unknown workload 'no-such-workload'"]),
    ('[[benchmark]]\nname = "x"\nworkload = "orders"\nfigures = ["NOPM"]\n',
     ["track.toml:4", "figure 'NOPM' is not one workload orders produces", "generate_orders p95"]),
    ('[[benchmark]]\nname = "x"\nworkload = "orders"\nengine = "4.0"\n', ["track.toml:4", "cannot set engine"]),
    ('treshold = "5%"\n[[benchmark]]\nname = "x"\nworkload = "orders"\n', ["unknown suite setting", "threshold"]),
    ('threshold = 5\n[[benchmark]]\nname = "x"\nworkload = "orders"\n', ["track.toml:1", 'percentage such as "5%"']),
    ('[[benchmark]]\nname = "x"\nworkload = "orders"\nconnections = "two"\n', ["track.toml:4", "whole number"]),
    ('name = "s"\n', ["at least one [[benchmark]]"]),
    ('[[benchmark]]\nname = "x"\nworkload = "orders"\n[[benchmark]]\nname = "x"\nworkload = "tpcc"\n',
     ["two benchmarks are named 'x'"]),
]


@pytest.mark.parametrize(("body", "fragments"), BAD_SUITES)
def test_a_bad_suite_is_one_line_before_anything_runs(tmp_path: Path, body: str, fragments: list[str]) -> None:
    suite = _suite(tmp_path, body)
    store = tmp_path / "r.sqlite"
    result = _track("run", str(suite), "--engine", "5.0", store=store, home=tmp_path / "home")
    assert_clean_error(result, *fragments)
    assert not store.exists()
    # The gate reads the same file: a typo there must not let it pass (exit 2, not 0).
    checked = _track("check", str(suite), store=store, home=tmp_path / "home")
    assert checked.returncode == 2 and not store.exists(), checked.stdout + checked.stderr


def test_an_unknown_engine_or_a_store_from_a_newer_fbbench_is_one_line(tmp_path: Path) -> None:
    suite = _suite(tmp_path, '[[benchmark]]\nname = "x"\nworkload = "orders"\n')
    store, home = tmp_path / "r.sqlite", tmp_path / "home"
    assert_clean_error(_track("run", str(suite), "--engine", "fb-nightly", store=store, home=home),
                       "--engine fb-nightly", "unknown engine")
    assert_clean_error(_track("run", str(suite), "--engine", "5.0", "--reference", "nightly", store=store,
                              home=home), "--reference nightly")
    assert not store.exists()
    with closing(sqlite3.connect(store)) as db:
        db.execute("pragma user_version = 99")
    assert_clean_error(_track("show", str(suite), store=store, home=home), "written by a newer fbbench")
    assert_clean_error(_track("check", str(suite), store=tmp_path / "none.sqlite", home=home), "no points yet")
    empty = tmp_path / "empty.sqlite"
    with closing(sqlite3.connect(empty)):
        pass
    no_points = _track("check", str(suite), store=empty, home=home)
    assert no_points.returncode == 2 and "no points yet" in no_points.stderr, no_points.stdout + no_points.stderr


def test_a_bisection_uses_again_only_pairs_of_the_same_builds_files_and_settings(tmp_path: Path) -> None:
    """The tag a bisection's pair series carries (what a later bisection looks it up by): the same
    for the same builds under any name, another for other builds, settings or workload files."""
    from fbbench.track.bisect import pairs_key
    from fbbench.track.suite import read_suite

    for version in ("4.0.7", "5.0.4"):
        installer.install(EmbeddedEngine(version), quiet=True)
    workload = tmp_path / "outer_join"
    shutil.copytree(OUTER_JOIN, workload)

    def key(suite_text: str, build: str = "5.0", against: str = "4.0") -> str | None:
        suite = read_suite(_suite(tmp_path, suite_text, f"s{time.monotonic_ns()}.toml"))
        benchmark = suite.benchmarks[0]
        return pairs_key(suite, benchmark, benchmark.settings(build), build, against, 0.1)

    text = 'name = "k"\n' + BENCHMARK.format(name="outer_join", workload=workload)
    first = key(text)
    assert first is not None and first.startswith("track-bisect-pairs:") and key(text) == first
    assert key(text, "5.0.4", "4.0.7") == first  # the same files under other names
    assert key(text, "4.0", "5.0") != first  # the other way round
    assert key(text.replace("transactions = 200", "transactions = 100")) != first
    assert key(text.replace('name = "k"', 'name = "other"')) != first
    (workload / "schema.sql").write_text((workload / "schema.sql").read_text() + "\n-- changed\n")
    assert key(text) != first


def test_outputs_onto_inputs_another_programs_store_and_absurd_counts_are_one_line(tmp_path: Path) -> None:
    """Found by a probe as a new user: each of these changed a file of the user's, crashed, or ran
    the machine out of memory. Now one line each, before anything is read or written."""
    home = tmp_path / "home"
    suite = _suite(tmp_path, 'name = "s"\n' + BENCHMARK.format(name="outer_join", workload=OUTER_JOIN))
    other = tmp_path / "other.sqlite"
    with closing(sqlite3.connect(other)) as db:
        db.execute("create table notes (x)")
        db.commit()
    before = other.read_bytes()
    for command in ("show", "check"):
        assert_clean_error(_track(command, str(suite), store=other, home=home),
                           "is not an fbbench results store", "tables notes")
    assert other.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == \
        ["other.sqlite", "track.toml"]
    store = tmp_path / "r.sqlite"
    suite_text = suite.read_text()
    assert_clean_error(_track("check", str(suite), "--markdown", str(suite), "--overwrite", store=store, home=home),
                       "--markdown", "is the suite")
    assert suite.read_text() == suite_text
    assert_clean_error(_track("show", str(suite), "--json", str(store), "--overwrite", store=store, home=home),
                       "is the results store")
    same = tmp_path / "same.out"
    assert_clean_error(_track("check", str(suite), "--json", str(same), "--markdown", str(same), store=store,
                              home=home), "--json and --markdown name the same file")
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nothing")
    assert_clean_error(_track("show", str(suite), "--json", str(dangling), store=store, home=home),
                       "is a symbolic link to nothing")
    assert dangling.is_symlink() and not dangling.exists()
    assert_clean_error(_track("show", str(suite), "--json", "/proc/fbbench-x", store=store, home=home),
                       "cannot be created in /proc")
    huge = _suite(tmp_path, suite_text.replace('name = "s"', 'name = "s"\nrepeats = 1000000000'), "huge.toml")
    assert_clean_error(_track("run", str(huge), "--engine", "5.0", store=store, home=home, timeout=60),
                       "repeats must be at most 10,000, got 1,000,000,000")
    assert_clean_error(run_cli("run", "connect", "--repeat", "100000000", env={"FBBENCH_HOME": str(home)}),
                       "--repeat must be at most 10,000")


def test_what_a_probe_found_in_reference_label_and_bisect_is_one_line_in_track_s_words(tmp_path: Path) -> None:
    home = tmp_path / "home"
    suite = _suite(tmp_path, 'name = "s"\n' + BENCHMARK.format(name="outer_join", workload=OUTER_JOIN))
    store = tmp_path / "r.sqlite"
    server = "localhost/3050:/tmp/nowhere.fdb"
    assert_clean_error(_track("run", str(suite), "--engine", "5.0", "--reference", server, store=store, home=home),
                       f"--reference {server} is server localhost/3050: a relative point (--reference) time-shares")
    assert_clean_error(_track("run", str(suite), "--engine", "5.0", "--label", "", store=store, home=home),
                       "--label must be a single line of 1 to 100 characters, got ''")
    flag = _suite(tmp_path, 'name = "s"\nrepeats = true\n', "flag.toml")
    assert_clean_error(_track("show", str(flag), store=store, home=home), "repeats must be a whole number, got true")
    assert_clean_error(_track("bisect", str(suite), "--good", "5.0", "--bad", "5.0", store=store, home=home),
                       "a bisection names each build once: 5.0 given more than once")
    runtime = installer.install(EmbeddedEngine("5.0.4"), quiet=True)
    installation = official_installation(runtime, tmp_path / "opt" / "firebird", "5.0.4")
    added = run_cli("engines", "add", "gone", str(installation), env={"FBBENCH_HOME": str(home)})
    assert added.returncode == 0, added.stdout + added.stderr
    shutil.rmtree(tmp_path / "opt")
    assert_clean_error(_track("bisect", str(suite), "--good", "4.0", "--bad", "gone", store=store, home=home),
                       "the files of Firebird 5.0.4 embedded (gone) are gone from")
    assert not store.exists()
