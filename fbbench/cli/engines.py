"""``fbbench engines …`` and ``fbbench doctor``: the engines fbbench can run, and whether they work."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from fbbench.cli.common import WorkdirOption, _workdir, console
from fbbench.errors import FbbenchError

engines_app = typer.Typer(help="Firebird engines: the embedded 3.0 / 4.0 / 5.0 runtimes from PyPI, and local "
                          "installations whose server fbbench starts itself.", no_args_is_help=True)


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
    console.print("A local Firebird installation whose server fbbench starts for each run is named "
                  "[bold]server:DIR[/] (e.g. server:/usr for Debian's firebird3.0-server) or registered with "
                  "[bold]fbbench engines add NAME DIR[/]. An external server is named by a DSN, e.g. "
                  "[bold]localhost/3050:/data/bench.fdb[/] with --user and --password-file (or ISC_PASSWORD).")


def _print_registered_servers() -> None:
    from fbbench.engines.catalog import managed_engine, registered_engines

    registered = registered_engines()
    if not registered:
        return
    table = Table(title="Registered local servers (fbbench starts them)")
    for column in ("name it", "directory", "engine"):
        table.add_column(column, overflow="fold")
    for name, entry in sorted(registered.items()):
        try:
            state = managed_engine(entry["directory"]).label
        except FbbenchError as error:  # shown, not raised: the other engines are still listed
            state = f"[red]unusable:[/] {escape(error.message)}"
        table.add_row(name, entry["directory"], state)
    console.print(table)


@engines_app.command("add")
def engines_add(
    name: Annotated[str, typer.Argument(help="The name runs will use: --engine NAME.")],
    directory: Annotated[Path, typer.Argument(help="The Firebird installation: /usr (Debian's package) or "
                                              "an official install such as /opt/firebird.")],
) -> None:
    """Register a local Firebird installation; fbbench starts its server for each run.

    Example: `fbbench engines add fb3-debian /usr` then `fbbench run tpcc --engine fb3-debian`
    """
    from fbbench.engines.catalog import register_engine

    engine = register_engine(name, str(directory))
    console.print(f"{name}: {engine.label} in {engine.directory} — use --engine {name}", highlight=False)


@engines_app.command("remove")
def engines_remove(
    name: Annotated[str, typer.Argument(help="A name registered with fbbench engines add.")],
) -> None:
    """Forget a registered local installation (the installation itself is untouched).

    Example: `fbbench engines remove fb3-debian`
    """
    from fbbench.engines.catalog import unregister_engine

    directory = unregister_engine(name)
    console.print(f"removed {name} ({directory})", highlight=False)


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
        already = installer.is_installed(engine)
        root = installer.install(engine)
        console.print(f"{engine.label}: {'already installed' if already else 'installed'} at {root}")


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
