"""A typed view of what the results store returns (:meth:`ResultsStore.load_run`) and of the plan
the engine child reads: every report, comparison and lint reads a stored run through these names,
so that a renamed field fails the type check (``mypy``, in the test command), not a report a week
later.

At run time these are plain dicts (JSON in the store, JSON on the way to the engine child). A
nested record whose keys belong to another part (the engine facts, the host facts, the
population) is a ``dict[str, Any]`` here; the records this package's documents are built from
name their keys. ``total=False`` where older runs may lack a key.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class RecordedSettings(TypedDict, total=False):
    """:meth:`fbbench.runner.settings.RunSettings.recorded`: every run setting but the output
    files' paths and where each value came from (tests/test_store.py keeps the two in step)."""

    workload: str
    engine: str
    scale: dict[str, Any]
    connections: int
    warmup: float
    duration: float
    transactions: int | None
    repeat: int
    interval: float
    seed: int | None
    seed_fixed: bool
    timeshare: dict[str, Any] | None
    conf: dict[str, str]
    architecture: str | None
    page_size: int | None
    page_buffers: int | None
    forced_writes: bool | None
    replication: str
    replication_conf: dict[str, str]
    file_cache: bool | None
    drop_caches: bool
    target_size: int | None
    sweep: bool
    monitor: bool
    fresh: bool
    grow: str | None
    database_from: str | None
    trace: str | None
    profile: bool
    gstat_every: float | None
    replay: str | None
    speed: float
    order: str
    load_connections: int
    connect_rate: float
    target_rate: float | None
    keep_database: bool
    allow_many_connections: bool
    yes: bool  # planned time over a day was confirmed
    validation: bool | None  # validate the database after the run (None: when the load is long enough)
    fail_on_checks: bool
    fail_on_audits: bool
    user: str | None
    tags: list[str]
    host_name: str | None
    machine: str | None
    lab: str | None
    clients: int | None
    lab_tls: str | None
    lab_insecure: bool
    workdir: str | None
    results: str | None


class StoredFigure(TypedDict, total=False):
    """A workload figure as the summary keeps it: its definition (workloads.figures.Figure) and
    ``result``, its value for the run."""

    name: str
    value: str
    per: str
    better: str
    unit: str
    description: str
    when: str
    result: float | None


class Summary(TypedDict, total=False):
    """What the run concluded, computed once in the engine child (runner/engine/phases.py)."""

    status: str
    measured_seconds: float
    headline: StoredFigure
    figures: list[StoredFigure]
    score_per_minute: float | None
    tpm: float | None
    metrics: dict[str, float | None]
    client_cpu_seconds: float | None
    thread_cpu_seconds: float | None
    process_cpu_seconds: float | None
    python_cpu_seconds: float | None
    peak_rss_bytes: int | None  # VmHWM of the engine child itself
    engine_process: str  # how the engine child started: forked from its engine's template, or a new interpreter
    connections: int
    failure: str | None
    attachments: list[dict[str, Any]]
    abandoned: list[int]
    sampling: dict[str, Any] | None
    sampler_errors: int
    # --replication: what publication did (runner/engine/replication.py) and the journal's figures
    replication: dict[str, Any] | None
    timeshare: dict[str, Any] | None  # time-shared fixed work: wall_seconds, own_seconds, turns
    trace: dict[str, Any] | None  # --trace: what the capture holds (fbbench.trace.capture)
    replay: dict[str, Any] | None  # fbbench replay: its trace's facts, order, speed, lag, divergences
    profile: dict[str, Any] | None  # --profile: what was profiled, how much of the measured period, why not


class DatabaseRecord(TypedDict, total=False):
    location: str
    before: dict[str, Any]  # header facts (database/header.py): page size, buffers, OIT … , size
    after: dict[str, Any]


class Phase(TypedDict):
    name: str
    started_at: float
    seconds: float | None
    detail: dict[str, Any]


class IntervalRow(TypedDict):
    """One interval of one unit."""

    index: int
    phase: str
    unit: str
    start_offset: float
    seconds: float
    ok: int
    rolled_back: int
    conflicts: int
    errors: int
    histogram: str | None


class UnitTotals(TypedDict):
    ok: int
    rolled_back: int
    conflicts: int
    errors: int
    histogram: str | None
    latency_ms: dict[str, float]
    errors_by_code: list[dict[str, Any]]
    conflicts_by_code: list[dict[str, Any]]
    tally: dict[str, float]


class MetricRow(TypedDict):
    start: float | None
    end: float | None
    value: float | None
    per_minute: bool
    description: str
    window_start: float | None
    window_end: float | None


class GstatRow(TypedDict):
    taken_at: float | None
    parse_error: str | None
    snapshot: dict[str, Any] | None
    raw: str


class FindingRow(TypedDict):
    source: str
    kind: str
    severity: str
    count: int
    first_at: str | None
    last_at: str | None
    example: str | None
    detail: dict[str, Any]


class CheckRow(TypedDict):
    kind: str  # check | audit
    name: str
    passed: bool | None
    value: float | None
    detail: str
    low: float | None
    high: float | None
    n: int | None


Samples = dict[int, dict[str, dict[str, float | None]]]  # interval → source → name → value


class ReplayStatementRow(TypedDict):
    """One SQL text of a replay: the replay's executions and latency beside the trace's."""

    template: int
    sql: str
    executions: int
    errors: int
    histogram: str | None
    latency_ms: dict[str, float]
    traced: dict[str, float]  # count, p50, p95, p99, max, mean (ms), as the trace timed them


class DivergenceRow(TypedDict):
    kind: str
    attachment: int | None
    transaction: int | None  # its number in the trace
    template: int | None
    detail: dict[str, Any]


# The fields of a divergence with a column of their own (the rest is its detail).
DIVERGENCE_FIELDS = ("kind", "attachment", "transaction", "template")


# A profile row's fields (fbbench.observe.profiler.read_profile) → the profile_lines column that
# holds each; a row's other fields are kept in its detail_json.
PROFILE_COLUMNS = {
    "kind": "kind", "rank": "rank", "statement_type": "statement_type", "package": "package_name",
    "routine": "routine_name", "sql": "sql_text", "line": "line_num", "column": "column_num", "cursor_id": "cursor_id",
    "record_source_id": "record_source_id", "access_path": "access_path", "count": "counter", "total_ns": "total_ns",
    "min_ns": "min_ns", "max_ns": "max_ns",
}


class StoredRun(TypedDict):
    """Everything stored about one run (:meth:`ResultsStore.load_run`)."""

    run_id: str
    started_at: float
    ended_at: float | None
    status: str  # running / completed / interrupted / failed, or incomplete (its process is gone)
    failure: str | None
    pid: int | None
    workload: str
    engine_label: str | None
    engine_version: str | None
    architecture: str | None
    settings: RecordedSettings
    engine: dict[str, Any]  # runner/engine/facts.py: versions, mode, firebird.conf, architecture evidence
    database: DatabaseRecord
    host: dict[str, Any]  # runner/host.py
    load: dict[str, Any]  # the population: source, speed, rows
    summary: Summary
    workload_files: dict[str, str]
    firebird_log: str | None
    validation: dict[str, Any]  # the database's validation after the run (runner/engine/phases.py)
    series_id: str | None
    repeat_index: int | None
    sweep_id: str | None
    cell: int | None
    phases: list[Phase]
    intervals: list[IntervalRow]
    units: dict[str, UnitTotals]
    metrics: dict[str, MetricRow]
    engine_samples: Samples
    gstat: dict[str, GstatRow]
    findings: list[FindingRow]
    checks: list[CheckRow]
    replay_statements: list[ReplayStatementRow]
    divergences: list[DivergenceRow]
    # --profile: the PSQL lines, statements and record sources by time (kind, rank, their figures);
    # what was profiled is the summary's ``profile``
    profile_lines: list[dict[str, Any]]


class RunPlan(TypedDict):
    """What the parent hands the engine child for one run (runner/run.py → runner/engine/phases.py)."""

    run_id: str
    parent_pid: int
    settings: RecordedSettings
    workload_dir: str
    workdir: str
    workdir_id: str  # the work directory's marker id: the files a run records belong to it
    results: str
    database: dict[str, Any]  # the fields of runner/engine/population.py DatabasePlan
    barrier: NotRequired[dict[str, str]]  # time-shared: the start barrier's files (runner/barrier.py)
    # --replication async|sync: the mode, the checked replication.conf settings, and the paths
    # replication.conf names (journal_directory, journal_archive_directory, sync_replica)
    replication: NotRequired[dict[str, Any]]
    engine_pid: NotRequired[int]  # a managed server's process: its memory faults and block I/O are sampled
    quiet: NotRequired[bool]
