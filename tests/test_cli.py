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
