"""``fbbench run``: one run, or a series of repeats, from flags and a spec file; then its summary,
JSON and HTML, and the exit code its outcome earns."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from fbbench import paths
from fbbench.cli.common import (
    CHECKS_FAILED,
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
    _print_error,
    _print_static_lint,
    console,
)
from fbbench.errors import FbbenchError
from fbbench.runner.settings import RunSettings, duration_flag
from fbbench.workloads.spec import builtin_workloads

# The defaults --help names are RunSettings' own: the flags default to None (not given: the spec
# file's value stands), so typer has none to show.
_DEFAULT = RunSettings()
_LOAD = duration_flag(_DEFAULT.warmup + _DEFAULT.duration)

HELP = f"""Run a benchmark: runtime, database (populated, cached), sweep, warm-up, measure, checks;
recorded in the results store, summarised, with JSON and HTML reports.

By default {_DEFAULT.connections} attachments warm up for {duration_flag(_DEFAULT.warmup)} and measure for \
{duration_flag(_DEFAULT.duration)}: {_LOAD} of load, plus the population and checks.

Examples:

* `fbbench run tpcc --connections 4 --warmup 20s --duration 60s`
* `fbbench run tpcc --engine 4.0 --scale warehouses=4 --architecture superclassic --json r.json`
* `fbbench run ./my-workload --transactions 1000 -c 1`
* `ISC_PASSWORD=... fbbench run tpcc --engine db1/3050:/data/bench.fdb`
"""


def run(
    workload: Annotated[str | None, typer.Argument(help=f"Built-in workload ({', '.join(builtin_workloads())}) "
                                                   "or a workload directory.")] = None,
    spec: Annotated[Path | None, typer.Option("--spec", help="TOML file with run settings; flags override it.")] = None,
    engine: Annotated[str | None, typer.Option("--engine", "-e", help="5.0, 4.0, 3.0 (embedded), a name "
                                               "registered with fbbench engines add (server:NAME / embedded:NAME "
                                               f"choose how it runs), server:DIR or a DSN (default {_DEFAULT.engine}).")
                                  ] = None,
    scale: Annotated[list[str] | None, typer.Option("--scale", help="Workload scale, e.g. warehouses=4.")] = None,
    connections: Annotated[int | None, typer.Option("--connections", "-c", help="Attachments doing the work "
                                                    f"(default {_DEFAULT.connections}).")] = None,
    warmup: Annotated[str | None, typer.Option("--warmup", help="Warm-up before measuring (default "
                                               f"{duration_flag(_DEFAULT.warmup)}).")] = None,
    duration: Annotated[str | None, typer.Option("--duration", "-d", help="Measured period (default "
                                                 f"{duration_flag(_DEFAULT.duration)}).")] = None,
    transactions: Annotated[int | None, typer.Option("--transactions", help="Fixed work: units per attachment "
                                                     "(instead of a timed run).")] = None,
    repeat: Annotated[int | None, typer.Option("--repeat", help="Run the same conditions N times, each from a "
                                               "fresh copy of the database: one series.")] = None,
    interval: Annotated[str | None, typer.Option("--interval", help="Reporting interval (default "
                                                 f"{duration_flag(_DEFAULT.interval)}).")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed: same seed, same units and parameters.")] = None,
    set_conf: Annotated[list[str] | None, typer.Option("--set", help="firebird.conf Key=Value for this run "
                                                       "(embedded engines).")] = None,
    architecture: Annotated[str | None, typer.Option(
        "--architecture", help="super, superclassic or classic (ServerMode; Classic embedded: one process per "
        "attachment). Verified from MON$ATTACHMENTS.")] = None,
    page_size: Annotated[int | None, typer.Option("--page-size", help="Database page size (default: the "
                                                  "workload's page_size, else the engine's, 8192).")] = None,
    page_buffers: Annotated[int | None, typer.Option("--page-buffers", help="Database page cache size (default: "
                                                     "the architecture's, 2048 Super, 256 per attachment "
                                                     "otherwise).")] = None,
    forced_writes: Annotated[OnOff | None, typer.Option("--forced-writes", help="on or off (default on, the "
                                                        "engine's; the population is built with it off).")] = None,
    replication: Annotated[str | None, typer.Option(
        "--replication", help="Firebird's built-in replication (4.0+): off, async (the engine journals every change "
        "into the run's work directory) or sync (every commit also commits on a replica fbbench creates) "
        f"(default {_DEFAULT.replication}).")] = None,
    set_replication: Annotated[list[str] | None, typer.Option(
        "--set-replication", help="replication.conf key=value for this run, e.g. buffer_size=4194304.")] = None,
    file_cache: Annotated[OnOff | None, typer.Option(
        "--file-cache", help="on or off: the OS file cache under Firebird's page cache (UseFileSystemCache on "
        "4.0+, FileSystemCacheThreshold on 3.0). off for an honest disk test. Default: as firebird.conf has it "
        "(the engine's own: on).")] = None,
    drop_caches: Annotated[bool, typer.Option("--drop-caches", help="Drop the OS page cache right before the "
                                              "measured period, for a cold run (root only).")] = False,
    target_size: Annotated[str | None, typer.Option("--target-size", help="Populate a database of this size, "
                                                    "e.g. 4GB: picks the workload's size scale for you.")] = None,
    no_sweep: Annotated[bool, typer.Option("--no-sweep", help="Skip the sweep before measuring.")] = False,
    no_monitor: Annotated[bool, typer.Option("--no-monitor", help="Do not watch the engine (no MON$ sampling per "
                                             "interval, no gstat); DB-side metrics are still read.")] = False,
    validate: Annotated[bool | None, typer.Option(
        "--validate/--no-validate", help="Validate the database after the run (Firebird's full validation; a "
        "corrupt database fails the run). Default: for runs whose load lasts longer than a minute.")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Rebuild the populated database instead of copying "
                                        "the cached one.")] = False,
    grow: Annotated[str | None, typer.Option("--grow", help="Scale parameter (e.g. warehouses): extend the "
                                             "largest cached smaller population instead of building anew.")] = None,
    database_from: Annotated[Path | None, typer.Option(
        "--database-from", help="A gbak backup (.fbk): the run's database is restored from it (your file is only "
        "read; cached per checksum, engine and page size) instead of built by the workload.")] = None,
    trace: Annotated[Path | None, typer.Option(
        "--trace", help="Record a Firebird trace of the load (warm-up and measured period) into this new file, "
        "for fbbench workload from-trace and fbbench replay.")] = None,
    profile: Annotated[bool, typer.Option(
        "--profile", help="Firebird 5.0+: run the engine's profiler (RDB$PROFILER) on every load attachment over the "
        "measured period; the summary and the report list the PSQL lines and statements that took the time.")] = False,
    gstat_every: Annotated[str | None, typer.Option(
        "--gstat-every", help="Also read gstat's record versions per table at this cadence while the load runs, e.g. "
        "10m (off by default; each reading's cost is shown beside it).")] = None,
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
    yes: Annotated[bool, typer.Option("--yes", help="Go ahead with a run planned to take more than 24 hours "
                                      "(its population's build, estimated or projected, included).")] = False,
    fail_on_checks: Annotated[bool, typer.Option("--fail-on-checks", help="Exit with code 3 when a consistency "
                                                 "check fails (for CI).")] = False,
    fail_on_audits: Annotated[bool, typer.Option("--fail-on-audits", help="Exit with code 3 when an audit is "
                                                 "outside its bounds.")] = False,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Free text recorded with the run.")] = None,
    host_name: Annotated[str | None, typer.Option("--host-name", help="This machine's stable name in the run's "
                                                  "conditions (default: its hostname).")] = None,
    machine: Annotated[str | None, typer.Option("--machine", help="Shape this machine into a smaller one for the "
                                                "engine (root): a preset (sata-2014, ssd-2024, lan-1gbit, cross-zone) "
                                                "and/or limits: memory=1GiB, cpus=1, disk.read_iops=150, "
                                                "disk.write_bps=100MB, net.rtt=1ms, net.rate=1gbit, net.loss=0.1% "
                                                "(docs/machine-shapes.md).")] = None,
    lab: Annotated[str | None, typer.Option("--lab", help="Drive the attachments from a lab's hosts (its scheduler, "
                                            "e.g. tcp://127.0.0.1:8786) against a server DSN; with --clients.")] = None,
    clients: Annotated[int | None, typer.Option("--clients", help="With --lab: how many of the lab's hosts split "
                                                "the attachments.")] = None,
    tls: Annotated[Path | None, typer.Option("--tls", help="With --lab: the lab's certificates (fbbench lab init "
                                             "DIR).")] = None,
    insecure: Annotated[bool, typer.Option("--insecure", help="With --lab: allow a lab beyond loopback without "
                                           "TLS (recorded with the run).")] = False,
    workdir: WorkdirOption = None,
    results: ResultsOption = None,
    json: Annotated[Path | None, typer.Option("--json", help="Write the run result (JSON) here.")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Write the HTML report here (default: next to "
                                                "the results store, named after the run).")] = None,
    overwrite: OverwriteOption = False,
    user: UserOption = None,
    password_file: PasswordFileOption = None,
) -> None:
    """Run a benchmark (its help text, with the defaults, is :data:`HELP`)."""
    flags = _flags(locals())  # first: the locals are still exactly the command's parameters
    from fbbench.runner.settings import from_sources

    settings = from_sources(spec, flags, scale, set_conf, set_replication)
    if spec is not None:
        from fbbench.runner.outputs import planned_outputs

        paths.distinct_outputs(planned_outputs(settings), {"the spec file": spec})
    credentials = _credentials(settings.user, password_file)
    settings.user = credentials.user

    from fbbench.runner.run import RunOutcome, execute_series, static_findings

    _print_static_lint(static_findings(settings))

    codes: list[int] = []

    def finished(outcome: RunOutcome) -> None:
        codes.append(_conclude_run(outcome, settings))

    series_id, outcomes = execute_series(settings, credentials.password, notices=_notices(), on_run=finished)
    if series_id is not None:
        _print_series(series_id, outcomes)
    code = next((c for c in codes if c == INTERRUPTED), max(codes, default=0))
    if code:
        raise typer.Exit(code)


# Key=Value lists, which from_sources lays over the spec file's tables itself.
_KEY_VALUE_SETTINGS = ("scale", "conf", "replication_conf")


def _flags(parameters: dict[str, Any]) -> dict[str, Any]:
    """The run settings as the command's parameters give them, None where not given (the spec file's
    value stands). A setting's parameter bears its name, or its flag's where settings._FLAGS renames
    it (--rate, --tag); one that is on by default is turned off by ``--no-NAME``; one whose default
    is None ("fbbench decides") is a ``--NAME/--no-NAME`` pair, each side given. A new run setting
    thus needs its RunSettings field, its kind and one option, nothing here."""
    from dataclasses import fields

    from fbbench.runner.settings import _FLAGS, _KINDS, RunSettings, _flag

    both_sides = {f.name for f in fields(RunSettings) if _KINDS.get(f.name) is _flag and f.default is None}
    flags: dict[str, Any] = {}
    for name in _KINDS:
        if name in _KEY_VALUE_SETTINGS:
            continue
        parameter = _FLAGS.get(name, name)
        if parameter in parameters:
            value = parameters[parameter]
            flags[name] = value if name in both_sides else _given(value)
        elif "no_" + parameter in parameters:
            flags[name] = False if parameters["no_" + parameter] else None
    return flags


def _given(value: Any) -> Any:
    if isinstance(value, bool):  # a switch only ever turns its setting on: absent means "as the spec says"
        return value or None
    if isinstance(value, OnOff):
        return _on_off(value)
    if isinstance(value, Path):
        return str(value)
    return value


def _conclude_run(outcome: Any, settings: Any) -> int:
    """Summary, JSON and HTML of one finished run; its exit code (0, 1 failed, 2 outputs, 3 checks, 130)."""
    from fbbench.runner.outputs import numbered_output

    json_file, report = (numbered_output(p, outcome.repeat_index) for p in (settings.json, settings.report))
    document, problems = _report_run(outcome.run_id, outcome.results, json_file, report, settings.overwrite)
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


def _print_series(series_id: str, outcomes: list[Any]) -> None:
    from fbbench.analysis.run import result_document
    from fbbench.report.console import print_series
    from fbbench.store import ResultsStore

    with ResultsStore(outcomes[0].results, create=False) as store:
        documents = [result_document(store.load_run(run_id)) for run_id in store.series_runs(series_id)]
    print_series(series_id, documents, console)


def _report_run(run_id: str, results: Path, json_file: str | None,
                report: str | None, overwrite: bool = False) -> tuple[dict[str, Any], list[str]]:
    """Summary on the console, then JSON and HTML; returns the document and what could not be written."""
    from fbbench.analysis.run import result_document
    from fbbench.report import console as summary
    from fbbench.report.outputs import write_outputs
    from fbbench.store import ResultsStore

    with ResultsStore(results, create=False) as store:
        stored = store.load_run(run_id)
    document = result_document(stored)
    summary.print_summary(document, console)
    target = Path(report) if report else paths.default_report(results, run_id)
    written, problems = write_outputs(document, Path(json_file) if json_file else None, target,
                                      stored.get("firebird_log") or "", overwrite=overwrite)
    for line in written:
        console.print(line, highlight=False, soft_wrap=True)
    console.print(f"results store: {results} (fbbench results show {run_id})", highlight=False, soft_wrap=True)
    return document, problems
