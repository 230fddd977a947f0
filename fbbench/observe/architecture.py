"""Which architecture the engine really runs, from what it shows while the load runs.

MON$ATTACHMENTS gives the server process of every attachment (MON$SERVER_PID): the threads of
SuperServer and SuperClassic share the process of the observer's own attachment, while in
Classic every attachment has a process of its own (embedded: the core's attachment processes; a
server: one forked per connection, the observer's too). The database row of MON$MEMORY_USAGE is
the shared database pool (page cache included), non-zero only in SuperServer (found on 3.0, 4.0
and 5.0: zero in SuperClassic and Classic, where every attachment has its own). MON$STATEMENTS is
never read: it is the expensive part of a monitoring snapshot.

Read once while measuring, by the sampler within its own reading (the same snapshot, no extra
attachment: one would also enter the per-attachment sums the sampler makes in SuperClassic and
Classic, then leave them) or, without a sampler, through an attachment of its own.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from fbbench.database.driver import OWN_PROCESS
from fbbench.engines.firebird_conf import ARCHITECTURE_NAMES

ATTACHMENTS_SQL = ("select a.mon$attachment_id, a.mon$server_pid, coalesce(a.mon$system_flag, 0), "
                   "current_connection, a.mon$remote_process from mon$attachments a")
POOL_SQL = ("select m.mon$memory_used from mon$database d "
            "join mon$memory_usage m on m.mon$stat_id = d.mon$stat_id")


def read(cursor: Any, exclude: Iterable[int] = ()) -> dict[str, Any]:
    """One reading through ``cursor`` (in a transaction whose MON$ snapshot is the moment's).

    The load's attachments are the user attachments other than the observer's own, ``exclude``
    (another observer of this process, such as the sampler) and fbbench's own (process name
    ``fbbench``: the profiler's, under ``--profile``)."""
    cursor.execute(ATTACHMENTS_SQL)
    rows = cursor.fetchall()
    cursor.execute(POOL_SQL)
    pool = int(cursor.fetchone()[0] or 0)
    own = {int(a) for a, _p, _s, me, process in rows if int(a) != int(me) and process_name(process) == OWN_PROCESS}
    return judge([(int(a), int(p or 0), int(s), int(me)) for a, p, s, me, _process in rows], pool,
                 set(exclude) | own)


def process_name(process: str | None) -> str:
    """MON$REMOTE_PROCESS without its directory: the name an attachment gave itself."""
    return (process or "").strip().replace("\\", "/").rsplit("/", 1)[-1]


def judge(rows: list[tuple[int, int, int, int]], pool: int, exclude: set[int]) -> dict[str, Any]:
    """rows: (attachment id, server pid, system flag, current_connection) of MON$ATTACHMENTS."""
    own = next((attachment for attachment, _pid, _system, me in rows if attachment == me), None)
    own_pid = next((pid for attachment, pid, _system, _me in rows if attachment == own), None)
    load = [pid for attachment, pid, system, _me in rows if not system and attachment != own
            and attachment not in exclude]
    distinct = set(load)
    if not load:
        seen = None
    elif pool > 0:
        seen = "super" if distinct <= {own_pid} else "unknown"
    elif len(distinct) == len(load) and own_pid not in distinct:
        seen = "classic"
    elif distinct == {own_pid}:
        seen = "superclassic"
    else:
        seen = "unknown"
    return {"architecture": seen, "attachments": len(load), "server_processes": len(distinct),
            "shares_process_with_observer": own_pid in distinct, "database_pool_bytes": pool,
            "taken_at": time.time(), "source": "MON$ATTACHMENTS.MON$SERVER_PID, MON$MEMORY_USAGE"}


def mismatch(requested: str | None, verified: dict[str, Any] | None) -> str | None:
    """The failure when the engine ran another architecture than the one asked for."""
    if not requested or not verified or verified.get("architecture") is None:
        return None
    seen = verified["architecture"]
    if seen == requested:
        return None
    what = ARCHITECTURE_NAMES.get(seen, "an architecture fbbench cannot tell")
    shared = " shared with the observer" if verified["shares_process_with_observer"] else ""
    return (f"the engine ran {what}, not the requested {ARCHITECTURE_NAMES[requested]}: {verified['attachments']} "
            f"attachment(s) in {verified['server_processes']} server process(es){shared}, shared database pool "
            f"{verified['database_pool_bytes']:,} bytes")
