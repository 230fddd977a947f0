"""Output flags never replace a file fbbench did not write (issue 31, item 1): ``--json``,
``--report``, ``results export -o`` onto someone else's file are refused before anything runs and
leave it byte for byte; onto a file fbbench wrote, or with ``--overwrite``, they replace it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO, assert_clean_error, run_cli

BANK = str(REPO / "tests" / "workloads" / "bank")
TINY = ["-c", "1", "--transactions", "20", "--scale", "accounts=200", "--no-sweep", "--no-validate"]
PASSWD = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with a results store of one tiny run and the JSON, HTML and bundle fbbench wrote of it."""
    tmp = tmp_path_factory.mktemp("outputs")
    cli = run_cli("run", BANK, *TINY, "--json", str(tmp / "made.json"), "--report", str(tmp / "made.html"),
                  "--results", str(tmp / "r.sqlite"), "--workdir", str(tmp / "work"))
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert run_cli("results", "export", "last", "-o", str(tmp / "made.fbbundle"),
                   "--results", str(tmp / "r.sqlite")).returncode == 0
    return tmp


def _foreign(path: Path) -> Path:
    path.write_text(PASSWD)
    return path


def _sweep_spec(tmp: Path) -> Path:
    spec = tmp / "sweep.toml"
    spec.write_text(f'workload = "{BANK}"\ntransactions = 5\nrepeats = 1\n[matrix]\nconnections = [1, 2]\n')
    return spec


COMMANDS = {
    "run --json": lambda t, f: ["run", BANK, *TINY, "--json", f],
    "run --report": lambda t, f: ["run", BANK, *TINY, "--report", f],
    "run --repeat --json": lambda t, f: ["run", BANK, *TINY, "--repeat", "2",
                                         "--json", f.replace("-2.json", ".json")],
    "compare --json": lambda t, f: ["compare", "last~1", "last", "--json", f],
    "compare --report": lambda t, f: ["compare", "last~1", "last", "--report", f],
    "compare --paired --json": lambda t, f: ["compare", "--paired", "a.toml", "b.toml", "--json", f],
    "lint --json": lambda t, f: ["lint", "last", "--json", f],
    "sweep --json": lambda t, f: ["sweep", str(_sweep_spec(t)), "--json", f],
    "sweep --report": lambda t, f: ["sweep", str(_sweep_spec(t)), "--report", f],
    "results show --json": lambda t, f: ["results", "show", "last", "--json", f],
    "results show --report": lambda t, f: ["results", "show", "last", "--report", f],
    "results export -o": lambda t, f: ["results", "export", "last", "-o", f],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_output_flag_onto_a_foreign_file_is_refused_and_leaves_it_as_it_was(command: str, made: Path,
                                                                              tmp_path: Path) -> None:
    name = "passwd-2.json" if "--repeat" in command else "passwd"
    victim = _foreign(tmp_path / name)
    store = tmp_path / "r.sqlite"
    store.write_bytes((made / "r.sqlite").read_bytes())
    refused = run_cli(*COMMANDS[command](tmp_path, str(victim)), "--results", str(store),
                      *(["--workdir", str(tmp_path / "work")] if command.startswith(("run", "sweep")) else []))
    assert_clean_error(refused, str(victim), "not a file fbbench wrote", "--overwrite")
    assert victim.read_text() == PASSWD
    assert not (tmp_path / "work").exists()  # refused before anything ran
    assert {p.name for p in tmp_path.iterdir()} <= {name, "r.sqlite", "sweep.toml"}


def test_a_device_is_never_an_output_file(made: Path) -> None:
    refused = run_cli("results", "show", "last", "--json", "/dev/null", "--overwrite",
                      "--results", str(made / "r.sqlite"))
    assert_clean_error(refused, "/dev/null is not a regular file")


def test_files_fbbench_wrote_are_replaced_and_a_foreign_one_with_overwrite(made: Path, tmp_path: Path) -> None:
    """A file fbbench wrote is known by its content, whatever its name; --overwrite replaces any file."""
    ours = {suffix: tmp_path / f"renamed{suffix}" for suffix in (".json", ".html", ".fbbundle")}
    for suffix, path in ours.items():
        path.write_bytes((made / f"made{suffix}").read_bytes())
    inodes = {path: path.stat().st_ino for path in ours.values()}
    store = str(made / "r.sqlite")
    shown = run_cli("results", "show", "last", "--json", str(ours[".json"]), "--report", str(ours[".html"]),
                    "--results", store)
    assert shown.returncode == 0, shown.stderr
    exported = run_cli("results", "export", "last", "-o", str(ours[".fbbundle"]), "--results", store)
    assert exported.returncode == 0, exported.stderr
    assert all(path.stat().st_ino != inodes[path] for path in ours.values())  # each replaced by a new file

    notes = _foreign(tmp_path / "notes.json")
    forced = run_cli("results", "show", "last", "--json", str(notes), "--overwrite", "--results", store)
    assert forced.returncode == 0, forced.stderr
    assert json.loads(notes.read_text())["format"] == "fbbench-run"
    assert not list(tmp_path.glob(".*.part"))


def test_a_run_replaces_its_own_json_and_with_overwrite_a_foreign_report(made: Path, tmp_path: Path) -> None:
    own = tmp_path / "again.json"
    own.write_bytes((made / "made.json").read_bytes())
    report = _foreign(tmp_path / "page.html")
    cli = run_cli("run", BANK, *TINY, "--json", str(own), "--report", str(report), "--overwrite",
                  "--results", str(tmp_path / "r.sqlite"), "--workdir", str(tmp_path / "work"))
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert json.loads(own.read_text())["run_id"] != json.loads((made / "made.json").read_text())["run_id"]
    assert '<meta name="generator" content="fbbench">' in report.read_text()


@pytest.mark.parametrize("command", [c for c in COMMANDS if "--repeat" not in c])
def test_an_output_onto_the_results_store_is_refused_even_with_overwrite(command: str, made: Path,
                                                                         tmp_path: Path) -> None:
    store = tmp_path / "r.sqlite"
    store.write_bytes((made / "r.sqlite").read_bytes())
    before = store.read_bytes()
    refused = run_cli(*COMMANDS[command](tmp_path, str(store)), "--overwrite", "--results", str(store),
                      *(["--workdir", str(tmp_path / "work")] if command.startswith(("run", "sweep")) else []))
    assert_clean_error(refused, str(store))
    assert "the results store" in refused.stderr or "SQLite database" in refused.stderr, refused.stderr
    assert store.read_bytes() == before
    assert not (tmp_path / "work").exists()
    # Another program's (or another store's) database is no output either, by its content.
    other = tmp_path / "copy.db"
    other.write_bytes(before)
    refused = run_cli(*COMMANDS[command](tmp_path, str(other)), "--overwrite", "--results", str(store),
                      *(["--workdir", str(tmp_path / "work")] if command.startswith(("run", "sweep")) else []))
    assert_clean_error(refused, str(other), "SQLite database")
    assert other.read_bytes() == before


def test_outputs_onto_the_spec_or_onto_each_other_are_refused_even_with_overwrite(made: Path, tmp_path: Path) -> None:
    store = tmp_path / "r.sqlite"
    store.write_bytes((made / "r.sqlite").read_bytes())
    sweep = _sweep_spec(tmp_path)
    spec = tmp_path / "run.toml"
    spec.write_text(f'workload = "{BANK}"\ntransactions = 5\nconnections = 1\n')
    texts = {path: path.read_text() for path in (sweep, spec)}
    common = ["--overwrite", "--results", str(store)]
    for args, said in (
            (["sweep", str(sweep), "--json", str(sweep)], "is the sweep file"),
            (["run", "--spec", str(spec), "--json", str(spec)], "is the spec file"),
            (["run", "--spec", str(spec), "--report", str(spec)], "is the spec file"),
            (["sweep", str(sweep), "--json", str(tmp_path / "s.out"), "--report", str(tmp_path / "s.out")],
             "name the same file"),
            (["results", "show", "last", "--json", str(tmp_path / "y.out"), "--report", str(tmp_path / "y.out")],
             "name the same file"),
            (["compare", "last~1", "last", "--json", str(tmp_path / "c.out"), "--report", str(tmp_path / "c.out")],
             "name the same file")):
        refused = run_cli(*args, *common, *(["--workdir", str(tmp_path / "work")] if args[0] != "results" else []))
        assert_clean_error(refused, said)
    assert {path: path.read_text() for path in texts} == texts
    assert not (tmp_path / "work").exists() and not list(tmp_path.glob("*.out"))
