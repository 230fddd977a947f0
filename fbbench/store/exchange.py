"""Runs leaving and entering a results store as a bundle: every row of the runs and sweeps named
(:func:`export_bundle`), added to another store all or nothing (:func:`import_bundle`). The
bundle's file format is :mod:`fbbench.store.bundle`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fbbench.errors import FbbenchError
from fbbench.store import bundle
from fbbench.store.results import ResultsStore
from fbbench.store.schema import SCHEMA_VERSION


def _table_rows(store: ResultsStore, table: str, column: str, ids: Sequence[str]) -> dict[str, Any]:
    columns = [c[1] for c in store.db.execute(f"pragma table_info({table})")]
    marks = ", ".join("?" for _ in ids)
    rows = [list(row) for row in store.db.execute(
        f"select * from {table} where {column} in ({marks}) order by rowid", tuple(ids))] if ids else []
    return {"columns": columns, "rows": rows}


def run_tables(store: ResultsStore) -> list[str]:
    """The tables that hold rows of a run (those with a ``run_id`` column), the run's own row
    first: what a bundle carries, read from the schema so that a table a later migration adds
    travels too — less :data:`bundle.LOCAL_TABLES` (the machine's own bookkeeping)."""
    names = [row[0] for row in store.db.execute(
        "select name from sqlite_master where type = 'table' and name not like 'sqlite%' order by name")]
    keyed = [name for name in names
             if any(column[1] == "run_id" for column in store.db.execute(f"pragma table_info({name})"))]
    return ["runs", *(name for name in keyed if name != "runs" and name not in bundle.LOCAL_TABLES)]


def _exported_run_rows(store: ResultsStore, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    tables = {table: _table_rows(store, table, "run_id", run_ids) for table in run_tables(store)}
    runs = tables["runs"]
    status, pid, host = (runs["columns"].index(name) for name in ("status", "pid", "host"))
    for row in runs["rows"]:
        # A run whose process is gone travels as what it is here (incomplete), not as a
        # 'running' that another machine could never tell from a live run.
        row[status] = store.status_of((row[status], row[pid], row[host]))
    return tables


def track_runs(store: ResultsStore, series_ids: Sequence[str]) -> list[str]:
    """The runs of every point of these track series (the build's, and the reference's)."""
    found: list[str] = []
    for series_id in series_ids:
        for (runs,) in store.db.execute("select runs_json from track_points where series_id = ? order by created_at",
                                        (series_id,)):
            found += [run for side in ("B", "A") for run in json.loads(runs).get(side, [])]
    return found


def export_bundle(store: ResultsStore, run_ids: Sequence[str], sweep_ids: Sequence[str] = (),
                  track_series: Sequence[str] = ()) -> dict[str, Any]:
    """A bundle document (:mod:`fbbench.store.bundle`) of these runs and sweeps, every row they
    have here, and of these track series (their points, changes, and the runs of their points).
    A run still running is refused: its rows are not all written yet."""
    track_series = list(dict.fromkeys(track_series))
    run_ids = list(dict.fromkeys([*run_ids, *track_runs(store, track_series)]))
    for run_id in run_ids:
        row = store.db.execute("select status, pid, host from runs where run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise FbbenchError(f"no run '{run_id}' in {store.path}")
        if store.status_of(row) == "running":
            raise FbbenchError(f"run {run_id} is still running (process {row[1]} on {row[2]}): "
                               "export it once it has ended")
    tables = _exported_run_rows(store, run_ids)
    tables["sweeps"] = _table_rows(store, "sweeps", "sweep_id", list(sweep_ids))
    for table in bundle.TRACK_TABLES:
        tables[table] = _table_rows(store, table, "series_id", track_series)
    return bundle.new_document(tables, run_ids, list(sweep_ids), SCHEMA_VERSION, track_series)


def import_bundle(store: ResultsStore, document: dict[str, Any], name: str = "the bundle",
                  only_new: bool = False) -> tuple[list[str], list[str]]:
    """Add a bundle's runs and sweeps (a document :func:`bundle.decode` checked): (run ids added,
    run ids that were already here, identical). All or nothing: a run or sweep that is here
    with other contents is never overwritten, and the store is left as it was. ``only_new``:
    runs already here are left as they are without comparing them (a lab's coordinator
    recorded a run as failed when its host died; the host's own record of it stays there)."""
    # The machine's own bookkeeping (a run's files on the machine that ran it) is never imported.
    tables: dict[str, dict[str, Any]] = {table: rows for table, rows in document["tables"].items()
                                         if table not in bundle.LOCAL_TABLES}
    carried = run_tables(store)
    if int(document.get("store_schema") or 0) > SCHEMA_VERSION:
        raise bundle.BundleError(f"{name} holds runs of a newer results store (schema "
                                 f"{document['store_schema']}; this fbbench has {SCHEMA_VERSION})",
                                 hint="upgrade fbbench to import it")
    for table in tables:
        if table not in (*carried, *bundle.SWEEP_TABLES, *bundle.TRACK_TABLES):
            raise bundle.BundleError(f"{name} has a table this store does not know: {table}")
        columns = [c[1] for c in store.db.execute(f"pragma table_info({table})")]
        unknown = [c for c in tables[table]["columns"] if c not in columns]
        if unknown:
            raise bundle.BundleError(f"{name}: the store's table {table} has no column "
                                     f"{', '.join(unknown)} (a newer fbbench wrote it)",
                                     hint="upgrade fbbench to import it")
    # What the bundle holds, not what its list says: a run listed without a row is not imported.
    run_ids = [run_id for run_id in listed_runs(document) if run_id in _held_runs(tables)]
    theirs = {table: _rows_by(tables.get(table), "run_id") for table in carried}
    present = [run_id for run_id in run_ids
               if store.db.execute("select 1 from runs where run_id = ?", (run_id,)).fetchone()]
    mine = {table: _rows_by(rows, "run_id") for table, rows in _exported_run_rows(store, present).items()}
    for run_id in [] if only_new else present:
        for table in carried:
            if _comparable(theirs[table].get(run_id, [])) != _comparable(mine[table].get(run_id, [])):
                raise bundle.BundleError(
                    f"run {run_id} of {name} is already in {store.path} with other contents ({table} differ): "
                    "nothing was imported", hint="a run is never overwritten; import into another --results")
    sweeps = _rows_by(tables.get("sweeps"), "sweep_id")
    new_sweeps = []
    for sweep_id, rows in sweeps.items():
        here = _as_dicts(_table_rows(store, "sweeps", "sweep_id", [sweep_id]))
        if not here:
            new_sweeps.append(sweep_id)
        elif not _same_sweep(here[0], rows[0]):
            raise bundle.BundleError(f"sweep {sweep_id} of {name} is already in {store.path} as another sweep "
                                     "(its spec differs): nothing was imported")
    added = [run_id for run_id in run_ids if run_id not in present]
    track = _track_rows_to_add(store, tables, name)
    with store.transaction():
        for table in (*bundle.SWEEP_TABLES, *carried):
            source = tables.get(table)
            if source is None:
                continue
            keep = set(new_sweeps) if table == "sweeps" else set(added)
            key = "sweep_id" if table == "sweeps" else "run_id"
            columns = source["columns"]
            position = columns.index(key)
            rows = [row for row in source["rows"] if row[position] in keep]
            if rows:
                marks = ", ".join("?" for _ in columns)
                store.db.executemany(f"insert into {table} ({', '.join(columns)}) values ({marks})", rows)
        for table, (names, values) in track.items():
            if values:
                marks = ", ".join("?" for _ in names)
                store.db.executemany(f"insert into {table} ({', '.join(names)}) values ({marks})", values)
    return added, [run_id for run_id in run_ids if run_id in present]


# What identifies a row of each track table, and the columns that may differ between two stores
# that hold the same row (a series looked at further in one of them).
_TRACK_KEYS = {"track_series": ("series_id", ("evaluated",)), "track_points": ("point_id", ()),
               "track_changes": ("change_id", ("state", "ended_at", "moved_to"))}


def _track_rows_to_add(store: ResultsStore, tables: dict[str, dict[str, Any]],
                       name: str) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """The bundle's track series, points and changes this store has not got. A row it has with
    other contents refuses the bundle (a point is never overwritten); a series or a change it has
    keeps this store's own look at it (how far it was evaluated, what became of a change)."""
    adding: dict[str, tuple[list[str], list[list[Any]]]] = {}
    for table, (key, free) in _TRACK_KEYS.items():
        source = tables.get(table)
        if not source:
            continue
        columns = list(source["columns"])
        position = columns.index(key)
        rows = []
        for row in source["rows"]:
            here = _as_dicts(_table_rows(store, table, key, [row[position]]))
            if not here:
                rows.append(row)
                continue
            theirs = dict(zip(columns, row, strict=True))
            differ = [c for c in columns if c not in free and here[0].get(c) != theirs.get(c)]
            if differ:
                raise bundle.BundleError(f"{name}: {table} {row[position]} is already in {store.path} with other "
                                         f"contents ({', '.join(differ)}): nothing was imported",
                                         hint="a track point is never overwritten; import into another --results")
        adding[table] = (columns, rows)
    return adding


def listed_runs(document: dict[str, Any]) -> list[str]:
    """The run ids a bundle's list names."""
    return [str(r) for r in document.get("runs") or []]


def _held_runs(tables: dict[str, dict[str, Any]]) -> set[str]:
    return {str(row["run_id"]) for row in _as_dicts(tables.get("runs"))}


def listed_without_rows(document: dict[str, Any]) -> list[str]:
    """The runs a bundle's list names of which it holds no row: never imported, and said so."""
    held = _held_runs(document["tables"])
    return [run_id for run_id in listed_runs(document) if run_id not in held]


def _as_dicts(table: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not table:
        return []
    return [dict(zip(table["columns"], row, strict=True)) for row in table["rows"]]


def _rows_by(table: dict[str, Any] | None, key: str) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in _as_dicts(table):
        grouped.setdefault(str(row[key]), []).append(row)
    return grouped


def _comparable(rows: list[dict[str, Any]]) -> list[str]:
    """Rows as a sorted list of canonical texts: the same rows, whatever their order. A null is
    the same as a column the other side has not got (a bundle of an older store: a column a later
    migration added is null in the run it imported)."""
    return sorted(json.dumps({k: v for k, v in row.items() if v is not None}, sort_keys=True, default=str)
                  for row in rows)


def _same_sweep(mine: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """A sweep here and in a bundle is the same sweep when its spec is: its status and end move on."""
    return all(mine.get(k) == theirs.get(k) for k in ("created_at", "spec_text", "spec_path"))
