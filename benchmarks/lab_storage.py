"""Two hosts whose storage differs: the lab's machine comparison, end to end. Figures, not a timed test.

A stand-in for two machines on this one (docs/lab.md, "Seen: two hosts whose storage differs"): a
``fbbench lab scheduler`` on a free loopback port and two ``fbbench lab worker`` processes, ``mem``
with its FBBENCH_HOME on a tmpfs (``--tmpfs``, default /dev/shm) and ``disk`` with its FBBENCH_HOME
on the disk (``--disk``, default /var/tmp) — refused unless ``stat -f`` and the hosts' own records
say they are different filesystems. From a third home, the coordinator's, a sweep with
``host = ["mem", "disk"]`` (TPC-C, 1 warehouse, 4 connections, forced writes on, ``--repeats`` runs
on each host), then:

- ``fbbench compare SWEEP:1 SWEEP:2`` without ``--axis``: which difference compare takes as the axis
  by itself (and, only if it refuses, again with ``--axis host``), with ``--json`` and ``--report``;
  the conditions that differ (``host.disk.*`` …), the verdict with its interval, each host's facts
  side by side;
- ``fbbench results export`` of the sweep into a bundle, imported twice into a fresh store (the
  second adds nothing), and the same compare on that store: the same verdict.

The scheduler and the workers are stopped at the end and on Ctrl-C; the temp homes are removed
unless ``--keep``.

    .venv/bin/python benchmarks/lab_storage.py [--repeats 3] [--warmup 10s] [--duration 20s]
        [--tmpfs /dev/shm] [--disk /var/tmp] [--engine 5.0] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from fbbench_run import fbbench  # noqa: E402

from fbbench.runner.settings import parse_duration  # noqa: E402

NAMES = ("mem", "disk")


class Stopped(Exception):
    """SIGTERM (or SIGINT) reached the script: stop what it started."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signal.Signals(signum).name)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _filesystem(path: Path) -> tuple[str, int]:
    """``stat -f``'s filesystem type of ``path`` and its device number."""
    kind = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True, check=True)
    return kind.stdout.strip(), path.stat().st_dev


def _check_filesystems(tmpfs: Path, disk: Path) -> tuple[str, str]:
    for path, option in ((tmpfs, "--tmpfs"), (disk, "--disk")):
        if not path.is_dir():
            sys.exit(f"{option} {path}: not a directory")
    (memory_kind, memory_device), (disk_kind, disk_device) = _filesystem(tmpfs), _filesystem(disk)
    if memory_kind not in ("tmpfs", "ramfs"):
        sys.exit(f"--tmpfs {tmpfs} is on {memory_kind} (stat -f), not a tmpfs: give a tmpfs directory")
    if disk_kind in ("tmpfs", "ramfs"):
        sys.exit(f"--disk {disk} is on {disk_kind} (stat -f): give a directory on a disk")
    if memory_device == disk_device:
        sys.exit(f"--tmpfs {tmpfs} and --disk {disk} are on the same filesystem: nothing would differ")
    return memory_kind, disk_kind


def _start(argv: list[str], log: Path, home: Path) -> subprocess.Popen[bytes]:
    """``fbbench ARGV`` in its own session (a Ctrl-C at the terminal reaches it only through us)."""
    with log.open("wb") as output:
        return subprocess.Popen([sys.executable, "-m", "fbbench", *argv], cwd=REPO, stdout=output,
                                stderr=subprocess.STDOUT, env={**os.environ, "FBBENCH_HOME": str(home)},
                                start_new_session=True)


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while text not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"no '{text}' from {log.name}:\n{log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)


def _end(process: subprocess.Popen[Any], seconds: float = 30) -> None:
    """Ctrl-C to the process's group (its own session), then kill -9 if it does not go."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def _check_hosts(address: str, home: Path, workdirs: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """``fbbench lab hosts`` printed, and the hosts' own records: their database storage must differ."""
    shown = fbbench(home, "lab", "hosts", address).stdout
    print("\n".join("  " + line for line in shown.rstrip().splitlines()))
    from fbbench.lab.client import connect

    with connect(address, None, False) as lab:
        records = lab.records()
    disks = {name: ((records.get(name) or {}).get("host") or {}).get("database_disk") or {} for name in NAMES}
    for name in NAMES:
        if not str(disks[name].get("path") or "").startswith(str(workdirs[name])):
            sys.exit(f"host {name}'s record has its database under {disks[name].get('path')}, "
                     f"not in its work directory {workdirs[name]}")
    mem, disk = disks["mem"], disks["disk"]
    if mem.get("medium") != "memory" or (mem.get("device"), mem.get("filesystem")) == (disk.get("device"),
                                                                                       disk.get("filesystem")):
        sys.exit(f"the host records do not show two storages: mem {mem}, disk {disk}")
    return records


def _sweep(spec: Path, address: str, home: Path, root: Path) -> dict[str, Any]:
    """``fbbench sweep SPEC --lab ADDRESS`` with its output shown as it comes; the sweep document."""
    document = root / "sweep.json"
    process = subprocess.Popen([sys.executable, "-m", "fbbench", "sweep", str(spec), "--lab", address, "--json",
                                str(document), "--report", str(root / "sweep.html")], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                               env={**os.environ, "FBBENCH_HOME": str(home), "COLUMNS": "150"})
    try:
        assert process.stdout is not None
        for line in process.stdout:
            print("  | " + line.rstrip(), flush=True)
        code = process.wait()
    finally:
        _end(process, 120)  # the coordinator tells the hosts to stop their runs
    if code != 0 or not document.exists():
        sys.exit(f"the sweep failed (exit {code})")
    return dict(json.loads(document.read_text()))


def _compare(home: Path, series: list[str], out: Path, *axis: str, results: Path | None = None,
             ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    store = ["--results", str(results)] if results else []
    done = fbbench(home, "compare", *series, *axis, *store, "--json", str(out.with_suffix(".json")), "--report",
                   str(out.with_suffix(".html")), check=False)
    document = json.loads(out.with_suffix(".json").read_text()) if done.returncode == 0 else None
    return done, document


def _headline(document: dict[str, Any]) -> dict[str, Any]:
    return next(f for f in document["figures"] if f["kind"] == "headline")


def _figure_line(figure: dict[str, Any], labels: list[str]) -> str:
    ratio = (figure.get("ratios") or {}).get(labels[1]) or {}
    values = " · ".join(f"{label} {', '.join(f'{v:,.0f}' if v >= 100 else f'{v:.3g}' for v in figure['runs'][label])}"
                        for label in labels if figure.get("runs", {}).get(label))
    interval = (f"{ratio['low']:.3f}–{ratio['high']:.3f}" if ratio.get("low") is not None
                else f"no interval: {ratio.get('note')}")
    text = f"{figure['name']} ({(figure.get('unit') or '').strip()}): {values}"
    if ratio.get("ratio") is not None:
        text += f"; B/A {ratio['ratio']:.3f}, 95 % interval {interval} ({ratio.get('basis')})"
    return text


def _show(document: dict[str, Any]) -> None:
    """The axis, the other differences, the verdict with its interval, the hosts side by side."""
    sides = document["sides"]
    labels = [side["label"] for side in sides]
    conditions = document["conditions"]
    print("  sides: " + "; ".join(f"{s['label']} = {s['name']} ({s['argument']}, {len(s['runs'])} runs)"
                                  for s in sides))
    print(f"  axis: {conditions.get('axis_requested') or 'none requested'} → "
          f"{', '.join(dict.fromkeys(row['factor'] for row in conditions['axis'])) or 'none'}")
    width = max((len(row["key"]) for row in conditions["axis"]), default=10)
    for row in conditions["axis"]:
        follows = f"  (follows {row['follows']})" if row.get("follows") else ""
        print(f"    {row['key']:<{width}}  " + "  |  ".join(str(row["values"].get(label)) for label in labels)
              + follows)
    others = conditions["differences"]
    print(f"  other differences (each a lint finding): {len(others)}")
    for row in others:
        print(f"    {row['key']}: " + "  |  ".join(str(row["values"].get(label)) for label in labels))
    problems = [f"{g['severity']} {g['rule']} {g['about']}: {g['message']}" for g in document.get("lint_groups") or []
                if g["severity"] in ("error", "warning") and not g.get("excluded")]
    print(f"  valid: {document['valid']}" + (f" ({'; '.join(document['invalid_because'])})"
                                              if not document["valid"] else ""))
    for line in problems:
        print(f"    {line}")
    for label, verdict in (document.get("verdicts") or {}).items():
        print(f"  verdict {label}: {verdict.get('text')}")
    print(f"  {_figure_line(_headline(document), labels)}")
    for figure in document["figures"]:
        if figure["kind"] == "latency" and figure.get("group") == "new_order" and figure["name"].endswith("p50"):
            print(f"  {_figure_line(figure, labels)}")
    host_keys = {key: {label: value for label in labels} for key, value in conditions["equal"].items()
                 if key.startswith("host.")}
    host_keys |= {row["key"]: row["values"] for row in conditions["axis"] if row["key"].startswith("host.")}
    print("  each host's facts side by side (* differs):")
    width = max((len(key) for key in host_keys), default=10)
    for key in sorted(host_keys, key=lambda k: (k.count("."), k)):
        values = [str(host_keys[key].get(label)) for label in labels]
        print(f"   {'*' if len(set(values)) > 1 else ' '} {key:<{width}}  " + "  |  ".join(values))


def _verdict_of(document: dict[str, Any]) -> tuple[Any, ...]:
    """What must be the same after the bundle's trip: the runs, the axis, the headline, the verdict."""
    headline = _headline(document)
    return (sorted(r["run_id"] for s in document["sides"] for r in s["runs"]),
            [(row["key"], row["values"]) for row in document["conditions"]["axis"]],
            [(row["key"], row["values"]) for row in document["conditions"]["differences"]],
            headline["runs"], headline["ratios"], document["verdicts"], document["valid"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs on each host")
    parser.add_argument("--warmup", default="10s")
    parser.add_argument("--duration", default="20s", help="measured period of each run")
    parser.add_argument("--interval", help="default: a tenth of --duration (the lint wants 5 intervals or more)")
    parser.add_argument("--engine", default="5.0", help="the embedded engine both hosts run")
    parser.add_argument("--tmpfs", type=Path, default=Path("/dev/shm"), help="where host mem's home goes (a tmpfs)")
    parser.add_argument("--disk", type=Path, default=Path("/var/tmp"), help="where host disk's home goes (a disk)")
    parser.add_argument("--keep", action="store_true", help="keep the homes, logs, bundle and reports")
    args = parser.parse_args()
    if args.interval is None:
        args.interval = f"{max(parse_duration(args.duration, '--duration') / 10, 0.2):g}s"
    memory_kind, disk_kind = _check_filesystems(args.tmpfs, args.disk)
    signal.signal(signal.SIGTERM, _stop)
    root = Path(tempfile.mkdtemp(prefix="fbbench-lab-storage-", dir=args.disk))
    memory_root = Path(tempfile.mkdtemp(prefix="fbbench-lab-storage-", dir=args.tmpfs))
    homes = {"mem": memory_root / "home-mem", "disk": root / "home-disk"}
    coordinator = root / "coordinator"
    processes: list[subprocess.Popen[bytes]] = []
    load_before = os.getloadavg()
    code = 0
    try:
        print(f"lab storage — two workers on this machine ({os.cpu_count()} CPUs, load {load_before[0]:.1f}): "
              f"mem's home on {args.tmpfs} ({memory_kind}), disk's on {args.disk} ({disk_kind}); "
              f"Firebird {args.engine} embedded, TPC-C 1 warehouse, 4 connections, forced writes on, "
              f"warm-up {args.warmup} + {args.duration} measured in {args.interval} intervals, "
              f"{args.repeats} repeats on each host")
        print(f"  homes: mem {homes['mem']}, disk {homes['disk']}, coordinator {coordinator}")
        port = _free_port()
        address = f"tcp://127.0.0.1:{port}"
        scheduler = _start(["lab", "scheduler", "--port", str(port)], root / "scheduler.log", coordinator)
        processes.append(scheduler)
        _wait_for(root / "scheduler.log", "lab scheduler at", scheduler)
        for name in NAMES:
            log = root / f"worker-{name}.log"
            worker = _start(["lab", "worker", address, "--name", name, "--engine", args.engine], log, homes[name])
            processes.append(worker)
        for name, worker in zip(NAMES, processes[1:], strict=True):
            _wait_for(root / f"worker-{name}.log", "joined the lab", worker)
        print(f"\nthe lab at {address}: fbbench lab hosts")
        _check_hosts(address, coordinator, homes)

        spec = root / "storage.toml"
        spec.write_text(f'workload = "tpcc"\nengine = "{args.engine}"\nconnections = 4\nwarmup = "{args.warmup}"\n'
                        f'duration = "{args.duration}"\ninterval = "{args.interval}"\nforced_writes = "on"\n'
                        f'repeats = {args.repeats}\n[scale]\nwarehouses = 1\n[matrix]\nhost = ["mem", "disk"]\n')
        print(f"\nfbbench sweep {spec.name} --lab {address} (from the coordinator's home)")
        started = time.monotonic()
        sweep = _sweep(spec, address, coordinator, root)
        print(f"  {time.monotonic() - started:.0f} s; sweep {sweep['sweep_id']}")
        cells = {cell["values"]["host"]: cell for cell in sweep["cells"]}
        for name in NAMES:
            runs = cells[name]["runs"]
            print(f"  host {name} (cell {cells[name]['index']}): " + ", ".join(
                f"{run['run_id']} {run['status']} on {run['host']} "
                + (f"{run['headline']:,.0f}" if run.get("headline") is not None else "–") for run in runs))
        series = [f"{sweep['sweep_id']}:{cells[name]['index']}" for name in NAMES]

        print(f"\nfbbench compare {' '.join(series)} (no --axis)")
        done, document = _compare(coordinator, series, root / "compare-no-axis")
        axis: tuple[str, ...] = ()
        if document is None:
            print(f"  refused (exit {done.returncode}): {(done.stderr or done.stdout).strip()}")
            axis = ("--axis", "host")
            print(f"\nfbbench compare {' '.join(series)} --axis host")
            done, document = _compare(coordinator, series, root / "compare-host", *axis)
            if document is None:
                sys.exit(f"compare --axis host failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
        _show(document)

        bundle = root / "storage.fbbundle"
        print(f"\nfbbench results export {sweep['sweep_id']} -o {bundle.name}; imported twice into a fresh store")
        print("  " + fbbench(coordinator, "results", "export", sweep["sweep_id"], "-o", str(bundle)).stdout.strip())
        elsewhere = root / "elsewhere"
        store = elsewhere / "results.sqlite"
        for _ in range(2):
            print("  " + fbbench(elsewhere, "results", "import", str(bundle), "--results", str(store)).stdout.strip())
        _, imported = _compare(elsewhere, series, root / "compare-imported", *axis, results=store)
        if imported is None:
            sys.exit("compare on the imported store failed")
        same = _verdict_of(imported) == _verdict_of(document)
        print(f"  compare {' '.join([*series, *axis])} on the imported store: "
              + ("the same runs, conditions, figures and verdict" if same else "DIFFERENT from the original:")
              + f" — {imported['verdicts'][imported['sides'][1]['label']]['text']}")
        if not same:
            code = 1
        load_after = os.getloadavg()
        print(f"\nload {load_before[0]:.1f} before, {load_after[0]:.1f} after; reports in {root}"
              + ("" if args.keep else " (removed: --keep keeps them)"))
    except (KeyboardInterrupt, Stopped) as stop:
        print(f"\ninterrupted ({str(stop) or 'Ctrl-C'}): stopping the lab", file=sys.stderr)
        code = 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave the lab running
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for process in reversed(processes):
            _end(process)
        if args.keep:
            print(f"kept: {root} and {memory_root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
            shutil.rmtree(memory_root, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
