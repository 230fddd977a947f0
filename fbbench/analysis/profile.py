"""Where the time went: a profiled run's profile (``fbbench run --profile``, Firebird 5.0+) as its
document holds it, and the changes between the profiles of the sides of a comparison.

A profile is Firebird's: the engine's profiler (RDB$PROFILER) on every load attachment over the
measured period less a margin at its end (:mod:`fbbench.observe.profiler` says why), summed over
the attachments. Its times are the engine's own clock readings, nanoseconds per PSQL line
executed and per record source opened or fetched; the profiler's overhead is in them and in the
run's figures (docs/run-result.md says how large it was measured to be).

A comparison compares rates: each line's (or statement's) time per second of profile, so that runs
profiled for different lengths compare, and a line's average time per execution.

A PSQL line is named by its routine, line and column, counted from the first line of the
routine's CREATE statement; its text comes from the workload's own scripts, which the run stored
(a routine of a restored backup has no script, and no text is shown).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from fbbench.analysis.finite import finite
from fbbench.observe.profiler import TOP as KEPT
from fbbench.store.model import StoredRun

TOP_SHOWN = 10  # changes listed per kind in a comparison
SQL_SHOWN = 80  # characters of a statement's SQL text in its name


def statement_name(row: Mapping[str, Any]) -> str:
    """A statement in words: ``procedure TPCC_NEW_ORDER``, ``function PKG.F``, or its SQL text."""
    routine = row.get("routine")
    if routine:
        kind = str(row.get("statement_type") or "routine").lower()
        package = row.get("package")
        return f"{kind} {package + '.' if package else ''}{routine}"
    sql = " ".join(str(row.get("sql") or "").split())
    return sql if len(sql) <= SQL_SHOWN else sql[:SQL_SHOWN - 1] + "…"


def _ms(ns: Any) -> float | None:
    return None if ns is None else ns / 1e6


def _us(ns: Any) -> float | None:
    return None if ns is None else ns / 1e3


def _share(part: Any, whole: Any) -> float | None:
    return part / whole if part is not None and whole else None


_KIND_WORDS = {"PROCEDURE": "procedure", "FUNCTION": "function", "TRIGGER": "trigger"}


def routine_sources(files: Mapping[str, str]) -> dict[tuple[str, str], list[str]]:
    """(kind, NAME) → the lines of the workload's scripts from that routine's CREATE on, for each
    procedure, function and trigger they create (CREATE [OR ALTER] / RECREATE)."""
    found: dict[tuple[str, str], list[str]] = {}
    pattern = re.compile(r'^\s*(?:create\s+or\s+alter|create|recreate|alter)\s+(procedure|function|trigger)\s+'
                         r'("[^"]+"|[A-Za-z][A-Za-z0-9_$]*)', re.IGNORECASE | re.MULTILINE)
    for name, text in files.items():
        if name.endswith(".toml"):
            continue
        lines = text.splitlines()
        for match in pattern.finditer(text):
            routine = match.group(2).strip('"') if match.group(2).startswith('"') else match.group(2).upper()
            start = text.count("\n", 0, match.start())
            found.setdefault((match.group(1).lower(), routine), lines[start:])
    return found


def _line_text(row: Mapping[str, Any], sources: Mapping[tuple[str, str], list[str]]) -> str | None:
    kind = _KIND_WORDS.get(str(row.get("statement_type") or "").upper())
    line = row.get("line")
    if kind is None or row.get("package") or not row.get("routine") or not isinstance(line, int) or line < 1:
        return None
    lines = sources.get((kind, str(row["routine"])))
    if lines is None or line > len(lines):
        return None
    return lines[line - 1].strip() or None


def profile_document(run: StoredRun) -> dict[str, Any] | None:
    """The run's profile (docs/run-result.md, ``profile``); None for a run not profiled."""
    stored = (run.get("summary") or {}).get("profile")
    if not stored:
        return None
    totals = stored.get("totals") or {}
    rows: dict[str, list[dict[str, Any]]] = {"psql": [], "statement": [], "record_source": []}
    for row in run.get("profile_lines") or []:
        rows.setdefault(str(row.get("kind")), []).append(row)
    psql_ns = totals.get("psql_ns")
    sources_of_routines = routine_sources(run.get("workload_files") or {})
    lines = [{
        "rank": r["rank"], "statement": statement_name(r), "statement_type": r.get("statement_type"),
        "package": r.get("package"), "routine": r.get("routine"), "sql": r.get("sql"),
        "line": r.get("line"), "column": r.get("column"), "text": _line_text(r, sources_of_routines),
        "count": r.get("count"),
        "total_ms": _ms(r.get("total_ns")), "avg_us": _us(r["total_ns"] / r["count"]) if r.get("count") else None,
        "min_us": _us(r.get("min_ns")), "max_us": _us(r.get("max_ns")), "share": _share(r.get("total_ns"), psql_ns),
    } for r in sorted(rows["psql"], key=lambda r: r["rank"])]
    statements = [{
        "rank": r["rank"], "statement": statement_name(r), "statement_type": r.get("statement_type"),
        "package": r.get("package"), "routine": r.get("routine"), "sql": r.get("sql"),
        "total_ms": _ms(r.get("total_ns")), "psql_ms": _ms(r.get("psql_ns")), "cursor_ms": _ms(r.get("cursor_ns")),
        "lines": r.get("lines"), "cursors": r.get("cursors"),
    } for r in sorted(rows["statement"], key=lambda r: r["rank"])]
    sources = [{
        "rank": r["rank"], "statement": statement_name(r), "statement_type": r.get("statement_type"),
        "package": r.get("package"), "routine": r.get("routine"), "sql": r.get("sql"),
        "cursor_id": r.get("cursor_id"), "cursor_name": r.get("cursor_name"),
        "record_source_id": r.get("record_source_id"),
        "parent_record_source_id": r.get("parent_record_source_id"), "level": r.get("level"),
        "access_path": r.get("access_path"), "opens": r.get("opens"), "fetches": r.get("fetches"),
        "own_ms": _ms(r.get("own_ns")), "total_ms": _ms(r.get("total_ns")), "open_ms": _ms(r.get("open_ns")),
        "fetch_ms": _ms(r.get("fetch_ns")),
    } for r in sorted(rows["record_source"], key=lambda r: r["rank"])]
    document = {
        "status": stored.get("status"), "reason": stored.get("reason"), "plugin": stored.get("plugin"),
        "clock_source": stored.get("clock_source"), "attachments": stored.get("attachments"),
        "sessions": stored.get("sessions"), "finished": stored.get("finished"),
        "lost": [dict(item) for item in stored.get("lost") or []],
        "window_seconds": stored.get("window_seconds"),
        "measure_seconds": (run.get("summary") or {}).get("measured_seconds"),
        "start_delay_seconds": stored.get("start_delay_seconds"),
        "end_delay_seconds": stored.get("end_delay_seconds"),
        "psql_ms": _ms(psql_ns), "cursor_ms": _ms(totals.get("cursor_ns")),
        "counts": {"psql_lines": totals.get("psql_lines"), "statements": totals.get("statements"),
                   "record_sources": totals.get("record_sources")},
        "psql_lines": lines, "statements": statements, "record_sources": sources,
    }
    document["text"] = profile_text(document)
    return finite(document)


def profile_text(profile: Mapping[str, Any]) -> str:
    """What was profiled, in one line: the summary's and the report's first words on it."""
    if profile.get("status") == "failed":
        return f"no profile: {profile.get('reason')}"
    window, measured = profile.get("window_seconds"), profile.get("measure_seconds")
    over = f"{window:.1f} s of the measured {measured:.1f} s" if window and measured else "the measured period"
    clock = f"; clock source {profile['clock_source']}" if profile.get("clock_source") else ""
    text = (f"{profile.get('plugin')} on {profile.get('finished')} of {profile.get('attachments')} attachment(s) over "
            f"{over}{clock}")
    return text + (f" — {profile['reason']}" if profile.get("reason") else "")


def line_name(row: Mapping[str, Any]) -> str:
    """A PSQL line in words: ``procedure TPCC_NEW_ORDER line 54:7``."""
    return f"{row.get('statement') or statement_name(row)} line {row.get('line')}:{row.get('column')}"


# ------------------------------------------------------------------------------------ comparison

def _key(row: Mapping[str, Any], kind: str) -> tuple[Any, ...]:
    statement = (row.get("statement_type"), row.get("package"), row.get("routine"),
                 None if row.get("routine") else row.get("sql"))
    return (*statement, row.get("line"), row.get("column")) if kind == "psql" else statement


def _side_profile(runs: Sequence[StoredRun]) -> dict[str, Any] | None:
    """A side's profiled runs summed: each line's and statement's total time and count, over the
    sum of their profiles' seconds. None when no run of the side has a profile."""
    profiled = [(run, (run.get("summary") or {}).get("profile") or {}) for run in runs]
    profiled = [(run, p) for run, p in profiled
                if p.get("status") in ("complete", "partial") and p.get("window_seconds")]
    if not profiled:
        return None
    kinds: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {"psql": {}, "statement": {}}
    for run, _profile in profiled:
        for row in run.get("profile_lines") or []:
            kind = str(row.get("kind"))
            if kind not in kinds:
                continue
            entry = kinds[kind].setdefault(_key(row, kind), {
                "statement": statement_name(row), **{k: row.get(k) for k in ("statement_type", "package", "routine")},
                "sql": None if row.get("routine") else row.get("sql"), "line": row.get("line"),
                "column": row.get("column"), "total_ns": 0, "count": 0, "runs": 0})
            entry["total_ns"] += row.get("total_ns") or 0
            entry["count"] += row.get("count") or 0
            entry["runs"] += 1
    return {"runs": len(profiled), "seconds": sum(float(p["window_seconds"]) for _run, p in profiled),
            "partial": any(p.get("status") == "partial" for _run, p in profiled), "kinds": kinds}


def _values(entry: Mapping[str, Any] | None, side: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    """One line's (statement's) rates on a side; None when it is not among the side's top rows in
    every profiled run (beyond them it was not kept)."""
    if entry is None or entry["runs"] < side["runs"]:
        return None
    values: dict[str, Any] = {"ms_per_second": entry["total_ns"] / 1e6 / side["seconds"]}
    if kind == "psql":
        values["count_per_second"] = entry["count"] / side["seconds"]
        values["avg_us"] = entry["total_ns"] / entry["count"] / 1e3 if entry["count"] else None
    return values


def _changes(kind: str, base: str, others: Sequence[str], sides: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    keys = list(dict.fromkeys(k for label in (base, *others) for k in sides[label]["kinds"][kind]))
    rows = []
    for key in keys:
        entries = {label: sides[label]["kinds"][kind].get(key) for label in (base, *others)}
        known = next(e for e in entries.values() if e is not None)
        values = {label: _values(entries[label], sides[label], kind) for label in entries}
        first = values[base]
        change: dict[str, float | None] = {}
        avg_ratio: dict[str, float | None] = {}
        for label in others:
            value = values[label]
            change[label] = value["ms_per_second"] - first["ms_per_second"] if value and first else None
            avg_ratio[label] = (value["avg_us"] / first["avg_us"] if value and first and first.get("avg_us")
                                and value.get("avg_us") is not None else None)
        # Beyond a side's kept rows its value is unknown, at most its last kept row's: such a line
        # is ranked by the value it has where it was kept.
        size = max(abs(c) for c in change.values() if c is not None) if any(c is not None for c in change.values()) \
            else max((v["ms_per_second"] for v in values.values() if v is not None), default=0.0)
        row: dict[str, Any] = {"statement": known["statement"], "statement_type": known["statement_type"],
                               "package": known["package"], "routine": known["routine"], "sql": known["sql"]}
        if kind == "psql":
            row |= {"line": known["line"], "column": known["column"]}
        row |= {"values": values, "change_ms_per_second": change}
        if kind == "psql":
            row["avg_ratio"] = avg_ratio
        rows.append((size, row))
    rows.sort(key=lambda item: -item[0])
    return [row for _size, row in rows[:TOP_SHOWN]]


def compare_profiles(sides: Mapping[str, Sequence[StoredRun]], base: str) -> dict[str, Any] | None:
    """The top changes per PSQL line and per statement between the profiled runs of each side
    and the baseline's (docs/compare-result.md, ``profile``); None when no side was profiled."""
    found = {label: _side_profile(runs) for label, runs in sides.items()}
    profiles = {label: p for label, p in found.items() if p is not None}
    if not profiles:
        return None
    sides_doc = {label: ({"runs": p["runs"], "seconds": p["seconds"], "partial": p["partial"]} if p else None)
                 for label, p in found.items()}
    others = [label for label in sides if label != base and label in profiles]
    available = base in profiles and bool(others)
    missing = [label for label in found if label not in profiles]
    note = ("time per second of profile (the engine's time in each line or statement, all attachments together, "
            "divided by the seconds its sessions ran), and a line's average per execution; a line or statement "
            f"beyond a run's top {KEPT} has no value there")
    if missing:
        note += f"; not profiled: {', '.join(missing)}"
    document = {
        "available": available,
        "sides": sides_doc,
        "note": note,
        "psql_lines": _changes("psql", base, others, profiles) if available else [],
        "statements": _changes("statement", base, others, profiles) if available else [],
    }
    return finite(document)
