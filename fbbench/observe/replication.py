"""What Firebird's replication journal holds, read from its files (no attachment, no MON$), and
what the engine wrote to replication.log.

Firebird 4.0+ journals a published database's changes into segments in ``journal_directory``,
named ``<prefix>.journal-<sequence, 9 digits>``. A segment starts with a 48-byte header
(``src/jrd/replication/ChangeLog.h``, the same in 4.0.7 and 5.0.4): a 12-byte signature
``FBCHANGELOG``, the version and state (two 16-bit words), the database GUID (16 bytes), the
segment's sequence and its length in bytes, header included (two 64-bit words, little-endian on
the x86-64 engines fbbench runs). The engine appends at ``length``; once a segment is full, or
older than ``journal_archive_timeout``, it copies its ``length`` bytes to
``journal_archive_directory`` under the same name, marks it free and later reuses the file under
a new sequence (renamed), so a sequence's bytes are in its journal file, its archived copy, or
both.

A reading adds up each sequence's bytes — the larger of its journal header's length and its
archived copy's size — so that the difference of two readings is what the engine journaled in
between, whichever segments were archived or reused meanwhile; and the archived segments: how
many, how many bytes.
"""

from __future__ import annotations

import re
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_HEADER = struct.Struct("<12sHH16sQQ")
_SIGNATURE = b"FBCHANGELOG\0"
_SEGMENT = re.compile(r"\.journal-(\d{9,})$")


@dataclass(frozen=True)
class JournalReading:
    """The journal and the archive at one moment (``at``: time.monotonic())."""

    at: float
    journal_bytes: int  # every sequence's bytes, journaled so far
    archive_bytes: int
    segments_archived: int
    segments: int  # segment files in the journal directory (free ones included)

    def minus(self, earlier: JournalReading) -> dict[str, float]:
        """What happened between ``earlier`` and this reading."""
        return {"journal_bytes": self.journal_bytes - earlier.journal_bytes,
                "archive_bytes": self.archive_bytes - earlier.archive_bytes,
                "segments_archived": self.segments_archived - earlier.segments_archived,
                "seconds": self.at - earlier.at}


def _sequence(path: Path) -> int | None:
    match = _SEGMENT.search(path.name)
    return int(match.group(1)) if match else None


def segment_length(path: Path) -> tuple[int, int] | None:
    """(sequence, length) from a journal segment's header; None while the engine is still
    writing the header of a new segment (its first bytes are zeros), or for another file."""
    try:
        with open(path, "rb") as segment:
            head = segment.read(_HEADER.size)
    except OSError:  # renamed or removed by the engine since the listing
        return None
    if len(head) < _HEADER.size:
        return None
    signature, _version, _state, _guid, sequence, length = _HEADER.unpack(head)
    if signature != _SIGNATURE:
        return None
    return sequence, length


def read(journal: Path | None, archive: Path | None) -> JournalReading:
    """The journal directory and the archive directory now (either may be absent: sync only)."""
    at = time.monotonic()
    by_sequence: dict[int, int] = {}
    segments = 0
    if journal is not None and journal.is_dir():
        for path in journal.iterdir():
            found = segment_length(path)
            if found is None:
                continue
            segments += 1
            sequence, length = found
            by_sequence[sequence] = max(by_sequence.get(sequence, 0), length)
    archive_bytes = archived = 0
    if archive is not None and archive.is_dir():
        for path in archive.iterdir():
            archived_sequence = _sequence(path)
            if archived_sequence is None:
                continue
            try:
                size = path.stat().st_size
            except OSError:
                continue
            archived += 1
            archive_bytes += size
            by_sequence[archived_sequence] = max(by_sequence.get(archived_sequence, 0), size)
    return JournalReading(at, sum(by_sequence.values()), archive_bytes, archived, segments)


def log_findings(text: str) -> list[dict[str, Any]]:
    """replication.log's entries as findings (kind, severity, count, example): each entry is a
    line naming the host and side, then indented lines; an ``ERROR:`` line makes it an error."""
    entries: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[:1].isspace() or not entries:
            entries.append([line.strip()])
        else:
            entries[-1].append(line.strip())
    by_kind: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in entries:
        body = [line for line in entry[1:] if not line.startswith("Database:")]
        severity = "error" if any(line.startswith("ERROR") for line in body) else \
            "warning" if any(line.startswith("WARNING") for line in body) else "info"
        message = " ".join(body) or entry[0]
        kind = f"replication {severity}"
        found = by_kind.setdefault((kind, severity), {"kind": kind, "severity": severity, "count": 0,
                                                      "example": message, "detail": {}})
        found["count"] += 1
    return list(by_kind.values())
