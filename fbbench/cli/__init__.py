"""The ``fbbench`` command line: thin — each command hands over to its module.

This file is the front door: the app, its commands in the order ``fbbench --help`` lists them,
``--version``, and how an error the user can act on ends a command. The commands live one group
to a module — :mod:`.run`, :mod:`.compare` (with ``lint``), :mod:`.sweep`, :mod:`.results`,
:mod:`.engines` (with ``doctor``), :mod:`.db`, :mod:`.trace`, :mod:`.workload`, :mod:`.replay`,
:mod:`.track`, :mod:`.lab` — and what they share in :mod:`.common`.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
import typer.rich_utils
from rich.table import Table

from fbbench import __version__, signals
from fbbench.cli import compare, db, engines, lab, replay, results, run, sweep, trace, track, workload
from fbbench.cli.common import _print_error, console
from fbbench.errors import FbbenchError


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


typer.rich_utils.Table = _HelpOptions  # type: ignore[misc]

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
app.add_typer(engines.engines_app, name="engines")
app.add_typer(db.db_app, name="db")
app.command()(engines.doctor)
app.add_typer(results.results_app, name="results")
# The list fbbench --help shows takes one line a command (short_help); each command's own --help has all.
app.command(help=run.HELP, short_help="Run a benchmark: build, fill and drive a database, watch the engine, "
            "record and report.")(run.run)
app.command(help=sweep.HELP)(sweep.sweep)
app.command(short_help="Compare runs or series: every figure as a ratio with its 95 % interval, conditions "
            "and lint first.")(compare.compare)
app.command("lint", short_help="The credibility lint alone (exit 1 on an error, for CI).")(compare.lint_command)
app.add_typer(trace.trace_app, name="trace")
app.add_typer(workload.workload_app, name="workload")
app.command(short_help="Replay an application's trace on a copy restored from its backup, as a run.")(replay.replay)
app.add_typer(track.track_app, name="track")
app.add_typer(lab.lab_app, name="lab")


@app.callback(invoke_without_command=True)
def _version(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    signals.commands_take_over()
    if version:
        console.print(f"fbbench {__version__}")
        raise typer.Exit()


def main() -> None:
    try:
        app()
    except FbbenchError as error:
        _print_error(error.message, error.hint)
        sys.exit(error.exit_code)
