"""A database's header page, read without attaching.

Attaching changes a database (the header records the next attachment id, a transaction bumps
Next and writes a transaction inventory page), so fbbench reads what it needs about a database
it may not own straight from the header page: from the file for embedded engines
(:func:`read_header`), from the services API's header statistics (``gstat -h``) for a server
(:func:`parse_gstat_header`, fed by :func:`server_header`).

Offsets are those of ``Ods::header_page`` in Firebird's ``src/jrd/ods.h``, little-endian, checked
byte by byte against what each engine reports (MON$DATABASE and gstat -h) in
``tests/test_foreign_databases.py``::

    offset  ODS 12 (Firebird 3.0)          ODS 13 (Firebird 4.0, 5.0)
    0       pag_type (1 = header)          same
    16      hdr_page_size      u16         same
    18      hdr_ods_version    u16         same (major | 0x8000, the Firebird flag)
    28      hdr_oldest_transaction u32     same, low 32 bits
    32      hdr_oldest_active  u32         same, low 32 bits
    36      hdr_next_transaction u32       same, low 32 bits
    42      hdr_flags          u16         same
    44      hdr_creation_date  ISC_TIMESTAMP (days since 1858-11-17, 1/10000 s):
                               local time of the creating engine   UTC
    52      hdr_attachment_id  u32         same, low 32 bits
    64      hdr_ods_minor      u16         same
    66      hdr_end            u16         same (end of the clumplets)
    68      hdr_page_buffers   u32         same (0 = the engine's default)
    72      hdr_oldest_snapshot u32        same, low 32 bits
    80      hdr_crypt_page     u32         same
    84      hdr_top_crypt      u32         hdr_crypt_plugin[32]
    88      hdr_crypt_plugin[32]           -
    116     -                              hdr_att_high u32 (attachment id bits 32..63)
    120     hdr_misc[3]                    hdr_tra_high[4] u16: Next, OIT, OAT, OST bits 32..47
    132/128 hdr_data: clumplets            hdr_data at 128

Clumplets are ``type, length, data`` up to HDR_end (0): 4 = sweep interval (absent: the default
20000), 10 = database GUID (ODS 13 only; Firebird 3 has none), 7 = the nbackup GUID.
"""

from __future__ import annotations

import re
import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fbbench.errors import FbbenchError

_GSTAT_CANNOT_OPEN = 336920605  # gstat: "Can't open database file"

_HEADER_PAGE_TYPE = 1
_ODS_FIREBIRD_FLAG = 0x8000
_FIRST_READ = 4096  # the smallest page size from ODS 12 on; a larger page is read whole

# hdr_flags (ods.h); the same bits in ODS 12 and 13, replica modes from ODS 13 on.
ACTIVE_SHADOW = 0x0001
FORCE_WRITE = 0x0002
CRYPT_PROCESS = 0x0004
NO_RESERVE = 0x0008
SQL_DIALECT_3 = 0x0010
READ_ONLY = 0x0020
ENCRYPTED = 0x0040
_BACKUP_MASK = 0x0C00
_SHUTDOWN_MASK = 0x1080
_REPLICA_MASK = 0x6000
_BACKUP_MODES = {0x0000: "normal", 0x0400: "stalled", 0x0800: "merge"}
_SHUTDOWN_MODES = {0x0000: "online", 0x0080: "multi", 0x1000: "full", 0x1080: "single"}
_REPLICA_MODES = {0x0000: "none", 0x2000: "read-only", 0x4000: "read-write"}

# Clumplet types (ods.h, ODS 12 and 13).
_HDR_END = 0
_HDR_SWEEP_INTERVAL = 4
_HDR_DB_GUID = 10
DEFAULT_SWEEP_INTERVAL = 20000

_MJD_EPOCH = datetime(1858, 11, 17)


@dataclass(frozen=True)
class FileHeader:
    """What a database's header page says. Transaction numbers are full 64-bit values."""

    page_size: int
    ods_major: int
    ods_minor: int
    flags: int = 0
    oldest_transaction: int | None = None
    oldest_active: int | None = None
    oldest_snapshot: int | None = None
    next_transaction: int | None = None
    next_attachment: int | None = None
    page_buffers: int | None = None
    sweep_interval: int | None = None
    created: datetime | None = None  # aware (UTC) from ODS 13 on; naive local time before
    guid: str | None = None
    source: str = "file"  # "file": the page itself; "gstat": the services API's header statistics
    unknown_attributes: tuple[str, ...] = field(default=())

    @property
    def ods(self) -> str:
        return f"{self.ods_major}.{self.ods_minor}"

    @property
    def forced_writes(self) -> bool:
        return bool(self.flags & FORCE_WRITE)

    @property
    def read_only(self) -> bool:
        return bool(self.flags & READ_ONLY)

    @property
    def reserve_space(self) -> bool:
        return not self.flags & NO_RESERVE

    @property
    def dialect(self) -> int:
        return 3 if self.flags & SQL_DIALECT_3 else 1

    @property
    def encrypted(self) -> bool:
        return bool(self.flags & ENCRYPTED)

    @property
    def shutdown_mode(self) -> str:
        return _SHUTDOWN_MODES.get(self.flags & _SHUTDOWN_MASK, "unknown")

    @property
    def backup_state(self) -> str:
        return _BACKUP_MODES.get(self.flags & _BACKUP_MASK, "unknown")

    @property
    def replica_mode(self) -> str:
        return _REPLICA_MODES.get(self.flags & _REPLICA_MASK, "unknown")

    @property
    def created_at(self) -> str | None:
        """As MON$DATABASE shows it: ``2026-01-02 10:11:12.345600`` (+00:00 from Firebird 4 on)."""
        return None if self.created is None else str(self.created)

    def identity(self) -> dict[str, Any]:
        """What tells this database apart from another one without attaching: the GUID (Firebird 4
        on) and the creation time. Copies of one file share both; see ``ownership``."""
        return {"guid": self.guid, "created": self.created_at}

    def to_json(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["created"] = self.created_at
        values["unknown_attributes"] = list(self.unknown_attributes)
        return values

    @classmethod
    def from_json(cls, values: dict[str, Any]) -> FileHeader:
        values = dict(values)
        created = values.pop("created", None)
        values["unknown_attributes"] = tuple(values.get("unknown_attributes") or ())
        return cls(**values, created=None if created is None else datetime.fromisoformat(created))

    def facts(self) -> dict[str, Any]:
        """The header's part of ``fbbench db info``."""
        return {
            "ods": self.ods,
            "page_size": self.page_size,
            "page_buffers": self.page_buffers,
            "forced_writes": self.forced_writes,
            "sweep_interval": self.sweep_interval,
            "dialect": self.dialect,
            "read_only": self.read_only,
            "reserve_space": self.reserve_space,
            "shutdown_mode": self.shutdown_mode,
            "backup_state": self.backup_state,
            "replica_mode": self.replica_mode,
            "encrypted": self.encrypted,
            "created_at": self.created_at,
            "guid": self.guid,
            "oldest_transaction": self.oldest_transaction,
            "oldest_active": self.oldest_active,
            "oldest_snapshot": self.oldest_snapshot,
            "next_transaction": self.next_transaction,
            "next_attachment": self.next_attachment,
            "header_flags": self.flags,
            "header_source": self.source,
        }


def read_header(path: Path) -> FileHeader:
    """The header page of the database file at ``path``, opened read-only."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(_FIRST_READ)
            if len(raw) >= 20 and struct.unpack_from("<H", raw, 16)[0] > len(raw):
                raw += handle.read(struct.unpack_from("<H", raw, 16)[0] - len(raw))
    except FileNotFoundError:
        raise FbbenchError(f"database {path} does not exist") from None
    except IsADirectoryError:
        raise FbbenchError(f"{path} is a directory, not a database") from None
    except OSError as error:
        raise FbbenchError(f"cannot read {path}: {error.strerror}") from None
    return parse_header_page(raw, str(path))


def parse_header_page(raw: bytes, where: str) -> FileHeader:
    if len(raw) < 132 or raw[0] != _HEADER_PAGE_TYPE:
        raise FbbenchError(f"{where} is not a Firebird database (no header page)")
    page_size, ods_raw = struct.unpack_from("<HH", raw, 16)
    if not ods_raw & _ODS_FIREBIRD_FLAG:
        raise FbbenchError(f"{where} has a pre-Firebird 3 (InterBase) on-disk structure, not supported")
    major = ods_raw & ~_ODS_FIREBIRD_FLAG
    (minor,) = struct.unpack_from("<H", raw, 64)
    if major < 12:
        # Firebird 1.x/2.x (ODS 10, 11) laid the header out differently; only the version is read.
        return FileHeader(page_size, major, minor)
    oit, oat, next_tx = struct.unpack_from("<III", raw, 28)
    (flags,) = struct.unpack_from("<H", raw, 42)
    days, ticks, attachment = struct.unpack_from("<iII", raw, 44)
    end, buffers, ost = struct.unpack_from("<HII", raw, 66)
    created = _MJD_EPOCH + timedelta(days=days, microseconds=ticks * 100)
    if major >= 13:
        att_high, next_high, oit_high, oat_high, ost_high = struct.unpack_from("<I4H", raw, 116)
        next_tx |= next_high << 32
        oit |= oit_high << 32
        oat |= oat_high << 32
        ost |= ost_high << 32
        attachment |= att_high << 32
        created = created.replace(tzinfo=UTC)
        data_start = 128
    else:
        data_start = 132
    clumplets = dict(_clumplets(raw, data_start, min(end, len(raw))))
    sweep = clumplets.get(_HDR_SWEEP_INTERVAL)
    guid = clumplets.get(_HDR_DB_GUID)
    return FileHeader(
        page_size=page_size, ods_major=major, ods_minor=minor, flags=flags,
        oldest_transaction=oit, oldest_active=oat, oldest_snapshot=ost, next_transaction=next_tx,
        next_attachment=attachment, page_buffers=buffers,
        sweep_interval=DEFAULT_SWEEP_INTERVAL if sweep is None else int.from_bytes(sweep, "little"),
        created=created,
        guid=None if guid is None or len(guid) != 16 else _guid_text(guid),
    )


def _clumplets(raw: bytes, start: int, end: int) -> Iterable[tuple[int, bytes]]:
    position = start
    while position + 2 <= end and raw[position] != _HDR_END:
        kind, length = raw[position], raw[position + 1]
        yield kind, raw[position + 2:position + 2 + length]
        position += 2 + length


def _guid_text(data: bytes) -> str:
    """Firebird prints a GUID as Windows does: the first three groups little-endian."""
    return "{" + str(uuid.UUID(bytes_le=bytes(data))).upper() + "}"


# ------------------------------------------------------------------------------ gstat -h

_ATTRIBUTES = {
    "active shadow": ACTIVE_SHADOW,
    "force write": FORCE_WRITE,
    "no reserve": NO_RESERVE,
    "read only": READ_ONLY,
    "multi-user maintenance": 0x0080,
    "single-user maintenance": 0x1080,
    "full shutdown": 0x1000,
    "backup lock": 0x0400,
    "backup merge": 0x0800,
    "read-only replica": 0x2000,
    "read-write replica": 0x4000,
}
_GSTAT_DATE = re.compile(r"^(\w{3}) (\d{1,2}), (\d{4}) (\d{1,2}):(\d{2}):(\d{2})$")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def parse_gstat_header(lines: Iterable[str], where: str) -> FileHeader:
    """The header page as the services API's ``gstat -h`` prints it (Firebird 3.0, 4.0, 5.0).

    gstat prints the creation time to the second, and every number in full.
    """
    values: dict[str, str] = {}
    for line in lines:
        name, tab, value = line.strip().partition("\t")
        if tab:
            values.setdefault(name.strip().rstrip(":"), value.strip())
    if "Page size" not in values or "ODS version" not in values:
        raise FbbenchError(f"the header statistics of {where} cannot be read (no page size or ODS version)")
    major, _, minor = values["ODS version"].partition(".")

    def number(name: str) -> int | None:
        text = values.get(name)
        return int(text) if text is not None and text.lstrip("-").isdigit() else None

    flags, unknown = 0, []
    for attribute in _split_attributes(values.get("Attributes", "")):
        if attribute in _ATTRIBUTES:
            flags |= _ATTRIBUTES[attribute]
        elif attribute.startswith("encrypted"):
            flags |= ENCRYPTED
        elif attribute.startswith("crypt process"):
            flags |= CRYPT_PROCESS
        else:
            unknown.append(attribute)
    if number("Database dialect") == 3:
        flags |= SQL_DIALECT_3
    created = _gstat_date(values.get("Creation date", ""))
    if created is not None and int(major) >= 13:
        created = created.replace(tzinfo=UTC)
    sweep = number("Sweep interval")
    guid = values.get("Database GUID")
    return FileHeader(
        page_size=int(values["Page size"]), ods_major=int(major), ods_minor=int(minor or 0), flags=flags,
        oldest_transaction=number("Oldest transaction"), oldest_active=number("Oldest active"),
        oldest_snapshot=number("Oldest snapshot"), next_transaction=number("Next transaction"),
        next_attachment=number("Next attachment ID"), page_buffers=number("Page buffers"),
        sweep_interval=DEFAULT_SWEEP_INTERVAL if sweep is None else sweep, created=created,
        guid=guid.upper() if guid else None, source="gstat", unknown_attributes=tuple(unknown),
    )


def _split_attributes(text: str) -> list[str]:
    # "force write, no reserve, encrypted, plugin X": a plugin name belongs to "encrypted".
    parts: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if part.startswith("plugin ") and parts and parts[-1].startswith("encrypted"):
            parts[-1] += ", " + part
        elif part:
            parts.append(part)
    return parts


def _gstat_date(text: str) -> datetime | None:
    match = _GSTAT_DATE.match(text.strip())
    if not match or match.group(1) not in _MONTHS:
        return None
    month = _MONTHS.index(match.group(1)) + 1
    day, year, hour, minute, second = (int(g) for g in match.groups()[1:])
    return datetime(year, month, day, hour, minute, second)


def server_header(dsn: str) -> FileHeader | None:
    """The header page of a server's database through the services API (``gstat -h``), which
    reads the page without attaching to the database; None when the server cannot open a file
    there (none, or not readable by the server)."""
    from firebird.driver import SrvStatFlag

    from fbbench.database import driver
    from fbbench.engines.catalog import ServerEngine, parse_engine

    engine = parse_engine(dsn)
    assert isinstance(engine, ServerEngine)
    host = engine.host + (f"/{engine.port}" if engine.port else "")
    with driver.server(host, dsn) as server:
        try:
            server.database.get_statistics(database=engine.path, flags=SrvStatFlag.HDR_PAGES)
            lines = server.readlines()
        except Exception as error:
            codes = tuple(getattr(error, "gds_codes", ()) or ())
            if _GSTAT_CANNOT_OPEN in codes:
                return None
            if not type(error).__module__.startswith("firebird.driver"):
                raise
            raise FbbenchError(f"cannot read the header of {dsn}: {driver.explain(error, dsn).message}") from None
    return parse_gstat_header(lines, dsn)
