"""fbbench's sysbench workload against sysbench itself — which has no Firebird driver, so no user
can run the two side by side. What a user can be shown instead is that fbbench's client is out of
the way: its own CPU and instructions per sysbench transaction. Figures, not a timed test.

On the embedded Firebird 5.0 engine, a sysbench table of --table-size rows (forced writes off, so
that CPU and not fsync is measured), this prints:

1. the core's own CPU per oltp_read_write transaction (the time it spends in its own code, from
   its result's client_cpu_seconds) at 1 and 2 attachments, with the transactions per second;
2. with valgrind installed, the instructions the core's own code (fbbench/_core.abi3.so, its
   self cost in callgrind, neither the engine nor the client library) executes per
   oltp_read_write transaction on the attachment's thread — counted, so the machine's noise does
   not reach it (target: at most 15,000);
3. the same count for a unit whose second parameter is correlated ("$1 + 99", "id + 99" through
   a let) and for the same unit with an independent one ("uniform(100, 1099)"), on a statement
   that returns the same single row either way: a correlated parameter must cost no more.

Each callgrind count comes from two runs (few and more transactions) with one interval each; their
difference divides out start-up and the end (process, Python, attach, prepare, the result).

    .venv/bin/python benchmarks/sysbench_peer.py [--table-size 10000] [--seconds 5] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fbbench.engines import prepare_runtime, run_in_engine  # noqa: E402
from fbbench.runner.engine.core_config import core_config  # noqa: E402
from fbbench.workloads.spec import load_workload  # noqa: E402

TARGET = Path(__file__).stem
CORE_OBJECT = "_core.abi3.so"
WORKER = "_core::run::worker::worker_main"  # one attachment's thread, from connect to detach
SETTINGS = {"connect_rate": 0.0, "warmup": 0.0, "duration": 1.0, "interval": 1.0, "target_rate": None,
            "transactions": 1}
# The unit whose second parameter is the point of the comparison: one row either way.
PAIR_SQL = "select count(*) from rdb$database where cast(? as integer) > 0 and cast(? as integer) > 0"
PARAMETERS = {
    "independent": '["uniform(1, 1000)", "uniform(100, 1099)"]',
    "correlated ($1)": '["uniform(1, 1000)", "$1 + 99"]',
    "correlated (let)": '["id", "id + 99"]',
}


# ------------------------------------------------------------- run inside the engine child process


def run_core(config: dict[str, Any]) -> dict[str, Any]:
    from fbbench.loadcore import run_load

    result = run_load(config)
    if result["status"] != "completed":
        raise RuntimeError(f"core run {result['status']}: {result['failure']}")
    units = sum(u["ok"] + u["rolled_back"] + u["conflicts"] + u["errors"] for u in result["units"].values())
    return {"units": units, "ok": sum(u["ok"] for u in result["units"].values()),
            "client_cpu_seconds": result["client_cpu_seconds"], "measured_seconds": result["measured_seconds"]}


def core_child() -> None:
    """Entry of a core run under valgrind: the config on stdin; prints its units."""
    print(json.dumps(run_core(json.loads(sys.stdin.read()))))


# ------------------------------------------------------------------------------------- the parent


def unit_config(workload_dir: Path, scale: dict[str, str], runtime: Any) -> dict[str, Any]:
    """The core config of a workload directory, every unit of it, for the runtime's client."""
    workload = load_workload(str(workload_dir), scale)
    config = core_config(workload, {**SETTINGS, "connections": 1}, "", str(runtime.client_library),
                         ("SYSDBA", None), 1, {}, {})
    return dict(config)


def pair_workload(directory: Path, parameters: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    let = 'let = { id = "uniform(1, 1000)" }\n' if '"id"' in parameters else ""
    (directory / "workload.toml").write_text(f'name = "pair"\nscripts = []\n[[units]]\nname = "pair"\nweight = 1\n'
                                             f'{let}sql = "{PAIR_SQL}"\nparams = {parameters}\n')
    return directory


def fresh_copy(pristine: Path, who: str) -> str:
    copy = pristine.with_name(f"{pristine.stem}-{who}.fdb")
    shutil.copyfile(pristine, copy)
    return str(copy)


def cpu_per_transaction(runtime: Any, config: dict[str, Any], pristine: Path, connections: int,
                        seconds: float) -> dict[str, float]:
    run = {**config, "database": fresh_copy(pristine, f"cpu{connections}"), "connections": connections,
           "transactions": None, "warmup_seconds": 1.0, "measure_seconds": seconds, "interval_seconds": seconds}
    found = run_in_engine(runtime, f"{TARGET}:run_core", run)
    return {"tps": found["ok"] / found["measured_seconds"],
            "core_us": found["client_cpu_seconds"] / found["units"] * 1e6}


def core_self_instructions(callgrind_out: Path) -> int:
    """The self cost (Ir) of every function of the core's own object in a callgrind profile: the
    instructions fbbench's code ran, not those of the engine or the client library it called."""
    counted, current_object, skip_next = 0, "", False
    names: dict[str, str] = {}  # compressed object names, defined by whichever of ob= or cob= comes first

    def named(value: str) -> str:
        match = re.match(r"\((\d+)\)(?: (.*))?", value)
        if not match:
            return value
        if match.group(2):
            names[match.group(1)] = match.group(2)
        return names.get(match.group(1), "")

    for line in callgrind_out.read_text().splitlines():
        if line.startswith("ob="):
            current_object = named(line[3:])
        elif line.startswith("cob="):
            named(line[4:])
        elif line.startswith("calls="):
            skip_next = True  # the next cost line is the call's inclusive cost, not self cost
        elif line and (line[0].isdigit() or line[0] in "+-*"):
            if skip_next:
                skip_next = False
                continue
            if current_object.endswith(CORE_OBJECT):
                counted += int(line.split()[-1])
    return counted


def instructions_per_unit(runtime: Any, config: dict[str, Any], pristine: Path, workdir: Path, label: str,
                          transactions: tuple[int, int]) -> float:
    """The core's own instructions per unit: two runs under callgrind, the difference divided by
    the difference in units."""
    env = runtime.env()
    env.setdefault("ISC_USER", "SYSDBA")
    counts = []
    for n in transactions:
        # One interval for the whole run: closing one serializes its histograms, a cost per
        # interval that the longer run would otherwise have more of.
        run = {**config, "database": fresh_copy(pristine, "callgrind"), "connections": 1, "transactions": n,
               "interval_seconds": 1e6}
        out = workdir / f"callgrind-{re.sub(r'[^a-z0-9]+', '-', label)}-{n}.out"
        # Only what the attachment's thread runs: Python's polls and the control plane's intervals
        # come per second, not per unit, and would make the count depend on the run's duration.
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", f"--toggle-collect={WORKER}",
                   sys.executable, "-c",
                   f"import sys; sys.path[:0] = [{str(HERE)!r}]; import {TARGET}; {TARGET}.core_child()"]
        done = subprocess.run(command, input=json.dumps(run), env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"callgrind run failed: {done.stderr[-800:]}")
        units = json.loads(done.stdout.strip().splitlines()[-1])["units"]
        counts.append((core_self_instructions(out), units))
    (short_i, short_u), (long_i, long_u) = counts
    return (long_i - short_i) / (long_u - short_u)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table-size", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds of each CPU run")
    parser.add_argument("--workdir", type=Path, help="keep runtime, databases and profiles here")
    args = parser.parse_args()
    shm = Path("/dev/shm")
    scratch = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="fbbench-sysbench-peer-", dir=scratch))
    workdir.mkdir(parents=True, exist_ok=True)

    # sysbench's table, populated by fbbench's own sysbench workload (one transaction run, kept).
    out = workdir / "prepare.json"
    prepared = subprocess.run([sys.executable, "-m", "fbbench", "run", "sysbench", "--engine", "5.0", "--scale",
                               f"table_size={args.table_size}", "--transactions", "1", "-c", "1", "--no-sweep",
                               "--no-monitor", "--forced-writes", "off", "--keep-database", "--workdir",
                               str(workdir / "work"), "--results", str(workdir / "results.sqlite"), "--json", str(out),
                               "--report", str(workdir / "prepare.html")], capture_output=True, text=True)
    if prepared.returncode != 0:
        raise SystemExit(f"preparing the sysbench table failed:\n{prepared.stdout[-2000:]}{prepared.stderr[-2000:]}")
    document = json.loads(out.read_text())
    pristine = workdir / "sbtest.fdb"
    shutil.copyfile(document["database"]["path"], pristine)
    runtime = prepare_runtime("5.0", workdir / "runtime")
    builtin = HERE.parent / "fbbench" / "workloads" / "builtin" / "sysbench"
    read_write = unit_config(builtin, {"table_size": str(args.table_size)}, runtime)
    print(f"{document['engine']['version']} embedded, forced writes off, sbtest1 of {args.table_size:,} rows, "
          f"page size {document['database']['page_size']}, {os.cpu_count()} CPU(s); database in {pristine}")

    figures: dict[str, Any] = {"cpu": {}, "instructions": {}}
    for connections in (1, 2):
        found = cpu_per_transaction(runtime, read_write, pristine, connections, args.seconds)
        figures["cpu"][connections] = found
        print(f"  oltp_read_write, {connections} attachment(s): {found['tps']:,.0f} tps, the core's own code "
              f"{found['core_us']:.1f} µs per transaction (client_cpu_seconds / units)", flush=True)

    if not shutil.which("valgrind"):
        print("instructions per transaction: skipped (valgrind not installed: apt-get install valgrind)")
    else:
        print("instructions of the core's own code per unit, 1 attachment (callgrind self cost in "
              f"{CORE_OBJECT}: counted, free of the machine's noise)", flush=True)
        per_transaction = instructions_per_unit(runtime, read_write, pristine, workdir, "oltp_read_write", (20, 80))
        figures["instructions"]["oltp_read_write"] = per_transaction
        print(f"  oltp_read_write (18 statements)     {per_transaction:>9,.0f} per transaction   "
              f"(target ≤ 15,000: {'met' if per_transaction <= 15_000 else 'NOT met'})", flush=True)
        for label, parameters in PARAMETERS.items():
            config = unit_config(pair_workload(workdir / re.sub(r"[^a-z]+", "-", label), parameters), {}, runtime)
            counted = instructions_per_unit(runtime, config, pristine, workdir, label, (200, 1200))
            figures["instructions"][label] = counted
            print(f"  one statement, two parameters, {label:<17} {counted:>9,.0f} per unit", flush=True)
        base = figures["instructions"]["independent"]
        worst = max(figures["instructions"][label] for label in PARAMETERS if label != "independent")
        print(f"  correlated / independent: {worst / base:.3f} "
              f"({'no more' if worst <= base * 1.01 else 'MORE'} than an independent parameter, 1 % tolerance)")
    (workdir / "figures.json").write_text(json.dumps(figures, indent=2))
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
