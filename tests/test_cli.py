"""``fbbench run``'s flags reach the run settings by their parameters' names (fbbench.cli.run._flags)."""

from __future__ import annotations

import inspect
from pathlib import Path

from fbbench.cli.common import OnOff
from fbbench.cli.run import _flags, run
from fbbench.runner.settings import _FLAGS, _KINDS


def test_each_run_parameter_is_a_setting_or_handled_apart() -> None:
    """A parameter named after no setting would be dropped without a word."""
    flag_names = {_FLAGS.get(name, name) for name in _KINDS}
    apart = {name for name in inspect.signature(run).parameters
             if name not in flag_names and name.removeprefix("no_") not in flag_names}
    assert apart == {"spec", "set_conf", "password_file"}


def test_flags_become_settings_by_name() -> None:
    flags = _flags({"connections": 3, "rate": 2.5, "tag": ["x"], "no_sweep": True, "no_monitor": False,
                    "fresh": False, "keep_database": True, "forced_writes": OnOff.off, "json": Path("r.json"),
                    "scale": ["warehouses=2"]})
    assert {name: value for name, value in flags.items() if value is not None} == {
        "connections": 3, "target_rate": 2.5, "tags": ["x"], "sweep": False, "keep_database": True,
        "forced_writes": False, "json": "r.json"}
    assert flags["monitor"] is None and flags["fresh"] is None  # a switch not given leaves the spec's value


# ------------------------------------------------------------------------------------ help texts

def test_h_asks_for_help_everywhere() -> None:
    """``fbbench -h`` was refused ("No such option: -h") while ``fbbench run -h`` worked."""
    from tests.conftest import run_cli

    for args in (["-h"], ["run", "-h"], ["sweep", "-h"], ["results", "-h"], ["results", "list", "-h"],
                 ["engines", "-h"], ["db", "-h"]):
        result = run_cli(*args, timeout=60)
        assert result.returncode == 0, (args, result.stderr)
        assert "Usage:" in result.stdout and "[OPTIONS]" in result.stdout, (args, result.stdout)


def test_run_help_names_the_defaults_and_the_builtin_workloads() -> None:
    """``run --help`` showed no default (a first run with none given takes 5m30s of load) and named
    only tpcc among the built-in workloads."""
    import re

    from fbbench.runner.settings import RunSettings, duration_flag, parse_duration
    from fbbench.workloads.spec import builtin_workloads
    from tests.conftest import run_cli

    default = RunSettings()
    result = run_cli("run", "--help", timeout=60)
    assert result.returncode == 0, result.stderr
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.stdout).split())  # one line, without the boxes
    assert f"Attachments doing the work (default {default.connections})" in text
    assert f"Warm-up before measuring (default {duration_flag(default.warmup)})" in text
    assert f"Measured period (default {duration_flag(default.duration)})" in text
    assert f"Reporting interval (default {duration_flag(default.interval)})" in text
    assert f"{duration_flag(default.warmup + default.duration)} of load" in text
    assert {"tpcc", "orders", "docflow"} <= set(builtin_workloads())
    assert f"Built-in workload ({', '.join(builtin_workloads())})" in text
    for seconds in (default.warmup, default.duration, default.interval, 90.0, 3690.5, 0.25):
        assert parse_duration(duration_flag(seconds), "x") == seconds


def test_a_run_without_a_workload_names_every_builtin_one() -> None:
    """The hint said "built-in: tpcc" only."""
    from fbbench.workloads.spec import builtin_workloads
    from tests.conftest import assert_clean_error, run_cli

    result = run_cli("run", timeout=60)
    assert_clean_error(result, "which workload?", f"built-in: {', '.join(builtin_workloads())};")


# ------------------------------------------------------------------------------------ results list

def test_results_list_keeps_ids_whole_and_shows_tags(tmp_path: Path) -> None:
    """Piped (not a tty), ``results list`` folded series ids over two lines, so they could not be
    copied; and a run's tags were shown nowhere."""
    import re

    from tests.conftest import run_cli

    store, bank = tmp_path / "results.sqlite", Path(__file__).parent / "workloads" / "bank"
    ran = run_cli("run", str(bank), "--connections", "1", "--transactions", "5", "--repeat", "2", "--tag", "nightly",
                  "--tag", "[/nvme]", "--results", str(store), "--workdir", str(tmp_path / "work"), timeout=300)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr
    assert ran.stdout.count("tags: nightly, [/nvme]") == 2, ran.stdout  # each repeat's summary, not markup
    listed = run_cli("results", "list", "--results", str(store), timeout=60)
    assert listed.returncode == 0, listed.stderr
    series = set(re.findall(r"series (s[\w-]+)", ran.stdout))
    runs = set(re.findall(r"^run ([\w-]+) — completed", ran.stdout, re.MULTILINE))
    assert len(series) == 1 and len(runs) == 2, ran.stdout
    rows = [line for line in listed.stdout.splitlines() if any(run in line for run in runs)]
    assert len(rows) == 2, listed.stdout
    for row in rows:
        assert f"{next(iter(series))} #" in row and "nightly, [/nvme]" in row, listed.stdout


def test_the_command_list_is_one_line_a_command_and_sweep_help_names_its_defaults() -> None:
    """compare's entry in ``fbbench --help`` took six lines at 80 columns and two at 200; sweep --help
    named neither the default repeats nor the modes."""
    import re

    from fbbench.sweep.spec import DEFAULT_REPEATS, MODES
    from tests.conftest import run_cli

    listed = run_cli("--help", timeout=60)
    commands = listed.stdout[listed.stdout.index("Commands"):]
    rows = [line for line in commands.splitlines() if re.match(r"│ \S", line)]
    # one line each
    assert [row.split()[1] for row in rows] == ["doctor", "run", "sweep", "compare", "lint", "replay", "engines",
                                                "db", "results", "trace", "workload", "track", "lab"], rows
    swept = " ".join(re.sub(r"[│╭╮╰╯─]", " ", run_cli("sweep", "--help", timeout=60).stdout).split())
    assert f"runs per cell, default {DEFAULT_REPEATS}" in swept and f"mode ({' or '.join(MODES)})" in swept


def test_run_help_at_80_columns_keeps_every_option_name_and_says_the_remaining_defaults() -> None:
    """At 80 columns typer's table cut "--allow-many-connec…"; --page-size, --forced-writes and
    --file-cache showed no default."""
    import re

    from tests.conftest import run_cli

    result = run_cli("run", "--help", env={"COLUMNS": "80"}, timeout=60)
    assert result.returncode == 0, result.stderr
    names = set(re.findall(r"│ (--[a-z-]+)", result.stdout))
    assert {"--allow-many-connections", "--load-connections", "--fail-on-checks", "--set-replication"} <= names
    assert not re.search(r"│ --[a-z-]*…", result.stdout), result.stdout
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.stdout).split())
    assert "the workload's page_size, else the engine's, 8192" in text
    assert "(default on, the engine's; the population is built with it off)" in text
    assert "Default: as firebird.conf has it (the engine's own: on)" in text


def test_trace_record_on_a_managed_server_says_what_it_is() -> None:
    """It said the managed server "is not one" (a server)."""
    from tests.conftest import assert_clean_error, run_cli
    from tests.fb3server import fb3_server_unavailable

    reason = fb3_server_unavailable()
    if reason:
        import pytest

        pytest.skip(reason)
    result = run_cli("trace", "record", "--engine", "server:/usr", "-o", "/nonexistent/x.trace", timeout=60)
    assert_clean_error(result, "a server fbbench starts for a run and stops after it", "--trace FILE")
    assert "is not one" not in result.stderr
