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


def tpcc_on_off_pairs(home: Path, connections: int, args: Any, setting: str,
                      names: tuple[str, str]) -> list[dict[str, dict[str, Any]]]:
    """``args.pairs`` time-shared pairs of TPC-C (``fbbench compare --paired``), A with the run
    setting ``setting`` true and B with it false, on ``args.engine`` with ``args.warmup``,
    ``args.duration`` and ``args.interval``: each pair's run documents, keyed by ``names`` (A, B)."""
    from fbbench.analysis.run import result_document

    specs = []
    for name, value in zip(names, (True, False), strict=True):
        path = home / f"{name}-{connections}.toml"
        path.write_text(f'workload = "tpcc"\nengine = "{args.engine}"\nconnections = {connections}\n'
                        f'warmup = "{args.warmup}"\nduration = "{args.duration}"\ninterval = "{args.interval}"\n'
                        f"sweep = false\n{setting} = {json.dumps(value)}\n")
        specs.append(str(path))
    compared = home / f"pairs-{connections}.json"
    done = subprocess.run([sys.executable, "-m", "fbbench", "compare", "--paired", *specs, "--pairs", str(args.pairs),
                           "--axis", f"load.{setting}", "--json", str(compared)], cwd=HERE.parent, text=True,
                          env={**os.environ, "FBBENCH_HOME": str(home), "COLUMNS": "120"}, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"compare --paired failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                           f"{done.stderr[-2000:]}")
    print(done.stdout, flush=True)
    sides = {side["label"]: side["runs"] for side in json.loads(compared.read_text())["sides"]}
    with ResultsStore(home / "results.sqlite", create=False) as store:
        return [{names[0]: result_document(store.load_run(a["run_id"])),
                 names[1]: result_document(store.load_run(b["run_id"]))}
                for a, b in zip(sides["A"], sides["B"], strict=True)]
