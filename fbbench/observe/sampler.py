"""MON$ counters at every interval boundary, read through an attachment of the sampler's own.

One reading is one short read-only READ COMMITTED transaction. The engine builds its monitoring
snapshot at the first MON$ query of a transaction and keeps it until the transaction ends: one
transaction gives one consistent picture, and a short one holds the snapshot's lock (which also
stalls the workload's attachments while the snapshot is built) as briefly as possible. A
read-only read committed transaction is pre-committed, so it never holds back the OIT or OAT.
Read consistency exists only from 4.0 on; plain read committed record_version works everywhere.
MON$STATEMENTS and MON$CALL_STACK are never read: they are the expensive part of a snapshot.

A reading, keyed by (source, name):

counters (cumulative; :func:`deltas` turns them into per-interval figures)
- ``io``: page_reads, page_writes, page_fetches, page_marks;
- ``record``: seq_reads, idx_reads, inserts, updates, deletes, backouts, purges, expunges, locks,
  waits, conflicts, backversion_reads, fragment_reads, repeated_reads, and imgc (intermediate
  garbage collection) on 4.0+ — the columns are read from the engine's catalog, not assumed;
- ``table:NAME``: the same record counters from MON$TABLE_STATS for each chosen table (zeros for
  a table the engine has not touched yet, so every interval has every table);
- ``sampler``: the sampler attachment's own page_reads, page_writes, page_fetches, page_marks,
  seq_reads and idx_reads. Reading MON$ costs no record reads; its page fetches and marks (a few
  per reading: starting and ending the transaction) are part of the database-level ``io``
  figures in SuperServer; subtract them where a small figure matters (an idle database).

Where the counters come from depends on the architecture. In SuperServer they are the
database-level rows (MON$STAT_GROUP 0): everything since the database was opened. In Classic and
SuperClassic every attachment has its own engine instance and the database-level rows count only
the sampler's own (found on embedded 5.0: 100 inserts by another attachment left them at zero),
so the sampler sums the rows of the other attachments (group 1) instead; an attachment that
leaves takes its totals with it. The sampler tells the two apart by the database row of
MON$MEMORY_USAGE, which is zero exactly when there is no shared database pool, and says which
it did: ("database", "per_attachment_sums") is 1 for sums.

levels (stored as they are)
- ``header``: oit, oat, ost, next, next_minus_oit, next_minus_oat, pages (database size in
  pages), page_buffers;
- ``memory``: used, allocated, max_used, max_allocated of the database row: the shared database
  pool (page cache included) in SuperServer, zero in Classic and SuperClassic; attachments_used
  and attachments_allocated, the sum over all attachments (the sampler's included), exist in
  every architecture;
- ``database``: active_attachments and active_transactions — MON$STATE = 1 means a statement
  is running or a cursor is open (an attachment idling in an open transaction counts as idle,
  as seen on 3.0 and 5.0); counted without the sampler's own attachment and transaction and without
  the engine's system attachments (garbage collector, cache writer); per_attachment_sums.

- ``host`` (levels, with ``engine_processes``): the host's memory from /proc/meminfo —
  ``mem_available``, ``page_cache`` (the file pages the kernel holds), ``dirty`` and ``writeback``
  bytes: how much of the database the OS file cache can hold, and what it still has to write;
- ``process`` (counters, with ``engine_processes``): the engine's processes' ``major_faults`` and
  block I/O, ``read_bytes`` and ``write_bytes`` (/proc/PID/io: what reached the storage, the page
  cache excluded) — beside ``io.page_reads`` they say where the engine's reads came from;

- ``metric``: the workload's DB-side metrics (``[[metrics]]``), read in the same transaction,
  as levels: the runner turns them into changes per interval and over the measured window.
  Metrics marked ``every = "end"`` are read only at the readings asked to be ``full``.

Every reading also says how long it took: ("sample", "seconds").
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from fbbench.database import driver
from fbbench.engines import platform as host_os

if TYPE_CHECKING:
    from firebird.driver import Connection, Cursor, Statement, TransactionManager

Key = tuple[str, str]
Row = tuple[str, str, float]

# MON$RECORD_STATS column → counter name. Columns an engine lacks (RECORD_IMGC before 4.0) are
# left out by asking the engine's catalog which ones it has.
RECORD_COLUMNS = {
    "MON$RECORD_SEQ_READS": "seq_reads",
    "MON$RECORD_IDX_READS": "idx_reads",
    "MON$RECORD_INSERTS": "inserts",
    "MON$RECORD_UPDATES": "updates",
    "MON$RECORD_DELETES": "deletes",
    "MON$RECORD_BACKOUTS": "backouts",
    "MON$RECORD_PURGES": "purges",
    "MON$RECORD_EXPUNGES": "expunges",
    "MON$RECORD_LOCKS": "locks",
    "MON$RECORD_WAITS": "waits",
    "MON$RECORD_CONFLICTS": "conflicts",
    "MON$BACKVERSION_READS": "backversion_reads",
    "MON$FRAGMENT_READS": "fragment_reads",
    "MON$RECORD_RPT_READS": "repeated_reads",
    "MON$RECORD_IMGC": "imgc",
}
IO_COLUMNS = {
    "MON$PAGE_READS": "page_reads",
    "MON$PAGE_WRITES": "page_writes",
    "MON$PAGE_FETCHES": "page_fetches",
    "MON$PAGE_MARKS": "page_marks",
}


@dataclass(frozen=True)
class Sample:
    """One reading: cumulative counters and levels, with what it cost."""

    taken_at: float  # time.time() when the reading started
    seconds: float  # how long the reading took, attach not included
    attachment_id: int  # the sampler's own attachment
    counters: dict[Key, int]
    levels: dict[Key, float]
    metrics: dict[str, float | None] = field(default_factory=dict)

    def level_rows(self) -> list[Row]:
        """The levels and the reading's cost, for a reading with no predecessor (a baseline)."""
        return [(source, name, value) for (source, name), value in self.levels.items()] + [
            ("metric", name, value) for name, value in self.metrics.items() if value is not None] + [
            ("sample", "seconds", self.seconds)]


def deltas(previous: Sample, current: Sample) -> list[Row]:
    """Per-interval rows: counters as differences, levels as they are now, the reading's cost.

    A counter smaller than before has no delta and is left out of that interval: the engine's
    statistics started again (the database was closed and opened between the readings), or,
    with per-attachment sums, an attachment left and took its totals with it.
    """
    rows: list[Row] = []
    for key, value in current.counters.items():
        before = previous.counters.get(key, 0)
        if value >= before:
            rows.append((*key, value - before))
    rows += current.level_rows()
    return rows


def user_tables(connection: Connection) -> list[str]:
    """The database's own tables (no system tables, no views): those a workload touches."""
    with connection.cursor() as cursor:
        cursor.execute("select trim(rdb$relation_name) from rdb$relations "
                       "where coalesce(rdb$system_flag, 0) = 0 and rdb$view_blr is null "
                       "order by rdb$relation_name")
        names = [row[0] for row in cursor.fetchall()]
    connection.commit()
    return names


class Sampler:
    """MON$ readings through an attachment of its own; use it from one thread only.

    ``tables``: names as the catalog spells them (upper case unless created quoted); None means
    every user table at the time the sampler attaches.
    """

    def __init__(self, dsn: str, tables: Sequence[str] | None = None, *, monitor: bool = True,
                 metrics: Mapping[str, str] | None = None, end_metrics: Mapping[str, str] | None = None,
                 engine_processes: Callable[[], Sequence[int]] | None = None) -> None:
        """``monitor=False`` reads only the metrics (``fbbench run --no-monitor``).
        ``engine_processes``: the pids the engine runs in (this process and its children when
        embedded, a managed server's): with it, each reading has the host's memory and their I/O."""
        self.dsn = dsn
        self.engine_processes = engine_processes
        self.monitor = monitor
        self.metrics = dict(metrics or {})
        self.end_metrics = dict(end_metrics or {})
        self._wanted_tables = None if tables is None else list(tables)
        self.tables: list[str] = []
        self.record_names: list[str] = []
        self.attachment_id = 0
        self.per_attachment = False
        self._connection: Connection | None = None
        self._transaction: TransactionManager | None = None
        self._cursor: Cursor | None = None
        self._statements: dict[str, Statement] = {}
        # Set from another thread: read the architecture (observe.architecture) within the next
        # readings, until they show this many attachments of the load; the latest is kept.
        self.architecture_wanted: int | None = None
        self.architecture: dict[str, Any] | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    def open(self) -> None:
        """Attach and learn what the engine offers; :meth:`sample` does it when needed."""
        if self._connection is not None:
            return
        from firebird.driver import Isolation, TraAccessMode, tpb

        connection = driver.connect(self.dsn)
        try:
            with connection.cursor() as cursor:
                cursor.execute("select trim(rdb$field_name) from rdb$relation_fields "
                               "where rdb$relation_name = 'MON$RECORD_STATS'")
                present = {row[0] for row in cursor.fetchall()}
                cursor.execute("select current_connection from rdb$database")
                self.attachment_id = int(cursor.fetchone()[0])
                cursor.execute("select m.mon$memory_allocated from mon$database d "
                               "join mon$memory_usage m on m.mon$stat_id = d.mon$stat_id")
                self.per_attachment = not cursor.fetchone()[0]
            connection.commit()
            self.tables = (user_tables(connection) if self._wanted_tables is None
                           else list(dict.fromkeys(self._wanted_tables)))
            columns = [column for column in RECORD_COLUMNS if column in present]
            self.record_names = [RECORD_COLUMNS[column] for column in columns]
            # A snapshot per reading: on Firebird 3, whose read committed has no statement-level
            # consistency, a count(*) read committed while rows were deleted and inserted again
            # (sysbench's oltp_read_write) once missed a row that had moved (rows −1 at the end).
            transaction = connection.transaction_manager(
                tpb(Isolation.SNAPSHOT, access_mode=TraAccessMode.READ))
            cursor = transaction.cursor()
            queries = self._queries(columns) if self.monitor else {}
            queries |= {f"metric:{name}": sql for name, sql in {**self.metrics, **self.end_metrics}.items()}
            self._statements = {name: cursor.prepare(sql) for name, sql in queries.items()}
        except BaseException:
            connection.close()
            raise
        self._connection, self._transaction, self._cursor = connection, transaction, cursor

    def close(self) -> None:
        connection, self._connection = self._connection, None
        self._statements = {}
        if connection is not None:
            with contextlib.suppress(Exception):
                if self._transaction is not None and self._transaction.is_active():
                    self._transaction.rollback()
            with contextlib.suppress(Exception):
                connection.close()
        self._transaction = self._cursor = None

    def __enter__(self) -> Sampler:
        self.open()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- reading ----------------------------------------------------------------------------------

    def _queries(self, record_columns: list[str]) -> dict[str, str]:
        io = ", ".join(f"io.{column}" for column in IO_COLUMNS)
        record = ", ".join(f"r.{column}" for column in record_columns)
        queries = {
            "header": """
                select d.mon$oldest_transaction, d.mon$oldest_active, d.mon$oldest_snapshot,
                       d.mon$next_transaction, d.mon$pages, d.mon$page_buffers,
                       m.mon$memory_used, m.mon$memory_allocated,
                       m.mon$max_memory_used, m.mon$max_memory_allocated
                from mon$database d
                join mon$memory_usage m on m.mon$stat_id = d.mon$stat_id""",
            "self": f"""
                select (select count(*) from mon$attachments
                        where mon$state = 1 and mon$system_flag = 0 and mon$attachment_id <> current_connection),
                       (select count(*) from mon$transactions
                        where mon$state = 1 and mon$attachment_id <> current_connection),
                       (select sum(mon$memory_used) from mon$memory_usage where mon$stat_group = 1),
                       (select sum(mon$memory_allocated) from mon$memory_usage where mon$stat_group = 1),
                       {io}, r.mon$record_seq_reads, r.mon$record_idx_reads
                from mon$attachments a
                join mon$io_stats io on io.mon$stat_id = a.mon$stat_id
                join mon$record_stats r on r.mon$stat_id = a.mon$stat_id
                where a.mon$attachment_id = current_connection""",
        }
        marks = ", ".join("?" for _ in self.tables)
        if not self.per_attachment:
            # MON$DATABASE.MON$STAT_ID names the database-level (group 0) rows; MON$RECORD_STATS
            # also holds group-0 rows for every table, so the join, not the group, picks the row.
            queries["totals"] = f"""
                select {io}, {record}
                from mon$database d
                join mon$io_stats io on io.mon$stat_id = d.mon$stat_id
                join mon$record_stats r on r.mon$stat_id = d.mon$stat_id"""
            queries["tables"] = f"""
                select t.mon$table_name, {record}
                from mon$table_stats t
                join mon$record_stats r on r.mon$stat_id = t.mon$record_stat_id
                where t.mon$stat_group = 0 and t.mon$table_name in ({marks})"""
        else:
            # Classic and SuperClassic: the database-level rows only count what the sampler's own
            # engine instance did, so the figures are summed over the other attachments.
            sums = ", ".join(f"sum(io.{column})" for column in IO_COLUMNS)
            record_sums = ", ".join(f"sum(r.{column})" for column in record_columns)
            queries["totals"] = f"""
                select {sums}, {record_sums}
                from mon$attachments a
                join mon$io_stats io on io.mon$stat_id = a.mon$stat_id
                join mon$record_stats r on r.mon$stat_id = a.mon$stat_id
                where a.mon$attachment_id <> current_connection"""
            queries["tables"] = f"""
                select t.mon$table_name, {record_sums}
                from mon$attachments a
                join mon$table_stats t on t.mon$stat_id = a.mon$stat_id
                join mon$record_stats r on r.mon$stat_id = t.mon$record_stat_id
                where a.mon$attachment_id <> current_connection and t.mon$table_name in ({marks})
                group by t.mon$table_name"""
        if not self.tables:
            del queries["tables"]
        return queries

    def sample(self, full: bool = False) -> Sample:
        """Take one reading (``full``: with the end-only metrics too). After a failure the
        attachment is dropped and the next call attaches again, so a sampler survives a server
        that went away and came back."""
        self.open()
        assert self._transaction is not None and self._cursor is not None
        taken_at, started = time.time(), time.perf_counter()
        try:
            self._transaction.begin()
            cursor = self._cursor
            results: dict[str, Any] = {}
            tables = []
            if self.monitor:
                for name in ("header", "totals", "self"):
                    cursor.execute(self._statements[name])
                    results[name] = cursor.fetchone()
                if self.tables:
                    cursor.execute(self._statements["tables"], self.tables)
                    tables = cursor.fetchall()
            wanted = self.architecture_wanted
            if wanted is not None:
                from fbbench.observe import architecture

                reading = architecture.read(cursor)
                if self.architecture is None or reading["architecture"] is not None:
                    self.architecture = reading
                if reading["attachments"] >= wanted:
                    self.architecture_wanted = None
            metrics: dict[str, float | None] = {}
            for name in [*self.metrics, *(self.end_metrics if full else ())]:
                cursor.execute(self._statements[f"metric:{name}"])
                row = cursor.fetchone()
                metrics[name] = None if row is None or row[0] is None else float(row[0])
            self._transaction.commit()
        except BaseException:
            self.close()
            raise
        seconds = time.perf_counter() - started
        if not self.monitor:
            return Sample(taken_at, seconds, self.attachment_id, {}, {}, metrics)
        sample = replace(self._build(taken_at, seconds, results, tables), metrics=metrics)
        if self.engine_processes is not None:
            self._host(sample)
        return sample

    def _host(self, sample: Sample) -> None:
        """The host's memory and the engine processes' faults and block I/O, into ``sample``."""
        memory = host_os.meminfo()
        for name in ("available", "page_cache", "dirty", "writeback"):
            if name in memory:
                sample.levels[("host", "mem_available" if name == "available" else name)] = memory[name]
        assert self.engine_processes is not None
        summed: dict[str, int] = {}
        for pid in self.engine_processes():
            for name, value in host_os.process_io(pid).items():
                summed[name] = summed.get(name, 0) + value
        sample.counters.update({("process", name): value for name, value in summed.items()})

    def _build(self, taken_at: float, seconds: float, results: dict[str, Any], tables: list[Any]) -> Sample:
        def number(value: Any) -> int:
            return int(value or 0)  # a sum over no attachments is NULL

        counters: dict[Key, int] = {}
        totals = results["totals"]
        names = [("io", name) for name in IO_COLUMNS.values()] + [("record", name) for name in self.record_names]
        counters.update({key: number(v) for key, v in zip(names, totals, strict=True)})
        by_table = {str(row[0]).strip(): row[1:] for row in tables}
        for table in self.tables:
            values = by_table.get(table, [0] * len(self.record_names))
            counters.update({(f"table:{table}", name): number(v)
                             for name, v in zip(self.record_names, values, strict=True)})
        own = results["self"]
        own_names = [*IO_COLUMNS.values(), "seq_reads", "idx_reads"]
        counters.update({("sampler", name): number(v) for name, v in zip(own_names, own[4:], strict=True)})

        oit, oat, ost, next_, pages, buffers, used, allocated, max_used, max_allocated = results["header"]
        active_attachments, active_transactions, attachments_used, attachments_allocated = own[:4]
        levels: dict[Key, float] = {
            ("header", "oit"): oit, ("header", "oat"): oat, ("header", "ost"): ost, ("header", "next"): next_,
            ("header", "next_minus_oit"): next_ - oit, ("header", "next_minus_oat"): next_ - oat,
            ("header", "pages"): pages, ("header", "page_buffers"): buffers,
            ("memory", "used"): used, ("memory", "allocated"): allocated,
            ("memory", "max_used"): max_used, ("memory", "max_allocated"): max_allocated,
            ("memory", "attachments_used"): attachments_used,
            ("memory", "attachments_allocated"): attachments_allocated,
            ("database", "active_attachments"): active_attachments,
            ("database", "active_transactions"): active_transactions,
            ("database", "per_attachment_sums"): int(self.per_attachment),
        }
        return Sample(taken_at, seconds, self.attachment_id, counters, {k: number(v) for k, v in levels.items()})


OnSample = Callable[[int, list[Row]], None]
OnError = Callable[[int | None, BaseException], None]


@dataclass
class _Boundary:
    interval: int  # -1: the run's zero (the reading becomes the baseline)
    at: float  # time.monotonic() of the boundary (or of its report)
    full: bool = False  # read the end-only metrics too
    answered: threading.Event | None = None  # set once this boundary's reading was made (or failed)
    made: bool = False  # the reading was made


class SamplerThread:
    """Runs a :class:`Sampler` on a thread of its own, driven by interval boundaries.

    Started on construction: the thread attaches and takes a baseline reading. The runner calls
    :meth:`boundary` when the load core reports a closed interval; that call only queues the
    index, it never waits for the database. For each boundary the thread takes a reading and
    calls ``on_sample(interval, rows)`` with the deltas since the previous reading. If readings
    fall behind (a slow snapshot on a loaded server) or one fails, the next reading answers for
    every boundary since the last one answered, under the latest index, and ("sample",
    "intervals_covered") says how many intervals its deltas span. ("sample", "delay_seconds")
    is how long after the boundary the reading started.

    ``on_sample`` runs on the sampler's thread. Without one, the readings wait in a queue and
    :meth:`take` hands them to whichever thread asks — the way to feed something bound to one
    thread, such as a sqlite3 connection.

    A failed reading or a failing callback goes to ``on_error`` (and is kept in ``errors``); the
    thread goes on with the next boundary, attaching again if it has to.
    """

    def __init__(self, sampler: Sampler, on_sample: OnSample | None = None, on_error: OnError | None = None) -> None:
        self.sampler = sampler
        self._ready_rows: queue.SimpleQueue[tuple[int, list[Row]]] = queue.SimpleQueue()
        self.on_sample = on_sample or (lambda interval, rows: self._ready_rows.put((interval, rows)))
        self.on_error = on_error
        self.errors: list[str] = []
        self.baseline: Sample | None = None
        self.cpu_seconds = 0.0  # this thread's own CPU (fbbench's cost of watching)
        self._queue: queue.SimpleQueue[_Boundary | None] = queue.SimpleQueue()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fbbench-sampler", daemon=True)
        self._thread.start()

    def cpu_now(self) -> float:
        """This thread's CPU so far, read from another thread: what it used before a window of
        the run began (its attachment, the baseline) is not the window's."""
        ident = self._thread.ident
        if ident is not None and self._thread.is_alive():
            try:
                return time.clock_gettime(time.pthread_getcpuclockid(ident))
            except OSError:
                pass  # it ended while we looked
        return self.cpu_seconds

    def wait_ready(self, timeout: float | None = None) -> bool:
        """True once the baseline reading exists; False if it failed or took longer than ``timeout``."""
        self._ready.wait(timeout)
        return self.baseline is not None

    def boundary(self, interval: int, at: float | None = None, full: bool = False, wait: float | None = None) -> bool:
        """Interval ``interval`` closed (at ``at``, time.monotonic(); default: now). ``wait``:
        seconds to wait for its reading; True once it was made (or when not waiting)."""
        return self._ask(interval, at, full, wait)

    def zero(self, at: float | None = None, wait: float | None = None) -> bool:
        """The run's zero: the next reading replaces the baseline (reported as interval -1, its
        levels and metrics only), so that interval 0 does not count connecting and preparing.

        ``wait``: seconds to wait for that reading — for a load held at its start, so that the
        baseline is read before any of its work (a reading after the zero races the first units).
        True once it was made (or when not waiting); False if it failed or took longer."""
        return self._ask(-1, at, True, wait)

    def _ask(self, interval: int, at: float | None, full: bool, wait: float | None) -> bool:
        """Queue a reading; with ``wait``, wait that long for it: True once it was made (or when
        not waiting), False if it failed, took longer, or the thread has ended."""
        if wait is not None and not self.running:
            return False
        boundary = _Boundary(interval, time.monotonic() if at is None else at, full,
                             threading.Event() if wait is not None else None)
        self._queue.put(boundary)
        if boundary.answered is None:
            return True
        return boundary.answered.wait(wait) and boundary.made

    def take(self) -> list[tuple[int, list[Row]]]:
        """The readings made since the last call, as (interval, rows); never waits."""
        taken = []
        while not self._ready_rows.empty():
            taken.append(self._ready_rows.get())
        return taken

    def close(self, timeout: float = 10.0) -> None:
        """Answer the boundaries already reported, then detach (waits at most ``timeout``)."""
        self._queue.put(None)
        self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    # -- the thread ---------------------------------------------------------------------------------

    def _failed(self, interval: int | None, error: BaseException) -> None:
        self.errors.append(f"interval {interval}: {type(error).__name__}: {error}".strip())
        if self.on_error is not None:
            with contextlib.suppress(Exception):
                self.on_error(interval, error)

    def _run(self) -> None:
        previous: Sample | None = None
        unanswered = 0  # boundaries since the last reading that reached on_sample
        try:
            try:
                previous = self.baseline = self.sampler.sample()
            except Exception as error:
                self._failed(None, error)
            finally:
                self._ready.set()
            stopping = False
            while not stopping:
                pending = [self._queue.get()]
                while not self._queue.empty():
                    pending.append(self._queue.get())
                stopping = None in pending
                boundaries = [b for b in pending if b is not None]
                if not boundaries:
                    continue
                latest = boundaries[-1]
                zero = latest.interval == -1
                unanswered += 0 if zero else len([b for b in boundaries if b.interval != -1])
                delay = time.monotonic() - latest.at
                try:
                    current = self.sampler.sample(full=any(b.full for b in boundaries))
                except Exception as error:
                    self._failed(latest.interval, error)
                    _answer(boundaries)
                    continue
                for boundary in boundaries:
                    boundary.made = True
                if previous is None or zero:  # a new baseline (the zero, or after a failed one)
                    previous, unanswered = current, 0
                    if zero:
                        rows = [*current.level_rows(), ("sample", "delay_seconds", delay),
                                ("sample", "taken_at", current.taken_at)]
                        try:
                            self.on_sample(-1, rows)
                        except Exception as error:
                            self._failed(-1, error)
                    _answer(boundaries)
                    continue
                rows = deltas(previous, current)
                rows += [("sample", "intervals_covered", unanswered), ("sample", "delay_seconds", delay),
                         ("sample", "taken_at", current.taken_at)]
                previous, unanswered = current, 0
                try:
                    self.on_sample(latest.interval, rows)
                except Exception as error:
                    self._failed(latest.interval, error)
                _answer(boundaries)
        finally:
            self.sampler.close()
            self.cpu_seconds = time.thread_time()  # since the thread began: see cpu_now
            while not self._queue.empty():  # nobody waits past the thread's end
                _answer([self._queue.get()])


def _answer(boundaries: Sequence[_Boundary | None]) -> None:
    for boundary in boundaries:
        if boundary is not None and boundary.answered is not None:
            boundary.answered.set()
