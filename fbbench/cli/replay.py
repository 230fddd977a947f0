"""``fbbench replay``: a trace of an application replayed on a copy of its database, as a run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fbbench.cli.common import (
    INTERRUPTED,
    OnOff,
    OverwriteOption,
    PasswordFileOption,
    ResultsOption,
    UserOption,
    WorkdirOption,
    _credentials,
    _notices,
    _on_off,
    _print_static_lint,
)


def replay(
    trace: Annotated[Path, typer.Argument(help="The trace to replay (fbbench trace record, run --trace).")],
    database_from: Annotated[Path, typer.Option(
        "--database-from", help="The gbak backup of the database the trace began on: the replay runs on a copy "
        "restored from it (your file is only read).")],
    engine: Annotated[str | None, typer.Option("--engine", "-e", help="5.0 (default), 4.0, 3.0, server:DIR or a "
                                               "DSN.")] = None,
    speed: Annotated[float | None, typer.Option("--speed", help="Replay this many times as fast as traced "
                                                "(2.0: in half the time).")] = None,
    order: Annotated[str | None, typer.Option(
        "--order", help="timed (default): each attachment at its traced times, no order across attachments; "
        "strict: every action after those traced before it (a stall is given up and reported).")] = None,
    repeat: Annotated[int | None, typer.Option("--repeat", help="Replay it N times, each on a fresh copy of the "
                                               "restored database: one series (for fbbench compare).")] = None,
    interval: Annotated[str | None, typer.Option("--interval", help="Reporting interval, e.g. 10s.")] = None,
    set_conf: Annotated[list[str] | None, typer.Option("--set", help="firebird.conf Key=Value for this run "
                                                       "(embedded engines).")] = None,
    architecture: Annotated[str | None, typer.Option("--architecture", help="super or superclassic.")] = None,
    page_size: Annotated[int | None, typer.Option("--page-size", help="Page size of the restored "
                                                  "database.")] = None,
    page_buffers: Annotated[int | None, typer.Option("--page-buffers", help="Database page cache size.")] = None,
    forced_writes: Annotated[OnOff | None, typer.Option("--forced-writes", help="on or off.")] = None,
    no_sweep: Annotated[bool, typer.Option("--no-sweep", help="Skip the sweep before replaying.")] = False,
    no_monitor: Annotated[bool, typer.Option("--no-monitor", help="Do not watch the engine (no MON$ sampling, "
                                             "no gstat).")] = False,
    keep_database: Annotated[bool, typer.Option("--keep-database", help="Keep the replayed database.")] = False,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Free text recorded with the run.")] = None,
    workdir: WorkdirOption = None,
    results: ResultsOption = None,
    json: Annotated[Path | None, typer.Option("--json", help="Write the run result (JSON) here.")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Write the HTML report here.")] = None,
    overwrite: OverwriteOption = False,
    user: UserOption = None,
    password_file: PasswordFileOption = None,
) -> None:
    """Replay a trace of an application on a copy of its database restored from its backup: one
    attachment per traced attachment, each transaction with its traced parameters, every statement
    with its traced values, at the traced times (--speed scales them) or in the traced order
    (--order strict). A run like any other — stored, reported, comparable with `fbbench compare` —
    that also measures each statement's latency against the traced one, the lag behind the traced
    schedule, and every divergence from the trace (an error it did not have, other rows returned
    or changed): a replay that diverges early measures something else.

    Examples: `fbbench replay app.trace --database-from app.fbk --engine 4.0` ·
    `fbbench replay app.trace --database-from app.fbk --engine 5.0 --speed 2` ·
    `fbbench compare last~1 last --axis engine` ·
    `fbbench replay app.trace --database-from app.fbk --engine 3.0 --repeat 3` (then compare the series)
    """
    from fbbench.cli.run import _conclude_run, _print_series
    from fbbench.runner.run import execute_series, static_findings
    from fbbench.runner.settings import from_sources

    flags = {"workload": str(trace), "replay": str(trace), "database_from": str(database_from), "engine": engine,
             "speed": speed, "order": order, "repeat": repeat, "interval": interval, "architecture": architecture,
             "page_size": page_size, "page_buffers": page_buffers, "forced_writes": _on_off(forced_writes),
             "sweep": False if no_sweep else None, "monitor": False if no_monitor else None,
             "keep_database": keep_database or None, "tags": tag, "workdir": str(workdir) if workdir else None,
             "results": str(results) if results else None, "json": str(json) if json else None,
             "report": str(report) if report else None, "overwrite": overwrite or None, "user": user}
    settings = from_sources(None, flags, conf=set_conf)
    credentials = _credentials(settings.user, password_file)
    settings.user = credentials.user
    _print_static_lint(static_findings(settings))
    codes: list[int] = []
    series_id, outcomes = execute_series(settings, credentials.password, notices=_notices(),
                                         on_run=lambda outcome: codes.append(_conclude_run(outcome, settings)))
    if series_id is not None:
        _print_series(series_id, outcomes)
    code = next((c for c in codes if c == INTERRUPTED), max(codes, default=0))
    if code:
        raise typer.Exit(code)
