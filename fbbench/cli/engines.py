"""``fbbench engines …`` and ``fbbench doctor``: the engines fbbench can run, and whether they work."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from fbbench.cli.common import WorkdirOption, _workdir, console
from fbbench.errors import FbbenchError

engines_app = typer.Typer(help="Firebird engines: the embedded 3.0 / 4.0 / 5.0 runtimes from PyPI, and builds you "
                          "register (tarballs, installations, build directories), run embedded or as a server "
                          "fbbench starts itself.", no_args_is_help=True)


@engines_app.command("list")
def engines_list() -> None:
    """Show the embedded engines fbbench can install, and which are installed.

    Example: `fbbench engines list`
    """
    from fbbench.engines import install as installer
    from fbbench.engines.catalog import ODS_OF_MAJOR, EmbeddedEngine, known_versions

    table = Table(title="Firebird engines")
    for column in ("engine", "name it", "package", "ODS", "installed"):
        table.add_column(column)
    for version in known_versions():
        engine = EmbeddedEngine(version)
        installed = str(installer.install_dir(engine)) if installer.is_installed(engine) else "no"
        ods = ".".join(map(str, ODS_OF_MAJOR[engine.major]))
        table.add_row(engine.label, f"{engine.major} or {version}",
                      f"firebird-embedded=={engine.package_version}", ods, installed)
    console.print(table)
    _print_registered_servers()
    console.print("Another build (an official tarball, an installation directory, a build's output) is registered "
                  "with [bold]fbbench engines add NAME PATH[/] and runs embedded from its own files, or as a server "
                  "fbbench starts (--server; [bold]server:NAME[/] and [bold]embedded:NAME[/] choose per run). A local "
                  "installation's server is also named [bold]server:DIR[/] (e.g. server:/usr for Debian's "
                  "firebird3.0-server). An external server is named by a DSN, e.g. "
                  "[bold]localhost/3050:/data/bench.fdb[/] with --user and --password-file (or ISC_PASSWORD).")


def _print_registered_servers() -> None:
    from fbbench.engines.builds import build_number
    from fbbench.engines.catalog import managed_engine, registered_engines

    registered = registered_engines()
    if not registered:
        return
    table = Table(title="Registered engines (fbbench engines add)")
    for column in ("name it", "kind", "version (build)", "runs", "binaries", "where"):
        table.add_column(column, overflow="fold")
    for name, entry in sorted(registered.items()):
        modes = [mode for mode in ("embedded", "server") if entry.get(mode, mode == "server")]
        default = entry.get("mode") or "server"
        runs = ", ".join(f"{mode} (default)" if mode == default else f"{mode}:{name}" for mode in modes)
        if "version" in entry:
            version = f"{entry['version']} ({build_number(entry.get('build') or '') or '?'})"
        else:  # registered by an older fbbench: a server, its version read from the installation
            try:
                engine = managed_engine(entry["directory"])
                version = f"{engine.version} ({build_number(engine.build) or '?'})"
            except FbbenchError as error:  # shown, not raised: the other engines are still listed
                version = f"[red]unusable:[/] {escape(error.message)}"
        where = escape(entry.get("source") or entry["directory"])
        if entry.get("unpacked"):
            where += f" (unpacked in {escape(entry['directory'])})"
        table.add_row(name, entry.get("kind", "installation"), version, runs, (entry.get("binaries") or "")[:12],
                      where)
    console.print(table)


@engines_app.command("add")
def engines_add(
    name: Annotated[str, typer.Argument(help="The name runs will use: --engine NAME.")],
    path: Annotated[Path, typer.Argument(help="An official Linux tarball (Firebird-X.Y.Z.NNNN-0-linux-x64.tar.gz), "
                                         "an installation directory such as /opt/firebird, a build's output "
                                         "directory (gen/Release/firebird), or /usr (Debian's firebird3.0-server).")],
    server: Annotated[bool, typer.Option("--server", help="Run it as a managed server (its bin/firebird) by default "
                                         "instead of embedded. Debian's /usr always runs as a server.")] = False,
    workdir: WorkdirOption = None,
) -> None:
    """Register a Firebird build under a name: embedded from its own files, or its server, which
    fbbench starts for each run. Its version is read from its files and verified by creating and
    dropping a scratch database before it is registered.

    Examples: `fbbench engines add fb5-rc ~/Downloads/Firebird-5.0.4.1812-0-linux-x64.tar.gz` ·
    `fbbench engines add fb6-dev ~/src/firebird/gen/Release/firebird` · `fbbench engines add fb3-debian /usr`;
    then `fbbench run tpcc --engine fb5-rc` (or `--engine server:NAME`, `--engine embedded:NAME`)
    """
    from fbbench.engines.builds import build_number
    from fbbench.engines.catalog import EmbeddedEngine
    from fbbench.runner.builds import add

    added = add(name, path, server, _workdir(workdir) / "doctor")
    entry, engine = added.entry, added.engine
    if isinstance(engine, EmbeddedEngine):
        what = f"Firebird {engine.version} (build {build_number(entry['build'])}, ODS {entry['ods']}) embedded"
    else:
        what = engine.label
    where = f"the {entry['kind']} {entry['source']}" + (f", unpacked in {entry['directory']}"
                                                         if entry.get("unpacked") else "")
    other = "server" if isinstance(engine, EmbeddedEngine) else "embedded"
    also = f"; {other}: --engine {other}:{name}" if entry.get("server") and entry.get("embedded") else ""
    if entry.get("layout") == "debian":
        console.print(f"{name}: {engine.label} in {entry['directory']} — use --engine {name}", highlight=False,
                      soft_wrap=True)
    else:
        console.print(f"{name}: {what}, from {where} — use --engine {name}{also}", highlight=False, soft_wrap=True)


@engines_app.command("remove")
def engines_remove(
    name: Annotated[str, typer.Argument(help="A name registered with fbbench engines add.")],
) -> None:
    """Forget a registered engine, and the copy fbbench unpacked from its tarball (the user's
    tarball, installation or build directory is never touched).

    Example: `fbbench engines remove fb3-debian`
    """
    from fbbench.runner.builds import remove

    console.print(remove(name), highlight=False, soft_wrap=True)


@engines_app.command("install")
def engines_install(
    versions: Annotated[list[str], typer.Argument(help="Engine versions, e.g. 3.0 4.0 5.0.")],
) -> None:
    """Install embedded engines from PyPI, each into its own directory.

    Example: `fbbench engines install 3.0 4.0 5.0`
    """
    from fbbench.engines import EmbeddedEngine, parse_engine
    from fbbench.engines import install as installer

    for text in versions:
        engine = parse_engine(text)
        if not isinstance(engine, EmbeddedEngine):
            raise FbbenchError(f"'{text}' is not an embedded engine; only embedded engines are installed")
        if engine.is_build:
            raise FbbenchError(f"'{text}' is a registered build ({engine.root}): its files are already there",
                               hint="fbbench engines install takes the embedded versions from PyPI: 3.0 4.0 5.0")
        already = installer.is_installed(engine)
        root = installer.install(engine)
        console.print(f"{engine.label}: {'already installed' if already else 'installed'} at {root}", soft_wrap=True)


def doctor(
    versions: Annotated[list[str] | None, typer.Argument(help="Engines to check (default: 3.0 4.0 5.0).")] = None,
    workdir: WorkdirOption = None,
) -> None:
    """Check engines end to end and print the exact command that fixes each missing piece.

    Exit code 0 only if every requested engine works.

    Examples: `fbbench doctor` · `fbbench doctor 5.0`
    """
    from fbbench.engines import EmbeddedEngine, parse_engine
    from fbbench.engines.catalog import known_versions
    from fbbench.runner.doctor import check_core, check_engine

    work = _workdir(workdir) / "doctor"
    work.mkdir(parents=True, exist_ok=True)
    requested = versions or [".".join(v.split(".")[:2]) for v in known_versions()]
    reports = []
    for text in requested:
        engine = parse_engine(text)
        if not isinstance(engine, EmbeddedEngine):
            raise FbbenchError(f"doctor checks embedded engines; '{text}' is a server DSN",
                               hint="check a server with: fbbench db create DSN")
        reports.append(check_engine(engine, work))
    core = check_core()
    table = Table(title="fbbench doctor")
    for column in ("engine", "check", "result", "fix"):
        table.add_column(column, overflow="fold")
    for report in reports:
        for check in report.checks:
            status = "[green]ok[/] " if check.ok else "[red]FAILED[/] "
            table.add_row(report.engine, check.name, status + check.detail, check.fix)
    table.add_row("", core.name, ("[green]ok[/] " if core.ok else "[red]FAILED[/] ") + core.detail, core.fix)
    console.print(table)
    if not all(report.ok for report in reports) or not core.ok:
        raise typer.Exit(1)
