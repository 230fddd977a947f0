"""Read a database file's header page without attaching.

Attaching changes a database (the header records the next attachment and transaction ids), so
fbbench reads what it needs to choose an engine straight from the file: page size and on-disk
structure (ODS) version. Offsets are those of Firebird's header page (ods.h) from ODS 12 on.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from fbbench.errors import FbbenchError

_HEADER_PAGE_TYPE = 1
_ODS_FIREBIRD_FLAG = 0x8000


@dataclass(frozen=True)
class FileHeader:
    page_size: int
    ods_major: int
    ods_minor: int

    @property
    def ods(self) -> str:
        return f"{self.ods_major}.{self.ods_minor}"


def read_header(path: Path) -> FileHeader:
    try:
        with path.open("rb") as handle:
            raw = handle.read(128)
    except FileNotFoundError:
        raise FbbenchError(f"database {path} does not exist") from None
    except OSError as error:
        raise FbbenchError(f"cannot read {path}: {error.strerror}") from None
    if len(raw) < 68 or raw[0] != _HEADER_PAGE_TYPE:
        raise FbbenchError(f"{path} is not a Firebird database (no header page)")
    page_size, ods_raw = struct.unpack_from("<HH", raw, 16)
    (ods_minor,) = struct.unpack_from("<H", raw, 64)
    if not ods_raw & _ODS_FIREBIRD_FLAG:
        raise FbbenchError(f"{path} has a pre-Firebird 3 (InterBase) on-disk structure, not supported")
    return FileHeader(page_size, ods_raw & ~_ODS_FIREBIRD_FLAG, ods_minor)
