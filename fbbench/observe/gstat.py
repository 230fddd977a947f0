"""gstat before and after a run, through the services API, read by firebird-lib where it can.

:func:`collect` asks the engine for gstat's data, index and record-version analysis (the header
page comes with it: asking for it separately, ``SrvStatFlag.HDR_PAGES``, is refused together
with the others) and :func:`parse` reads the text with firebird-lib's ``StatDatabase``.

firebird-lib (2.1.0) stops at, or silently misreads, lines that real 3.0 / 4.0 / 5.0 output
contains; each is handled before the line reaches it (captured examples in tests/data/gstat/):

- a database path with a space (``Database "/data/my db.fdb"``): ValueError — the file name is
  read here and the line is not passed on;
- header attributes it does not know, e.g. "read-only replica" / "read-write replica" (4.0+),
  "encrypted", "crypt process": ValueError — all attributes are kept here as text, and only
  those it knows are passed on;
- 5.0's per-level blob lines ("Level 0: 5, total length: 500, blob pages: 0") overwrite the
  table's blob totals — they are not passed on (blob figures are not used here).

Anything else it cannot read is fed line by line: a line it rejects is left out and listed in
``skipped``, and the rest still counts. Only when the parse as a whole fails (or more than
``MAX_SKIPPED`` lines were left out) does the snapshot say ``parse_error``; it never raises, and
it always keeps the raw text.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from fbbench.database import driver
from fbbench.errors import FbbenchError

MAX_SKIPPED = 5

TABLE_FIELDS = ("records", "versions", "max_versions", "avg_record_length", "avg_version_length", "data_pages",
                "avg_fill", "fragments")
INDEX_FIELDS = ("depth", "nodes", "avg_key_length", "total_dup", "max_dup")
HEADER_FIELDS = ("oit", "oat", "ost", "next_transaction", "page_size", "page_buffers", "ods_version")

_DATABASE_LINE = re.compile(r'^\s*Database\s+"(?P<name>.*)"\s*$')
_ATTRIBUTES_LINE = re.compile(r"^(?P<lead>\s*Attributes\s*)(?P<values>.*)$")
_BLOB_LEVEL_LINE = re.compile(r"^\s*Level \d+: \d+, total length:")


@dataclass
class TableStats:
    name: str
    records: int | None = None
    versions: int | None = None
    max_versions: int | None = None
    avg_record_length: float | None = None
    avg_version_length: float | None = None
    data_pages: int | None = None
    avg_fill: int | None = None  # percent
    fragments: int | None = None
    indices: list[str] = field(default_factory=list)


@dataclass
class IndexStats:
    name: str
    table: str
    depth: int | None = None
    nodes: int | None = None
    avg_key_length: float | None = None
    total_dup: int | None = None
    max_dup: int | None = None


@dataclass
class GstatSnapshot:
    """What gstat said about one database at one moment."""

    raw: str
    database: str | None = None
    taken_at: float | None = None  # time.time() when gstat started
    seconds: float | None = None  # how long gstat took
    header: dict[str, Any] = field(default_factory=dict)
    attributes: list[str] = field(default_factory=list)
    tables: dict[str, TableStats] = field(default_factory=dict)
    indices: dict[str, IndexStats] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # lines firebird-lib could not read, left out
    parse_error: str | None = None  # the text could not be read: only ``raw`` is usable
    error: str | None = None  # gstat itself failed (no text at all)

    @property
    def usable(self) -> bool:
        return self.error is None and self.parse_error is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GstatSnapshot:
        """A snapshot as the results store keeps it (``to_dict``) back into objects."""
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        values["tables"] = {name: TableStats(**table) for name, table in (data.get("tables") or {}).items()}
        values["indices"] = {name: IndexStats(**index) for name, index in (data.get("indices") or {}).items()}
        return cls(**values)


def collect(services_host: str, database: str) -> GstatSnapshot:
    """gstat -d -i -r of ``database`` (a path as the engine sees it) through the services API.

    ``services_host``: "" for the embedded engine of this process, else "host[/port]". A failure
    of the service itself is recorded in ``error``, not raised: gstat must never end a run.
    """
    from firebird.driver import DatabaseError, SrvStatFlag

    taken_at, started = time.time(), time.perf_counter()
    try:
        with driver.server(services_host) as server:
            server.database.get_statistics(
                database=database,
                flags=SrvStatFlag.DATA_PAGES | SrvStatFlag.IDX_PAGES | SrvStatFlag.RECORD_VERSIONS)
            text = "".join(server.readlines())
    except FbbenchError as error:
        return GstatSnapshot(raw="", database=database, taken_at=taken_at, error=error.message)
    except DatabaseError as error:
        return GstatSnapshot(raw="", database=database, taken_at=taken_at,
                             error=" ".join(str(error).split()))
    snapshot = parse(text)
    snapshot.database = snapshot.database or database
    snapshot.taken_at, snapshot.seconds = taken_at, time.perf_counter() - started
    return snapshot


def parse(text: str) -> GstatSnapshot:
    """Read gstat output (3.0 or later); never raises."""
    from firebird.base.types import STOP
    from firebird.lib.gstat import DbAttribute, StatDatabase

    snapshot = GstatSnapshot(raw=text)
    known_attributes = {attribute.value for attribute in DbAttribute}
    stats = StatDatabase()
    in_header = False
    try:
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if stripped.startswith("Database header page information"):
                in_header = True
            elif not stripped:
                in_header = False
            if (match := _DATABASE_LINE.match(line)) and snapshot.database is None:
                snapshot.database = match["name"]
                continue
            if in_header and (match := _ATTRIBUTES_LINE.match(line)):
                snapshot.attributes = [value.strip() for value in match["values"].split(",") if value.strip()]
                line = match["lead"] + ", ".join(a for a in snapshot.attributes if a in known_attributes)
            elif _BLOB_LEVEL_LINE.match(line):
                continue
            try:
                stats.push(line)
            except Exception as error:
                snapshot.skipped.append(f"line {number}: {stripped} ({type(error).__name__}: {error})")
        stats.push(STOP)
    except Exception as error:
        snapshot.parse_error = f"firebird-lib could not read this gstat output: {type(error).__name__}: {error}"
        return snapshot
    if len(snapshot.skipped) > MAX_SKIPPED:
        snapshot.parse_error = (f"firebird-lib could not read {len(snapshot.skipped)} lines of this gstat output; "
                                f"the first: {snapshot.skipped[0]}")
        return snapshot
    _take_figures(snapshot, stats)
    if not snapshot.header.get("next_transaction") and not snapshot.tables:
        snapshot.parse_error = "no gstat header and no tables in this text"
    return snapshot


def _take_figures(snapshot: GstatSnapshot, stats: Any) -> None:
    snapshot.header = {name: getattr(stats, name, None) for name in HEADER_FIELDS}
    for table in stats.tables:
        snapshot.tables[table.name] = TableStats(
            name=table.name, records=table.total_records, versions=table.total_versions,
            max_versions=table.max_versions, avg_record_length=table.avg_record_length,
            avg_version_length=table.avg_version_length, data_pages=table.data_pages, avg_fill=table.avg_fill,
            fragments=table.total_fragments)
    for index in stats.indices:
        table_name = index.table.name
        snapshot.indices[index.name] = IndexStats(
            name=index.name, table=table_name, depth=index.depth, nodes=index.nodes,
            avg_key_length=index.avg_key_length, total_dup=index.total_dup, max_dup=index.max_dup)
        if table_name in snapshot.tables:
            snapshot.tables[table_name].indices.append(index.name)


class Cadence:
    """gstat at a cadence while the load runs (``fbbench run --gstat-every``), on a thread of its
    own: a reading every ``every`` seconds from the start, the next one no sooner than the last
    one ended (gstat reads every data page: on a large database one reading may outlast the
    cadence, which its recorded ``seconds`` say). ``record(index, offset_seconds, snapshot)`` is
    called on that thread; a failed reading is recorded, never raised."""

    def __init__(self, services_host: str, database: str, every: float,
                 record: Callable[[int, float, GstatSnapshot], None]) -> None:
        self.services_host, self.database, self.every, self.record = services_host, database, every, record
        self.stopped = threading.Event()
        self.readings = 0
        self.thread = threading.Thread(target=self._loop, name="fbbench-gstat-cadence", daemon=True)
        self.started = time.monotonic()

    def __enter__(self) -> Cadence:
        self.started = time.monotonic()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=60)  # a reading in progress finishes (the services API has no cancel)

    def _loop(self) -> None:
        next_at = self.started + self.every
        while not self.stopped.wait(max(0.0, next_at - time.monotonic())):
            offset = time.monotonic() - self.started
            try:
                snapshot = collect(self.services_host, self.database)
            except Exception as error:  # collect records the engine's refusals; anything else too, here
                snapshot = GstatSnapshot(raw="", database=self.database, taken_at=time.time(),
                                         error=f"{type(error).__name__}: {error}")
            if self.stopped.is_set():
                return  # ended while the load did: the after reading is the run's
            self.readings += 1
            try:
                self.record(self.readings, offset, snapshot)
            except Exception:
                self.readings -= 1  # not recorded; the next reading still comes
            next_at = max(next_at + self.every, time.monotonic())
