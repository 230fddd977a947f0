"""The engine's own insert ceiling beside a population (benchmarks/population_speed.py): what the
same engine inserts per second into the same tables with no fbbench in the way, and what the disk
under it writes per second.

``ceiling`` runs inside an engine child (fbbench.engines.run_in_engine, the same embedded engine
and default firebird.conf a run gets). It reads from the population just built (its cached file,
only read) every table's row count, columns, primary key and the average length of each VARCHAR
column, creates a new database with the same page size and forced writes off (as the population
is built), runs the workload's scripts there (schema: not timed), and then times:

- **inserts**: N attachments (N = the population's load attachments), each on a thread of its
  own, each running for every table plain PSQL loops (EXECUTE BLOCKs of at most ``block_rows``
  rows, one transaction each: population_speed.py gives 30,000, about the population's largest
  call, so the ceiling pays for no larger transaction than the population does) that insert its
  share of the table's rows — keys from the loop counter, CHARs and VARCHARs of the
  population's lengths (one random text per column, drawn once per loop), numbers and
  timestamps from the counter: the same number of rows of the same width, and none of the
  population's random-number work per row;
- **indices**: the workload's index step (indexes.sql), on one attachment as the population
  runs it.

Rows/s is every row over both. ``disk_write`` is the disk's sequential write: a file of
``megabytes`` MiB written in 1 MiB blocks and fsync'd, beside the work directory.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any


def _columns(connection: Any, table: str) -> list[dict[str, Any]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "select trim(rf.rdb$field_name), f.rdb$field_type, f.rdb$field_length, f.rdb$field_scale, "
            "f.rdb$field_precision, f.rdb$character_length from rdb$relation_fields rf "
            "join rdb$fields f on f.rdb$field_name = rf.rdb$field_source "
            "where rf.rdb$relation_name = ? order by rf.rdb$field_position", (table,))
        return [{"name": n, "type": t, "length": length, "scale": s, "precision": p, "chars": c}
                for n, t, length, s, p, c in cursor.fetchall()]


def _primary_key(connection: Any, table: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "select trim(s.rdb$field_name) from rdb$relation_constraints c "
            "join rdb$index_segments s on s.rdb$index_name = c.rdb$index_name "
            "where c.rdb$relation_name = ? and c.rdb$constraint_type = 'PRIMARY KEY' order by s.rdb$field_position",
            (table,))
        return [row[0] for row in cursor.fetchall()]


def describe(population: str, tables: list[str]) -> list[dict[str, Any]]:
    """Per table of the population (in the order given): rows, columns with the VARCHARs' average
    length, and the primary key's columns."""
    from fbbench.database import driver

    described = []
    with driver.connect(population) as connection:
        for table in tables:
            columns = _columns(connection, table)
            with connection.cursor() as cursor:
                cursor.execute(f"select count(*) from {table}")
                rows = int(cursor.fetchone()[0])
                for column in columns:
                    if column["type"] == 37:  # VARCHAR: the population's average length
                        cursor.execute(f"select avg(char_length({column['name']})) from {table}")
                        column["average"] = round(float(cursor.fetchone()[0] or 0))
            described.append({"table": table, "rows": rows, "columns": columns,
                              "key": _primary_key(connection, table)})
    return described


def _value(column: dict[str, Any], key: list[str], position: int) -> str:
    """The PSQL expression for one column of row :g (the ``position``-th column)."""
    name, kind = column["name"], column["type"]
    if name in key:
        return ":g" if name == key[-1] else "1"  # unique: the counter in the key's last column
    if kind in (7, 8, 16) and not column["scale"]:  # SMALLINT, INTEGER, BIGINT
        return "mod(:g, 997) + 1"
    if kind in (7, 8, 16, 26):  # NUMERIC / DECIMAL: within any precision the schema declares
        return f"mod(:g, 100) * {10 ** column['scale']:.10f}".rstrip("0")
    if kind in (35, 12, 13):  # TIMESTAMP, DATE, TIME: the block's start, as the loaders take theirs once per call
        return ":now_" if kind == 35 else ("cast(:now_ as date)" if kind == 12 else "cast(:now_ as time)")
    if kind in (14, 37):  # CHAR, VARCHAR: the block's own random text of the column's length
        return f":text_{position}"
    return "null"


def _text_length(column: dict[str, Any]) -> int | None:
    """A CHAR's length, a VARCHAR's population average; None for any other column."""
    if column["type"] not in (14, 37):
        return None
    length = column["chars"] or column["length"]
    return max(0, min(length, column.get("average", length))) if column["type"] == 37 else length


def loop_block(table: dict[str, Any], first: int, count: int) -> str:
    """One EXECUTE BLOCK inserting rows first .. first + count - 1 of ``table``.

    Each CHAR and VARCHAR column gets one random text of its length, drawn once per block and
    inserted in every row: as wide as the population's and as incompressible (Firebird's record
    compression finds no runs in it), with none of the per-row work of drawing it. Cut for each
    row from a random pool, as before 2026-11-30, the texts cost the ceiling about as much as the
    inserts in the tables with many of them (4 warehouses, 2 attachments: STOCK 2.1–2.8 s against
    1.2–1.5 s, CUSTOMER 1.0–1.1 s against 0.6 s): it did work the population does too, and bounded
    the population from below instead of from above."""
    names = [c["name"] for c in table["columns"]]
    values = [_value(c, table["key"], i) for i, c in enumerate(table["columns"])]
    texts = [(i, length) for i, c in enumerate(table["columns"])
             if (length := _text_length(c)) is not None and c["name"] not in table["key"]]
    declared = "".join(f" declare text_{i} varchar({max(length, 1)}) character set ascii = '';\n"
                       for i, length in texts)
    drawn = "".join(f" while (char_length(text_{i}) < {length}) do\n"
                    f"  text_{i} = text_{i} || ascii_char(48 + cast(rand() * 75 as integer));\n"
                    for i, length in texts)
    return (f"execute block as\n declare g bigint = {first};\n declare last_g bigint = {first + count - 1};\n"
            f"{declared} declare now_ timestamp = localtimestamp;\nbegin\n{drawn}"
            " while (g <= last_g) do\n begin\n"
            f"  insert into {table['table']} ({', '.join(names)}) values ({', '.join(values)});\n"
            "  g = g + 1;\n end\nend")


def _insert(connection: Any, blocks: list[str], failures: list[BaseException]) -> None:
    try:
        for block in blocks:
            connection.execute_immediate(block)
            connection.commit()
    except BaseException as error:  # raised by the caller once every attachment is done
        failures.append(error)


def ceiling(population: str, target: str, workload_dir: str, scale: dict[str, Any], page_size: int,
            attachments: int, tables: list[str], index_script: str, block_rows: int | None = None) -> dict[str, Any]:
    """Engine child: the same tables filled by plain PSQL loops on ``attachments`` attachments
    (each attachment's share in loops of at most ``block_rows`` rows, one transaction each; None:
    one loop), then ``index_script``; rows, seconds, bytes."""
    from fbbench.database import driver, scripts
    from fbbench.workloads.spec import load_workload

    described = describe(population, tables)
    workload = load_workload(workload_dir, scale)
    with driver.create_database(target, page_size=page_size, forced_writes=False) as connection:
        for script in workload.scripts:
            scripts.run_file(connection, script, workload.scale)
        with connection.cursor() as cursor:
            cursor.execute("select mon$pages * mon$page_size from mon$database")
            size_before = int(cursor.fetchone()[0])
    # Table by table, all attachments at once (as the population's steps run): each table's time is
    # the wall time from its start to the last attachment's commit.
    connections = [driver.connect(target) for _ in range(attachments)]
    per_table: dict[str, float] = {}
    cpu_started = time.process_time()  # the embedded engine's CPU (this process's, every thread's)
    try:
        for table in described:
            share, extra = divmod(table["rows"], attachments)
            blocks: list[list[str]] = []
            first = 1
            for index in range(attachments):
                count = share + (index < extra)
                step = block_rows or max(count, 1)
                blocks.append([loop_block(table, at, min(step, first + count - at))
                               for at in range(first, first + count, step)])
                first += count
            failures: list[BaseException] = []
            threads = [threading.Thread(target=_insert, args=(connections[i], block, failures))
                       for i, block in enumerate(blocks)]
            started = time.monotonic()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            per_table[table["table"]] = time.monotonic() - started
            if failures:
                raise failures[0]
    finally:
        for connection in connections:
            connection.close()
    inserted = sum(per_table.values())
    started = time.monotonic()
    with driver.connect(target) as connection:
        scripts.run_file(connection, Path(index_script), workload.scale)
    indexed = time.monotonic() - started
    cpu_seconds = time.process_time() - cpu_started
    with driver.connect(target) as connection, connection.cursor() as cursor:
        cursor.execute("select mon$pages * mon$page_size from mon$database")
        size_after = int(cursor.fetchone()[0])
    rows = sum(table["rows"] for table in described)
    return {"rows": rows, "per_table": {t["table"]: {"rows": t["rows"], "seconds": per_table[t["table"]]}
                                        for t in described}, "insert_seconds": inserted,
            "index_seconds": indexed, "seconds": inserted + indexed, "cpu_seconds": cpu_seconds,
            "grown_bytes": size_after - size_before,
            "rows_per_second": rows / (inserted + indexed),
            "mb_per_second": (size_after - size_before) / 1e6 / (inserted + indexed)}


def disk_write(directory: Path, megabytes: int = 256) -> float:
    """MB/s of a sequential write of ``megabytes`` MiB beside ``directory``, fsync'd (the file removed)."""
    block = os.urandom(1 << 20)
    path = directory / "disk-write-test.bin"
    started = time.monotonic()
    with path.open("wb", buffering=0) as file:
        for _ in range(megabytes):
            file.write(block)
        os.fsync(file.fileno())
    seconds = time.monotonic() - started
    path.unlink()
    return megabytes * (1 << 20) / 1e6 / seconds
