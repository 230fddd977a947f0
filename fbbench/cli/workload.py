"""``fbbench workload from-trace``: an application's trace turned into a workload directory."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from fbbench.cli.common import console
from fbbench.errors import FbbenchError

workload_app = typer.Typer(help="Workloads made from what an application did.", no_args_is_help=True)


@workload_app.command("from-trace")
def from_trace(
    trace: Annotated[Path, typer.Argument(help="A trace file (fbbench trace record, run --trace, or fbtracemgr).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The workload directory to write (new or empty).")],
    name: Annotated[str | None, typer.Option("--name", help="The workload's name (default: the directory's).")]
    = None,
) -> None:
    """Turn a trace of an application into an ordinary workload directory: each transaction shape a
    unit weighted by its frequency, the SQL exactly as traced, parameters drawn from what the trace
    saw (a value two statements of a transaction were both given, drawn once for both), think time
    from the gaps between transactions; and a README saying what it covers (share of transactions,
    statements and engine time), the connections to run it with, and what it leaves out, and why.

    Example: `fbbench workload from-trace app.trace -o myapp/` then
    `fbbench run myapp/ --database-from app.fbk --engine 5.0`
    """
    from fbbench.trace.parser import parse_file
    from fbbench.workloads.from_trace import generate, verify_readable, write

    chosen = name or output.resolve().name
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", chosen):
        raise FbbenchError(f"'{chosen}' is not a workload name (letters, digits, _ . -)", hint="give --name")
    generated = generate(parse_file(trace), trace, chosen)
    write(output, generated)
    verify_readable(output)
    summary = generated.summary
    console.print(f"{output}: {summary['units']} unit(s) covering {summary['covered']:,} of the trace's "
                  f"{summary['transactions']:,} complete transactions"
                  + (f"; {summary['excluded_shapes']} transaction shape(s) left out" if summary["excluded_shapes"]
                     else ""), highlight=False, soft_wrap=True)
    console.print(f"  what it represents and leaves out: {output / 'README.md'}", highlight=False, soft_wrap=True)
    console.print(f"  run it: fbbench run {output} --database-from YOUR_BACKUP.fbk", highlight=False, soft_wrap=True)
