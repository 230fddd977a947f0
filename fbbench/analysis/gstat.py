"""gstat before and after a run, read as an expert would (IBAnalyst's eye): what crossed a limit —
back versions piling up, a record with a long version chain, an index too deep, half-empty data
pages — and what changed between the two snapshots.

The snapshots themselves are the observation's (:mod:`fbbench.observe.gstat`); the judgement
lives here, next to the credibility lint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fbbench.observe.gstat import HEADER_FIELDS, INDEX_FIELDS, TABLE_FIELDS, GstatSnapshot, TableStats

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
    found: list[tuple[str, float, float, str]] = []
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
