"""What a lab's sweep says, without a lab running (issue 31, papercuts): the dry run of hosts that
run at the same time, the progress line's counts, Dask's messages shortened at a word, and no
advice to time-share one machine for runs that ran on several."""

from __future__ import annotations

from pathlib import Path

from fbbench.lab.sweep import Progress, said_shortly
from fbbench.report.compare import _paired_would_help
from tests.conftest import REPO, run_cli

BANK = REPO / "tests" / "workloads" / "bank"


def test_a_lab_dry_run_counts_hosts_in_parallel_and_each_host_s_populations(tmp_path: Path) -> None:
    spec = tmp_path / "hosts.toml"
    spec.write_text(f'workload = "{BANK}"\nwarmup = "1s"\nduration = "9s"\nrepeats = 2\n[scale]\naccounts = 200\n'
                    '[matrix]\nhost = ["a", "b"]\nengine = ["4.0", "5.0"]\n')
    # A host axis names the hosts: nothing is asked of the lab (nothing listens at port 1).
    dry = run_cli("sweep", str(spec), "--dry-run", "--lab", "tcp://127.0.0.1:1", "--results", str(tmp_path / "r"))
    assert dry.returncode == 0, dry.stderr
    assert "populations needed: 4 — each host builds its own (a 2, b 2)" in dry.stdout, dry.stdout
    # 8 runs, 4 on each host at the same time: 4 × (10 s + set-up), not 8 ×.
    assert "the hosts run at the same time: 8 run(s) on 2 host(s), the busiest (a) 4 of about" in dry.stdout


def test_the_progress_line_counts_what_came_back_as_it_came_back() -> None:
    progress = Progress(total=6, done=2, failed=1, left=1)
    assert progress.text() == "2 of 6 run(s) completed, 1 failed, 1 left for --resume"
    assert progress.settled == 4


def test_dask_s_message_is_shortened_at_a_word() -> None:
    error = RuntimeError("Worker tcp://10.0.0.5:4040 failed: " + "more information " * 30 + "\nsecond line")
    said = said_shortly(error, 120)
    assert len(said) <= 120 and said.endswith(" …") and "\n" not in said
    assert said.removesuffix(" …").split()[-1] in ("more", "information")


def test_compare_does_not_advise_paired_runs_for_runs_of_several_hosts() -> None:
    document = {"verdicts": {"B": {"resolved": False}}, "sides": [{"kind": "series"}, {"kind": "series"}],
                "conditions": {"equal": {"protocol": "embedded"}, "axis": []}, "pairing": None}
    assert _paired_would_help(document)
    assert not _paired_would_help({**document, "blocks": {"hosts": ["a", "b"]}})
    assert not _paired_would_help({**document, "conditions": {"equal": {"protocol": "embedded"},
                                                              "axis": [{"key": "host.name"}]}})
