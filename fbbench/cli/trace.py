"""``fbbench trace record``: capture an application's statements with the Firebird trace."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from fbbench.cli.common import PasswordFileOption, UserOption, WorkdirOption, _credentials, _workdir, console
from fbbench.errors import FbbenchError

trace_app = typer.Typer(help="Capture an application's statements with the Firebird trace.", no_args_is_help=True)


@trace_app.command("record")
def trace_record(
    output: Annotated[Path, typer.Option("--output", "-o", help="The trace file to write (a new file).")],
    engine: Annotated[str, typer.Option("--engine", "-e", help="The server, as a DSN (host/port:/path/db.fdb); "
                                        "its database is the one traced unless --database names another.")],
    database: Annotated[str | None, typer.Option("--database", help="Trace only attachments to the database of "
                                                 "this file name (default: the DSN's; '*' for every database).")]
    = None,
    duration: Annotated[str | None, typer.Option("--duration", "-d", help="How long to record, e.g. 10m "
                                                 "(default: until Ctrl-C).")] = None,
    user: UserOption = None,
    password_file: PasswordFileOption = None,
    workdir: WorkdirOption = None,
) -> None:
    """Record a trace of what applications do on a server: attachments, transactions (with their
    parameters), every statement with its parameter values, procedure and function calls, errors —
    with no time threshold and no length limit that would cut SQL text or arguments. The session
    streams into the file until the duration is over, Ctrl-C (what the server logged until then
    is read first; a second Ctrl-C stops at once), or the server goes away; reading a trace
    attaches no database. Then: what it captured, and what stopped it. The exit code is 0
    whatever stopped it (what was captured until then is a trace like any other; the summary says
    why it stopped, and whether the engine suspended the session); 2 if it could not record (the
    server cannot be reached — no file is left then — or it refused the session).

    Examples: `fbbench trace record --engine dbhost/3050:/data/app.fdb --duration 10m -o app.trace`
    · `fbbench workload from-trace app.trace -o myapp/` · `fbbench replay app.trace --database-from app.fbk`
    """
    from fbbench import paths
    from fbbench.engines import ManagedEngine, ServerEngine, parse_engine, prepare_runtime, run_in_engine
    from fbbench.runner.settings import parse_duration

    seconds = parse_duration(duration, "--duration") if duration is not None else None
    if seconds is not None and seconds <= 0:
        raise FbbenchError("--duration must be longer than 0 seconds")
    server = parse_engine(engine)
    if isinstance(server, ManagedEngine):
        raise FbbenchError(f"fbbench trace record traces a server that is running; {server.label} is a server fbbench "
                           "starts for a run and stops after it, so there is nothing of it to trace now",
                           hint=f"record a run on it: fbbench run … --engine {engine} --trace FILE; or give the DSN "
                                "of a running server")
    if not isinstance(server, ServerEngine):
        raise FbbenchError(f"fbbench trace record traces a server; {server.label} is not one",
                           hint="an embedded engine lives inside its application's process: record a trace of "
                                "an fbbench run with fbbench run … --trace FILE, or give the server's DSN")
    if output.exists():
        raise FbbenchError(f"{output} already exists", hint="fbbench never overwrites a file; choose a new name")
    paths.writable_file(output, "the trace file (-o)")
    credentials = _credentials(user, password_file)
    if credentials.password is None:
        raise FbbenchError(f"a password is needed for {server.label}",
                           hint="give --password-file FILE or set ISC_PASSWORD")
    name = None if database == "*" else (database or server.path)
    host = server.host + (f"/{server.port}" if server.port else "")
    work = _workdir(workdir)
    runtime = prepare_runtime(server, work, user=credentials.user, password=credentials.password)
    console.print(f"recording a trace of {name or 'every database'} on {server.label} into {output}"
                  + (f" for {duration}" if duration else " until Ctrl-C"), highlight=False, soft_wrap=True)
    try:
        summary = run_in_engine(runtime, "fbbench.trace.capture:record", host, name, str(output.absolute()), seconds,
                                {"engine": server.label})
    finally:
        runtime.remove(work)
    print_summary(summary)
    if summary["session_errors"]:
        raise FbbenchError(f"the server refused the trace session: {'; '.join(summary['session_errors'])}")


def print_summary(summary: dict[str, Any]) -> None:
    """What a capture holds: one block, the same after trace record and run --trace."""
    seconds = summary.get("seconds")
    span = f"{seconds:,.1f} s" if isinstance(seconds, int | float) else "no event"
    console.print(f"trace {summary['file']}: {summary['bytes']:,} bytes, {span} from {summary.get('first_event')} to "
                  f"{summary.get('last_event')}; stopped: {summary['stopped']}", highlight=False, soft_wrap=True)
    console.print(f"  {summary['attachments']} attachment(s), {summary['transactions']} transaction(s) started "
                  f"({summary['committed']} committed, {summary['rolled_back']} rolled back), "
                  f"{summary['statements']} statement execution(s)", highlight=False, soft_wrap=True)
    own = summary.get("own_attachments") or {}
    if own:
        console.print(f"  left out: fbbench's own attachment(s) {', '.join(str(k) for k in own)}",
                      highlight=False, soft_wrap=True)
    if summary.get("suspended"):
        console.print(f"  [bold red]the engine suspended the session[/] ({summary['suspended'][0]}): what the "
                      "application did after that is missing from the trace (its reader fell behind; a larger "
                      "MaxUserTraceLogSize on the server gives it more room)", highlight=False, soft_wrap=True)
    if summary.get("reader_error"):
        console.print(f"  the session ended: {summary['reader_error']}", highlight=False, soft_wrap=True)
