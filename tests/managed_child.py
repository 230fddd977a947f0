"""What the managed-server tests run inside an engine child (a Firebird 5 client over TCP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fbbench.database import driver

_MINE = ("select a.mon$server_pid, a.mon$remote_protocol, d.mon$page_buffers, "
         "rdb$get_context('SYSTEM', 'ENGINE_VERSION') "
         "from mon$attachments a cross join mon$database d where a.mon$attachment_id = current_connection")


def _carries(pid: int, marker: str) -> bool:
    """Whether process ``pid`` has ``marker`` (NAME=value) in its environment."""
    try:
        return marker.encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def two_attachments(dsn: str, marker: str) -> list[dict[str, Any]]:
    """Create the database, then hold two attachments at once: which server process serves each
    (and whether it belongs to the instance), over which protocol, with how many page buffers."""
    found = []
    with driver.create_database(dsn, page_size=8192) as first, driver.connect(dsn) as second:
        for connection in (first, second):
            with connection.cursor() as cursor:
                cursor.execute(_MINE)
                pid, protocol, buffers, version = cursor.fetchone()
            found.append({"pid": pid, "protocol": (protocol or "").strip(), "page_buffers": buffers,
                          "engine_version": version, "in_instance": _carries(pid, marker)})
    return found
