"""What the engine and the database are, read inside the engine child: version strings,
architecture, effective firebird.conf, header counters; and the sweep before measuring."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from fbbench.database import driver, lifecycle

if TYPE_CHECKING:
    from fbbench.engines.runtime import Runtime


def snapshot(dsn: str) -> dict[str, Any]:
    """Header and size: what an expert compares before and after a run."""
    info = lifecycle.info(dsn)
    keys = ("oldest_transaction", "oldest_active", "oldest_snapshot", "next_transaction", "pages", "size_bytes",
            "page_size", "page_buffers", "forced_writes", "sweep_interval", "ods")
    return {key: info[key] for key in keys} | {"taken_at": time.time()}


def engine_facts(dsn: str, runtime: Runtime) -> dict[str, Any]:
    """Version strings, architecture, and the effective firebird.conf (RDB$CONFIG on 4.0+)."""
    info = lifecycle.info(dsn)
    rows = lifecycle.effective_config(dsn)
    facts: dict[str, Any] = {
        "engine_version": info["engine_version"],
        "server_version": info["server_version"],
        "version_lines": info["version_lines"],
        "architecture": info["architecture"],
        "ods": info["ods"],
    }
    if rows:
        facts["firebird_conf_source"] = "RDB$CONFIG"
        facts["firebird_conf"] = rows
        mode = next((row["value"] for row in rows if row["name"] == "ServerMode"), None)
        if mode:
            facts["server_mode"] = mode
    elif runtime.embedded:
        # Firebird 3 has no RDB$CONFIG: the generated file is what the embedded engine read.
        facts["firebird_conf_source"] = "generated firebird.conf (engine defaults for everything else)"
        facts["firebird_conf_text"] = runtime.conf_file.read_text()
        facts["server_mode"] = runtime.conf.get("ServerMode", "Super")
    elif runtime.managed:
        # fbbench wrote the managed server's firebird.conf: the run's settings plus its port,
        # bind address and security database, which do not bear on performance.
        facts["firebird_conf_source"] = "firebird.conf generated for the managed server (engine defaults for the rest)"
        facts["firebird_conf_text"] = "".join(f"{key} = {value}\n" for key, value in runtime.conf.items())
        facts["server_mode"] = runtime.conf.get("ServerMode", "Super")
    else:
        # A Firebird 3 server shows neither its firebird.conf nor its ServerMode to a client.
        facts["firebird_conf_source"] = "not visible: a Firebird 3 server has no RDB$CONFIG"
        facts["firebird_conf_text"] = ""
        facts["server_mode"] = "unknown (not visible from a Firebird 3 client)"
    return facts


ARCHITECTURE_NAMES = {"super": "SuperServer", "superclassic": "SuperClassic", "classic": "Classic"}


def architecture_reading(dsn: str, exclude: set[int]) -> dict[str, Any]:
    """Which architecture the engine really runs, from what it shows while the load runs.

    MON$ATTACHMENTS gives the server process of every attachment (MON$SERVER_PID): the threads of
    SuperServer and SuperClassic share the process of this reading's own attachment, while in
    Classic every attachment has a process of its own (embedded: the core's worker processes; a
    server: one forked per connection). The database row of MON$MEMORY_USAGE is the shared
    database pool (page cache included), non-zero only in SuperServer. The load's attachments are
    the user attachments other than this reading's and ``exclude`` (the sampler's).
    """
    with driver.connect(dsn) as connection, connection.cursor() as cursor:
        cursor.execute("select a.mon$attachment_id, a.mon$server_pid, coalesce(a.mon$system_flag, 0), "
                       "current_connection from mon$attachments a")
        rows = cursor.fetchall()
        cursor.execute("select m.mon$memory_used from mon$database d "
                       "join mon$memory_usage m on m.mon$stat_id = d.mon$stat_id")
        pool = int(cursor.fetchone()[0] or 0)
        connection.commit()
    own = next((attachment for attachment, _pid, _system, me in rows if attachment == me), None)
    own_pid = next((pid for attachment, pid, _system, _me in rows if attachment == own), None)
    load = [pid for attachment, pid, system, _me in rows
            if not system and attachment != own and attachment not in exclude]
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


def architecture_mismatch(requested: str | None, verified: dict[str, Any] | None) -> str | None:
    """The failure when the engine ran another architecture than the one asked for."""
    if not requested or not verified or verified.get("architecture") is None:
        return None
    seen = verified["architecture"]
    if seen == requested:
        return None
    what = ARCHITECTURE_NAMES.get(seen, "an architecture fbbench cannot tell")
    return (f"the engine ran {what}, not the requested {ARCHITECTURE_NAMES[requested]}: "
            f"{verified['attachments']} attachment(s) in {verified['server_processes']} server process(es)"
            f"{' shared with the observer' if verified['shares_process_with_observer'] else ''}, "
            f"shared database pool {verified['database_pool_bytes']:,} bytes")


def sweep(services_host: str, database: str) -> float:
    started = time.monotonic()
    with driver.server(services_host) as server:
        server.database.sweep(database=database)
    return time.monotonic() - started
