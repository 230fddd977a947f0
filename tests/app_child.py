"""Functions the tests of a user's own application (restore, trace, replay) run inside an engine
child process."""

from __future__ import annotations

from typing import Any

from fbbench.database import driver, ownership


def make_foreign_backup(database: str, backup: str) -> int:
    """A database fbbench did not create (no mark, no registry entry), backed up with gbak through
    the services API; returns the number of rows it holds."""
    with driver.create_database(database) as connection:
        connection.execute_immediate("create table customer (id integer primary key, name varchar(40), "
                                     "balance numeric(18, 2))")
        connection.commit()
        with connection.cursor() as cursor:
            for number in range(1, 501):
                cursor.execute("insert into customer values (?, ?, ?)", (number, f"customer {number}", number * 10))
        connection.commit()
    with driver.server("") as server:
        server.database.backup(database=database, backup=backup)
        server.wait()
    return 500


def restored_facts(database: str) -> dict[str, Any]:
    """fbbench's mark inside a restored database, and what it holds."""
    with driver.connect(database) as connection:
        mark = ownership.read_mark(connection)
        with connection.cursor() as cursor:
            cursor.execute("select count(*), sum(balance) from customer")
            rows, total = cursor.fetchone()
            cursor.execute("select mon$ods_major from mon$database")
            ods = cursor.fetchone()[0]
        connection.commit()
    return {"mark": mark, "rows": rows, "balance": str(total), "ods_major": ods}


def traced_statements(database: str, output: str, version: int) -> list[dict[str, Any]]:
    """Statements with awkward parameter values, executed under fbbench's trace capture (a user
    session through the in-process services manager, read on a thread); what was sent."""
    import datetime
    import decimal

    from firebird.driver import get_timezone

    from fbbench.trace.capture import Capture

    with driver.create_database(database) as connection:
        columns = "id integer, s varchar(8000), n numeric(18, 2), f double precision, d date, t time, " \
                  "ts timestamp, b blob sub_type text, bo boolean"
        if version >= 4:
            columns += ", big int128, df decfloat(34), tz timestamp with time zone"
        connection.execute_immediate(f"create table edge ({columns})")
        connection.commit()
    capture = Capture("", database, __import__("pathlib").Path(output), {})
    capture.start()
    sent: list[dict[str, Any]] = []
    with driver.connect(database) as connection:
        cursor = connection.cursor()

        def insert(values: dict[str, Any]) -> None:
            names = ", ".join(values)
            cursor.execute(f"insert into edge ({names}) values ({', '.join('?' * len(values))})", list(values.values()))
            sent.append({k: v if v is None or isinstance(v, int | str) else str(v) for k, v in values.items()})

        insert({"id": 1, "s": 'it\'s = "quoted" = not a split'})
        insert({"id": 2, "s": "line 1\nparam1 = integer, \"5\"\nline 3"})  # a value that looks like a parameter
        insert({"id": 3, "s": "  padded both ends  "})
        insert({"id": 4, "s": ""})
        insert({"id": 5, "s": None})
        insert({"id": 6, "s": "x" * 7000 + "..."})  # long, and ending in what a cut value ends in
        insert({"id": 7, "n": decimal.Decimal("12.34"), "f": 1 / 3, "d": datetime.date(2024, 2, 29),
                "t": datetime.time(23, 59, 58, 123400), "ts": datetime.datetime(2024, 2, 29, 23, 59, 58, 123400),
                "bo": True})
        insert({"id": 8, "b": "the content of a blob"})
        if version >= 4:
            insert({"id": 9, "big": 2**100, "df": decimal.Decimal("1.2345678901234567890123456789012E+100")})
            insert({"id": 10, "tz": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=get_timezone("Europe/Prague"))})
        connection.commit()
    summary = capture.stop("the test is done")
    return [*sent, {"summary": summary}]


def traced_with_limits(database: str, output: str) -> None:
    """A trace taken with small limits (as Firebird's defaults do): arguments and the argument
    list cut. Written without fbbench's own lines, as fbtracemgr would."""
    import threading
    import time

    from fbbench.trace.config import session_config

    with driver.create_database(database) as connection:
        connection.execute_immediate("create table cut (a varchar(100), b integer, c integer, d integer)")
        connection.commit()
    config = session_config(database)
    for key, value in (("max_arg_length", 20), ("max_arg_count", 2)):
        config = config.replace(f"{key} = 65535", f"{key} = {value}")
    lines: list[str] = []
    server = driver.server("")
    session = server.trace.start(config=config, name="limits")
    reader = threading.Thread(target=lambda: lines.extend(iter(server.readline, None)), daemon=True)
    reader.start()
    time.sleep(0.5)
    with driver.connect(database) as connection:
        with connection.cursor() as cursor:
            cursor.execute("insert into cut values (?, ?, ?, ?)", ("a" * 60, 1, 2, 3))
        connection.commit()
    time.sleep(0.5)
    with driver.server("") as other:
        other.trace.stop(session_id=session)
    reader.join(10)
    __import__("pathlib").Path(output).write_text("".join(line for line in lines if isinstance(line, str)))


def backup(database: str, target: str, services_host: str = "") -> int:
    """gbak backup of a database through the services API (only reads it); the backup's size."""
    import os

    with driver.server(services_host) as server:
        server.database.backup(database=database, backup=target)
        server.wait()
    return os.path.getsize(target)


def make_database(dsn: str) -> None:
    with driver.create_database(dsn):
        pass


def insert_load(dsn: str, seconds: float, connections: int = 4) -> int:
    """Committed inserts of a 1,500-character value on ``connections`` attachments for ``seconds``
    (a few MB of trace a second: a reader falls behind); the table is made on the first call. How
    many were committed."""
    import threading
    import time

    with driver.connect(dsn) as connection:
        with connection.cursor() as cursor:
            cursor.execute("select count(*) from rdb$relations where rdb$relation_name = 'LOADED'")
            (exists,) = cursor.fetchone()
        if not exists:
            connection.execute_immediate("create table loaded (id integer, note varchar(2000))")
        connection.commit()
    done = [0] * connections

    def work(index: int) -> None:
        with driver.connect(dsn) as connection, connection.cursor() as cursor:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                cursor.execute("insert into loaded values (?, ?)", (index, f"{done[index]} " + "x" * 1500))
                connection.commit()
                done[index] += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done)


def application_load(dsn: str, transactions: int, connections: int = 2) -> int:
    """``transactions`` committed single-insert transactions per attachment, on ``connections``
    attachments that are not fbbench's own (no fbbench process name: an application, as a trace
    counts it) into the table ``loaded`` (made by :func:`insert_load`'s first call or here). How
    many were committed."""
    import threading

    with driver.connect(dsn) as connection:
        with connection.cursor() as cursor:
            cursor.execute("select count(*) from rdb$relations where rdb$relation_name = 'LOADED'")
            (exists,) = cursor.fetchone()
        if not exists:
            connection.execute_immediate("create table loaded (id integer, note varchar(2000))")
        connection.commit()
    firebird = driver._driver()
    user, password = driver.credentials()
    done = [0] * connections

    def work(index: int) -> None:
        with firebird.connect(dsn, user=user, password=password, charset="UTF8") as connection, \
                connection.cursor() as cursor:
            for number in range(transactions):
                cursor.execute("insert into loaded values (?, ?)", (index, f"application {number}"))
                connection.commit()
                done[index] += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done)


def stop_trace_sessions(services_host: str) -> list[int]:
    """Stop every trace session of the server (as fbtracemgr -stop would, from elsewhere); their ids."""
    with driver.server(services_host) as server:
        sessions = list(server.trace.sessions)
        for session in sessions:
            server.trace.stop(session_id=session)
    return sessions


def make_acct_backup(database: str, backup: str, rows: int = 3) -> None:
    """A database of tests/workloads/flow's table ``acct`` (ids 1..rows, counters at 0), backed up
    with gbak through the services API: what tests/data/trace/strict-lock-order.trace ran on."""
    with driver.create_database(database) as connection:
        connection.execute_immediate("create table acct (id integer not null primary key, "
                                     "touched integer default 0 not null, confirmed integer default 0 not null)")
        connection.commit()
        with connection.cursor() as cursor:
            for number in range(1, rows + 1):
                cursor.execute("insert into acct (id) values (?)", (number,))
        connection.commit()
    with driver.server("") as server:
        server.database.backup(database=database, backup=backup)
        server.wait()
