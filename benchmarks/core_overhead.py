"""Is fbbench's native load core out of the way? Figures, not a timed test.

On the embedded Firebird 5.0 engine, databases with forced writes off (so that CPU, not fsync,
is measured), this prints operations per second of:

1. the core, 1 attachment, calling a procedure that runs 30 statements (10 × select + update +
   insert) with one parameter, committed;
2. a plain C client loop doing exactly the same API calls (benchmarks/c/fbloop.c, built here
   with gcc against the same libfbclient, the same TPB bytes, the same prepare-once,
   fetch-to-end and commit);
3. the same loop inside the engine (EXECUTE BLOCK calling the procedure in autonomous
   transactions): the floor no client can beat;
4. core vs C on a read-only point select (one row by primary key, one transaction each) at 1, 2
   and 4 attachments / threads;

with the core/C ratios (target ≥ 0.95 everywhere) and the core's own client CPU per operation.

The two clients share the machine's time, not run after one another: in each repeat both start
(each on its own fresh copy of the same database, same threads and attachments) and then take
turns of 0.1 s, the one whose turn it is running alone while the other is stopped (SIGSTOP /
SIGCONT), until each has had its warm-up and its measured seconds. Each client's operations/s
is what it completed over the time it ran. A 2-core VM's speed drifts by ±20 % from one run to
the next and by ±14 % from one second to the next (a fixed C spin loop alone); runs taken one
after the other see different machines, turns of 0.1 s see the same one. The ratio printed is
the median over the repeats with its exact 95 % interval (fbbench.analysis.stats; fewer than
6 repeats: geometric mean, t interval on logs). The core's own CPU per operation, against what
an operation costs, bounds its overhead independently of any timing; and, when
valgrind is installed, callgrind counts the instructions per operation of both clients at 1
attachment (engine included): a count, repeatable whatever the machine does. With --control,
each point also compares C with C the same way: how far apart two identical clients land on
this machine, the floor under any core/C difference it can show. --pool gives one verdict over
the repeats of several runs saved with --json.

    .venv/bin/python benchmarks/core_overhead.py [--repeats 9] [--seconds 3] [--warmup 1] [--turn 0.1] [--control]
                                                 [--json FILE]
    .venv/bin/python benchmarks/core_overhead.py --pool FILE [FILE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fbbench.analysis import stats  # noqa: E402
from fbbench.engines import prepare_runtime, run_in_engine  # noqa: E402
from fbbench.loadcore import build_tpb  # noqa: E402
from fbbench.runner import timeshare  # noqa: E402

ROWS = 10_000
SPAN = ROWS - 10  # the procedure touches ids a .. a+9
PROCEDURE_SQL = "execute procedure bench_proc(?)"
POINT_SQL = "select qty from stock where id = ?"
SCHEMA = [
    "create table stock (id integer not null primary key, qty integer not null)",
    "create table hist (id bigint not null primary key, stock_id integer, qty integer)",
    "create sequence hist_seq",
    """create procedure bench_proc (a integer) as
       declare i integer = 0;
       declare v integer;
       begin
         while (i < 10) do
         begin
           select qty from stock where id = :a + :i into v;
           update stock set qty = qty + 1 where id = :a + :i;
           insert into hist (id, stock_id, qty) values (next value for hist_seq, :a + :i, :v);
           i = i + 1;
         end
       end""",
    f"""execute block as
       declare i integer = 1;
       begin
         while (i <= {ROWS}) do
         begin
           insert into stock values (:i, 0);
           i = i + 1;
         end
       end""",
]
TARGET = f"{Path(__file__).stem}"
PUBLISH_SECONDS = 0.02  # how often a time-shared core run writes its count for the parent
DAY = 86_400.0  # a time-shared run's own measured period: it ends when the parent stops it


# ------------------------------------------------------------- run inside the engine child process


def create_database(path: str) -> dict[str, Any]:
    from fbbench.database import driver

    with driver.create_database(path, page_size=8192, forced_writes=False) as connection:
        for statement in SCHEMA:
            connection.execute_immediate(statement)
            connection.commit()
        return engine_facts(connection)


def engine_facts(connection: Any) -> dict[str, Any]:
    """The engine version, forced writes, page buffers and ServerMode a benchmark database runs with."""
    with connection.cursor() as cursor:
        cursor.execute("select rdb$get_context('SYSTEM', 'ENGINE_VERSION'), mon$forced_writes, mon$page_buffers "
                       "from mon$database")
        version, forced_writes, buffers = cursor.fetchone()
        cursor.execute("select rdb$config_value from rdb$config where rdb$config_name = 'ServerMode'")
        mode = cursor.fetchone()[0]
    connection.commit()
    return {"version": version, "forced_writes": bool(forced_writes), "page_buffers": buffers, "server_mode": mode}


def load_config(path: str, client_library: str, sql: str, read_only: bool, connections: int, warmup: float,
                measure: float) -> dict[str, Any]:
    return {
        "client_library": client_library, "database": path, "connections": connections,
        "warmup_seconds": warmup, "measure_seconds": measure, "interval_seconds": measure, "seed": 1,
        "units": [{"name": "op", "isolation": "read_committed", "read_only": read_only,
                   "statements": [{"sql": sql, "params": [{"kind": "uniform", "args": [1, SPAN]}]}]}],
    }


def core_cpu_per_op(path: str, client_library: str, sql: str, read_only: bool, connections: int,
                    seconds: float) -> float:
    """µs of the core's own code per operation, from a run of the core alone.

    Not from the time-shared runs: the core times its own code by the clock, and a stop that
    lands while it is in that code would count the other client's whole turn.
    """
    from fbbench.loadcore import run_load, units_completed

    result = run_load(load_config(path, client_library, sql, read_only, connections, 0.5, seconds))
    if result["status"] != "completed" or not units_completed(result):
        raise RuntimeError(f"core run {result['status']}: {result['failure']}")
    return result["client_cpu_seconds"] / units_completed(result) * 1e6


def in_engine_loop(path: str, calls: int) -> float:
    from fbbench.database import driver

    block = f"""execute block as
        declare i integer = 0;
        begin
          while (i < {calls}) do
          begin
            in autonomous transaction do
              execute procedure bench_proc(mod(:i * 7919, {SPAN}) + 1);
            i = i + 1;
          end
        end"""
    with driver.connect(path) as connection:
        started = time.perf_counter()
        connection.execute_immediate(block)
        connection.commit()
        return calls / (time.perf_counter() - started)


# --------------------------------------------------------------------------------- the comparison


def time_shared_core_child() -> None:
    """Entry of a time-shared core run: ``path library sql read_only connections counter_file``.

    Runs until SIGINT, writing its count of completed operations (little-endian int64 at offset
    0 of the counter file) every PUBLISH_SECONDS: the parent reads it while this process is
    stopped. Prints the run's status and counts at the end.
    """
    from fbbench.loadcore import run_load

    path, library, sql, read_only, connections, counter = sys.argv[1:7]
    fd = os.open(counter, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.ftruncate(fd, 64)

    def publish(live: Any) -> None:
        os.pwrite(fd, struct.pack("<q", live["units"]["op"]["ok"]), 0)

    result = run_load(load_config(path, library, sql, read_only == "1", int(connections), 0, DAY), publish,
                      poll_seconds=PUBLISH_SECONDS)
    op = result["units"]["op"]
    print(json.dumps({"status": result["status"], "failure": result["failure"], "ok": op["ok"],
                      "not_ok": op["rolled_back"] + op["conflicts"] + op["errors"]}))


class TimeSharedClient:
    """A client process that runs only during its turns (stopped and continued from here).

    ``command`` writes its count of operations into ``counter``; a client that ``ends_on_sigint``
    (the core) is stopped as Ctrl-C would and must report only successes, the others are killed.
    """

    def __init__(self, name: str, command: list[str], env: dict[str, str], counter: Path,
                 ends_on_sigint: bool = False) -> None:
        self.name, self.counter = name, counter
        self.ends_on_sigint = ends_on_sigint
        # A count left by the previous repeat would pass for this client's first operation.
        counter.unlink(missing_ok=True)
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        process_group=0)

    def count(self) -> int:
        """Operations completed since the client started: the sum of its 64-byte counter slots."""
        try:
            data = self.counter.read_bytes()
        except FileNotFoundError:
            return 0
        return sum(struct.unpack_from("<q", data, offset)[0] for offset in range(0, len(data) - 7, 64))

    def wait_until_counting(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while self.count() == 0:
            if self.process.poll() is not None:
                problem = self.process.stderr.read().strip()
                raise RuntimeError(f"{self.name} ended before its first operation: {problem}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not complete an operation within {timeout:g} s")
            time.sleep(0.005)
        self.process.send_signal(signal.SIGSTOP)

    def end(self) -> None:
        if not self.ends_on_sigint:
            self.kill()
            return
        self.process.send_signal(signal.SIGCONT)
        self.process.send_signal(signal.SIGINT)
        out, err = self.process.communicate(timeout=60)
        if self.process.returncode != 0 or not out.strip():
            raise RuntimeError(f"{self.name} ended with exit code {self.process.returncode}: {err.strip()[-600:]}")
        closing = json.loads(out.strip().splitlines()[-1])
        if closing["status"] not in ("stopped", "completed") or closing["not_ok"]:
            raise RuntimeError(f"{self.name} run {closing['status']}: {closing['failure'] or closing}")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def build_c_client(runtime: Any, workdir: Path) -> Path:
    gcc = shutil.which("gcc")
    if gcc is None:
        sys.exit("gcc is needed to build the C comparison client (apt-get install gcc)")
    binary = workdir / "fbloop"
    subprocess.run([gcc, "-O2", "-o", str(binary), str(HERE / "c" / "fbloop.c"), str(runtime.client_library),
                    "-lpthread"], check=True)
    return binary


def client_env(runtime: Any) -> dict[str, str]:
    env = runtime.env()
    env.setdefault("ISC_USER", "SYSDBA")
    return env


def c_client(name: str, runtime: Any, binary: Path, pristine: str, sql: str, read_only: bool,
             threads: int) -> TimeSharedClient:
    counter = Path(pristine).parent / f"count-{name}"
    tpb = build_tpb("read_committed", read_only, None).hex()
    return TimeSharedClient(name, [str(binary), fresh_copy(pristine, name), sql, tpb, str(SPAN), str(threads), "0",
                                   str(DAY), str(counter)], client_env(runtime), counter)


def core_client(runtime: Any, pristine: str, sql: str, read_only: bool, threads: int) -> TimeSharedClient:
    counter = Path(pristine).parent / "count-core"
    return TimeSharedClient("core", [sys.executable, "-c", f"import sys; sys.path[:0] = [{str(HERE)!r}]; "
                                     f"import {TARGET}; {TARGET}.time_shared_core_child()",
                                     fresh_copy(pristine, "core"), str(runtime.client_library), sql,
                                     "1" if read_only else "0", str(threads), str(counter)],
                            client_env(runtime), counter, ends_on_sigint=True)


def time_shared_rates(start: Callable[[], tuple[TimeSharedClient, TimeSharedClient]],
                      args: argparse.Namespace) -> tuple[list[float], list[float]]:
    """Operations/s of the two clients ``start`` makes, one pair per repeat, in shared time."""
    first_rates: list[float] = []
    second_rates: list[float] = []
    for repeat in range(args.repeats):
        pair = start()
        try:
            for client in pair:
                client.wait_until_counting()
            # fbbench's one time-sharing mechanism; who takes the first turn alternates, so that
            # neither always follows the other.
            turns = timeshare.Turns.of([(client.name, client.process.pid) for client in pair], args.turn)
            first_turn = repeat % 2
            turns.rounds(max(1, round(args.warmup / args.turn)), first=first_turn)
            counted = [client.count() for client in pair]
            running = [member.running_seconds for member in turns.members]
            turns.rounds(max(1, round(args.seconds / args.turn)), first=first_turn)
            first, second = ((client.count() - before) / (member.running_seconds - ran)
                             for client, before, member, ran in zip(pair, counted, turns.members, running, strict=True))
            for client in pair:
                client.end()
        finally:
            for client in pair:
                client.kill()
        first_rates.append(first)
        second_rates.append(second)
    return first_rates, second_rates


def fresh_copy(pristine: str, who: str = "run") -> str:
    """Every measured run starts from the same database state.

    The procedure updates and inserts: without a fresh copy, each run would inherit the back
    versions and garbage of the runs before it, and whoever ran later would be measured on a
    heavier database.
    """
    copy = pristine.replace(".fdb", f"-{who}.fdb")
    shutil.copyfile(pristine, copy)
    return copy


def compare(label: str, runtime: Any, binary: Path, pristine: str, sql: str, read_only: bool, threads: int,
            args: argparse.Namespace) -> dict[str, Any]:
    c_runs, core_runs = time_shared_rates(lambda: (c_client("C", runtime, binary, pristine, sql, read_only, threads),
                                                   core_client(runtime, pristine, sql, read_only, threads)), args)
    point = {
        "label": label, "threads": threads,
        "c": statistics.median(c_runs), "c_runs": c_runs,
        "core": statistics.median(core_runs), "core_runs": core_runs,
        "client_cpu_us_per_op": run_in_engine(runtime, f"{TARGET}:core_cpu_per_op", fresh_copy(pristine),
                                              str(runtime.client_library), sql, read_only, threads, args.seconds),
    }
    # Both rates of a repeat come from the same seconds of the same machine, interleaved in turns
    # of --turn: their ratio is the comparison; the medians of throughput are for scale.
    point["pair_ratios"] = [core / c for c, core in zip(c_runs, core_runs, strict=True)]
    point["ratio"], point["ratio_ci95"] = ratio_figures(point["pair_ratios"])
    # The core's own code against the CPU one operation costs (C's figure, all busy CPUs): a bound
    # on how much the core can cost that the machine's noise cannot blur.
    op_cpu_us = min(threads, os.cpu_count() or 1) / point["c"] * 1e6
    point["core_share_of_op_cpu"] = point["client_cpu_us_per_op"] / op_cpu_us
    if args.control:
        # The same comparison with C on both sides: how far apart identical clients land here.
        a_runs, b_runs = time_shared_rates(lambda: (c_client("C", runtime, binary, pristine, sql, read_only, threads),
                                                    c_client("C2", runtime, binary, pristine, sql, read_only,
                                                             threads)), args)
        control = [b / a for a, b in zip(a_runs, b_runs, strict=True)]
        point["control_ratios"] = control
        point["control_ratio"], point["control_ratio_ci95"] = ratio_figures(control)
    print(f"  {label:<34} C {point['c']:>9,.0f}/s   core {point['core']:>9,.0f}/s   "
          f"{_ratio_text(point['ratio'], point['ratio_ci95'])}   "
          f"core client CPU {point['client_cpu_us_per_op']:.2f} µs/op = "
          f"{100 * point['core_share_of_op_cpu']:.1f} % of an operation's CPU"
          f"   (C {_spread(c_runs)}; core {_spread(core_runs)})", flush=True)
    if args.control:
        print(f"  {'':<34} control, C against C: {_ratio_text(point['control_ratio'], point['control_ratio_ci95'])}"
              f"   repeats {min(point['control_ratios']):.3f}–{max(point['control_ratios']):.3f}", flush=True)
    return point


def core_child() -> None:
    """Entry of a core run under valgrind: ``path library sql read_only seconds``; prints its units."""
    from fbbench.loadcore import run_load, units_completed

    path, library, sql, read_only, seconds = sys.argv[1:6]
    result = run_load(load_config(path, library, sql, read_only == "1", 1, 0, float(seconds)))
    print(json.dumps({"ops": units_completed(result), "status": result["status"]}))


def _callgrind(command: list[str], env: dict[str, str], out: Path) -> tuple[int, int]:
    """(instructions, operations) of one run under callgrind; the program prints {"ops": n}."""
    done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command], env=env,
                          capture_output=True, text=True, timeout=900)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind run failed: {done.stderr[-600:]}")
    return int(found.group(1)), int(json.loads(done.stdout.strip().splitlines()[-1])["ops"])


def instructions_per_op(runtime: Any, binary: Path, pristine: str, sql: str, read_only: bool) -> dict[str, float]:
    """Instructions per operation, 1 attachment, C and core, counted by callgrind.

    Counted, not timed, so the machine's noise does not reach it. Each client runs twice (2 s and
    6 s under callgrind); the difference divides out start-up (process, Python, attach, prepare).
    The engine's own instructions are in both counts: they are the same work.
    """
    env = client_env(runtime) | {"PYTHONHASHSEED": "0"}
    tpb = build_tpb("read_committed", read_only, None).hex()
    workdir = Path(pristine).parent
    result = {}
    for who in ("c", "core"):
        counts = []
        for seconds in ("2", "6"):
            path = fresh_copy(pristine)
            if who == "c":
                command = [str(binary), path, sql, tpb, str(SPAN), "1", "0", seconds]
            else:
                command = [sys.executable, "-c", f"import sys; sys.path[:0] = [{str(HERE)!r}]; "
                           f"import {TARGET}; {TARGET}.core_child()",
                           path, str(runtime.client_library), sql, "1" if read_only else "0", seconds]
            counts.append(_callgrind(command, env, workdir / f"callgrind-{who}.out"))
        (short_i, short_ops), (long_i, long_ops) = counts
        result[who] = (long_i - short_i) / (long_ops - short_ops)
    result["ratio"] = result["core"] / result["c"]
    return result


def ratio_figures(ratios: list[float]) -> tuple[float, tuple[float, float]]:
    """The per-repeat ratios' central value and its 95 % interval (fbbench.analysis.stats).

    Each ratio comes from one repeat in which both clients shared the same seconds: paired
    ratios. From 6 repeats on, the median with its exact order-statistic interval; below, the
    geometric mean with a t interval on logs (the module says why).
    """
    estimate = stats.ratio_of_ratios(ratios)
    return estimate.ratio, (estimate.low, estimate.high)


def _ratio_text(ratio: float, ci95: tuple[float, float]) -> str:
    return f"ratio {ratio:.3f} (95 % CI {ci95[0]:.3f}–{ci95[1]:.3f})"


def verdict(points: list[dict[str, Any]], target: float = 0.95) -> str:
    worst = min(points, key=lambda p: p["ratio"])
    if all(p["ratio"] >= target for p in points):
        wide = [p for p in points if p["ratio_ci95"][0] < target]
        if not wide:
            return (f"target core ≥ {target} × C: met at every point, each 95 % interval above {target} "
                    f"(lowest median ratio {worst['ratio']:.3f}: {worst['label']})")
        names = ", ".join(f"{p['label']} (CI {p['ratio_ci95'][0]:.3f}–{p['ratio_ci95'][1]:.3f})" for p in wide)
        return (f"target core ≥ {target} × C: met at every point by the median ratios (lowest {worst['ratio']:.3f}: "
                f"{worst['label']}), but the 95 % interval reaches below {target} at {names}; more --repeats "
                f"narrow it")
    missed = [p for p in points if p["ratio_ci95"][1] < target]
    if missed:
        names = ", ".join(f"{p['label']} {p['ratio']:.3f}" for p in missed)
        return f"target core ≥ {target} × C: NOT met ({names}; the whole 95 % interval is below {target})"
    unresolved = [p for p in points if p["ratio"] < target]
    names = ", ".join(f"{p['label']} {p['ratio']:.3f} (CI {p['ratio_ci95'][0]:.3f}–{p['ratio_ci95'][1]:.3f})"
                      for p in unresolved)
    return (f"target core ≥ {target} × C: not resolved on this machine: median below {target} at {names}, but "
            f"the 95 % interval reaches above it; repeat with more --repeats, on a quieter machine")


def pool_runs(paths: list[Path]) -> list[dict[str, Any]]:
    """The points of several --json runs with their repeats pooled, for one verdict over all of them.

    A 1-attachment point spreads by ±10 % per repeat on a 2-core VM: one run's interval is wide,
    the repeats of several runs on the same machine and engine narrow it.
    """
    pooled: dict[str, list[float]] = {}
    engines = set()
    for path in paths:
        try:
            document = json.loads(path.read_text())
            engines.add(document["engine"]["version"])
            runs = [(point["label"], point["pair_ratios"]) for point in document["points"]]
            conditions = (f"Firebird {document['engine']['version']}, {document['repeats']} repeats × "
                          f"{document['seconds']:g} s, turns of {document['turn']:g} s")
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.exit(f"{path}: not a figures file written by this benchmark's --json ({e})")
        print(f"{path}: {conditions}")
        for label, ratios in runs:
            pooled.setdefault(label, []).extend(ratios)
    if len(engines) > 1:
        sys.exit(f"the files come from different engines ({', '.join(sorted(engines))}): pool runs of one engine")
    points = []
    for label, ratios in pooled.items():
        ratio, ci95 = ratio_figures(ratios)
        point = {"label": label, "ratio": ratio, "ratio_ci95": ci95}
        print(f"  {label:<34} {len(ratios):>3} repeats   {_ratio_text(ratio, ci95)}   "
              f"repeats {min(ratios):.3f}–{max(ratios):.3f}")
        points.append(point)
    return points


def _spread(values: list[float]) -> str:
    return f"{min(values):,.0f}–{max(values):,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds of each client per repeat")
    parser.add_argument("--warmup", type=float, default=1.0, help="warm-up seconds per run")
    parser.add_argument("--turn", type=float, default=0.1, help="seconds a client runs before the other's turn")
    parser.add_argument("--control", action="store_true",
                        help="also compare C with C at each point: the method's own spread on this machine")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4], help="point-select attachments")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--workdir", type=Path, help="keep runtime, databases and binary here")
    parser.add_argument("--pool", type=Path, nargs="+", metavar="JSON",
                        help="run nothing: pool the repeats of earlier --json runs into one verdict")
    args = parser.parse_args()
    if args.pool:
        print(verdict(pool_runs(args.pool)))
        return

    # On tmpfs when there is one: the procedure writes, and the VM's disk write-back otherwise adds
    # ±20 % noise to runs that are meant to measure CPU.
    shm = Path("/dev/shm")
    scratch = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="fbbench-core-overhead-", dir=scratch))
    workdir.mkdir(parents=True, exist_ok=True)
    runtime = prepare_runtime("5.0", workdir)
    binary = build_c_client(runtime, workdir)
    path = str(workdir / "bench.fdb")
    if os.path.exists(path):
        os.remove(path)
    facts = run_in_engine(runtime, f"{TARGET}:create_database", path)
    print(f"database in {workdir}")
    print(f"Firebird {facts['version']} embedded, ServerMode {facts['server_mode']}, forced writes "
          f"{'ON' if facts['forced_writes'] else 'off'}, page buffers {facts['page_buffers']}, "
          f"{os.cpu_count()} CPU(s); {args.repeats} repeats; in each, C and core take turns of "
          f"{args.turn:g} s until each ran {args.warmup:g} s of warm-up and {args.seconds:g} s measured; medians "
          f"(min–max)", flush=True)

    points = [compare("procedure (30 statements), 1 att.", runtime, binary, path, PROCEDURE_SQL, False, 1, args)]
    in_engine = []
    calls = max(1000, int(points[0]["c"] * args.seconds))
    for _ in range(args.repeats):
        in_engine.append(run_in_engine(runtime, f"{TARGET}:in_engine_loop", fresh_copy(path), calls))
    floor = statistics.median(in_engine)
    print(f"  {'procedure inside the engine':<34} {floor:>11,.0f}/s   (EXECUTE BLOCK, autonomous transactions; "
          f"C reaches {points[0]['c'] / floor:.2f}, core {points[0]['core'] / floor:.2f} of it)", flush=True)
    for threads in args.threads:
        points.append(compare(f"point select, {threads} att./thread(s)", runtime, binary, path, POINT_SQL, True,
                              threads, args))

    print(verdict(points))
    instructions: dict[str, dict[str, float]] = {}
    if shutil.which("valgrind"):
        print("instructions per operation, 1 attachment (callgrind: counted, so free of the machine's noise; "
              "client and embedded engine together)", flush=True)
        for label, sql, read_only in (("procedure (30 statements)", PROCEDURE_SQL, False),
                                      ("point select", POINT_SQL, True)):
            counted = instructions_per_op(runtime, binary, path, sql, read_only)
            instructions[label] = counted
            print(f"  {label:<34} C {counted['c']:>9,.0f}   core {counted['core']:>9,.0f}   "
                  f"core/C {counted['ratio']:.4f}", flush=True)
    else:
        print("instructions per operation: skipped (valgrind not installed: apt-get install valgrind)")
    if args.json:
        args.json.write_text(json.dumps({"engine": facts, "in_engine_ops_per_second": floor, "points": points,
                                         "instructions_per_op": instructions, "repeats": args.repeats,
                                         "seconds": args.seconds, "turn": args.turn}, indent=2))
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
