"""What Firebird's built-in replication does on the embedded engines here (docs/replication.md).

For each embedded engine (4.0 and 5.0 by default) it builds a runtime root as fbbench does, writes a
``replication.conf`` there, and in a process of the engine's own:

1. **async** — a database with ``journal_directory`` and ``journal_archive_directory`` configured,
   ``ALTER DATABASE ENABLE PUBLICATION`` and ``INCLUDE ALL TO PUBLICATION``, 2,000 inserts: what
   the journal and the archive hold (segments, bytes) right after, and after the archive timeout;
2. **sync** — a byte copy of the database, set to replica mode (read-only) through the services
   API, named as ``sync_replica`` by its local path: whether the engine attaches it in the same
   process and the replica receives the rows;
3. **keys** — a misspelt key, ``16M``, ``0`` and ``-1`` in replication.conf: what the engine says.

    .venv/bin/python benchmarks/replication_probe.py [--engines 4.0 5.0] [--rows 2000]

Everything happens in a temporary directory that is removed afterwards; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


def _listing(directory: Path) -> list[tuple[str, int]]:
    return [(path.name, path.stat().st_size) for path in sorted(directory.iterdir())]


def _replication_log(root: Path) -> str:
    log = root / "replication.log"
    return log.read_text().strip() if log.exists() else ""


def _write_conf(root: Path, database: Path, lines: list[str]) -> None:
    (root / "replication.log").unlink(missing_ok=True)
    body = "".join(f"    {line}\n" for line in lines)
    (root / "replication.conf").write_text(f"database = {database}\n{{\n{body}}}\n")


def _create(fd: Any, database: Path) -> Any:
    connection = fd.create_database(str(database), user="SYSDBA")
    connection.execute_immediate("create table t (id integer not null primary key, v varchar(100))")
    connection.commit()
    return connection


def _publish(connection: Any) -> None:
    connection.execute_immediate("alter database enable publication")
    connection.execute_immediate("alter database include all to publication")
    connection.commit()


def _insert(connection: Any, rows: int) -> float:
    started = time.perf_counter()
    with connection.cursor() as cursor:
        for i in range(rows):
            cursor.execute("insert into t values (?, ?)", (i, "x" * 90))
            if i % 100 == 99:
                connection.commit()
    if connection.main_transaction.is_active():
        connection.commit()
    return time.perf_counter() - started


def probe(base: Path, rows: int) -> dict[str, Any]:
    """Inside the engine's process (its runtime's environment)."""
    import firebird.driver as fd
    from firebird.driver import ReplicaMode

    fd.driver_config.fb_client_library.value = os.environ["FBBENCH_CLIENT_LIBRARY"]
    root = Path(os.environ["FIREBIRD"])
    found: dict[str, Any] = {}

    # 1. async: journal and archive
    directory = base / "async"
    journal, archive = directory / "journal", directory / "archive"
    journal.mkdir(parents=True)
    archive.mkdir()
    database = directory / "primary.fdb"
    _write_conf(root, database, [f"journal_directory = {journal}", f"journal_archive_directory = {archive}",
                                 "journal_archive_timeout = 2"])
    connection = _create(fd, database)
    _publish(connection)
    seconds = _insert(connection, rows)
    found["async"] = {"insert_seconds": seconds, "journal": _listing(journal), "archive": _listing(archive)}
    time.sleep(3)
    found["async"] |= {"journal_after_timeout": _listing(journal), "archive_after_timeout": _listing(archive),
                       "replication_log": _replication_log(root)}
    connection.close()

    # 2. sync: a local replica in the same process
    directory = base / "sync"
    directory.mkdir()
    database, replica = directory / "primary.fdb", directory / "replica.fdb"
    _create(fd, database).close()
    shutil.copyfile(database, replica)
    with fd.connect_server("", user="SYSDBA") as server:
        server.database.set_replica_mode(database=str(replica), mode=ReplicaMode.READ_ONLY)
    _write_conf(root, database, [f"sync_replica = {replica}"])
    connection = fd.connect(str(database), user="SYSDBA")
    _publish(connection)
    seconds = _insert(connection, rows)
    with fd.connect(str(replica), user="SYSDBA") as copy, copy.cursor() as cursor:
        cursor.execute("select count(*) from t")
        replicated = cursor.fetchone()[0]
        cursor.execute("select mon$replica_mode from mon$database")
        mode = cursor.fetchone()[0]
        copy.commit()
    connection.close()
    found["sync"] = {"insert_seconds": seconds, "rows_on_replica": replicated, "replica_mode": mode,
                     "replication_log": _replication_log(root)}

    # 3. keys Firebird reads its own way
    directory = base / "keys"
    journal = directory / "journal"
    journal.mkdir(parents=True)
    database = directory / "primary.fdb"
    _write_conf(root, database, [f"journal_directory = {journal}", "journal_segment_size = 16M",
                                 "journal_archive_timeout = 0", "buffer_size = -1", "jornal_typo = 5"])
    connection = _create(fd, database)
    _publish(connection)
    _insert(connection, 10)
    connection.close()
    found["keys"] = {"journal": _listing(journal), "replication_log": _replication_log(root)}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engines", nargs="+", default=["4.0", "5.0"])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--inside", type=Path, help=argparse.SUPPRESS)  # the engine's process
    args = parser.parse_args()
    if args.inside:
        print(json.dumps(probe(args.inside, args.rows)))
        return
    from fbbench.engines import prepare_runtime

    work = Path(tempfile.mkdtemp(prefix="fbbench-replication-probe-"))
    try:
        for version in args.engines:
            runtime = prepare_runtime(version, work, {}, name=f"probe-{version}")
            base = work / f"databases-{version}"
            done = subprocess.run([sys.executable, str(HERE), "--inside", str(base), "--rows", str(args.rows)],
                                  env=runtime.env(), capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"== embedded {version}: the probe failed\n{done.stderr[-3000:]}")
                continue
            found = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"== embedded {runtime.client_version} ({args.rows} inserts, "
                  "a commit every 100)")
            asynchronous = found["async"]
            print(f"async: {asynchronous['insert_seconds']:.2f} s; journal {asynchronous['journal']}, "
                  f"archive {asynchronous['archive']}")
            print(f"       after the archive timeout (2 s): journal {asynchronous['journal_after_timeout']}, "
                  f"archive {asynchronous['archive_after_timeout']}")
            synchronous = found["sync"]
            print(f"sync:  {synchronous['insert_seconds']:.2f} s; rows on the local replica "
                  f"{synchronous['rows_on_replica']}, its MON$REPLICA_MODE {synchronous['replica_mode']}")
            print(f"keys:  journal {found['keys']['journal']}; replication.log: "
                  f"{found['keys']['replication_log'] or '(nothing written)'}")
            for name in ("async", "sync"):
                if found[name]["replication_log"]:
                    print(f"{name}: replication.log: {found[name]['replication_log']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
