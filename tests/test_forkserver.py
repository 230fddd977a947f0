"""The tests' fork server (tests/forkserver.py) gives what ``python -m fbbench`` gives: the same
output, errors and exit status, in the environment and directory the test names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forkserver


def _both(args: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess[str],
                                                                 subprocess.CompletedProcess[str]]:
    served = forkserver.run(args, env, cwd, 60)
    assert served is not None, "the fork server did not start"
    started = subprocess.run([sys.executable, "-m", "fbbench", *args], capture_output=True, text=True, env=env,
                             cwd=cwd, timeout=60)
    return served, started


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["run", "--help"], ["nonsense"], ["results", "list"],
                                  ["run", "tpcc", "--engine", "9.9"], ["results", "export", "-o", "x.json"]])
def test_a_served_command_is_the_command(args: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200", "FBBENCH_HOME": str(tmp_path / "home")}
    served, started = _both(args, env, tmp_path)
    assert (served.returncode, served.stdout, served.stderr) == (started.returncode, started.stdout, started.stderr)


def test_the_environment_and_directory_are_the_tests(tmp_path: Path) -> None:
    """The home is the environment's; a relative path is in the directory given."""
    env = {**os.environ, "COLUMNS": "200", "FBBENCH_HOME": str(tmp_path / "elsewhere")}
    (tmp_path / "inside").mkdir()
    listed = forkserver.run(["results", "list"], env, tmp_path / "inside", 60)
    assert listed is not None and f"{tmp_path / 'elsewhere' / 'results.sqlite'} does not exist" in listed.stdout
    made = forkserver.run(["lab", "init", "tls"], env, tmp_path / "inside", 60)
    assert made is not None and made.returncode == 0, made
    assert (tmp_path / "inside" / "tls").is_dir() and not (Path.cwd() / "tls").exists()


def test_a_command_past_its_time_is_killed(tmp_path: Path) -> None:
    """As subprocess.run's timeout: the process is killed and TimeoutExpired raised."""
    env = {**os.environ, "FBBENCH_HOME": str(tmp_path / "home")}
    # A password file may be a pipe (--password-file <(pass show fb)): reading this one waits for
    # a writer that never comes.
    os.mkfifo(tmp_path / "password")
    with pytest.raises(subprocess.TimeoutExpired):
        forkserver.run(["run", "orders", "--transactions", "1", "-c", "1", "--password-file",
                        str(tmp_path / "password"), "--workdir", str(tmp_path / "work")], env, tmp_path, 1)
    assert not (tmp_path / "work").exists()
    served = forkserver.run(["--version"], env, tmp_path, 60)  # the server goes on
    assert served is not None and served.returncode == 0
