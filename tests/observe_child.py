"""Functions the observation tests run inside an engine child process."""

from __future__ import annotations

import os
import random
import socket
import time
from pathlib import Path
from typing import Any

from fbbench.database import driver
from fbbench.observe import firebird_log, gstat
from fbbench.observe.sampler import Sample, Sampler, SamplerThread, deltas

# A few TPC-C-like tables: small, indexed, and with some rows wider than a 4 KiB page.
SCHEMA = [
    "create table warehouse (w_id integer not null primary key, w_name varchar(10), w_ytd numeric(12,2))",
    "create table district (d_w_id integer not null, d_id integer not null, d_name varchar(10), "
    "d_next_o_id integer, primary key (d_w_id, d_id))",
    "create table customer (c_w_id integer not null, c_d_id integer not null, c_id integer not null, "
    "c_last varchar(16), c_balance numeric(12,2), c_data varchar(500), primary key (c_w_id, c_d_id, c_id))",
    "create index customer_last on customer (c_w_id, c_d_id, c_last)",
    "create table order_line (ol_w_id integer not null, ol_d_id integer not null, ol_o_id integer not null, "
    "ol_number integer not null, ol_amount numeric(6,2), ol_dist_info char(24), "
    "primary key (ol_w_id, ol_d_id, ol_o_id, ol_number))",
    "create table big_doc (id integer not null primary key, body varchar(8000))",
]


def create_tpcc_like(dsn: str) -> None:
    rng = random.Random(1)
    with driver.create_database(dsn, page_size=4096) as connection:
        for ddl in SCHEMA:
            connection.execute_immediate(ddl)
        connection.commit()
        with connection.cursor() as cursor:
            cursor.execute("insert into warehouse values (1, 'w1', 0)")
            cursor.executemany("insert into district values (1, ?, ?, 1)", [(d, f"d{d}") for d in range(1, 11)])
            cursor.executemany("insert into customer values (1, ?, ?, ?, 0, ?)",
                               [(c % 10 + 1, c, f"LAST{c % 37}", "x" * 300) for c in range(1, 1001)])
            cursor.executemany("insert into order_line values (1, ?, ?, ?, ?, ?)",
                               [(o % 10 + 1, o, n, n * 1.5, "dist-info-24-chars-xxxxx")
                                for o in range(1, 301) for n in range(1, 11)])
            # Random text does not compress: each row is larger than a page ("Big record pages").
            alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
            cursor.executemany("insert into big_doc values (?, ?)",
                               [(i, "".join(rng.choice(alphabet) for _ in range(7000))) for i in range(1, 21)])
        connection.commit()


def _hold_snapshot(dsn: str) -> Any:
    """An attachment with a snapshot transaction open: the versions it may see must stay."""
    from firebird.driver import Isolation, tpb

    holder = driver.connect(dsn)
    transaction = holder.transaction_manager(tpb(Isolation.SNAPSHOT))
    transaction.begin()
    with transaction.cursor() as cursor:
        cursor.execute("select count(*) from customer")
        cursor.fetchone()
    return holder, transaction


def gstat_before_after(dsn: str, services_host: str = "", database: str | None = None) -> dict[str, str]:
    """gstat of a fresh TPC-C-like database, then again after updates made while a snapshot
    transaction stayed open (so back versions exist)."""
    create_tpcc_like(dsn)
    where = database or dsn
    before = gstat.collect(services_host, where)
    holder, transaction = _hold_snapshot(dsn)
    try:
        with driver.connect(dsn) as connection, connection.cursor() as cursor:
            for _ in range(3):
                cursor.execute("update customer set c_balance = c_balance + 1 where c_id <= 600")
                cursor.execute("update district set d_next_o_id = d_next_o_id + 1")
                connection.commit()
        after = gstat.collect(services_host, where)
    finally:
        transaction.rollback()
        holder.close()
    return {"before": before.raw, "after": after.raw, "before_error": before.error, "after_error": after.error}


def gstat_replica(dsn: str) -> str:
    """gstat of a database switched to a read-only replica (4.0+): a header attribute
    firebird-lib does not know."""
    from firebird.driver import ReplicaMode

    create_tpcc_like(dsn)
    with driver.server("") as server:
        server.database.set_replica_mode(database=dsn, mode=ReplicaMode.READ_ONLY)
    return gstat.collect("", dsn).raw


def gstat_blobs(dsn: str) -> str:
    """gstat of blobs on all three levels (5.0 prints a line per level)."""
    with driver.create_database(dsn, page_size=4096) as connection:
        connection.execute_immediate("create table doc (id integer not null primary key, body blob sub_type binary)")
        connection.commit()
        sizes = [100] * 5 + [20_000] * 3 + [5_000_000]
        with connection.cursor() as cursor:
            cursor.executemany("insert into doc values (?, ?)", [(i, os.urandom(n)) for i, n in enumerate(sizes, 1)])
        connection.commit()
    return gstat.collect("", dsn).raw


def gstat_of(services_host: str, database: str) -> dict[str, Any]:
    return gstat.collect(services_host, database).to_dict()


def gstat_flagged(dsn: str) -> dict[str, str]:
    """A database crafted so that every gstat flag fires; returns gstat before and after."""
    from firebird.driver import Isolation, tpb

    rng = random.Random(7)
    with driver.create_database(dsn, page_size=4096) as connection:
        connection.execute_immediate("create table hot (id integer not null primary key, v integer)")
        connection.execute_immediate("create table sparse (id integer not null primary key, pad varchar(200))")
        # Long random keys: few fit on a 4 KiB page, so the tree grows deep quickly.
        connection.execute_immediate("create table wide (k varchar(250) character set octets not null)")
        connection.execute_immediate("create unique index wide_k on wide (k)")
        connection.commit()
        with connection.cursor() as cursor:
            cursor.execute("insert into hot values (1, 0)")
            cursor.executemany("insert into sparse values (?, ?)", [(i, "p" * 200) for i in range(5000)])
            cursor.executemany("insert into wide values (?)", [(rng.randbytes(250),) for _ in range(5000)])
        connection.commit()
    before = gstat.collect("", dsn)
    with driver.connect(dsn) as connection, connection.cursor() as cursor:
        cursor.execute("delete from sparse where mod(id, 5) <> 0")
        connection.commit()
        cursor.execute("select count(*) from sparse")  # garbage collection of the deleted rows
        cursor.fetchone()
        connection.commit()
    # Every update gets a snapshot of its own that stays open, so none of the 110 versions of
    # the HOT row may be collected (4.0+ would collect versions no snapshot can see).
    keeper = driver.connect(dsn)
    snapshots = []
    try:
        with driver.connect(dsn) as connection, connection.cursor() as cursor:
            for _ in range(110):
                cursor.execute("update hot set v = v + 1 where id = 1")
                connection.commit()
                snapshot = keeper.transaction_manager(tpb(Isolation.SNAPSHOT))
                snapshot.begin()
                with snapshot.cursor() as reader:
                    reader.execute("select v from hot")
                    reader.fetchone()
                snapshots.append(snapshot)
        after = gstat.collect("", dsn)
    finally:
        for snapshot in snapshots:
            snapshot.rollback()
        keeper.close()
    return {"before": before.raw, "after": after.raw}


# ---------------------------------------------------------------------------------------- sampler


def _work(writer: Any, reader: Any, rows: int) -> None:
    """Inserts, updates and reads through two attachments other than the sampler's."""
    with writer.cursor() as cursor:
        cursor.executemany("insert into items values (?, ?, ?)", [(i, i % 7, "note") for i in range(rows)])
        writer.commit()
        cursor.execute("update items set qty = qty + 1 where id < ?", (rows // 4,))
        writer.commit()
    with reader.cursor() as cursor:
        cursor.execute("select count(*), sum(qty) from items")
        cursor.fetchone()
        cursor.execute("select note from items where id = ?", (rows // 2,))
        cursor.fetchone()
    reader.commit()


def _summary(sample: Sample) -> dict[str, Any]:
    return {"seconds": sample.seconds, "attachment_id": sample.attachment_id,
            "counters": [[*key, value] for key, value in sample.counters.items()],
            "levels": [[*key, value] for key, value in sample.levels.items()]}


def sampler_reading(dsn: str, create: bool = True, rows: int = 200) -> dict[str, Any]:
    """Two readings around some work by other attachments; their deltas."""
    if create:
        with driver.create_database(dsn) as connection:
            connection.execute_immediate("create table items (id integer primary key, qty integer, note varchar(20))")
            connection.commit()
    # The working attachments stay until after the second reading: in Classic, figures are sums
    # over the attachments present at the reading.
    with Sampler(dsn, ["ITEMS", "NOT_THERE"]) as sampler, driver.connect(dsn) as writer, \
            driver.connect(dsn) as reader:
        first = sampler.sample()
        _work(writer, reader, rows)
        second = sampler.sample()
        return {"first": _summary(first), "second": _summary(second), "rows": deltas(first, second),
                "record_names": sampler.record_names, "per_attachment": sampler.per_attachment}


def sampler_thread(dsn: str, boundaries: int = 3) -> dict[str, Any]:
    """A SamplerThread driven by boundaries, with work between them; what its callback got."""
    with driver.create_database(dsn) as connection:
        connection.execute_immediate("create table items (id integer primary key, qty integer, note varchar(20))")
        connection.commit()
    calls: list[float] = []
    thread = SamplerThread(Sampler(dsn))
    ready = thread.wait_ready(10)
    zero_made = thread.zero(wait=10)  # as a held load does: the baseline, before any work
    for interval in range(boundaries):
        with driver.connect(dsn) as writer, writer.cursor() as cursor:
            cursor.executemany("insert into items values (?, ?, ?)", [(interval * 1000 + i, i, "x") for i in range(50)])
            writer.commit()
        started = time.perf_counter()
        thread.boundary(interval)
        calls.append(time.perf_counter() - started)
    # Boundaries that queue up while a reading runs are answered together.
    for interval in range(boundaries, boundaries + 5):
        thread.boundary(interval)
    thread.close()
    received = thread.take()
    return {"ready": ready, "zero_made": zero_made, "received": received, "taken_again": thread.take(),
            "errors": thread.errors, "running": thread.running, "boundary_call_seconds": calls}


def sample_timing(dsn: str, attachments: int, readings: int = 200) -> dict[str, float]:
    """Median and max seconds of one reading with ``attachments`` idle-ish other attachments."""
    import statistics

    with driver.create_database(dsn) as connection:
        connection.execute_immediate("create table items (id integer primary key, qty integer, note varchar(20))")
        connection.commit()
    others = [driver.connect(dsn) for _ in range(attachments)]
    try:
        for number, other in enumerate(others):  # each has run something and keeps a transaction
            with other.cursor() as cursor:
                cursor.execute("insert into items values (?, 1, 'x')", (number,))
                cursor.execute("select count(*) from items")
                cursor.fetchone()
        with Sampler(dsn) as sampler:
            sampler.sample()
            times = [sampler.sample().seconds for _ in range(readings)]
    finally:
        for other in others:
            other.close()
    return {"attachments": attachments, "readings": readings, "median": statistics.median(times), "max": max(times),
            "p95": sorted(times)[int(0.95 * len(times)) - 1]}


# ---------------------------------------------------------------------------------- firebird.log


def _sweep(services_host: str, database: str) -> None:
    with driver.server(services_host) as server:
        server.database.sweep(database=database)


def _validate(services_host: str, database: str) -> None:
    with driver.server(services_host) as server:
        server.database.validate(database=database)
        server.wait()


def log_watch_embedded(dsn: str) -> dict[str, str]:
    """Sweep before the watch starts, validation after: only the validation is 'added'."""
    with driver.create_database(dsn) as connection:
        connection.execute_immediate("create table t (id integer primary key)")
        connection.commit()
    _sweep("", dsn)
    watch = firebird_log.LogWatch()
    nothing = watch.added()
    _validate("", dsn)
    return {"nothing": nothing, "added": watch.added(), "log": Path(watch.log_file or "").read_text()}


def log_watch_server(services_host: str, dsn: str, database: str, port: int) -> dict[str, Any]:
    """On a server: a connection reset by its client, then a sweep, are what the run added."""
    with driver.create_database(dsn) as connection:
        connection.execute_immediate("create table t (id integer primary key)")
        connection.commit()
    watch = firebird_log.LogWatch(services_host)
    before = watch.added()
    # A client that vanishes (RST) makes the server log "INET/inet_error: read errno = 104".
    client = socket.create_connection(("127.0.0.1", port))
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    client.close()
    time.sleep(0.3)
    _sweep(services_host, database)
    added = watch.added()
    with driver.server(services_host) as server:
        server.info.get_log()
        whole = "".join(server.readlines())
    return {"before": before, "added": added, "rotated": watch.rotated, "log": whole}


def sampler_thread_without_database(dsn: str) -> dict[str, Any]:
    """A SamplerThread whose database does not exist: errors are kept, nothing is raised."""
    seen: list[int | None] = []
    thread = SamplerThread(Sampler(dsn), on_error=lambda interval, _error: seen.append(interval))
    ready = thread.wait_ready(10)
    started = time.monotonic()
    zero_made = thread.zero(wait=10)
    zero_seconds = time.monotonic() - started
    thread.boundary(0)
    thread.boundary(1)
    thread.close()
    return {"ready": ready, "errors": thread.errors, "seen": seen, "taken": thread.take(), "running": thread.running,
            "zero_made": zero_made, "zero_seconds": zero_seconds}
