"""``--replication async|sync`` inside the engine child (docs/replication.md).

The parent wrote the run's replication.conf into the runtime root, naming only the run's own
database — so the population cache, built in the same runtime, is never journaled, and a copy of
it starts without publication. Here, after the population was copied and its settings applied
and before anything is measured:

- every table the engine will replicate must have a primary (or unique) key, by which a replica
  applies an update or a delete: a table without one is refused, by name;
- ``sync``: the replica is a byte copy of the run's database, made while nothing is attached,
  registered as fbbench's, and set to replica mode (read-only) through the services API; the
  engine attaches it as ``sync_replica`` in this process;
- publication is enabled for every table (``ALTER DATABASE ENABLE PUBLICATION``, ``INCLUDE ALL
  TO PUBLICATION``), fbbench's own mark table excluded: it is not the workload's, and is never
  written during a run.

While the load runs, :class:`JournalWatch` reads the journal and its archive at every interval
boundary (file headers only: :mod:`fbbench.observe.replication`); afterwards the replica of a
sync run is checked against the primary table by table, and what the engine wrote to
replication.log becomes findings — an error there fails the run, since by default the engine
stops replicating after one (``disable_on_error``) and the rest would have measured no replication.
"""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fbbench.analysis.run import JOURNAL_SOURCE
from fbbench.database import driver, ownership
from fbbench.errors import FbbenchError
from fbbench.observe import replication as journal_files
from fbbench.observe.replication import JournalReading

_TABLES_WITHOUT_KEY = f"""
    select trim(r.rdb$relation_name) from rdb$relations r
    where coalesce(r.rdb$system_flag, 0) = 0 and r.rdb$view_blr is null and r.rdb$relation_type = 0
      and r.rdb$relation_name <> '{ownership.MARK_TABLE}'
      and not exists (select 1 from rdb$relation_constraints c
                      where c.rdb$relation_name = r.rdb$relation_name
                        and c.rdb$constraint_type in ('PRIMARY KEY', 'UNIQUE'))
    order by 1"""
_PUBLISHED_TABLES = "select trim(rdb$table_name) from rdb$publication_tables order by 1"
_PUBLICATION_ACTIVE = "select rdb$active_flag from rdb$publications where rdb$publication_name = 'RDB$DEFAULT'"


def publish(dsn: str, plan: dict[str, Any]) -> dict[str, Any]:
    """Publication on the run's database (and, for sync, its replica made first); the facts."""
    with driver.connect(dsn) as connection, connection.cursor() as cursor:
        cursor.execute(_TABLES_WITHOUT_KEY)
        keyless = [row[0] for row in cursor.fetchall()]
        connection.commit()
    if keyless:
        raise FbbenchError(f"--replication {plan['mode']}: table{'s' if len(keyless) > 1 else ''} "
                           f"{', '.join(keyless)} ha{'ve' if len(keyless) > 1 else 's'} no primary key (nor a unique "
                           "key): a replica applies a replicated update or delete by the key",
                           hint="give every table of the workload's schema a primary key")
    facts: dict[str, Any] = {"mode": plan["mode"]}
    if plan.get("sync_replica"):
        facts["replica"] = make_replica(dsn, Path(plan["sync_replica"]))
    with driver.connect(dsn) as connection:
        for statement in ("alter database enable publication", "alter database include all to publication",
                          f"alter database exclude table {ownership.MARK_TABLE} from publication"):
            connection.execute_immediate(statement)
        connection.commit()
        with connection.cursor() as cursor:
            cursor.execute(_PUBLICATION_ACTIVE)
            row = cursor.fetchone()
            cursor.execute(_PUBLISHED_TABLES)
            facts["published_tables"] = [r[0] for r in cursor.fetchall()]
        connection.commit()
    facts["publication_active"] = bool(row and row[0])
    return facts


def make_replica(dsn: str, replica: Path) -> dict[str, Any]:
    """A byte copy of the run's database (nothing is attached to it now), fbbench's own, set to
    replica mode read-only: the engine refuses a sync replica that is not one."""
    from firebird.driver import ReplicaMode

    with driver.connect(dsn) as connection:
        mark = ownership.read_mark(connection)
        connection.commit()
    if mark is None:
        raise FbbenchError(f"{dsn} lost its fbbench mark")
    replica.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(dsn, replica)
    ownership.register(str(replica), str(mark["token"]), {"purpose": "sync replica", "primary": dsn})
    with driver.server("") as server:
        server.database.set_replica_mode(database=str(replica), mode=ReplicaMode.READ_ONLY)
    return {"path": str(replica), "size_bytes": replica.stat().st_size}


def replica_in_step(dsn: str, replica: str) -> tuple[bool, str]:
    """After a sync run: every table published on the primary has as many rows on the replica."""
    counts: dict[str, dict[str, int]] = {}
    tables: list[str] = []
    for side, location in (("primary", dsn), ("replica", replica)):
        with driver.connect(location) as connection, connection.cursor() as cursor:
            if not tables:  # the primary's publication (the replica was copied before it was enabled)
                cursor.execute(_PUBLISHED_TABLES)
                tables = [row[0] for row in cursor.fetchall()]
            for table in tables:
                cursor.execute(f'select count(*) from "{table}"')
                counts.setdefault(table, {})[side] = int(cursor.fetchone()[0])
            connection.commit()
    differing = [f"{table}: {rows.get('primary')} on the primary, {rows.get('replica')} on the replica"
                 for table, rows in counts.items() if rows.get("primary") != rows.get("replica")]
    if differing:
        return False, "; ".join(differing)
    return True, f"{len(counts)} tables, {sum(rows['primary'] for rows in counts.values()):,} rows on both"


# ------------------------------------------------------------------------------ the journal


@dataclass
class JournalWatch:
    """Readings of the journal and its archive, by boundary (1 = the run's zero, 1 + k the end of
    interval k), taken on the core's boundary thread: a listing and a 48-byte read per segment."""

    journal: Path | None
    archive: Path | None
    readings: dict[int, JournalReading] = field(default_factory=dict)
    end: JournalReading | None = None  # at the run's last boundary
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of(cls, plan: dict[str, Any]) -> JournalWatch | None:
        """None for a run without a journal (off, or sync)."""
        if not plan.get("journal_directory"):
            return None
        archive = plan.get("journal_archive_directory")
        return cls(Path(plan["journal_directory"]), Path(archive) if archive else None)

    def read(self) -> JournalReading:
        return journal_files.read(self.journal, self.archive)

    def zero(self) -> None:
        """Before the held load starts: the reading at the run's zero, before any of its work."""
        with self._lock:
            self.readings[1] = self.read()

    def boundary(self, boundary: int, last: bool) -> None:
        reading = self.read()
        with self._lock:
            if boundary > 0:
                self.readings.setdefault(boundary, reading)
            if last:
                self.end = self.readings.get(boundary, reading)

    def figures(self, measure_start: int, measured_seconds: float) -> dict[str, Any] | None:
        """What the journal and the archive received over the measured period, and per measured
        second (the headline's seconds); None when a reading at either end is missing."""
        with self._lock:
            start, end = self.readings.get(measure_start), self.end
        if start is None or end is None:
            return None
        change = end.minus(start)
        per_second = measured_seconds if measured_seconds > 0 else None
        return {
            "journal_bytes": change["journal_bytes"],
            "archive_bytes": change["archive_bytes"],
            "segments_archived": change["segments_archived"],
            "journal_bytes_per_second": change["journal_bytes"] / per_second if per_second else None,
            "archive_bytes_per_second": change["archive_bytes"] / per_second if per_second else None,
            "window_seconds": change["seconds"],
            "journal_bytes_total": end.journal_bytes,
            "segments_archived_total": end.segments_archived,
        }

    def interval_rows(self) -> dict[int, list[tuple[str, str, float | None]]]:
        """Per interval k (closed by boundary k + 2): what the journal and the archive received."""
        with self._lock:
            readings = dict(self.readings)
        rows: dict[int, list[tuple[str, str, float | None]]] = {}
        for boundary in sorted(readings):
            previous = readings.get(boundary - 1)
            if boundary < 2 or previous is None:
                continue
            change = readings[boundary].minus(previous)
            rows[boundary - 2] = [(JOURNAL_SOURCE, name, change[name])
                                  for name in ("journal_bytes", "archive_bytes", "segments_archived")]
        return rows

