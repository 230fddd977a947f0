"""The ``fbbench`` command line: thin — each command hands over to its module.

This file is the front door: the app, its commands in the order ``fbbench --help`` lists them,
``--version``, and how an error the user can act on ends a command. The commands live one group
to a module — :mod:`.run`, :mod:`.compare` (with ``lint``), :mod:`.sweep`, :mod:`.results`,
:mod:`.engines` (with ``doctor``), :mod:`.db`, :mod:`.trace`, :mod:`.workload`, :mod:`.replay`,
:mod:`.track`, :mod:`.lab` — and what they share in :mod:`.common`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Annotated, Any

import typer
from rich.table import Table

from fbbench import __version__, signals
from fbbench.cli.common import _print_error, console
from fbbench.errors import FbbenchError, Interrupted


class _HelpOptions(Table):
    """The table of a command's options in --help, whose option names never shrink: typer's own
    lets rich cut them at 80 columns ("--allow-many-connec…"), while the help text beside them
    can wrap. typer builds the table by rows (its commands panel adds its columns first, and is
    left as it is)."""

    def add_row(self, *renderables: Any, **options: Any) -> None:
        if not self.columns:
            names = len(renderables) - 2  # the option's names; then its type, then its help
            for index in range(len(renderables)):
                self.add_column(no_wrap=index < names, overflow="fold")
        super().add_row(*renderables, **options)


class _OnceTyperRichUtilsLoads(importlib.abc.MetaPathFinder):
    """Gives typer's help its _HelpOptions table as typer.rich_utils loads: typer imports that
    module (rich's Markdown with it, a tenth of a second) only to print help or an error, so a
    command that prints neither never loads it."""

    def find_spec(self, name: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name != "typer.rich_utils":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            load(module)
            module.Table = _HelpOptions  # type: ignore[attr-defined]

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if "typer.rich_utils" in sys.modules:
    sys.modules["typer.rich_utils"].Table = _HelpOptions  # type: ignore[attr-defined]
else:
    sys.meta_path.insert(0, _OnceTyperRichUtilsLoads())

app = typer.Typer(
    name="fbbench",
    help="A performance lab for the Firebird RDBMS: create, fill and drive benchmark databases, "
    "watch the engine, and report credibly how fast it was.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},  # every command inherits it (click)
)


def _command(module: str, function: str, name: str | None = None, *, module_help: bool = False,
             **options: Any) -> Callable[[], None]:
    """``module_help``: the command's help is the module's HELP (longer than its docstring could hold)."""
    def add() -> None:
        loaded = importlib.import_module(f"fbbench.cli.{module}")
        app.command(name, **options, **({"help": loaded.HELP} if module_help else {}))(getattr(loaded, function))
    return add


def _group(module: str, attribute: str, name: str) -> Callable[[], None]:
    return lambda: app.add_typer(getattr(importlib.import_module(f"fbbench.cli.{module}"), attribute), name=name)


# The commands in the order fbbench --help lists them, each with how it is added. A command line
# naming one loads only that one's module and builds only its options (typer turns every option of
# every command it holds into click's, a tenth of a second for all of them): the test suite starts
# fbbench hundreds of times. Help, an unknown name or none at all loads every one.
# The list fbbench --help shows takes one line a command (short_help); each command's own --help has all.
_COMMANDS: dict[str, Callable[[], None]] = {
    "engines": _group("engines", "engines_app", "engines"),
    "db": _group("db", "db_app", "db"),
    "doctor": _command("engines", "doctor"),
    "results": _group("results", "results_app", "results"),
    "run": _command("run", "run", module_help=True, short_help="Run a benchmark: build, fill and drive a database, "
                    "watch the engine, record and report."),
    "sweep": _command("sweep", "sweep", module_help=True),
    "compare": _command("compare", "compare", short_help="Compare runs or series: every figure as a ratio with "
                        "its 95 % interval, conditions and lint first."),
    "lint": _command("compare", "lint_command", "lint",
                     short_help="The credibility lint alone (exit 1 on an error, for CI)."),
    "trace": _group("trace", "trace_app", "trace"),
    "workload": _group("workload", "workload_app", "workload"),
    "replay": _command("replay", "replay", short_help="Replay an application's trace on a copy restored from "
                       "its backup, as a run."),
    "track": _group("track", "track_app", "track"),
    "lab": _group("lab", "lab_app", "lab"),
}


def _add_commands(arguments: list[str]) -> None:
    """The command the arguments name, or every command (see _COMMANDS)."""
    named = next((a for a in arguments if not a.startswith("-")), None)
    options = arguments if named is None else arguments[: arguments.index(named)]
    if "-h" in options or "--help" in options:
        named = None
    if named in _COMMANDS:
        _COMMANDS[named]()
    elif named is None and "--version" in options:
        pass  # the callback prints it and exits before any command is looked at
    else:
        for add in _COMMANDS.values():
            add()


@app.callback(invoke_without_command=True)
def _version(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    signals.commands_take_over()
    if version:
        console.print(f"fbbench {__version__}")
        raise typer.Exit()


def main() -> None:
    _add_commands(sys.argv[1:])
    try:
        app()
    except FbbenchError as error:
        _print_error(error.message, error.hint)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:  # a command that keeps something says so itself (Interrupted)
        _print_error("interrupted", None)
        sys.exit(Interrupted.exit_code)
