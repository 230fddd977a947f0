"""What the engine and the database are, read inside the engine child: version strings,
architecture, effective firebird.conf, header counters; and the sweep before measuring."""

from __future__ import annotations

import ipaddress
import socket
import statistics
import time
from typing import TYPE_CHECKING, Any

from fbbench.database import driver, lifecycle
from fbbench.engines.binaries import engine_binaries

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
    # Which files the engine is (PyPI's runtime, a registered build, a managed server's installation);
    # an external server's are not visible.
    binaries = engine_binaries(runtime.engine)
    if binaries is not None:
        facts["binaries"] = binaries
    if runtime.embedded and runtime.replication_conf.exists():
        # Kept with the run as its firebird.conf is: what the engine read (docs/replication.md).
        facts["replication_conf_text"] = runtime.replication_conf.read_text()
    return facts


def architecture_reading(dsn: str, exclude: set[int]) -> dict[str, Any]:
    """The architecture the engine runs (fbbench.observe.architecture), through an attachment of
    its own: for a run without a sampler."""
    from fbbench.observe import architecture

    with driver.connect(dsn) as connection:
        with connection.cursor() as cursor:
            reading = architecture.read(cursor, exclude)
        connection.commit()
    return reading


def sweep(services_host: str, database: str) -> float:
    started = time.monotonic()
    with driver.server(services_host) as server:
        server.database.sweep(database=database)
    return time.monotonic() - started


ROUND_TRIPS = 200  # trivial queries timed before a run over the network


def _loopback(host: str) -> bool:
    try:
        return all(ipaddress.ip_address(info[4][0]).is_loopback
                   for info in socket.getaddrinfo(host or "localhost", None))
    except (OSError, ValueError):
        return False


def round_trip(dsn: str, server_host: str, queries: int = ROUND_TRIPS) -> dict[str, Any]:
    """The client-to-server round trip before a run over the network: a trivial query's median
    and p99 in milliseconds over ``queries`` executions on an attachment of its own (the first
    10 not counted: the statement is prepared and the connection warms up)."""
    seconds: list[float] = []
    with driver.connect(dsn) as connection:
        with connection.cursor() as cursor:
            statement = cursor.prepare("select 1 from rdb$database")
            for n in range(queries + 10):
                started = time.perf_counter()
                cursor.execute(statement)
                cursor.fetchone()
                if n >= 10:
                    seconds.append(time.perf_counter() - started)
        connection.commit()
    ordered = sorted(seconds)
    return {"server": server_host, "loopback": _loopback(server_host), "queries": len(seconds),
            "median_ms": statistics.median(ordered) * 1000,
            "p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000,
            "query": "select 1 from rdb$database", "measured_at": time.time()}
