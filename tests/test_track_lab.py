"""``fbbench track run --lab``: a point per host of a real lab (a ``dask scheduler`` and two
workers on 127.0.0.1, tests/test_lab.py's), each host's points a series of its own."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import REPO, assert_clean_error, run_cli
from tests.test_lab import Lab, lab  # noqa: F401  (the fixture)

BANK = REPO / "tests" / "workloads" / "bank"


def test_a_lab_makes_a_point_per_host_each_in_its_own_series(lab: Lab, tmp_path: Path) -> None:  # noqa: F811
    suite = tmp_path / "lab.toml"
    suite.write_text(f'name = "lab"\nrepeats = 2\n[[benchmark]]\nname = "bank"\nworkload = "{BANK}"\n'
                     'warmup = "0.5s"\nduration = "1s"\ninterval = "0.5s"\nsweep = false\nconnections = 1\n'
                     'seed = 1\nscale = { accounts = 200 }\n')
    store = tmp_path / "coordinator.sqlite"
    common = ["--results", str(store)]
    made = run_cli("track", "run", str(suite), "--engine", "5.0", "--label", "today", "--lab", lab.address, *common,
                   timeout=600)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    out = tmp_path / "show.json"
    shown = run_cli("track", "show", str(suite), "--json", str(out), *common)
    assert shown.returncode == 0, shown.stderr
    series = json.loads(out.read_text())["series"]
    assert sorted(s["host"] for s in series) == ["a", "b"]  # hosts are never pooled
    for one in series:
        [point] = one["points"]
        assert len(point["runs"]["B"]) == 2 and point["label"] == "today"
        assert point["figures"]["score"]["n"] == 2
    again = run_cli("track", "run", str(suite), "--engine", "5.0", "--label", "today", "--lab", lab.address, *common,
                    timeout=600)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("has a point for today already") == 2, again.stdout
    assert_clean_error(run_cli("track", "run", str(suite), "--engine", "5.0", "--lab", lab.address, "--reference",
                               "4.0", *common), "give one of --lab and --reference")
