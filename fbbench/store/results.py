"""The results store: one SQLite file holding every run, written as the run goes.

A run row is inserted before anything is measured (status ``running``) and filled in phase by
phase; intervals are inserted as they complete. A process killed mid-run therefore leaves a run
that still says ``running`` although its process is gone: readers show it as ``incomplete``,
with the intervals it finished. Reports and comparisons read only this store.

The schema and its migrations are :mod:`fbbench.store.schema`; runs leaving and entering the store
as bundles, :mod:`fbbench.store.exchange`.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from fbbench.engines.platform import process_alive
from fbbench.errors import FbbenchError
from fbbench.store import schema
from fbbench.store.model import RecordedSettings, StoredRun

OPEN_TIMEOUT_SECONDS = 30.0  # how long a store busy with another fbbench process is waited for


@dataclass
class RunFiles:
    """Files a run creates in its work directory: path → kind (database, runtime, building); the
    id of that work directory (fbbench.paths.WorkDir.ident); the pid of the fbbench process that
    removes them when the run ends (on this machine)."""

    workdir: str
    owner: int
    paths: dict[str, str]


def _json(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True)


def _pid_alive(pid: int | None, host: str | None) -> bool:
    if pid is None or host != socket.gethostname():
        return host != socket.gethostname()  # another machine's run: cannot tell, assume alive
    # A killed process stays a zombie until its parent reaps it, and an orphan's new parent may
    # never do so (a container whose PID 1 is not an init): it is dead all the same.
    return process_alive(pid, unreadable=True)


def _host_name(host_json: str | None) -> str | None:
    """The stable name of the host a run ran on (runner/host.py), or its hostname for older runs."""
    host = json.loads(host_json) if host_json else {}
    return host.get("name") or host.get("hostname")


def _steps_back(text: str) -> int | None:
    """``last``/``latest`` → 0, ``last~N`` → N; None for anything else (an id or a prefix)."""
    name, sep, steps = text.partition("~")
    if name not in ("last", "latest"):
        return None
    if not sep:
        return 0
    if not steps.isdigit():
        raise FbbenchError(f"'{text}': after last~ comes a number of runs back, e.g. last~1")
    return int(steps)


class StoreError(FbbenchError):
    """The results store cannot be read or written (disk full, read-only, not a store)."""


def store_error(path: Path, error: Exception, action: str) -> StoreError:
    text = str(error)
    hint = None
    if "full" in text:
        hint = "free space on that file system, or give --results FILE on another one"
    elif "readonly" in text or "read-only" in text or "unable to open" in text:
        hint = "give --results FILE in a directory you can write"
    return StoreError(f"cannot {action} the results store {path}: {text}", hint=hint)


class ResultsStore:
    """One SQLite file; safe to use from the parent and the engine child at once (WAL).

    ``create=False`` is for read-only commands: a missing store is an error, never created empty.
    """

    def __init__(self, path: Path, create: bool = True) -> None:
        self.path = path.expanduser().resolve()
        if not create and not self.path.exists():
            raise FbbenchError(f"no results store at {self.path}: no run has been recorded there",
                               hint="run one first (fbbench run tpcc), or give --results FILE")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise store_error(self.path, error, "create") from None
        try:
            self.db = sqlite3.connect(self.path, timeout=OPEN_TIMEOUT_SECONDS, isolation_level=None)
            self._refuse_another_programs()
            self._write_ahead_log()
            self.db.execute("pragma foreign_keys = on")
            schema.migrate(self.db, self.path)
        except sqlite3.DatabaseError as error:
            raise store_error(self.path, error, "open") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _refuse_another_programs(self) -> None:
        """An SQLite database with tables but no schema version of fbbench's is another program's:
        left as it is (not even its journal mode changed). A store's tables and its version are
        committed together (schema.migrate); the tables are read first, so a store another fbbench
        is making at this moment (its tables committed between two reads) is never taken for one."""
        tables = [row[0] for row in self.db.execute(
            "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name limit 4")]
        if tables and self.db.execute("pragma user_version").fetchone()[0] == 0:
            self.db.close()
            raise FbbenchError(f"{self.path} is not an fbbench results store: it is an SQLite database of another "
                               f"program (tables {', '.join(tables)}), and is left as it is",
                               hint="give --results a new file, or a store fbbench made")

    def _write_ahead_log(self) -> None:
        # Switching a new store to WAL while another process does the same can fail at once with
        # "database is locked": SQLite's busy timeout does not cover that switch.
        deadline = time.monotonic() + OPEN_TIMEOUT_SECONDS
        while True:
            try:
                self.db.execute("pragma journal_mode = wal")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write, all or nothing. A Ctrl-C (KeyboardInterrupt) may come between any two
        statements here; whatever it interrupts is rolled back, here or at the next write, so
        that the connection is never left inside a transaction that every later write would
        refuse ("cannot start a transaction within a transaction": a run's end then went
        unrecorded)."""
        self._roll_back_leftover()
        try:
            self.db.execute("begin immediate")
            yield self.db
            self.db.execute("commit")
        except BaseException as error:
            self._roll_back_leftover()
            if isinstance(error, sqlite3.DatabaseError):
                raise store_error(self.path, error, "write") from None
            raise

    def _roll_back_leftover(self) -> None:
        if self.db.in_transaction:
            with suppress(sqlite3.DatabaseError):
                self.db.execute("rollback")

    # ------------------------------------------------------------------ writing, as a run goes

    def begin_run(self, run_id: str, workload: str, settings: RecordedSettings, host: dict[str, Any],
                  series_id: str | None = None, repeat_index: int | None = None,
                  sweep_id: str | None = None, cell: int | None = None, *,
                  files: RunFiles | None = None) -> None:
        """The run's row, with the files it is about to create (recorded together, before any exists)."""
        with self.transaction():
            self.db.execute(
                "insert into runs (run_id, started_at, status, host, pid, workload, settings_json, host_json, "
                "series_id, repeat_index, sweep_id, cell) values (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, time.time(), socket.gethostname(), os.getpid(), workload, _json(settings), _json(host),
                 series_id, repeat_index, sweep_id, cell),
            )
            if files is not None:
                self._insert_files(run_id, files)

    def record_files(self, run_id: str, files: RunFiles) -> None:
        """Files the run is about to create in its work directory (before it creates them)."""
        with self.transaction():
            self._insert_files(run_id, files)

    def _insert_files(self, run_id: str, files: RunFiles) -> None:
        self.db.executemany(
            "insert or replace into run_files (run_id, path, kind, workdir, owner_pid, owner_host) "
            "values (?, ?, ?, ?, ?, ?)",
            [(run_id, path, kind, files.workdir, files.owner, socket.gethostname())
             for path, kind in files.paths.items()])

    def files_removed(self, run_id: str, paths: Iterable[str]) -> None:
        with self.transaction():
            self.db.executemany("update run_files set removed_at = ? where run_id = ? and path = ?",
                                [(time.time(), run_id, path) for path in paths])

    def files_to_remove(self, workdir: str, run_id: str | None = None) -> dict[str, RunFiles]:
        """run id → its files not yet removed, of the runs made in the work directory ``workdir``
        (its marker's id) whose processes are gone — the fbbench process that would remove them,
        and the one at work on the run (an engine child a moment after its parent); or the files
        of the run ``run_id`` alone, however it is."""
        rows = self.db.execute(
            "select f.run_id, f.path, f.kind, f.owner_pid, f.owner_host, r.status, r.pid, r.host "
            "from run_files f join runs r using (run_id) where f.workdir = ? and f.removed_at is null"
            + (" and f.run_id = ?" if run_id else "") + " order by r.started_at, f.path",
            (workdir, run_id) if run_id else (workdir,)).fetchall()
        found: dict[str, RunFiles] = {}
        for run, path, kind, owner, owner_host, status, pid, host in rows:
            if run_id is None and (_pid_alive(owner, owner_host) or self.status_of((status, pid, host)) == "running"):
                continue  # at work, and removed when it ends (or on another machine: cannot be told)
            found.setdefault(run, RunFiles(workdir, owner, {})).paths[path] = kind
        return found

    # ------------------------------------------------------------------ sweeps

    def begin_sweep(self, sweep_id: str, spec_path: str, spec_text: str, spec: dict[str, Any]) -> None:
        with self.transaction():
            self.db.execute(
                "insert into sweeps (sweep_id, created_at, status, host, pid, spec_path, spec_text, spec_json) "
                "values (?, ?, 'running', ?, ?, ?, ?, ?)",
                (sweep_id, time.time(), socket.gethostname(), os.getpid(), spec_path, spec_text, _json(spec)))

    def update_sweep_spec(self, sweep_id: str, spec: dict[str, Any]) -> None:
        """A one-factor-at-a-time sweep adds its best combination as a cell once the rest is done."""
        with self.transaction():
            self.db.execute("update sweeps set spec_json = ? where sweep_id = ?", (_json(spec), sweep_id))

    def claim_sweep(self, sweep_id: str) -> None:
        with self.transaction():
            self.db.execute("update sweeps set status = 'running', pid = ?, host = ?, ended_at = null "
                            "where sweep_id = ?", (os.getpid(), socket.gethostname(), sweep_id))

    def finish_sweep(self, sweep_id: str, status: str, result: dict[str, Any] | None = None) -> None:
        with self.transaction():
            self.db.execute("update sweeps set status = ?, ended_at = ?, result_json = coalesce(?, result_json) "
                            "where sweep_id = ?", (status, time.time(), _json(result) if result else None, sweep_id))

    def resolve_sweep_id(self, text: str) -> str:
        return self._resolve("sweeps", "sweep_id", "created_at", "sweep", text,
                             "fbbench sweep --resume last finishes the latest one")

    def load_sweep(self, sweep_id: str) -> dict[str, Any]:
        sweep_id = self.resolve_sweep_id(sweep_id)
        row = self.db.execute("select sweep_id, created_at, ended_at, status, host, pid, spec_path, spec_text, "
                              "spec_json, result_json from sweeps where sweep_id = ?", (sweep_id,)).fetchone()
        status = row[3]
        if status == "running" and not _pid_alive(row[5], row[4]):
            status = "incomplete"
        runs = [{"run_id": r, "cell": c, "repeat_index": i, "status": self.status_of((st, pid, host)),
                 "host_name": _host_name(host_json)}
                for r, c, i, st, pid, host, host_json in self.db.execute(
                    "select run_id, cell, repeat_index, status, pid, host, host_json from runs where sweep_id = ? "
                    "order by started_at", (sweep_id,))]
        return {"sweep_id": row[0], "created_at": row[1], "ended_at": row[2], "status": status,
                "spec_path": row[6], "spec_text": row[7], "spec": json.loads(row[8] or "{}"),
                "result": json.loads(row[9]) if row[9] else None, "runs": runs}

    def list_sweeps(self, limit: int = 30) -> list[dict[str, Any]]:
        rows = self.db.execute("select sweep_id from sweeps order by created_at desc limit ?", (limit,)).fetchall()
        return [self.load_sweep(row[0]) for row in rows]

    def claim_run(self, run_id: str) -> None:
        """The process doing the measuring takes over the liveness of the run."""
        with self.transaction():
            self.db.execute("update runs set pid = ? where run_id = ?", (os.getpid(), run_id))

    def update_run(self, run_id: str, **fields: Any) -> None:
        columns = {"engine": "engine_json", "database": "database_json", "load": "load_json",
                   "summary": "summary_json", "workload_files": "workload_files_json", "host": "host_json",
                   "settings": "settings_json", "validation": "validation_json"}
        assignments, values = [], []
        for key, value in fields.items():
            column = columns.get(key, key)
            assignments.append(f"{column} = ?")
            values.append(_json(value) if column.endswith("_json") else value)
        with self.transaction():
            self.db.execute(f"update runs set {', '.join(assignments)} where run_id = ?", (*values, run_id))

    def record_phase(self, run_id: str, name: str, started_at: float, seconds: float | None,
                     detail: dict[str, Any] | None = None) -> None:
        with self.transaction():
            self.db.execute("insert or replace into phases values (?, ?, ?, ?, ?)",
                            (run_id, name, started_at, seconds, _json(detail or {})))

    def record_interval(self, run_id: str, interval: Mapping[str, Any]) -> None:
        with self.transaction():
            for unit, counts in interval["units"].items():
                self.db.execute(
                    "insert or replace into intervals values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (run_id, interval["index"], interval["phase"], unit, interval["start_offset"],
                     interval["seconds"], counts["ok"], counts["rolled_back"], counts["conflicts"],
                     counts["errors"], counts.get("histogram")),
                )

    def record_unit_totals(self, run_id: str, units: Mapping[str, Mapping[str, Any]]) -> None:
        with self.transaction():
            for unit, totals in units.items():
                self.db.execute(
                    "insert or replace into unit_totals values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (run_id, unit, totals["ok"], totals["rolled_back"], totals["conflicts"], totals["errors"],
                     totals.get("histogram"), _json(totals.get("latency_ms", {})),
                     _json(totals.get("errors_by_code", [])), _json(totals.get("conflicts_by_code", [])),
                     _json(totals.get("tally", {}))),
                )

    def record_metric(self, run_id: str, name: str, start: float | None, end: float | None, value: float | None,
                      per_minute: bool, description: str = "", window: tuple[float, float] | None = None) -> None:
        with self.transaction():
            self.db.execute("insert or replace into metrics (run_id, name, start_value, end_value, value, per_minute, "
                            "description, window_start, window_end) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (run_id, name, start, end, value, int(per_minute), description,
                             *(window or (None, None))))

    def record_samples(self, run_id: str, idx: int, rows: Sequence[tuple[str, str, float | None]]) -> None:
        """One interval's engine figures, as (source, name, value) rows (see the schema)."""
        with self.transaction():
            self.db.executemany("insert or replace into engine_samples values (?, ?, ?, ?, ?)",
                                [(run_id, idx, source, name, value) for source, name, value in rows])

    def record_gstat(self, run_id: str, moment: str, taken_at: float | None, snapshot: dict[str, Any] | None, raw: str,
                     parse_error: str | None) -> None:
        with self.transaction():
            self.db.execute("insert or replace into gstat values (?, ?, ?, ?, ?, ?)",
                            (run_id, moment, taken_at, parse_error, _json(snapshot) if snapshot else None, raw))

    def record_findings(self, run_id: str, source: str, findings: Sequence[dict[str, Any]]) -> None:
        with self.transaction():
            self.db.execute("delete from findings where run_id = ? and source = ?", (run_id, source))
            self.db.executemany(
                "insert into findings values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, source, f["kind"], f["severity"], f["count"], f.get("first_at"), f.get("last_at"),
                  f.get("example"), _json(f.get("detail") or {})) for f in findings])

    def check_seconds(self, workload: str) -> dict[str, float]:
        """What each check query of ``workload`` took in its latest run that timed them (the
        after phase's ``check_seconds``, by the check's label): the next run takes the longest first."""
        row = self.db.execute(
            "select p.detail_json from phases p join runs r on r.run_id = p.run_id "
            "where r.workload = ? and p.name = 'after' and p.detail_json like '%\"check_seconds\"%' "
            "order by r.started_at desc limit 1", (workload,)).fetchone()
        found = json.loads(row[0]).get("check_seconds") if row and row[0] else None
        if not isinstance(found, dict):
            return {}
        return {str(label): float(seconds) for label, seconds in found.items()
                if isinstance(seconds, int | float) and not isinstance(seconds, bool)}

    def record_check(self, run_id: str, kind: str, name: str, passed: bool | None, value: float | None,
                     detail: str, low: float | None = None, high: float | None = None,
                     n: int | None = None) -> None:
        """A check's or an audit's outcome; an audit's sampling interval ``low``–``high`` over ``n``."""
        with self.transaction():
            self.db.execute("insert or replace into checks (run_id, kind, name, passed, value, detail, low, high, n) "
                            "values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (run_id, kind, name, None if passed is None else int(passed), value, detail, low, high, n))

    def record_replay(self, run_id: str, plan: Any, measured: Mapping[str, Any]) -> None:
        """A replay's statements (the core's ``replay.templates`` beside the plan's traced
        figures) and divergences: those the core met, after those the plan could not replay."""
        from fbbench.store.model import DIVERGENCE_FIELDS

        with self.transaction():
            for index, (template, replayed) in enumerate(zip(plan.templates, measured["templates"], strict=True)):
                self.db.execute("insert or replace into replay_statements values (?, ?, ?, ?, ?, ?, ?, ?)",
                                (run_id, index, template.sql, replayed["executions"], replayed["errors"],
                                 replayed.get("histogram"), _json(replayed.get("latency_ms") or {}),
                                 _json(template.traced())))
            found = [{"kind": "not replayable", "attachment": s["attachment"], "transaction": s["transaction"],
                      "why": s["why"], "sql": s["sql"][:200]} for s in plan.skipped]
            found += list(measured["divergences"]["first"])
            for index, item in enumerate(found):
                detail = {k: v for k, v in item.items() if k not in DIVERGENCE_FIELDS}
                self.db.execute("insert or replace into divergences values (?, ?, ?, ?, ?, ?, ?)",
                                (run_id, index, item["kind"], item.get("attachment"), item.get("transaction"),
                                 item.get("template"), _json(detail)))

    def record_profile(self, run_id: str, lines: Sequence[Mapping[str, Any]]) -> None:
        """--profile: the profile's rows (fbbench.observe.profiler.read_profile: ``kind``, ``rank``
        and each kind's figures); what is not a column goes to detail_json."""
        from fbbench.store.model import PROFILE_COLUMNS

        with self.transaction():
            for line in lines:
                columns = {column: line.get(key) for key, column in PROFILE_COLUMNS.items()}
                detail = {k: v for k, v in line.items() if k not in PROFILE_COLUMNS}
                self.db.execute(
                    "insert or replace into profile_lines (run_id, kind, rank, statement_type, package_name, "
                    "routine_name, sql_text, line_num, column_num, cursor_id, record_source_id, access_path, counter, "
                    "total_ns, min_ns, max_ns, detail_json) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (run_id, *columns.values(), _json(detail)))

    def finish_run(self, run_id: str, status: str, failure: str | None = None) -> None:
        with self.transaction():
            self.db.execute("update runs set status = ?, failure = coalesce(?, failure), ended_at = ? "
                            "where run_id = ?", (status, failure, time.time(), run_id))

    # ------------------------------------------------------------------------------- reading

    def status_of(self, row: sqlite3.Row | Sequence[Any]) -> str:
        status, pid, host = row[0], row[1], row[2]
        if status == "running" and not _pid_alive(pid, host):
            return "incomplete"
        return str(status)

    def running_runs(self) -> list[dict[str, Any]]:
        """The runs whose process is at work on this machine now: their run_id and settings."""
        rows = self.db.execute("select status, pid, host, run_id, settings_json from runs "
                               "where status = 'running' and host = ?", (socket.gethostname(),)).fetchall()
        return [{"run_id": row[3], "settings": json.loads(row[4] or "{}")}
                for row in rows if self.status_of(row) == "running"]

    def list_runs(self, limit: int = 50) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "select run_id, started_at, ended_at, status, pid, host, workload, engine_label, engine_version, "
            "summary_json, settings_json, failure, series_id, repeat_index from runs "
            "order by started_at desc limit ?", (limit,)).fetchall()
        per_minute: dict[str, dict[str, bool]] = {}
        for run_id, name, flag in self.db.execute(
                "select run_id, name, per_minute from metrics where run_id in "
                "(select run_id from runs order by started_at desc limit ?)", (limit,)):
            per_minute.setdefault(run_id, {})[name] = bool(flag)
        runs = []
        for (run_id, started, ended, status, pid, host, workload, label, version, summary, settings, failure,
             series_id, repeat_index) in rows:
            runs.append({
                "run_id": run_id, "started_at": started, "ended_at": ended,
                "status": self.status_of((status, pid, host)), "workload": workload, "engine_label": label,
                "engine_version": version, "summary": json.loads(summary) if summary else {},
                "settings": json.loads(settings), "failure": failure, "series_id": series_id,
                "repeat_index": repeat_index, "metrics_per_minute": per_minute.get(run_id, {}),
            })
        return runs

    def series_runs(self, series_id: str) -> list[str]:
        """The run ids of a series, in repeat order."""
        return [row[0] for row in self.db.execute(
            "select run_id from runs where series_id = ? order by repeat_index, started_at", (series_id,))]

    def resolve_run_id(self, text: str) -> str:
        """A run id from a unique prefix, ``last`` (or ``latest``) or ``last~N`` (the N-th run before
        the latest: ``last~1`` is the one before it)."""
        return self._resolve("runs", "run_id", "started_at", "run", text, "fbbench results list shows the runs")

    def _resolve(self, table: str, column: str, order: str, what: str, text: str, hint: str) -> str:
        """The id in ``table`` that ``text`` names: a unique prefix, ``last``/``latest``, ``last~N``."""
        back = _steps_back(text)
        if back is not None:
            row = self.db.execute(f"select {column} from {table} order by {order} desc limit 1 offset ?",
                                  (back,)).fetchone()
            if row is None:
                count = self.db.execute(f"select count(*) from {table}").fetchone()[0]
                raise FbbenchError(f"no {what} '{text}' in {self.path}: it holds {count} {what}(s)", hint=hint)
        else:
            matches = self.db.execute(f"select {column} from {table} where {column} like ? order by {order} desc",
                                      (text + "%",)).fetchall()
            if len(matches) > 1:
                raise FbbenchError(f"{what} id '{text}' is ambiguous: {', '.join(m[0] for m in matches[:5])}")
            row = matches[0] if matches else None
        if row is None:
            raise FbbenchError(f"no {what} '{text}' in {self.path}", hint=hint)
        return str(row[0])

    def resolve_series_id(self, text: str) -> str | None:
        """The series whose id is ``text`` or starts with it; None when no series matches."""
        matches = [row[0] for row in self.db.execute(
            "select series_id from runs where series_id like ? group by series_id order by min(started_at) desc",
            (text.replace("%", "").replace("_", "") + "%",)) if row[0].startswith(text)]
        if len(matches) > 1 and text not in matches:
            raise FbbenchError(f"series id '{text}' is ambiguous: {', '.join(matches[:5])}")
        return text if text in matches else (matches[0] if matches else None)

    def load_runs(self, run_ids: Iterable[str]) -> dict[str, StoredRun]:
        """run id → :meth:`load_run`, in the order given."""
        return {run_id: self.load_run(run_id) for run_id in run_ids}

    def load_run(self, run_id: str) -> StoredRun:
        """Everything stored about one run, as plain data (typed by :class:`~fbbench.store.model.StoredRun`)."""
        run_id = self.resolve_run_id(run_id)
        columns = [c[1] for c in self.db.execute("pragma table_info(runs)")]
        row = dict(zip(columns, self.db.execute("select * from runs where run_id = ?", (run_id,)).fetchone(),
                       strict=True))
        run: dict[str, Any] = {}
        for key, value in row.items():
            if key.endswith("_json"):
                run[key[:-5]] = json.loads(value) if value else {}
            else:
                run[key] = value
        run["status"] = self.status_of((row["status"], row["pid"], row["host"]))
        run["phases"] = [
            {"name": n, "started_at": s, "seconds": sec, "detail": json.loads(d or "{}")}
            for n, s, sec, d in self.db.execute(
                "select name, started_at, seconds, detail_json from phases where run_id = ? order by started_at",
                (run_id,))
        ]
        run["intervals"] = [
            {"index": i, "phase": p, "unit": u, "start_offset": so, "seconds": s, "ok": ok, "rolled_back": rb,
             "conflicts": c, "errors": e, "histogram": h}
            for i, p, u, so, s, ok, rb, c, e, h in self.db.execute(
                "select idx, phase, unit, start_offset, seconds, ok, rolled_back, conflicts, errors, histogram "
                "from intervals where run_id = ? order by idx, unit", (run_id,))
        ]
        run["units"] = {
            u: {"ok": ok, "rolled_back": rb, "conflicts": c, "errors": e, "histogram": h,
                "latency_ms": json.loads(lat), "errors_by_code": json.loads(err),
                "conflicts_by_code": json.loads(conf), "tally": json.loads(tally)}
            for u, ok, rb, c, e, h, lat, err, conf, tally in self.db.execute(
                "select unit, ok, rolled_back, conflicts, errors, histogram, latency_json, errors_json, "
                "conflicts_json, tally_json from unit_totals where run_id = ? order by unit", (run_id,))
        }
        run["metrics"] = {
            n: {"start": s, "end": e, "value": v, "per_minute": bool(pm), "description": d,
                "window_start": ws, "window_end": we}
            for n, s, e, v, pm, d, ws, we in self.db.execute(
                "select name, start_value, end_value, value, per_minute, description, window_start, window_end "
                "from metrics where run_id = ? order by name", (run_id,))
        }
        samples: dict[int, dict[str, dict[str, float | None]]] = {}
        for idx, source, name, value in self.db.execute(
                "select idx, source, name, value from engine_samples where run_id = ? order by idx", (run_id,)):
            samples.setdefault(idx, {}).setdefault(source, {})[name] = value
        run["engine_samples"] = samples
        run["gstat"] = {
            moment: {"taken_at": taken, "parse_error": error, "snapshot": json.loads(snapshot) if snapshot else None,
                     "raw": raw}
            for moment, taken, error, snapshot, raw in self.db.execute(
                "select moment, taken_at, parse_error, snapshot_json, raw from gstat where run_id = ?", (run_id,))
        }
        run["findings"] = [
            {"source": src, "kind": k, "severity": sev, "count": c, "first_at": f, "last_at": la, "example": ex,
             "detail": json.loads(d or "{}")}
            for src, k, sev, c, f, la, ex, d in self.db.execute(
                "select source, kind, severity, count, first_at, last_at, example, detail_json from findings "
                "where run_id = ? order by severity, kind", (run_id,))
        ]
        run["checks"] = [
            {"kind": k, "name": name, "passed": None if p is None else bool(p), "value": v, "detail": d,
             "low": low, "high": high, "n": n}
            for k, name, p, v, d, low, high, n in self.db.execute(
                "select kind, name, passed, value, detail, low, high, n from checks where run_id = ? order by rowid",
                (run_id,))
        ]
        run["replay_statements"] = [
            {"template": t, "sql": sql, "executions": n, "errors": e, "histogram": h,
             "latency_ms": json.loads(lat or "{}"), "traced": json.loads(traced or "{}")}
            for t, sql, n, e, h, lat, traced in self.db.execute(
                "select template, sql, executions, errors, histogram, latency_json, traced_json "
                "from replay_statements where run_id = ? order by template", (run_id,))
        ]
        run["divergences"] = [
            {"kind": k, "attachment": a, "transaction": tr, "template": t, "detail": json.loads(d or "{}")}
            for k, a, tr, t, d in self.db.execute(
                "select kind, attachment, transaction_id, template, detail_json from divergences where run_id = ? "
                "order by idx", (run_id,))
        ]
        from fbbench.store.model import PROFILE_COLUMNS

        names = list(PROFILE_COLUMNS)
        run["profile_lines"] = [
            {**dict(zip(names, row[:-1], strict=True)), **json.loads(row[-1] or "{}")}
            for row in self.db.execute(
                f"select {', '.join(PROFILE_COLUMNS.values())}, detail_json from profile_lines where run_id = ? "
                "order by kind, rank", (run_id,))
        ]
        return cast(StoredRun, run)
