"""The results store's schema: one script per version, and bringing an older store up to date.

The schema carries a version (``PRAGMA user_version``); :data:`MIGRATIONS` brings an older store
up to date when it is opened (:func:`migrate`).
"""

from __future__ import annotations

import sqlite3
from contextlib import suppress
from pathlib import Path

from fbbench.errors import FbbenchError

SCHEMA_VERSION = 9

MIGRATIONS: dict[int, str] = {
    # 0 → 1: the first schema.
    1: """
    create table runs (
        run_id text primary key,
        started_at real not null,
        ended_at real,
        status text not null,              -- running / completed / interrupted / failed
        failure text,
        host text, pid integer,
        workload text not null,
        engine_label text,
        engine_version text,               -- as the server reports it
        architecture text,
        settings_json text not null,       -- spec + flags + tags, as the run used them
        engine_json text,                  -- version strings, mode, effective firebird.conf
        database_json text,                -- path, page size, buffers, forced writes, sizes, headers
        host_json text,                    -- CPU, memory, OS, kernel, disk, versions, bitness
        load_json text,                    -- population: source (cache or built), speed
        summary_json text,                 -- score, metrics, totals: what the run concluded
        workload_files_json text,          -- the workload.toml and scripts the run used
        firebird_log text                  -- what the engine logged during the run
    );
    create table phases (
        run_id text not null references runs(run_id),
        name text not null,
        started_at real not null,
        seconds real,
        detail_json text,
        primary key (run_id, name)
    );
    create table intervals (
        run_id text not null references runs(run_id),
        idx integer not null,
        phase text not null,               -- warmup / measure
        unit text not null,
        start_offset real not null,
        seconds real not null,
        ok integer not null, rolled_back integer not null, conflicts integer not null, errors integer not null,
        histogram text,                    -- HDR histogram (base64 V2), null until the run's end
        primary key (run_id, idx, unit)
    );
    create table unit_totals (
        run_id text not null references runs(run_id),
        unit text not null,
        ok integer not null, rolled_back integer not null, conflicts integer not null, errors integer not null,
        histogram text,
        latency_json text, errors_json text, conflicts_json text, tally_json text,
        primary key (run_id, unit)
    );
    create table metrics (
        run_id text not null references runs(run_id),
        name text not null,
        start_value real, end_value real, value real, per_minute integer not null, description text,
        primary key (run_id, name)
    );
    create table checks (
        run_id text not null references runs(run_id),
        kind text not null,                -- check (consistency, DB side) / audit (client figures)
        name text not null,
        passed integer,                    -- 1 pass, 0 fail, null: could not be evaluated
        value real,
        detail text,
        primary key (run_id, kind, name)
    );
    """,
    # 1 → 2: what the engine did while it was measured (MON$ deltas per interval, gstat before and
    # after, firebird.log findings), the measured window of each DB-side metric, and series of
    # repeated runs.
    2: """
    create table engine_samples (
        run_id text not null references runs(run_id),
        idx integer not null,              -- the interval (as in intervals.idx) the values belong to
        source text not null,              -- io, record, memory, header, database, table:NAME, metric, sample
        name text not null,
        value real,                        -- counters: change over the interval; levels: value at its end
        primary key (run_id, idx, source, name)
    );
    create table gstat (
        run_id text not null references runs(run_id),
        moment text not null,              -- before / after
        taken_at real,
        parse_error text,                  -- why firebird-lib could not read it (the raw text is kept)
        snapshot_json text,                -- header, tables, indices as parsed
        raw text,
        primary key (run_id, moment)
    );
    create table findings (
        run_id text not null references runs(run_id),
        source text not null,              -- firebird.log (more sources may follow)
        kind text not null,
        severity text not null,            -- fatal / warning / info
        count integer not null,
        first_at text, last_at text,
        example text,
        detail_json text,
        primary key (run_id, source, kind)
    );
    alter table metrics add column window_start real;   -- time.time() of the readings the value is between
    alter table metrics add column window_end real;
    alter table runs add column series_id text;         -- repeats of the same conditions share it
    alter table runs add column repeat_index integer;   -- 1-based position in its series
    create index runs_series on runs(series_id);
    """,
    # 2 → 3: an audit's sampling interval (analysis.audits): its value lies in low–high with 95 %
    # confidence over n trials or units; null where the audit's shape has none.
    3: """
    alter table checks add column low real;
    alter table checks add column high real;
    alter table checks add column n integer;
    """,
    # 3 → 4: sweeps — a matrix of run settings with repeats; each cell is a series of its runs.
    4: """
    create table sweeps (
        sweep_id text primary key,
        created_at real not null,
        ended_at real,
        status text not null,              -- running / completed / interrupted / failed
        host text, pid integer,
        spec_path text,
        spec_text text,                    -- the spec file as it was, so that --resume runs the same sweep
        spec_json text,                    -- the parsed spec: base settings, axes, cells in their order
        result_json text                   -- what the sweep concluded (its overhead, the best cell)
    );
    alter table runs add column sweep_id text;
    alter table runs add column cell integer;            -- the cell's index in its sweep
    create index runs_sweep on runs(sweep_id);
    """,
    # 4 → 5: the files a run creates in its work directory, recorded before it creates them: the
    # only files a clean-up deletes (fbbench.runner.cleanup).
    5: """
    create table run_files (
        run_id text not null references runs(run_id),
        path text not null,                -- absolute, inside the work directory
        kind text not null,                -- database / runtime / building (a population being built)
        workdir text not null,             -- the id in the work directory's marker (fbbench.paths)
        owner_pid integer, owner_host text, -- the process that removes it when the run ends
        removed_at real,                   -- when a clean-up removed it, or found it gone
        primary key (run_id, path)
    );
    create index run_files_open on run_files(workdir, removed_at);
    """,
    # 5 → 6: whether the database was still sound after the run (observe/validation.py): done or
    # why not, the kind of validation, what Firebird found.
    6: """
    alter table runs add column validation_json text;
    """,
    # 6 → 7: replays of a trace — each statement's latency against the traced one, and every
    # divergence from the trace.
    7: """
    create table replay_statements (
        run_id text not null references runs(run_id),
        template integer not null,         -- the statement's SQL text, numbered in the trace's order
        sql text not null,
        executions integer not null,
        errors integer not null,
        histogram text,                    -- HDR histogram (base64 V2) of the replayed executions, in µs
        latency_json text,                 -- the replay's p50, p90, p95, p99, max, mean (ms)
        traced_json text,                  -- the trace's: count, p50, p95, p99, max, mean (ms)
        primary key (run_id, template)
    );
    create table divergences (
        run_id text not null references runs(run_id),
        idx integer not null,              -- in the order the replay met them (the first 1,000)
        kind text not null,                -- error, succeeded, rows, rows changed, commit failed, …
        attachment integer,                -- the replay's attachment (1-based), or the traced one when
                                           -- kind is "not replayable" (never executed)
        transaction_id integer,            -- the transaction's number in the trace
        template integer,
        detail_json text,
        primary key (run_id, idx)
    );
    """,
    # 7 → 8: Firebird 5's profiler over the measured period (fbbench run --profile): the PSQL
    # lines, statements and record sources that took the time, summed over the load's attachments.
    8: """
    create table profile_lines (
        run_id text not null references runs(run_id),
        kind text not null,                -- psql (a PSQL line), statement, record_source
        rank integer not null,             -- 1 = the most time of its kind
        statement_type text,               -- PROCEDURE, FUNCTION, TRIGGER or BLOCK (a DSQL statement)
        package_name text,
        routine_name text,
        sql_text text,                     -- a statement without a routine: its SQL text (first 2,000 characters)
        line_num integer,                  -- psql: the line and column in the routine's source
        column_num integer,
        cursor_id integer,                 -- record_source: the cursor and the record source in it
        record_source_id integer,
        access_path text,
        counter integer,                   -- psql: the line's executions (the other kinds' counts are details)
        total_ns integer,                  -- nanoseconds: a line's; a record source's opens and fetches; a
                                           -- statement's PSQL lines, or without any its cursors' top record sources
        min_ns integer,                    -- psql: the fastest and slowest execution of the line
        max_ns integer,
        detail_json text,                  -- the rest: opens, fetches and their times; a statement's parts …
        primary key (run_id, kind, rank)
    );
    """,
    # 8 → 9: fbbench track — series of points over builds, commits or days (fbbench/track/): a
    # series per benchmark and conditions, a point per build (runs, or time-shared pairs against a
    # reference build), and the changes found in them, each kept under one identity as points come.
    9: """
    create table track_series (
        series_id text primary key,
        suite text not null,               -- the suite's name (track.toml's name, or its file's stem)
        benchmark text not null,
        kind text not null,                -- absolute (runs of the build) / relative (pairs against a reference)
        axis text not null,                -- what varies along it: engine (builds) / workload (a team's commits)
        reference_build text,              -- relative: the reference build's identity (version string, binaries)
        created_at real not null,
        reason text,                       -- why a new series began (the conditions that differ from the last)
        evaluated integer not null default 0  -- its points whose changes have been looked for, in order
    );
    create index track_series_suite on track_series(suite, benchmark);
    create table track_points (
        point_id text primary key,
        series_id text not null references track_series(series_id),
        suite text not null,
        benchmark text not null,
        label text not null,               -- --label (a build, a commit, a date); the engine's name by default
        engine text not null,              -- the engine as named (--engine)
        engine_build text,                 -- as the engine reports itself (LI-V5.0.4.1812 Firebird 5.0)
        engine_binaries text,              -- sha256 of the engine's binaries, where known
        reference text,                    -- --reference as named (relative points)
        created_at real not null,
        series_a text,                     -- relative: the reference's run series in the results store
        series_b text,                     -- the build's run series (a lab's: its sweep cell, every host's)
        conditions_json text not null,     -- the conditions the point's runs share (analysis.conditions)
        figures_json text not null,        -- figure → samples, value and interval, unit, better, kind
        plans_json text,                   -- statement → its plan, routine → its plan (where the engine gives them)
        runs_json text not null            -- the point's runs: {"B": [the build's], "A": [the reference's]}
    );
    create index track_points_series on track_points(series_id, created_at);
    create table track_changes (
        change_id text primary key,        -- of (series, figure, the points before and after it)
        series_id text not null references track_series(series_id),
        figure text not null,
        before_point text not null,
        after_point text not null,
        first_seen integer not null,       -- the series' length when it was first found
        state text not null,               -- current / moved / withdrawn
        ended_at integer,                  -- moved or withdrawn: the series' length then
        moved_to text,                     -- moved: the change it became
        detail_json text not null          -- magnitude, interval, p-value, method and its parameters
    );
    create index track_changes_series on track_changes(series_id, state);
    """,
}


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the store ``db`` (the file ``path``) up to :data:`SCHEMA_VERSION`, one step at a time."""
    version = db.execute("pragma user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise FbbenchError(f"the results store {path} was written by a newer fbbench (schema {version})",
                           hint="upgrade fbbench, or use another --results file")
    for target in range(version + 1, SCHEMA_VERSION + 1):
        # One script per step, schema change and version bump committed together.
        try:
            db.executescript(f"begin immediate;\n{MIGRATIONS[target]}\npragma user_version = {target};\n"
                             "commit;")
        except sqlite3.OperationalError:
            with suppress(sqlite3.DatabaseError):
                db.execute("rollback")
            # Another fbbench process (the other run of a pair, a `results list`) opened the new
            # store at the same time and made this step while we waited for its lock.
            if db.execute("pragma user_version").fetchone()[0] < target:
                raise
