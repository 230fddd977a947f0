"""``fbbench lab …``: a lab of benchmark hosts on Dask distributed — its certificates (init), its
scheduler, a host joining it as a worker, and the hosts it has. ``fbbench sweep --lab`` runs a
sweep's cells there (:mod:`fbbench.lab.sweep`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from fbbench.cli.common import INTERRUPTED, ResultsOption, WorkdirOption, _workdir, console
from fbbench.errors import FbbenchError
from fbbench.sizes import size_text

lab_app = typer.Typer(help="A lab of benchmark hosts on Dask distributed: fbbench sweep --lab runs cells there.",
                      no_args_is_help=True)

TlsOption = Annotated[Path | None, typer.Option("--tls", help="The lab's certificates (fbbench lab init DIR): "
                                                "mutual TLS between scheduler, workers and clients.")]
InsecureOption = Annotated[bool, typer.Option("--insecure", help="Allow a lab beyond loopback without TLS "
                                              "(anyone who reaches it can run code on its hosts); recorded with "
                                              "every run.")]


@lab_app.command("init")
def init(directory: Annotated[Path, typer.Argument(help="Directory for the lab's CA and certificates.")]) -> None:
    """Make a lab's certificate authority and the scheduler's, workers' and clients' certificates.

    Copy the directory (without ca-key.pem) to every host, and give it to each with --tls DIR.
    Example: `fbbench lab init ~/lab-tls`
    """
    from fbbench.lab.security import init_lab

    written = init_lab(directory)
    console.print(f"lab certificates in {directory}: {', '.join(path.name for path in written)}", highlight=False,
                  soft_wrap=True)
    console.print("keep ca-key.pem private; copy the rest to each host and give --tls DIR to fbbench lab scheduler, "
                  "fbbench lab worker and fbbench sweep --lab", highlight=False, soft_wrap=True)


@lab_app.command("scheduler")
def scheduler(
    host: Annotated[str, typer.Option("--host", help="Address to listen on (beyond loopback only with --tls, or "
                                      "--insecure).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8786,
    tls: TlsOption = None,
    insecure: InsecureOption = False,
) -> None:
    """Start a lab's Dask scheduler with safe defaults: 127.0.0.1, no dashboard, a run whose host
    dies failed at once (never run again elsewhere). `dask scheduler` works too, with
    DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=0.

    Examples: `fbbench lab scheduler` · `fbbench lab scheduler --host 0.0.0.0 --tls ~/lab-tls`
    """
    from fbbench.lab import security
    from fbbench.lab.worker import serve_scheduler

    if not 0 < port < 65536:
        raise FbbenchError(f"--port must be between 1 and 65535, got {port}")
    unprotected = security.check_exposure(host, tls, insecure, "a scheduler listening")
    if unprotected:
        console.print(security.INSECURE_WARNING, highlight=False, soft_wrap=True)
    sec = security.security(tls, "scheduler")

    def ready(address: str) -> None:
        console.print(f"lab scheduler at {address} (Ctrl-C stops it); hosts join with: fbbench lab worker "
                      f"{address} --name NAME" + (f" --tls {tls}" if tls else ""), highlight=False, soft_wrap=True)
        sys.stdout.flush()  # a scheduler runs for long: whoever reads its output learns the address now

    try:
        serve_scheduler(host, port, sec, on_ready=ready)
    except KeyboardInterrupt:
        raise typer.Exit(INTERRUPTED) from None


@lab_app.command("worker")
def worker(
    address: Annotated[str, typer.Argument(help="The lab's scheduler, e.g. tcp://127.0.0.1:8786.")],
    name: Annotated[str, typer.Option("--name", help="This host's stable name in the lab and in its runs' "
                                      "conditions (a sweep's host axis names it).", show_default=False)],
    engine: Annotated[list[str] | None, typer.Option("--engine", "-e", help="Embedded engines this host offers "
                                                     "(default: every installed one); checked by fbbench doctor "
                                                     "before it joins.")] = None,
    workdir: WorkdirOption = None,
    results: ResultsOption = None,
    tls: TlsOption = None,
    insecure: InsecureOption = False,
    join_timeout: Annotated[float, typer.Option("--join-timeout", help="Seconds to try to reach the scheduler "
                                                "(and to wait for it once gone: the worker rejoins when it is "
                                                "back, and leaves after that long).")] = 60.0,
) -> None:
    """Join a lab as a benchmark host: one run at a time, with this host's engines, work directory
    and results store; its engines are checked (fbbench doctor) and its host record published first.

    Example: `fbbench lab worker tcp://10.0.0.5:8786 --name ssd-box --tls ~/lab-tls`
    """
    from fbbench import paths
    from fbbench.engines import EmbeddedEngine, parse_engine
    from fbbench.engines import install as installer
    from fbbench.engines.catalog import known_versions
    from fbbench.lab import security, tasks
    from fbbench.lab.worker import serve_worker
    from fbbench.runner.doctor import check_core, check_engine
    from fbbench.runner.host import host_facts
    from fbbench.runner.settings import check_value

    name = check_value("host_name", name, "--name")
    if join_timeout <= 0:
        raise FbbenchError(f"--join-timeout must be positive, got {join_timeout:g}")
    target = security.address(address, tls)
    unprotected = security.check_exposure(security.host_of(target), tls, insecure, "a worker joining a lab")
    sec = security.security(tls, "worker")
    work = _workdir(workdir)
    store = (results or paths.default_results()).expanduser().resolve()
    paths.writable_file(store, "the results store (--results)")
    offered = []
    for text in engine or [".".join(v.split(".")[:2]) for v in known_versions()]:
        found = parse_engine(text)
        if not isinstance(found, EmbeddedEngine):
            raise FbbenchError(f"--engine {text}: a worker offers embedded engines (a managed server or DSN is "
                               "named in the sweep itself)")
        if found.is_build:
            raise FbbenchError(f"--engine {text}: a worker offers the embedded engines from PyPI by version, and a "
                               f"registered build ({found.label}) would be offered as the release {found.version}",
                               hint="run builds on this machine (fbbench run, sweep or compare without --lab)")
        if engine or installer.is_installed(found):
            offered.append(found)
    if not offered:
        raise FbbenchError("this host has no engine installed to offer", hint="fbbench engines install 5.0")
    doctor_dir = work / "doctor"
    doctor_dir.mkdir(parents=True, exist_ok=True)
    checks: list[dict[str, Any]] = []
    for found in offered:
        report = check_engine(found, doctor_dir)
        checks += [{"engine": found.version, "check": c.name, "ok": c.ok, "detail": c.detail, "fix": c.fix}
                   for c in report.checks]
    core = check_core()
    checks.append({"engine": "", "check": core.name, "ok": core.ok, "detail": core.detail, "fix": core.fix})
    failed = [c for c in checks if not c["ok"]]
    if failed:
        first = failed[0]
        raise FbbenchError(f"worker {name} does not join: fbbench doctor failed for {first['engine'] or 'fbbench'} "
                           f"({first['check']}: {first['detail']})" + (f" and {len(failed) - 1} more" if len(failed) > 1
                                                                       else ""), hint=first["fix"] or None)
    versions = [found.version for found in offered]
    record = {"name": name, "engines": versions, "doctor": checks,
              "host": host_facts(work, host_name=name, database_dir=work, temp_dir=work),
              "insecure": unprotected, "joined_at": time.time(), "results": str(store)}
    setup = tasks.WorkerSetup(name=name, workdir=work, results=store, engines=versions, record=record,
                              tags=[f"lab {target} without TLS (--insecure)"] if unprotected else [])
    if unprotected:
        console.print(security.INSECURE_WARNING, highlight=False, soft_wrap=True)
    console.print(f"worker {escape(name)}: doctor ok for {', '.join(versions)}; joining {target}",
                  highlight=False, soft_wrap=True)

    def joined(own: str) -> None:
        console.print(f"worker {escape(name)} joined the lab as {own}: one run at a time; runs kept in {store}",
                      highlight=False, soft_wrap=True)
        sys.stdout.flush()

    def said(text: str) -> None:
        console.print(escape(text), highlight=False, soft_wrap=True)
        sys.stdout.flush()

    try:
        serve_worker(target, setup, sec, join_timeout=join_timeout, on_joined=joined, on_note=said)
    except KeyboardInterrupt:
        raise typer.Exit(INTERRUPTED) from None


@lab_app.command("hosts")
def hosts(
    address: Annotated[str, typer.Argument(help="The lab's scheduler, e.g. tcp://127.0.0.1:8786.")],
    tls: TlsOption = None,
    insecure: InsecureOption = False,
) -> None:
    """The lab's hosts side by side: CPU, memory, virtualisation, the storage under their work
    directories, and the engines each offers.

    Example: `fbbench lab hosts tcp://127.0.0.1:8786`
    """
    from fbbench.lab.client import connect

    with connect(address, tls, insecure) as lab:
        connected, records = lab.workers(), lab.records()
    table = Table(title=f"hosts of the lab at {address}")
    for column in ("host", "state", "CPU", "memory", "virtualisation", "storage (work directory)", "engines"):
        table.add_column(column, overflow="fold")
    for name in sorted(set(connected) | set(records)):
        record = records.get(name) or {}
        host = record.get("host") or {}
        disk = host.get("database_disk") or {}
        virtual = host.get("virtualization") or {}
        table.add_row(name, "joined" if name in connected else "gone",
                      f"{host.get('cpu_model', '?')}, {host.get('cpu_count', '?')} threads",
                      size_text(host.get("memory_bytes") or 0, unit="GiB"),
                      f"{virtual.get('hypervisor', '?')} / {virtual.get('container', '?')}",
                      " ".join(str(disk.get(k)) for k in ("device", "filesystem", "medium", "mount_options")
                               if disk.get(k)),
                      ", ".join(record.get("engines") or []))
    console.print(table)
