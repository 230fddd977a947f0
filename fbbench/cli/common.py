"""What the commands share: the consoles, the options several take, credentials, error lines,
the printers more than one command uses, and the exit codes the commands name."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from fbbench import paths
from fbbench.errors import FbbenchError, Interrupted

if TYPE_CHECKING:  # imported where used: every command starts without the runner
    from fbbench.database.manage import Credentials
    from fbbench.runner.run import Notices

# Piped output gets 120 columns instead of rich's 80, so tables and the live line stay readable in logs.
console = Console(width=None if sys.stdout.isatty() else 120)
errors = Console(stderr=True, width=None if sys.stderr.isatty() else 120)

# Besides these, a run that failed ends its command with 1 (RunOutcome.exit_code), and input or outputs
# the command cannot use with FbbenchError.exit_code (2).
CHECKS_FAILED = 3  # --fail-on-checks / --fail-on-audits: the run completed, its checks did not pass
LINT_FAILED = 1  # fbbench lint: an error-severity finding (for CI)
INTERRUPTED = Interrupted.exit_code  # Ctrl-C (130); what was measured is kept


class OnOff(StrEnum):
    on = "on"
    off = "off"


WorkdirOption = Annotated[
    Path | None,
    typer.Option("--workdir", help="fbbench's work directory (runtime roots, run databases). "
                 "Default: $FBBENCH_HOME/work."),
]
UserOption = Annotated[str | None, typer.Option("--user", help="User for a server engine (default SYSDBA).")]
PasswordFileOption = Annotated[
    Path | None,
    typer.Option("--password-file", help="File holding the password for a server engine "
                 "(or set ISC_PASSWORD). Never given as a plain flag, never stored."),
]
EngineOption = Annotated[
    str | None,
    typer.Option("--engine", "-e", help="5.0, 4.0, 3.0 (embedded), a full version such as 5.0.4, or a build "
                 "registered with fbbench engines add."),
]
ResultsOption = Annotated[
    Path | None,
    typer.Option("--results", help="Results store (SQLite). Default: $FBBENCH_HOME/results.sqlite."),
]
OverwriteOption = Annotated[
    bool,
    typer.Option("--overwrite", help="Let an output file replace an existing file that fbbench did not write "
                 "(without it, only a new file or one fbbench wrote is written)."),
]


def check_output_files(json_file: Path | None, report: Path | None, overwrite: bool,
                       inputs: dict[str, Path | None] | None = None) -> None:
    """--json and --report may be written (paths.output_file), checked before anything is run or
    read; they name two files, neither of them one of the command's ``inputs``
    (paths.distinct_outputs)."""
    paths.distinct_outputs({"--json": json_file, "--report": report}, inputs or {})
    for path, flag in ((json_file, "--json"), (report, "--report")):
        if path is not None:
            paths.output_file(path, flag, overwrite)


def _workdir(workdir: Path | None) -> Path:
    return paths.own_workdir(workdir).path


def _credentials(user: str | None, password_file: Path | None) -> Credentials:
    from fbbench.database.manage import Credentials

    password = None
    if password_file is not None:
        try:
            password = password_file.read_text().splitlines()[0] if password_file.read_text() else ""
        except OSError as error:
            raise FbbenchError(f"cannot read the password file {password_file}: {error.strerror}") from None
    elif os.environ.get("ISC_PASSWORD") is not None:
        password = os.environ["ISC_PASSWORD"]
    return Credentials(user or os.environ.get("ISC_USER") or None, password)


def _on_off(value: OnOff | None) -> bool | None:
    return None if value is None else value is OnOff.on


def _print_error(message: str, hint: str | None = None) -> None:
    errors.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    if hint:
        errors.print(f"[yellow]hint:[/] {escape(hint)}", highlight=False, soft_wrap=True)


def _notices() -> Notices:
    """What runs tell the user as they start, printed alike for run, sweep and paired runs."""
    from fbbench.runner.run import Notices

    return Notices(leftovers=_print_leftovers, others=_print_other_runs)


def _print_leftovers(removed: list[str]) -> None:
    console.print(f"removed what killed runs or commands left behind: {', '.join(removed)}", highlight=False,
                  soft_wrap=True)


def _print_other_runs(others: list[str]) -> None:
    console.print(f"[yellow]warning:[/] another fbbench run is at work on this machine: {escape(', '.join(others))}; "
                  "the two take CPU, memory and disk from each other, so neither measures the machine alone "
                  "(the run goes on)", highlight=False, soft_wrap=True)


def _print_static_lint(findings: list[Any]) -> None:
    """The static rules' findings before a run, as warnings: the run goes on (the user may mean it,
    as the orders workload's variant=flawed does), but the stored run carries them."""
    from fbbench.report.console import finding_lines

    if not findings:
        return
    console.print(f"[yellow]warning:[/] the credibility lint found {len(findings)} problem(s) before the run "
                  "(it goes on):", highlight=False, soft_wrap=True)
    for line in finding_lines([{**finding.to_dict(), "severity": "warning"} for finding in findings]):
        console.print(line, highlight=False, soft_wrap=True)
    if any(f.severity == "error" for f in findings):
        console.print("  [yellow]a comparison that uses this run will be refused unless --force[/]",
                      highlight=False, soft_wrap=True)
