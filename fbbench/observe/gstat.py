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

import math
import re
import time
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


# -------------------------------------------------------------------------------- reading it


VERSIONS_SHARE = 0.20  # back versions above this share of the records
MAX_VERSIONS = 100  # versions of a single record
INDEX_DEPTH = 4  # index levels
LOW_FILL = 50  # average data page fill, percent
LOW_FILL_MIN_PAGES = 10  # a table of a few pages is mostly empty by nature

WHY = {
    "versions": "Back versions above a fifth of the records mean garbage is piling up faster than it is "
                "collected (usually behind a long-running transaction), and every read of such a record "
                "walks its version chain.",
    "max_versions": "A record with more than 100 versions is a hot spot, updated again and again while an old "
                    "transaction kept every version alive; each read of it walks the whole chain.",
    "index_depth": "An index four or more levels deep costs an extra page fetch on every lookup; a larger page "
                   "size brings it back to three.",
    "low_fill": "Data pages less than half full make the table take twice the pages, reads and cache it needs, "
                "typically after mass deletes or after garbage collection of many versions.",
}


@dataclass(frozen=True)
class Flag:
    """One thing an IBAnalyst user would look at after a run."""

    rule: str  # a key of WHY
    table: str
    index: str | None
    value: float  # the figure that crossed the limit
    limit: float  # the limit it crossed
    before: float | None  # the same figure before the run, when known
    new: bool  # the object was not flagged by this rule before the run
    text: str  # what was found, for people
    why: str  # why it matters, one sentence


def _table_flags(table: TableStats) -> list[tuple[str, float, float, str]]:
    found = []
    if table.versions and table.records is not None and table.versions > VERSIONS_SHARE * table.records:
        share = f" ({table.versions / table.records:.0%} of the records)" if table.records else ""
        found.append(("versions", table.versions, VERSIONS_SHARE * table.records,
                      f"{table.name}: {table.versions:,} back versions for {table.records:,} records{share}"))
    if table.max_versions is not None and table.max_versions > MAX_VERSIONS:
        found.append(("max_versions", table.max_versions, MAX_VERSIONS,
                      f"{table.name}: one record has {table.max_versions:,} versions"))
    if (table.avg_fill is not None and table.avg_fill < LOW_FILL and table.data_pages
            and table.data_pages >= LOW_FILL_MIN_PAGES):
        found.append(("low_fill", table.avg_fill, LOW_FILL,
                      f"{table.name}: data pages {table.avg_fill} % full on average ({table.data_pages:,} pages)"))
    return found


def _before_value(before: GstatSnapshot | None, rule: str, table: str, index: str | None) -> float | None:
    if before is None or not before.usable:
        return None
    if index is not None:
        stats = before.indices.get(index)
        return None if stats is None else stats.depth
    old = before.tables.get(table)
    if old is None:
        return None
    return {"versions": old.versions, "max_versions": old.max_versions, "low_fill": old.avg_fill}[rule]


def flags(before: GstatSnapshot | None, after: GstatSnapshot) -> list[Flag]:
    """What crossed a limit after the run (``before`` says which were there already)."""
    if not after.usable:
        return []
    flagged_before: set[tuple[str, str]] = set()
    if before is not None and before.usable:
        flagged_before = {(rule, table.name) for table in before.tables.values() for rule, *_ in _table_flags(table)}
        flagged_before |= {("index_depth", index.name) for index in before.indices.values()
                           if index.depth is not None and index.depth >= INDEX_DEPTH}
    found: list[Flag] = []
    for table in after.tables.values():
        for rule, value, limit, text in _table_flags(table):
            found.append(Flag(rule, table.name, None, value, limit, _before_value(before, rule, table.name, None),
                              (rule, table.name) not in flagged_before, text, WHY[rule]))
    for index in after.indices.values():
        if index.depth is not None and index.depth >= INDEX_DEPTH:
            found.append(Flag("index_depth", index.table, index.name, index.depth, INDEX_DEPTH,
                              _before_value(before, "index_depth", index.table, index.name),
                              ("index_depth", index.name) not in flagged_before,
                              f"{index.name} on {index.table}: depth {index.depth} ({index.nodes or 0:,} nodes)",
                              WHY["index_depth"]))
    return found


def _difference(old: Any, new: Any) -> float | None:
    if not isinstance(old, int | float) or not isinstance(new, int | float):
        return None
    change = new - old
    if not math.isfinite(change):
        return None
    return round(change, 2) if isinstance(change, float) else change


def delta(before: GstatSnapshot, after: GstatSnapshot) -> dict[str, dict[str, float | None]]:
    """after − before per figure: {"header": {...}, "table:NAME": {...}, "index:NAME": {...}}.

    A figure missing on either side (an object created or dropped during the run, an unusable
    snapshot) has no difference: None.
    """
    changes: dict[str, dict[str, float | None]] = {
        "header": {name: _difference(before.header.get(name), after.header.get(name)) for name in HEADER_FIELDS},
    }
    for name in sorted(set(before.tables) | set(after.tables)):
        old, new = before.tables.get(name), after.tables.get(name)
        changes[f"table:{name}"] = {f: _difference(getattr(old, f, None), getattr(new, f, None)) for f in TABLE_FIELDS}
    for name in sorted(set(before.indices) | set(after.indices)):
        old_index, new_index = before.indices.get(name), after.indices.get(name)
        changes[f"index:{name}"] = {f: _difference(getattr(old_index, f, None), getattr(new_index, f, None))
                                    for f in INDEX_FIELDS}
    return changes
