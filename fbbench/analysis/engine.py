"""What the engine did during the measured period, from the sampler's per-interval figures.

One definition of each engine figure a report shows: rates per measured second (page reads,
writes, fetches, marks; record operations; garbage collection), the largest transaction gaps,
the busiest tables, and what watching cost. Inputs are the stored engine samples
(``{interval: {source: {name: value}}}``) and the stored intervals (index, phase, seconds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fbbench.workloads.figures import OUTCOMES

IO = ("page_reads", "page_writes", "page_fetches", "page_marks")
RECORDS = ("seq_reads", "idx_reads", "inserts", "updates", "deletes")
GARBAGE = ("backouts", "purges", "expunges", "imgc")
CONTENTION = ("conflicts", "waits", "locks")
GAPS = ("next_minus_oit", "next_minus_oat")

Samples = Mapping[int, Mapping[str, Mapping[str, float | None]]]


def interval_table(intervals: Sequence[Mapping[str, Any]]) -> dict[int, tuple[str, float]]:
    """index → (phase, seconds) from the stored interval rows (one row per unit)."""
    table: dict[int, tuple[str, float]] = {}
    for row in intervals:
        table[int(row["index"])] = (str(row["phase"]), float(row["seconds"] or 0.0))
    return table


def measured(samples: Samples, intervals: dict[int, tuple[str, float]]) -> list[int]:
    """The sampled intervals whose readings lie inside the measured period."""
    return [index for index in sorted(samples) if index >= 0 and intervals.get(index, ("", 0))[0] == "measure"]


def covered_seconds(index: int, samples: Samples, intervals: dict[int, tuple[str, float]]) -> float:
    """Seconds a reading's deltas span: its interval and any earlier ones it answered for."""
    covered = int((samples[index].get("sample") or {}).get("intervals_covered") or 1)
    return sum(intervals.get(i, ("", 0.0))[1] for i in range(index - covered + 1, index + 1))


def totals(samples: Samples, indices: list[int], source: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for index in indices:
        for name, value in (samples[index].get(source) or {}).items():
            if value is not None:
                found[name] = found.get(name, 0.0) + value
    return found


def activity(samples: Samples, intervals_rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The measured period's engine figures per second, the largest gaps, sampling cost; None if unsampled."""
    intervals = interval_table(intervals_rows)
    indices = measured(samples, intervals)
    if not indices or not any("io" in samples[i] for i in indices):
        return None
    seconds = sum(covered_seconds(i, samples, intervals) for i in indices)
    if seconds <= 0:
        return None
    io, record = totals(samples, indices, "io"), totals(samples, indices, "record")

    def rate(figures: Mapping[str, float], names: tuple[str, ...]) -> dict[str, float]:
        return {name: figures[name] / seconds for name in names if name in figures}

    def largest(name: str) -> float | None:
        values = [(samples[i].get("header") or {}).get(name) for i in indices]
        present = [v for v in values if v is not None]
        return max(present) if present else None

    reading_seconds = [v for v in ((samples[i].get("sample") or {}).get("seconds") for i in indices) if v is not None]
    return {
        "seconds": seconds,
        "io_per_second": rate(io, IO),
        "records_per_second": rate(record, RECORDS),
        "garbage_per_second": rate(record, GARBAGE),
        "contention_per_second": rate(record, CONTENTION),
        "largest_gap": {name: largest(name) for name in GAPS},
        "database_pages_end": (samples[indices[-1]].get("header") or {}).get("pages"),
        "per_attachment_sums": bool((samples[indices[-1]].get("database") or {}).get("per_attachment_sums")),
        "readings": len(indices),
        "reading_seconds_max": max(reading_seconds) if reading_seconds else None,
    }


def busiest_tables(samples: Samples, intervals_rows: Sequence[Mapping[str, Any]],
                   top: int = 10) -> list[dict[str, Any]]:
    """Tables by reads and by writes in the measured period (record counters per table)."""
    intervals = interval_table(intervals_rows)
    indices = measured(samples, intervals)
    tables: dict[str, dict[str, float]] = {}
    for index in indices:
        for source, figures in samples[index].items():
            if not source.startswith("table:"):
                continue
            into = tables.setdefault(source.split(":", 1)[1], {})
            for name, value in figures.items():
                if value is not None:
                    into[name] = into.get(name, 0.0) + value
    ranked = []
    for name, figures in tables.items():
        reads = figures.get("seq_reads", 0.0) + figures.get("idx_reads", 0.0)
        writes = figures.get("inserts", 0.0) + figures.get("updates", 0.0) + figures.get("deletes", 0.0)
        ranked.append((reads + writes, {"table": name, "reads": reads, "writes": writes, **figures}))
    ranked.sort(key=lambda item: item[0], reverse=True)
    return [row for activity, row in ranked if activity > 0][:top]


PER_UNIT = (("io", ("page_reads", "page_writes", "page_fetches", "page_marks")),
            ("record", ("seq_reads", "idx_reads", "backouts", "purges", "expunges", "conflicts")))


def per_unit(samples: Samples, intervals_rows: Sequence[Mapping[str, Any]]) -> dict[str, float | None] | None:
    """The measured period's engine work per unit the load ran (any outcome): page reads, writes,
    fetches, marks, records read naturally (seq_reads) and through an index (idx_reads), backouts,
    purges, expunges and record conflicts per unit, and the largest
    Next − OIT gap; None when the engine was not sampled. Where a comparison's difference came from.

    The units counted are those of the intervals the readings answer for, so that a late reading
    (``intervals_covered``) divides its changes by the units of every interval it spans.
    """
    intervals = interval_table(intervals_rows)
    indices = measured(samples, intervals)
    if not indices or not any("io" in samples[i] for i in indices):
        return None
    covered: set[int] = set()
    for index in indices:
        count = int((samples[index].get("sample") or {}).get("intervals_covered") or 1)
        covered |= set(range(index - count + 1, index + 1))
    units = sum(int(row[key] or 0) for row in intervals_rows if row["index"] in covered
                for key in OUTCOMES)
    if units <= 0:
        return None
    found: dict[str, float | None] = {}
    for source, names in PER_UNIT:
        summed = totals(samples, indices, source)
        found |= {name: summed[name] / units for name in names if name in summed}
    gaps = [(samples[i].get("header") or {}).get("next_minus_oit") for i in indices]
    found["largest_next_minus_oit"] = max((g for g in gaps if g is not None), default=None)
    return found


def metric_per_interval(samples: Samples, intervals_rows: Sequence[Mapping[str, Any]], name: str,
                        per_minute: bool) -> list[tuple[float, float]]:
    """A workload metric's change in each measured reading (per minute when the metric is), with the
    seconds it spans: (value, seconds). They add up to the metric's window."""
    intervals = interval_table(intervals_rows)
    found = []
    for index in measured(samples, intervals):
        change = (samples[index].get("metric") or {}).get(name)
        seconds = covered_seconds(index, samples, intervals)
        if change is None or seconds <= 0:
            continue
        found.append((change * 60 / seconds if per_minute else change, seconds))
    return found


HOST_LEVELS = ("mem_available", "page_cache", "dirty", "writeback")
PROCESS = ("major_faults", "read_bytes", "write_bytes")
MIN_PAGE_READS = 100  # an interval with fewer engine page reads says nothing of where they came from


def storage_share(reading: Mapping[str, Mapping[str, float | None]], page_size: int | None) -> float | None:
    """Of what the engine read in one reading's span (page reads × page size), the share that
    reached the storage (its processes' block reads): 0 all from the OS cache, 1 all from the
    disk (O_DIRECT, or a cold cache). None with too few page reads to tell."""
    reads = (reading.get("io") or {}).get("page_reads")
    block = (reading.get("process") or {}).get("read_bytes")
    if not page_size or reads is None or block is None or reads < MIN_PAGE_READS:
        return None
    return min(1.0, block / (reads * page_size))


def os_cache(samples: Samples, intervals_rows: Sequence[Mapping[str, Any]],
             page_size: int | None) -> dict[str, Any] | None:
    """The OS file cache during the measured period, beside the engine's page reads: the host's
    available memory, page cache, dirty and writeback bytes (lowest and highest at the readings),
    the engine processes' major faults and block I/O, and the share of the engine's reads that
    reached the storage (in all, and lowest and highest per reading). None when not observed."""
    intervals = interval_table(intervals_rows)
    indices = [i for i in measured(samples, intervals) if samples[i].get("host")]
    if not indices:
        return None
    levels: dict[str, dict[str, float]] = {}
    for name in HOST_LEVELS:
        values = [v for v in ((samples[i].get("host") or {}).get(name) for i in indices) if v is not None]
        if values:
            levels[name] = {"min": min(values), "max": max(values)}
    process = totals(samples, indices, "process")
    page_reads = totals(samples, indices, "io").get("page_reads")
    shares = [s for s in (storage_share(samples[i], page_size) for i in indices) if s is not None]
    read_bytes = process.get("read_bytes")
    overall = (min(1.0, read_bytes / (page_reads * page_size)) if read_bytes is not None and page_reads
               and page_size and page_reads >= MIN_PAGE_READS else None)
    return {
        "readings": len(indices),
        "host": levels,
        "process": {name: process[name] for name in PROCESS if name in process},
        "engine_page_reads": page_reads,
        "engine_read_bytes": page_reads * page_size if page_reads is not None and page_size else None,
        "storage_share": overall,
        "storage_share_min": min(shares) if shares else None,
        "storage_share_max": max(shares) if shares else None,
    }
