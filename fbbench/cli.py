"""The ``fbbench`` command line: thin — each command hands over to its module."""

from __future__ import annotations

import json
import os
import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fbbench import __version__, paths, signals
from fbbench.errors import FbbenchError

# Piped output gets 120 columns instead of rich's 80, so tables and the live line stay readable in logs.
console = Console(width=None if sys.stdout.isatty() else 120)
errors = Console(stderr=True, width=None if sys.stderr.isatty() else 120)

app = typer.Typer(
    name="fbbench",
    help="A performance lab for the Firebird RDBMS: create, fill and drive benchmark databases, "
    "watch the engine, and report credibly how fast it was.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)
engines_app = typer.Typer(help="Firebird engines: the embedded 3.0 / 4.0 / 5.0 runtimes from PyPI, and local "
                          "installations whose server fbbench starts itself.", no_args_is_help=True)
db_app = typer.Typer(help="Benchmark databases: create, describe, drop (only fbbench's own).",
                     no_args_is_help=True)
app.add_typer(engines_app, name="engines")
app.add_typer(db_app, name="db")


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
    typer.Option("--engine", "-e", help="5.0, 4.0, 3.0 (embedded) or a full version such as 5.0.4."),
]


def _workdir(workdir: Path | None) -> Path:
    chosen = (workdir or paths.default_workdir()).expanduser().resolve()
    chosen.mkdir(parents=True, exist_ok=True)
    return chosen


def _credentials(user: str | None, password_file: Path | None):
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


# --------------------------------------------------------------------------------------- engines


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


@app.command()
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


# -------------------------------------------------------------------------------------- database


@db_app.command("create")
def db_create(
    path: Annotated[str, typer.Argument(help="Database file, or a server DSN host/port:/path.fdb.")],
    engine: EngineOption = None,
    page_size: Annotated[int | None, typer.Option(help="4096, 8192, 16384 or 32768 (4.0+).")] = None,
    forced_writes: Annotated[OnOff | None, typer.Option(help="Synchronous writes on or off.")] = None,
    page_buffers: Annotated[int | None, typer.Option(help="Page cache size stored in the database.")] = None,
    sweep_interval: Annotated[int | None, typer.Option(help="Automatic sweep interval (0 = off).")] = None,
    user: UserOption = None,
    password_file: PasswordFileOption = None,
    workdir: WorkdirOption = None,
) -> None:
    """Create a database that fbbench owns (marked, so fbbench may later fill or drop it).

    Examples: `fbbench db create /tmp/x.fdb --engine 4.0 --page-size 16384` ·
    `ISC_PASSWORD=... fbbench db create localhost/3050:/data/b.fdb --forced-writes off`
    """
    from fbbench.database import manage

    details = manage.create(path, engine, _workdir(workdir), _credentials(user, password_file),
                            page_size=page_size, forced_writes=_on_off(forced_writes),
                            page_buffers=page_buffers, sweep_interval=sweep_interval)
    console.print(f"created {details['location']} ({details['engine']}, Firebird {details['engine_version']}, "
                  f"page size {details['page_size']})")


@db_app.command("info")
def db_info(
    path: Annotated[str, typer.Argument(help="Database file, or a server DSN.")],
    engine: EngineOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    user: UserOption = None,
    password_file: PasswordFileOption = None,
    workdir: WorkdirOption = None,
) -> None:
    """Describe a database: engine, ODS, page size, buffers, forced writes, sweep, state, size,
    creation time, GUID, OIT/OAT/OST/Next, and whether fbbench owns it. Read from the header page
    without attaching (a server's through its services API); only fbbench's own databases are
    attached, for what only an attachment shows.

    Example: `fbbench db info /tmp/x.fdb`
    """
    from fbbench.database import manage

    details = manage.info(path, engine, _workdir(workdir), _credentials(user, password_file))
    if as_json:
        console.print_json(json.dumps(details, default=str))
        return
    table = Table(show_header=False, title=details["location"])
    unknown = "unknown (not attached: fbbench does not own it)"
    engine_text = f"Firebird {details['engine_version']}"
    if details["server_version"]:
        engine_text += f" ({details['server_version']})"
    size = (f"{details['size_bytes']:,} bytes ({details['pages']:,} pages)" if details["pages"] is not None
            else unknown)
    buffers = details["page_buffers"]
    states = [name for name, on in (("read only", details["read_only"]), ("no reserve", not details["reserve_space"]),
                                    ("encrypted", details["encrypted"])) if on]
    states += [f"shutdown {details['shutdown_mode']}"] if details["shutdown_mode"] != "online" else []
    states += [f"backup {details['backup_state']}"] if details["backup_state"] != "normal" else []
    states += [f"{details['replica_mode']} replica"] if details["replica_mode"] != "none" else []
    rows = [
        ("engine", f"{engine_text}, {details['engine']}"),
        ("architecture", details["architecture"] or unknown),
        ("ODS", details["ods"]), ("page size", details["page_size"]),
        ("page buffers", f"{buffers} (engine default)" if buffers == 0 else buffers),
        ("forced writes", "on" if details["forced_writes"] else "off"),
        ("sweep interval", details["sweep_interval"]),
        ("dialect", details["dialect"]),
        ("state", ", ".join(states) or "online, read-write"),
        ("size", size),
        ("created", details["created_at"]),
        ("GUID", details["guid"] or "none (Firebird 3 databases have none)"),
        ("OIT / OAT / OST / Next", f"{details['oldest_transaction']} / {details['oldest_active']} / "
                                   f"{details['oldest_snapshot']} / {details['next_transaction']}"),
        ("next attachment", details["next_attachment"]),
        ("owned by fbbench", "yes" if details["owned_by_fbbench"] else "no"),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    console.print(table)


@db_app.command("drop")
def db_drop(
    path: Annotated[str, typer.Argument(help="Database file, or a server DSN.")],
    engine: EngineOption = None,
    user: UserOption = None,
    password_file: PasswordFileOption = None,
    workdir: WorkdirOption = None,
) -> None:
    """Drop a database fbbench created. Any other database is refused, untouched.

    Example: `fbbench db drop /tmp/x.fdb`
    """
    from fbbench.database import manage

    manage.drop(path, engine, _workdir(workdir), _credentials(user, password_file))
    console.print(f"dropped {path}")


# ------------------------------------------------------------------------------------------- run

results_app = typer.Typer(help="The results store: every run fbbench recorded.", no_args_is_help=True)
app.add_typer(results_app, name="results")

ResultsOption = Annotated[
    Path | None,
    typer.Option("--results", help="Results store (SQLite). Default: $FBBENCH_HOME/results.sqlite."),
]


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def run(
    workload: Annotated[str | None, typer.Argument(help="Built-in workload (tpcc) or a workload directory.")] = None,
    spec: Annotated[Path | None, typer.Option("--spec", help="TOML file with run settings; flags override it.")] = None,
    engine: Annotated[str | None, typer.Option("--engine", "-e", help="5.0 (default), 4.0, 3.0, or a DSN.")] = None,
    scale: Annotated[list[str] | None, typer.Option("--scale", help="Workload scale, e.g. warehouses=4.")] = None,
    connections: Annotated[int | None, typer.Option("--connections", "-c", help="Attachments doing the work.")] = None,
    warmup: Annotated[str | None, typer.Option("--warmup", help="Warm-up before measuring, e.g. 30s.")] = None,
    duration: Annotated[str | None, typer.Option("--duration", "-d", help="Measured period, e.g. 5m.")] = None,
    transactions: Annotated[int | None, typer.Option("--transactions", help="Fixed work: units per attachment "
                                                     "(instead of a timed run).")] = None,
    repeat: Annotated[int | None, typer.Option("--repeat", help="Run the same conditions N times, each from a "
                                               "fresh copy of the database: one series.")] = None,
    interval: Annotated[str | None, typer.Option("--interval", help="Reporting interval, e.g. 10s.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed: same seed, same units and parameters.")] = None,
    set_conf: Annotated[list[str] | None, typer.Option("--set", help="firebird.conf Key=Value for this run "
                                                       "(embedded engines).")] = None,
    architecture: Annotated[str | None, typer.Option(
        "--architecture", help="super, superclassic or classic (ServerMode; Classic embedded: one process per "
        "attachment). Verified from MON$ATTACHMENTS.")] = None,
    page_size: Annotated[int | None, typer.Option("--page-size", help="Database page size.")] = None,
    page_buffers: Annotated[int | None, typer.Option("--page-buffers", help="Database page cache size (default: "
                                                     "the architecture's, 2048 Super, 256 per attachment "
                                                     "otherwise).")] = None,
    forced_writes: Annotated[OnOff | None, typer.Option("--forced-writes", help="on or off.")] = None,
    no_sweep: Annotated[bool, typer.Option("--no-sweep", help="Skip the sweep before measuring.")] = False,
    no_monitor: Annotated[bool, typer.Option("--no-monitor", help="Do not watch the engine (no MON$ sampling per "
                                             "interval, no gstat); DB-side metrics are still read.")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="Rebuild the populated database instead of copying "
                                        "the cached one.")] = False,
    grow: Annotated[str | None, typer.Option("--grow", help="Scale parameter (e.g. warehouses): extend the "
                                             "largest cached smaller population instead of building anew.")] = None,
    load_connections: Annotated[int | None, typer.Option("--load-connections", help="Attachments for "
                                                         "population (default: CPU count).")] = None,
    rate: Annotated[float | None, typer.Option("--rate", help="Target units/s in total (open loop; latency "
                                               "then includes queueing).")] = None,
    connect_rate: Annotated[float | None, typer.Option("--connect-rate", help="New attachments per second "
                                                       "during ramp-up (0 = all at once).")] = None,
    keep_database: Annotated[bool, typer.Option("--keep-database", help="Keep the run's database copy.")] = False,
    allow_many_connections: Annotated[bool, typer.Option(
        "--allow-many-connections", help="Allow more than 1,000 attachments (memory and process limits are "
        "still checked).")] = False,
    fail_on_checks: Annotated[bool, typer.Option("--fail-on-checks", help="Exit with code 3 when a consistency "
                                                 "check fails (for CI).")] = False,
    fail_on_audits: Annotated[bool, typer.Option("--fail-on-audits", help="Exit with code 3 when an audit is "
                                                 "outside its bounds.")] = False,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Free text recorded with the run.")] = None,
    workdir: WorkdirOption = None,
    results: ResultsOption = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write the run result (JSON) here.")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Write the HTML report here (default: next to "
                                                "the results store, named after the run).")] = None,
    user: UserOption = None,
    password_file: PasswordFileOption = None,
) -> None:
    """Run a benchmark: runtime, database (populated, cached), sweep, warm-up, measure, checks;
    recorded in the results store, summarised, with JSON and HTML reports.

    Examples:

    * `fbbench run tpcc --connections 4 --warmup 20s --duration 60s`
    * `fbbench run tpcc --engine 4.0 --scale warehouses=4 --architecture superclassic --json r.json`
    * `fbbench run ./my-workload --transactions 1000 -c 1`
    * `ISC_PASSWORD=... fbbench run tpcc --engine db1/3050:/data/bench.fdb`
    """
    from fbbench.settings import from_sources

    flags = {
        "workload": workload, "engine": engine, "connections": connections, "transactions": transactions,
        "seed": seed, "repeat": repeat, "page_size": page_size, "page_buffers": page_buffers,
        "architecture": architecture,
        "forced_writes": _on_off(forced_writes),
        "load_connections": load_connections, "grow": grow, "target_rate": rate, "connect_rate": connect_rate,
        "workdir": str(workdir) if workdir else None, "results": str(results) if results else None,
        "json": str(json_file) if json_file else None, "report": str(report) if report else None, "user": user,
        "warmup": warmup, "duration": duration, "interval": interval, "tags": tag,
        # Switches only ever turn their setting on (or, --no-sweep, off): absent means "as the spec says".
        "sweep": False if no_sweep else None, "monitor": False if no_monitor else None, "fresh": fresh or None,
        "keep_database": keep_database or None,
        "allow_many_connections": allow_many_connections or None, "fail_on_checks": fail_on_checks or None,
        "fail_on_audits": fail_on_audits or None,
    }
    settings = from_sources(spec, flags, scale, set_conf)
    credentials = _credentials(settings.user, password_file)
    settings.user = credentials.user

    from fbbench.errors import Interrupted
    from fbbench.runner.run import RunOutcome, execute_series, static_findings

    _print_static_lint(static_findings(settings))

    def leftovers(removed: list[str]) -> None:
        console.print(f"removed what killed runs left behind: {', '.join(removed)}", highlight=False,
                      soft_wrap=True)

    codes: list[int] = []

    def finished(outcome: RunOutcome) -> None:
        codes.append(_conclude_run(outcome, settings))

    series_id, outcomes = execute_series(settings, credentials.password, on_leftovers=leftovers, on_run=finished)
    if series_id is not None:
        _print_series(series_id, outcomes)
    code = next((c for c in codes if c == Interrupted.exit_code), max(codes, default=0))
    if code:
        raise typer.Exit(code)


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


def _conclude_run(outcome: Any, settings: Any) -> int:
    """Summary, JSON and HTML of one finished run; its exit code (0, 1 failed, 2 outputs, 3 checks, 130)."""
    json_file, report = settings.json, settings.report
    if outcome.repeat_index is not None:  # one file per repeat: r.json → r-1.json, r-2.json …
        json_file, report = (str(_numbered(Path(p), outcome.repeat_index)) if p else None for p in (json_file, report))
    document, problems = _report_run(outcome.run_id, outcome.results, json_file, report)
    code = outcome.exit_code
    if outcome.status == "failed":  # the summary shows what was kept; stderr says what went wrong
        _print_error(f"the run failed: {outcome.failure or 'no reason recorded'}", outcome.hint)
    elif code == 0:
        failed = [c["name"] for c in document.get("checks", []) if c["passed"] is False]
        if settings.fail_on_audits:
            failed += [a["name"] for a in document.get("audits", []) if a["passed"] is False]
        if failed and (settings.fail_on_checks or settings.fail_on_audits):
            _print_error(f"{len(failed)} check(s) failed: {'; '.join(failed)}")
            code = CHECKS_FAILED
    for problem in problems:
        _print_error(problem, f"the run is recorded: fbbench results show {outcome.run_id} --results {outcome.results}")
    if problems and not code:
        code = FbbenchError.exit_code
    return code


def _numbered(path: Path, index: int) -> Path:
    return path.with_name(f"{path.stem}-{index}{path.suffix}")


def _print_series(series_id: str, outcomes: list[Any]) -> None:
    from fbbench.report.console import print_series
    from fbbench.report.model import result_document
    from fbbench.store import ResultsStore

    with ResultsStore(outcomes[0].results, create=False) as store:
        documents = [result_document(store.load_run(run_id)) for run_id in store.series_runs(series_id)]
    print_series(series_id, documents, console)


CHECKS_FAILED = 3  # --fail-on-checks / --fail-on-audits: the run completed, its checks did not pass


def _report_run(run_id: str, results: Path, json_file: str | None,
                report: str | None) -> tuple[dict[str, Any], list[str]]:
    """Summary on the console, then JSON and HTML; returns the document and what could not be written."""
    from fbbench.report import console as summary
    from fbbench.report.model import result_document
    from fbbench.report.outputs import write_outputs
    from fbbench.store import ResultsStore

    with ResultsStore(results, create=False) as store:
        stored = store.load_run(run_id)
    document = result_document(stored)
    summary.print_summary(document, console)
    target = Path(report) if report else results.parent / "reports" / f"{run_id}.html"
    written, problems = write_outputs(document, Path(json_file) if json_file else None, target,
                                      stored.get("firebird_log") or "")
    for line in written:
        console.print(line, highlight=False, soft_wrap=True)
    console.print(f"results store: {results} (fbbench results show {run_id})", highlight=False, soft_wrap=True)
    return document, problems


def headline_text(summary: dict[str, Any]) -> str:
    """``score 12,345/min ↑``: the workload's headline figure and which way is better; – if none."""
    from fbbench.report.console import headline_text as text

    return text(summary.get("headline"), summary.get("measured_seconds"))


@app.command()
def sweep(
    spec: Annotated[Path | None, typer.Argument(help="Sweep spec (TOML): run settings and a [matrix] of axes.")] = None,
    resume: Annotated[str | None, typer.Option("--resume", help="Finish a sweep that was interrupted or killed "
                                               "(its id, a prefix, or 'last'): only the missing runs.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List the cells, the populations they need and the "
                                          "estimated time; run nothing.")] = False,
    results: ResultsOption = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write the sweep document (JSON) here.")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Write the sweep's HTML report here (default: "
                                                "next to the results store).")] = None,
    password_file: PasswordFileOption = None,
) -> None:
    """Run a matrix of run settings with repeats: one series per cell, repeats interleaved across cells.

    Examples:

    * `fbbench sweep architectures.toml --dry-run`
    * `fbbench sweep architectures.toml --report sweep.html`
    * `fbbench sweep --resume last`
    """
    from fbbench.report.outputs import write_outputs
    from fbbench.store import ResultsStore
    from fbbench.sweep import report as sweep_report
    from fbbench.sweep import run as sweep_run
    from fbbench.sweep.spec import read_sweep

    if (spec is None) == (resume is None):
        raise FbbenchError("give a sweep spec file, or --resume SWEEP (not both)",
                           hint="e.g. fbbench sweep sweep.toml, or fbbench sweep --resume last")
    store_path = (results or paths.default_results()).expanduser().resolve()
    if resume is not None:
        sweep_id, parsed = sweep_run.resume_spec(store_path, resume)
    else:
        assert spec is not None
        parsed = read_sweep(spec)
    if results is not None:
        parsed.base["results"] = str(store_path)
    base = parsed.settings_for(parsed.cells[0])
    store_path = Path(base.results or paths.default_results()).expanduser().resolve()
    credentials = _credentials(base.user, password_file)
    if dry_run:
        done: set[tuple[int, int]] = set()
        if resume is not None:
            with ResultsStore(store_path, create=False) as store:
                done = sweep_run.done_steps(store.load_sweep(sweep_id))
        store = ResultsStore(store_path, create=False) if store_path.exists() else None
        try:
            for line in sweep_run.plan_text(parsed, sweep_run.steps(parsed, done), store):
                console.print(escape(line), highlight=False)
        finally:
            if store is not None:
                store.close()
        return
    from fbbench.runner.run import check_outputs

    check_outputs(base, store_path)
    if json_file is not None:
        paths.writable_file(json_file, "--json")
    if report is not None:
        paths.writable_file(report, "--report")

    def on_step(step: Any, position: int, total: int, elapsed: float, eta: float) -> None:
        console.print(f"[bold]sweep: run {position} of {total}[/] — cell {step.cell.index} of {len(parsed.cells)} "
                      f"({escape(step.cell.label)}), repeat {step.repeat} of {parsed.repeats}; elapsed "
                      f"{sweep_run.duration_text(elapsed)}, about {sweep_run.duration_text(eta)} left", highlight=False)

    def on_run(step: Any, outcome: Any) -> None:
        from fbbench.report.console import headline_text

        with ResultsStore(outcome.results, create=False) as store:
            summary = store.load_run(outcome.run_id).get("summary") or {}
        figure = headline_text(summary.get("headline"), summary.get("measured_seconds"))
        console.print(f"  run {outcome.run_id}: {outcome.status}; {escape(figure)}"
                      + (f" — {escape(outcome.failure)}" if outcome.failure and outcome.status != "completed" else ""),
                      highlight=False)

    def leftovers(removed: list[str]) -> None:
        console.print(f"removed what killed runs left behind: {', '.join(removed)}", highlight=False, soft_wrap=True)

    outcome = sweep_run.execute_sweep(parsed, credentials.password, resume=resume, on_step=on_step, on_run=on_run,
                                      on_leftovers=leftovers)
    with ResultsStore(outcome.results, create=False) as store:
        document = sweep_report.sweep_document(store, outcome.sweep_id)
    sweep_report.print_sweep(document, console)
    target = report or outcome.results.parent / "reports" / f"{outcome.sweep_id}.html"
    written, problems = write_outputs(document, json_file, None)
    try:
        written.append(f"report: {sweep_report.write_report(document, target)}")
    except OSError as error:
        problems.append(f"cannot write the HTML report {target}: {error.strerror or error}")
    for line in written:
        console.print(line, highlight=False, soft_wrap=True)
    if outcome.status == "interrupted":
        _print_error(f"the sweep was interrupted after {len(outcome.runs)} run(s)",
                     f"finish it with: fbbench sweep --resume {outcome.sweep_id}")
    for problem in problems:
        _print_error(problem)
    code = outcome.exit_code or (FbbenchError.exit_code if problems else 0)
    if code:
        raise typer.Exit(code)


@results_app.command("list")
def results_list(
    results: ResultsOption = None,
    limit: Annotated[int, typer.Option(help="How many runs, newest first.")] = 30,
) -> None:
    """List recorded runs, newest first.

    Example: `fbbench results list`
    """
    from fbbench.store import ResultsStore

    with ResultsStore(results or paths.default_results(), create=False) as store:
        runs = store.list_runs(limit)
    table = Table(title=f"runs in {results or paths.default_results()}")
    # Run ids are what the user copies into the next command: that column never folds.
    table.add_column("run", no_wrap=True, min_width=max((len(item["run_id"]) for item in runs), default=3))
    for column in ("started", "status", "workload", "engine", "conn.", "headline", "metrics"):
        table.add_column(column, overflow="fold")
    # A series id is what compare takes for the repeats of one run --repeat: shown once per series.
    table.add_column("series (compare takes its id)", overflow="fold")
    for item in runs:
        summary = item["summary"]
        series = f"{item['series_id']} #{item['repeat_index']}" if item.get("series_id") else ""
        table.add_row(item["run_id"], time.strftime("%Y-%m-%d %H:%M", time.localtime(item["started_at"])),
                      item["status"], item["workload"], item["engine_version"] or item["engine_label"] or "?",
                      str(item["settings"].get("connections", "")), headline_text(summary),
                      ", ".join(f"{k} {v:,.0f}" for k, v in (summary.get("metrics") or {}).items() if v is not None),
                      series)
    console.print(table)


@results_app.command("show")
def results_show(
    run_id: Annotated[str, typer.Argument(help="Run id (a unique prefix, or 'last').")],
    results: ResultsOption = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Also write the run result (JSON) here.")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Also write the HTML report here.")] = None,
) -> None:
    """Show one recorded run: the same summary as at the end of the run.

    Example: `fbbench results show last --report last.html`
    """
    from fbbench.report import console as summary
    from fbbench.report.model import result_document
    from fbbench.report.outputs import write_outputs
    from fbbench.store import ResultsStore

    with ResultsStore(results or paths.default_results(), create=False) as store:
        stored = store.load_run(run_id)
    document = result_document(stored)
    summary.print_summary(document, console)
    written, problems = write_outputs(document, json_file, report, stored.get("firebird_log") or "")
    for line in written:
        console.print(line, highlight=False, soft_wrap=True)
    if problems:
        raise FbbenchError("; ".join(problems))


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def compare(
    items: Annotated[list[str], typer.Argument(help="Runs or series: a run id (or unique prefix), a series id "
                                               "(s…), last, or last~N (the N-th run before the latest). With "
                                               "--paired: two run spec files.",
                                               show_default=False, metavar="RUN|SERIES|SPEC")],
    baseline: Annotated[str | None, typer.Option("--baseline", help="The side the others are divided by "
                                                 "(default: the first).")] = None,
    axis: Annotated[list[str] | None, typer.Option("--axis", help="The difference the comparison is about, e.g. "
                                                   "engine, page_size, conf.DefaultDbCachePages (repeatable).")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Write the HTML comparison here (default: next "
                                                "to the results store).")] = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write the comparison (JSON) here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Compare different workloads, and give the verdict even "
                                        "when the lint finds errors.")] = False,
    paired: Annotated[bool, typer.Option("--paired", help="Run A and B now, from two run spec files (as run --spec "
                                         "reads), at the same time in pairs, time-shared, and compare them pair by "
                                         "pair.")] = False,
    pairs: Annotated[int, typer.Option("--pairs", help="With --paired: how many pairs of runs.")] = 6,
    turn: Annotated[float, typer.Option("--turn", help="With --paired: seconds each run's engine runs while the "
                                        "other is stopped.")] = 0.1,
    results: ResultsOption = None,
) -> None:
    """Compare runs or series: conditions side by side, every figure as a ratio to the baseline with its
    95 % interval, the engine's work per unit, the credibility lint, and a verdict only where the
    interval excludes no change. Exit code 0 once the comparison is made, valid or not (its JSON says
    `valid`; `fbbench lint` exits 1 on an error, for CI), 2 for input it cannot compare.

    With `--paired SPEC_A SPEC_B`, A and B are run first: N pairs, both runs of a pair at the same
    time on their own database copies, their engines taking turns of 0.1 s, recorded as two series;
    then compared pair by pair. Exit code 1 when a run failed, 130 after Ctrl-C (what was measured
    is kept).

    Examples:

    * `fbbench compare S_BASE S_NEW` (two series from run --repeat)
    * `fbbench compare last~1 last --axis engine --report cmp.html`
    * `fbbench compare A B C --baseline B --axis conf.DefaultDbCachePages --json cmp.json`
    * `fbbench compare --paired base.toml new.toml --pairs 8`
    """
    from fbbench.compare import build
    from fbbench.report import compare as shown
    from fbbench.report.outputs import write_outputs
    from fbbench.store import ResultsStore

    code = 0
    if paired:
        items, store_path, code = _run_pairs(items, pairs, turn, force, results, json_file, report)
        if not items:
            raise typer.Exit(code)
    else:
        store_path = results or paths.default_results()
    with ResultsStore(store_path, create=False) as store:
        document = build(store, items, baseline=baseline, axis=axis, force=force)
    shown.print_comparison(document, console)
    target = report or store_path.expanduser().resolve().parent / "reports" / (
        "compare-" + time.strftime("%Y%m%d-%H%M%S") + ".html")
    written, problems = write_outputs(document, json_file, target, write_report=shown.write)
    for line in written:
        console.print(line, highlight=False, soft_wrap=True)
    if problems:
        raise FbbenchError("; ".join(problems))
    if code:
        raise typer.Exit(code)


def _run_pairs(specs: list[str], pairs: int, turn: float, force: bool, results: Path | None,
               json_file: Path | None, report: Path | None) -> tuple[list[str], Path, int]:
    """compare --paired: run the pairs; the two series to compare (none when no pair ran), the
    results store, and the exit code the command ends with."""
    from fbbench.runner.paired import check_counts, execute_pairs
    from fbbench.runner.run import static_findings
    from fbbench.settings import from_sources

    check_counts(pairs, turn)
    if len(specs) != 2:
        raise FbbenchError(f"--paired takes two run spec files, A and B; got {len(specs)}",
                           hint="e.g. fbbench compare --paired base.toml new.toml --pairs 8")
    sides = []
    for label, text in zip("AB", specs, strict=True):
        spec = Path(text)
        if not spec.is_file():
            raise FbbenchError(f"{label}: no run spec file {spec}" + (" (it is a directory)" if spec.is_dir() else ""),
                               hint="--paired compares two run spec files (TOML, as fbbench run --spec reads)")
        try:
            sides.append(from_sources(spec, {"results": str(results) if results else None}))
        except FbbenchError as error:
            message = error.message if str(spec) in error.message else f"{spec}: {error.message}"
            raise FbbenchError(f"{label}: {message}", hint=error.hint) from None
    for path in (json_file, report):
        if path is not None:
            paths.writable_file(path, "--json" if path is json_file else "--report")
    for label, settings in zip("AB", sides, strict=True):
        findings = static_findings(settings)
        if findings:
            console.print(f"{label}:", highlight=False)
            _print_static_lint(findings)

    def leftovers(removed: list[str]) -> None:
        console.print(f"removed what killed runs left behind: {', '.join(removed)}", highlight=False, soft_wrap=True)

    def on_pair(pair: Any) -> None:
        console.print(_pair_line(pair, pairs), highlight=False, soft_wrap=True)

    a, b = sides
    console.print(f"[bold]paired[/]: {pairs} pair(s) of A ({escape(specs[0])}) and B ({escape(specs[1])}), each pair "
                  f"at the same time in turns of {turn:g} s; about "
                  f"{pairs * (a.warmup + a.duration):,.0f} s of warm-up and measurement in all", highlight=False,
                  soft_wrap=True)
    outcome = execute_pairs(a, b, pairs, turn=turn, force=force, on_leftovers=leftovers, on_pair=on_pair)
    if outcome.interrupted:
        _print_error(f"interrupted after {sum(p.complete for p in outcome.pairs)} complete pair(s); what was measured "
                     "is kept", f"compare them again with: fbbench compare {outcome.series['A']} {outcome.series['B']}")
    elif outcome.failure:
        _print_error(outcome.failure)
    begun = all(any(p.outcomes.get(label) is not None for p in outcome.pairs) for label in "AB")
    return ([outcome.series["A"], outcome.series["B"]] if begun else []), outcome.results, outcome.exit_code


def _pair_line(pair: Any, pairs: int) -> str:
    """One line per pair: each run's headline and the pair's ratio B/A."""
    from fbbench.report.console import headline_text
    from fbbench.store import ResultsStore

    parts = [f"pair {pair.index} of {pairs} ({pair.first} first):"]
    values = {}
    for label, run in pair.outcomes.items():
        if run is None:
            parts.append(f"{label} did not start;")
            continue
        with ResultsStore(run.results, create=False) as store:
            summary = store.load_run(run.run_id).get("summary") or {}
        values[label] = ((summary.get("headline") or {}).get("result"))
        figure = headline_text(summary.get("headline"), summary.get("measured_seconds"))
        parts.append(f"{label} run {run.run_id} {run.status}, {escape(figure)};")
    if pair.complete and all(values.get(label) for label in "AB"):
        parts.append(f"B/A {values['B'] / values['A']:.4f}")
    if pair.shared:
        shares = ", ".join(f"{m['name']} {m['cpu_seconds'] / max(pair.shared['seconds'], 1e-9):.0%}"
                           for m in pair.shared["members"])
        parts.append(f"(CPU while shared: {shares})")
    return " ".join(parts)


LINT_FAILED = 1  # fbbench lint: an error-severity finding (for CI)


@app.command("lint", context_settings={"help_option_names": ["-h", "--help"]})
def lint_command(
    items: Annotated[list[str], typer.Argument(help="Runs or series, named as for compare.", show_default=False,
                                               metavar="RUN|SERIES")],
    axis: Annotated[list[str] | None, typer.Option("--axis", help="With several: the difference they are meant "
                                                   "to compare (repeatable).")] = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write the findings (JSON) here.")] = None,
    results: ResultsOption = None,
) -> None:
    """The credibility lint alone: each run's findings (and, for several runs or series, their
    comparison's). Exit code 1 when a finding has severity error (for CI), 0 otherwise.

    Examples: `fbbench lint last` · `fbbench lint S_BASE S_NEW --axis engine`
    """
    from fbbench.compare import lint_findings
    from fbbench.report.compare import lint_lines
    from fbbench.report.console import lint_count
    from fbbench.store import ResultsStore

    with ResultsStore(results or paths.default_results(), create=False) as store:
        subjects, findings = lint_findings(store, items, axis)
    sides = [{"label": s.label, "kind": s.kind, "runs": s.runs} for s in subjects]
    for subject in subjects:
        console.print(f"{subject.label} = {escape(subject.describe())}", highlight=False, soft_wrap=True)
    counted = [f for f in findings if not f["excluded"]]
    console.print(f"credibility lint: {lint_count(counted)}", highlight=False)
    for line in lint_lines(findings, sides):
        console.print(line, highlight=False, soft_wrap=True)
    if json_file is not None:
        try:
            json_file.expanduser().write_text(json.dumps(
                {"subjects": [{"label": s.label, "kind": s.kind, "id": s.ident, "argument": s.argument,
                               "runs": [r["run_id"] for r in s.runs]} for s in subjects],
                 "lint": findings}, indent=2, default=str, allow_nan=False))
        except OSError as error:
            raise FbbenchError(f"cannot write the JSON file {json_file}: {error.strerror or error}") from None
    if any(f["severity"] == "error" for f in counted):
        raise typer.Exit(LINT_FAILED)


@app.callback(invoke_without_command=True)
def _version(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    signals.commands_take_over()
    if version:
        console.print(f"fbbench {__version__}")
        raise typer.Exit()


def _print_error(message: str, hint: str | None = None) -> None:
    errors.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    if hint:
        errors.print(f"[yellow]hint:[/] {escape(hint)}", highlight=False, soft_wrap=True)


def main() -> None:
    try:
        app()
    except FbbenchError as error:
        _print_error(error.message, error.hint)
        sys.exit(error.exit_code)
