"""A share of CPU lies in 0–100 % (issue 31, item 9): ``compare --paired`` of short fixed-work
pairs printed "CPU while shared: A 45%, B -78%" — the group's CPU was the sum of its live
processes at the end minus at the start, and a run that had ended counted nothing at the end —
and a tiny run's "fbbench itself" line said 123 % of its process's CPU (the sampler thread's CPU
since its start against the process's over the measured period)."""

from __future__ import annotations

import re
from pathlib import Path

from fbbench.store import ResultsStore
from tests.conftest import REPO, run_cli

BANK = REPO / "tests" / "workloads" / "bank"


def _spec(path: Path, engine: str, transactions: int) -> Path:
    path.write_text(f'workload = "{BANK}"\nengine = "{engine}"\nconnections = 1\ntransactions = {transactions}\n'
                    'sweep = false\nvalidate = false\n[scale]\naccounts = "200"\n')
    return path


def test_a_pair_whose_short_run_ended_first_shows_cpu_shares_within_the_machine(tmp_path: Path) -> None:
    """A's 5 units end long before B's 1,500: A's process is gone when the turns end."""
    store = tmp_path / "r.sqlite"
    cli = run_cli("compare", "--paired", str(_spec(tmp_path / "a.toml", "3.0", 5)),
                  str(_spec(tmp_path / "b.toml", "4.0", 1500)), "--pairs", "1", "--force", "--axis", "engine",
                  "--results", str(store), "--workdir", str(tmp_path / "work"))
    assert cli.returncode == 0, cli.stdout + cli.stderr
    found = re.search(r"CPU while shared, of the machine's (\d+) CPU\(s\): A (-?\d+)%, B (-?\d+)%", cli.stdout)
    assert found, cli.stdout
    assert all(0 <= int(share) <= 100 for share in found.groups()[1:]), found.group(0)
    with ResultsStore(store, create=False) as opened:
        for item in opened.list_runs(10):
            run = opened.load_run(item["run_id"])
            shared = next(p for p in run["phases"] if p["name"] == "timeshare")["detail"]
            assert shared["cpu_seconds"] >= 0, shared
            shown = run_cli("results", "show", item["run_id"], "--results", str(store))
            client = re.search(r"= ([\d.]+) % of this process's", shown.stdout)
            assert client and float(client.group(1)) <= 100, shown.stdout
