"""``fbbench results …``: the runs the results store recorded, listed or shown one at a time, and
moved between stores as bundles (export, import)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fbbench import paths
from fbbench.cli.common import OverwriteOption, ResultsOption, check_output_files, console
from fbbench.errors import FbbenchError
from fbbench.sizes import size_text

results_app = typer.Typer(help="The results store: every run fbbench recorded.", no_args_is_help=True)


@results_app.command("list")
def results_list(
    results: ResultsOption = None,
    limit: Annotated[int, typer.Option(help="How many runs, newest first.")] = 30,
) -> None:
    """List recorded runs, newest first.

    Example: `fbbench results list`
    """
    from fbbench.analysis.figures import metric_unit
    from fbbench.store import ResultsStore

    store_path = (results or paths.default_results()).expanduser()
    if not store_path.exists():  # nothing recorded yet: an empty list, and no store made by a read
        console.print(f"no runs yet: {store_path} does not exist (fbbench run makes it)", highlight=False,
                      soft_wrap=True)
        return
    with ResultsStore(store_path, create=False) as store:
        runs = store.list_runs(limit)
    table = Table(title=f"runs in {results or paths.default_results()}", caption="series: compare takes its id")
    series = [f"{item['series_id']} #{item['repeat_index']}" if item.get("series_id") else "" for item in runs]
    # Run and series ids are what the user copies into the next command: those columns never fold
    # on a terminal, where the others wrap; piped (to grep, a log, a script), every row is one line.
    table.add_column("run", no_wrap=True, min_width=max((len(item["run_id"]) for item in runs), default=3))
    table.add_column("series", no_wrap=True, min_width=max(map(len, series), default=6))
    table.add_column("started", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for column in ("workload", "engine", "conn.", "headline", "metrics", "tags"):
        table.add_column(column, overflow="fold")
    for item, in_series in zip(runs, series, strict=True):
        summary = item["summary"]
        table.add_row(item["run_id"], in_series, time.strftime("%Y-%m-%d %H:%M", time.localtime(item["started_at"])),
                      item["status"], item["workload"], item["engine_version"] or item["engine_label"] or "?",
                      str(item["settings"].get("connections", "")), headline_text(summary),
                      ", ".join(f"{k} {v:,.0f}{metric_unit(item['metrics_per_minute'].get(k, False))}"
                                for k, v in (summary.get("metrics") or {}).items() if v is not None),
                      escape(", ".join(item["settings"].get("tags") or [])))
    if console.is_terminal:
        console.print(table)
    else:  # as wide as the rows need (a console prints no wider than its own width)
        natural = console.measure(table, options=console.options.update(max_width=2**16)).maximum
        Console(file=console.file, width=max(natural, console.width)).print(table)


@results_app.command("show")
def results_show(
    run_id: Annotated[str, typer.Argument(help="Run id (a unique prefix, or 'last').")],
    results: ResultsOption = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Also write the run result (JSON) here.")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Also write the HTML report here.")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Show one recorded run: the same summary as at the end of the run.

    Example: `fbbench results show last --report last.html`
    """
    from fbbench.analysis.run import result_document
    from fbbench.report import console as summary
    from fbbench.report.outputs import write_outputs
    from fbbench.store import ResultsStore

    check_output_files(json_file, report, overwrite, {"the results store": results or paths.default_results()})
    with ResultsStore(results or paths.default_results(), create=False) as store:
        stored = store.load_run(run_id)
    document = result_document(stored)
    summary.print_summary(document, console)
    written, problems = write_outputs(document, json_file, report, stored.get("firebird_log") or "",
                                      overwrite=overwrite)
    for line in written:
        console.print(line, highlight=False, soft_wrap=True)
    if problems:
        raise FbbenchError("; ".join(problems))


def runs_named(store: Any, items: list[str]) -> tuple[list[str], list[str], list[str]]:
    """The run ids, sweep ids and track series ids that ``items`` name: a run (id, prefix, last,
    last~N), a series (s…), a sweep (w…: its runs and the sweep itself), a track series (t…) or a
    whole track suite (track:SUITE: its series, with the runs of their points)."""
    from fbbench.store import track as tracked

    run_ids: list[str] = []
    sweep_ids: list[str] = []
    track_ids: list[str] = []
    for text in (item.strip() for item in items):
        if not text:
            raise FbbenchError("an empty id", hint="name runs, series (s…) or sweeps (w…) by id or unique prefix")
        if text.startswith("track:"):
            suite = text.removeprefix("track:")
            series = tracked.series_of(store, suite)
            if not series:
                known = ", ".join(tracked.suites(store)) or "none"
                raise FbbenchError(f"no track suite '{suite}' in {store.path}", hint=f"its suites: {known}")
            track_ids += [s.series_id for s in series]
        elif text.startswith("t") and store.db.execute("select 1 from track_series where series_id = ?",
                                                        (text,)).fetchone():
            track_ids.append(text)
        elif text.startswith("w") and ":" not in text:
            sweep_id = store.resolve_sweep_id(text)
            sweep_ids.append(sweep_id)
            run_ids += [run["run_id"] for run in store.load_sweep(sweep_id)["runs"]]
        elif text.startswith("s") or ":" in text:  # a series, or a sweep's cell (SWEEP:CELL)
            series = store.resolve_series_id(text)
            if series is None:
                raise FbbenchError(f"no series '{text}' in {store.path}",
                                   hint="fbbench results list shows each run's series")
            run_ids += store.series_runs(series)
        else:
            run_ids.append(store.resolve_run_id(text))
    return list(dict.fromkeys(run_ids)), list(dict.fromkeys(sweep_ids)), list(dict.fromkeys(track_ids))


@results_app.command("export")
def results_export(
    items: Annotated[list[str], typer.Argument(help="Runs (id, unique prefix, last, last~N), series (s…), sweeps "
                                               "(w…), track series (t…) or suites (track:SUITE).", show_default=False,
                                               metavar="RUN|SERIES|SWEEP|TRACK")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The bundle file to write (one file: every stored "
                                         "row of those runs, versioned and checksummed).", show_default=False)],
    results: ResultsOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Write runs, series or sweeps to one bundle file that another results store imports.

    Examples: `fbbench results export last -o run.fbbundle` · `fbbench results export S_ID W_ID -o lab.fbbundle`
    """
    from fbbench.store import ResultsStore, bundle, exchange

    paths.output_file(output, "--output", overwrite)
    store_path = results or paths.default_results()
    with ResultsStore(store_path, create=False) as store:
        run_ids, sweep_ids, track_ids = runs_named(store, items)
        document = exchange.export_bundle(store, run_ids, sweep_ids, track_ids)
    size = bundle.write(output, document)
    sweeps = f" and {len(sweep_ids)} sweep(s)" if sweep_ids else ""
    sweeps += f" and {len(track_ids)} track series" if track_ids else ""
    run_ids = document["runs"]
    console.print(f"wrote {len(run_ids)} run(s){sweeps} to {output} ({size_text(size, binary=True)})", highlight=False,
                  soft_wrap=True)


@results_app.command("import")
def results_import(
    files: Annotated[list[Path], typer.Argument(help="Bundle files (fbbench results export).", show_default=False,
                                                metavar="FILE")],
    results: ResultsOption = None,
) -> None:
    """Add the runs of bundle files to the results store. A run already there (same id, same rows)
    is not added twice; one there with other rows is never overwritten (the bundle is refused).

    Example: `fbbench results import ssd-box.fbbundle hdd-box.fbbundle`
    """
    from fbbench.store import ResultsStore, bundle, exchange

    documents = [(path, bundle.read(path)) for path in files]  # every file checked before any import
    store_path = results or paths.default_results()
    paths.writable_file(store_path, "the results store (--results)")
    with ResultsStore(store_path) as store:
        for path, document in documents:
            added, already = exchange.import_bundle(store, document, str(path))
            said = f"{path}: {len(added)} run(s) added"
            if already:
                said += f", {len(already)} already in the store"
            empty = exchange.listed_without_rows(document)
            if empty:
                said += (f"; its list also names {len(empty)} run(s) it holds no row of, not imported: "
                         f"{', '.join(empty[:5])}" + (" …" if len(empty) > 5 else ""))
            if document.get("sweeps"):
                said += f" (sweep {', '.join(document['sweeps'])})"
            if document.get("track_series"):
                said += f"; track series {', '.join(document['track_series'])}"
            console.print(said, highlight=False, soft_wrap=True)


def headline_text(summary: dict[str, Any]) -> str:
    """``score 12,345/min ↑``: the workload's headline figure and which way is better; – if none."""
    from fbbench.report.console import headline_text as text

    return text(summary.get("headline"), summary.get("measured_seconds"))
