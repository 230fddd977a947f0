"""Fixed work is never planned as a timed run (issue 31, item 10): compare --paired of two specs with
``transactions = 50`` announced "about 22 min 00 s in all … 5 min 30 s of warm-up and measurement"
for pairs that took seconds, and a sweep of a workload that fixes its own work was refused as
taking 27 hours. Its time comes from the store's recent runs of the same spec, or is unknown."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO, assert_clean_error, run_cli

BANK = REPO / "tests" / "workloads" / "bank"


def _spec(path: Path, engine: str) -> Path:
    path.write_text(f'workload = "{BANK}"\nengine = "{engine}"\nconnections = 1\ntransactions = 50\n'
                    'sweep = false\nvalidate = false\n[scale]\naccounts = "200"\n')
    return path


def test_paired_fixed_work_is_unknown_at_first_then_planned_from_the_store(tmp_path: Path) -> None:
    a, b = _spec(tmp_path / "a.toml", "4.0"), _spec(tmp_path / "b.toml", "5.0")
    paired = ["compare", "--paired", str(a), str(b), "--pairs", "1", "--axis", "engine",
              "--results", str(tmp_path / "r.sqlite"), "--workdir", str(tmp_path / "work")]
    first = run_cli(*paired)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "paired: time unknown" in first.stdout and "its time unknown" in first.stdout, first.stdout
    assert "warm-up and measurement" not in first.stdout
    again = run_cli(*paired)
    assert again.returncode == 0, again.stdout + again.stderr
    planned = re.search(r"paired: about ([\d.]+) s in all .* fixed work, about [\d.]+ s a pair", again.stdout)
    assert planned and float(planned.group(1)) < 60, again.stdout


def test_a_sweep_of_a_workload_that_fixes_its_work_is_not_refused_on_timed_phases(tmp_path: Path) -> None:
    spec = tmp_path / "iud.toml"  # iud's units have counts: 300 runs of fixed work
    spec.write_text('workload = "iud"\nrepeats = 60\n[matrix]\npage_buffers = [256, 512, 1024, 2048, 4096]\n')
    where = ["--results", str(tmp_path / "r.sqlite"), "--workdir", str(tmp_path / "work")]
    dry = run_cli("sweep", str(spec), "--dry-run", *where)
    assert dry.returncode == 0, dry.stderr
    assert "estimated time: unknown (300 run(s) of fixed work, its time unknown" in dry.stdout, dry.stdout
    # Past the planned time's check, the next refusal is the output file's: nothing runs either way.
    notes = tmp_path / "notes.json"
    notes.write_text("mine")
    refused = run_cli("sweep", str(spec), "--json", str(notes), *where)
    assert_clean_error(refused, "--json", "not a file fbbench wrote")
    assert "planned to take" not in refused.stderr
