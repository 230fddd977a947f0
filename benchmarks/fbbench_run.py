"""Shared by the benchmark scripts: fbbench through its CLI in a private home (any command, or one
``fbbench run``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fbbench.store import ResultsStore  # noqa: E402


def fbbench(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``fbbench ARGS`` with FBBENCH_HOME=``home``; exits the script with fbbench's output when it fails
    (unless ``check`` is false)."""
    done = subprocess.run([sys.executable, "-m", "fbbench", *args], cwd=HERE.parent, capture_output=True, text=True,
                          env={**os.environ, "FBBENCH_HOME": str(home), "COLUMNS": "150"})
    if check and done.returncode != 0:
        sys.exit(f"fbbench {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return done


def run_tpcc(home: Path, name: str, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``fbbench run tpcc ARGS`` with FBBENCH_HOME=``home``: the run's JSON and its results-store record."""
    return run_workload(home, name, "tpcc", *args)


def run_workload(home: Path, name: str, workload: str, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``fbbench run WORKLOAD ARGS`` with FBBENCH_HOME=``home``: the run's JSON and its results-store record.

    Exits the script with fbbench's output when the run fails.
    """
    result_file = home / f"{name}.json"
    command = [sys.executable, "-m", "fbbench", "run", workload, *args,
               "--json", str(result_file), "--report", str(home / f"{name}.html")]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=HERE.parent,
                               env={**os.environ, "FBBENCH_HOME": str(home), "COLUMNS": "120"})
    if completed.returncode != 0 or not result_file.exists():
        sys.exit(f"fbbench run failed (exit {completed.returncode}):\n{completed.stdout[-3000:]}"
                 f"\n{completed.stderr[-3000:]}")
    document = json.loads(result_file.read_text())
    with ResultsStore(home / "results.sqlite") as store:
        return document, store.load_run(document["run_id"])
