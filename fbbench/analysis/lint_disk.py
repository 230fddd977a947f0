"""The lint's rules on caches and the disk (FB020–FB028), over a stored run: Firebird's page
cache against the database, the engine's working set and the attachments' own caches; the OS file
cache in play or not, and whether its part moved during a run or between runs; disk tests whose
reads came from memory or whose commits did not wait for the disk. With them, what the rules of a
stored run read: its effective firebird.conf (:func:`conf_of`) and its workload
(:func:`run_workload`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fbbench.analysis import engine as engine_figures
from fbbench.analysis.lint_rules import Finding, finding
from fbbench.engines.firebird_conf import CACHE_PER_ATTACHMENT, architecture_of_mode, os_cache_in_play, parse_conf_text
from fbbench.errors import FbbenchError
from fbbench.sizes import size_text
from fbbench.store.model import StoredRun
from fbbench.workloads.spec import Workload, stored_workload

MIN_BUFFERS = 256
MAX_CLASSIC_BUFFERS = 2048
# The share of the engine's reads that reached the storage: a run whose readings span from at most
# the first to at least the second read from the OS cache at times and from the disk at others.
CACHED_SHARE, STORAGE_SHARE = 0.2, 0.5
MOVED_SHARE = 0.3  # between runs: their shares differ by this much


def conf_of(run: StoredRun) -> tuple[dict[str, str], set[str]]:
    """Effective firebird.conf (name → value) and the names explicitly set."""
    engine = run.get("engine") or {}
    rows = engine.get("firebird_conf") or []
    if rows:
        return ({r["name"]: "" if r.get("value") is None else str(r["value"]) for r in rows},
                {r["name"] for r in rows if r.get("is_set")})
    pairs = parse_conf_text(engine.get("firebird_conf_text") or "")
    return pairs, set(pairs)


def _mib(value: float) -> str:
    return size_text(value, unit="MiB")


def large_cache_per_attachment(mode: str, buffers: int | None, subject: str, shown: str,
                               ran: tuple[int | None, int | None] | None = None) -> list[Finding]:
    """FB021 for a ServerMode (any of Firebird's spellings) and the page buffers of each
    attachment; ``ran``: the (connections, page size) of a run, to say what the caches cost (the
    page size may not be known before the run: then only how many caches)."""
    if architecture_of_mode(mode) not in CACHE_PER_ATTACHMENT or buffers is None or buffers <= MAX_CLASSIC_BUFFERS:
        return []
    message = f"{shown} with {buffers} page buffers per attachment (> {MAX_CLASSIC_BUFFERS})"
    evidence: dict[str, Any] = {"architecture": mode, "page_buffers": buffers}
    if ran is not None:
        connections, page_size = ran
        if page_size:
            each = buffers * page_size
            message += f": {connections} attachment(s) × {_mib(each)} of cache = {_mib(each * (connections or 1))}"
        else:
            message += f": {connections} attachment(s), a cache each"
        evidence["connections"] = connections
    return [finding("FB021", message, evidence, subject)]


def cache_findings(run: StoredRun, subject: str) -> list[Finding]:
    database = run.get("database") or {}
    before, after = database.get("before") or {}, database.get("after") or {}
    buffers, page_size = before.get("page_buffers"), before.get("page_size")
    conf, set_keys = conf_of(run)
    architecture = str((run.get("engine") or {}).get("server_mode") or run.get("architecture") or "")
    connections = (run.get("settings") or {}).get("connections")
    findings = []
    in_play = os_cache_in_play(conf, set_keys, buffers)
    if buffers is not None and buffers < MIN_BUFFERS:
        where = ("the OS file cache" if in_play else "the disk")
        findings.append(finding(
            "FB020", f"page buffers {buffers} (< {MIN_BUFFERS}): the run measures copying pages between Firebird's "
            f"cache and {where} rather than the engine", {"page_buffers": buffers, "os_cache": in_play}, subject))
    findings += large_cache_per_attachment(architecture, buffers, subject, architecture,
                                           ran=(connections, page_size))
    size = max(before.get("size_bytes") or 0, after.get("size_bytes") or 0)
    memory = (run.get("host") or {}).get("memory_bytes")
    forced = before.get("forced_writes")
    findings += _working_set_findings(run, subject)
    if size and buffers and page_size:
        cache = buffers * page_size
        evidence = {"database_bytes": size, "page_cache_bytes": cache, "host_memory_bytes": memory,
                    "os_cache": in_play, "forced_writes": forced}
        observed = engine_figures.os_cache(run.get("engine_samples") or {}, run.get("intervals", []), page_size)
        available = ((observed or {}).get("host") or {}).get("mem_available", {}).get("max") or memory
        if not in_play and size <= cache:
            return [*findings, finding(
                "FB023", f"the OS file cache is off, but the database ({_mib(size)}) fits in Firebird's page cache "
                f"({buffers} buffers × {page_size} bytes = {_mib(cache)}): after its first reads the run does not go "
                "to the disk", evidence, subject)]
        if in_play and _is_disk_test(run) and available and size <= available:
            return [*findings, finding(
                "FB024", f"a disk test with the OS file cache on, whose database ({_mib(size)}) fits in the memory the "
                f"host had available ({size_text(available, unit='GiB')}): its reads come from memory; turn the file "
                "cache off (--file-cache off), drop it first (--drop-caches) or make the database larger than memory "
                "(--target-size)", {**evidence, "available_bytes": available}, subject)]
        reason = None
        if size <= cache:
            reason = (f"the database ({_mib(size)}) fits in Firebird's page cache ({buffers} buffers × {page_size} "
                      f"bytes = {_mib(cache)})")
        elif in_play and memory and size <= memory:
            reason = (f"the database ({_mib(size)}) fits in the OS file cache (host memory "
                      f"{size_text(memory, unit='GiB')}), which firebird.conf leaves in play (UseFileSystemCache / "
                      "FileSystemCacheThreshold)")
        if reason:
            what = "does not measure disk reads"
            if forced is False:
                what = "does not measure the disk"
                reason += "; and forced writes are off, so writes end in the OS cache too"
            findings.append(finding("FB022", f"this run {what}: {reason}", evidence, subject))
    return findings


def _is_disk_test(run: StoredRun) -> bool:
    """Whether the run's workload says its figures are the storage's (``disk = true``)."""
    workload = run_workload(run)
    return bool(workload and workload.disk)


def run_workload(run: StoredRun) -> Workload | None:
    """The workload the run ran, at its scale, from the files it stored (None if it stored none
    or this fbbench no longer reads them)."""
    files = run.get("workload_files") or {}
    if not files.get("workload.toml"):
        return None
    try:
        # The units the run ran, with its scale (a unit may call orders_generate_${variant}).
        return stored_workload(files, (run.get("settings") or {}).get("scale") or {})
    except FbbenchError:
        return None


def working_set(run: StoredRun) -> dict[str, Any] | None:
    """The pages the engine needs in its cache to work without rereading them (the rebuttal's
    list): the header page, the TIP pages from OIT to Next, and the pointer and index-root pages
    of the tables the run used (their data pages from gstat before the run). None when the run
    did not record enough to tell (no gstat, no per-table activity)."""
    database = run.get("database") or {}
    before, after = database.get("before") or {}, database.get("after") or database.get("before") or {}
    page_size = before.get("page_size")
    gstat: Mapping[str, Any] = (run.get("gstat") or {}).get("before") or {}
    snapshot = gstat.get("snapshot") or {}
    tables = snapshot.get("tables") or {}
    used = [row["table"] for row in engine_figures.busiest_tables(run.get("engine_samples") or {},
                                                                  run.get("intervals", []), top=10_000)]
    if not page_size or not tables or not used:
        return None
    headers = [h for h in (before, after) if h.get("next_transaction") is not None]
    oit = min((h.get("oldest_transaction") or 0 for h in headers), default=0)
    next_ = max((h.get("next_transaction") or 0 for h in headers), default=0)
    per_tip = (page_size - 20) * 4  # two bits per transaction
    tip = next_ // per_tip - oit // per_tip + 1
    per_pointer = (page_size - 32) // 5  # a page number and a byte of flags per data page
    pointers = sum(max(1, -(-int((tables.get(name) or {}).get("data_pages") or 0) // per_pointer)) for name in used)
    index_roots = len(used)
    return {"header": 1, "tip": tip, "pointer": pointers, "index_root": index_roots,
            "total": 1 + tip + pointers + index_roots, "tables": len(used), "oit": oit, "next": next_}


def _working_set_findings(run: StoredRun, subject: str) -> list[Finding]:
    buffers = ((run.get("database") or {}).get("before") or {}).get("page_buffers")
    need = working_set(run)
    if not buffers or need is None or buffers >= need["total"]:
        return []
    message = (f"page buffers {buffers} (per attachment where each has its own cache) are fewer than the "
               f"{need['total']:,} pages of the engine's working set: the header, {need['tip']:,} TIP page(s) for "
               f"OIT {need['oit']:,} .. Next {need['next']:,}, {need['pointer']:,} pointer and "
               f"{need['index_root']:,} index-root page(s) of the {need['tables']} table(s) in use")
    return [finding("FB026", message, {"page_buffers": buffers, **need}, subject)]


def os_cache_findings(run: StoredRun, subject: str) -> list[Finding]:
    """FB027: the OS cache's part in the engine's reads changed during the run, or the database
    fit in the host's available memory at some readings and not at others."""
    before = (run.get("database") or {}).get("before") or {}
    page_size, buffers = before.get("page_size"), before.get("page_buffers")
    conf, set_keys = conf_of(run)
    if not os_cache_in_play(conf, set_keys, buffers):
        return []
    observed = engine_figures.os_cache(run.get("engine_samples") or {}, run.get("intervals", []), page_size)
    if not observed:
        return []
    low, high = observed.get("storage_share_min"), observed.get("storage_share_max")
    available = (observed.get("host") or {}).get("mem_available") or {}
    size = max(before.get("size_bytes") or 0, ((run.get("database") or {}).get("after") or {}).get("size_bytes") or 0)
    evidence = {"storage_share_min": low, "storage_share_max": high, "available_min": available.get("min"),
                "available_max": available.get("max"), "database_bytes": size,
                "page_cache": (observed.get("host") or {}).get("page_cache")}
    if low is not None and high is not None and low <= CACHED_SHARE and high >= STORAGE_SHARE:
        return [finding("FB027", f"the share of the engine's reads that reached the storage moved from {low:.0%} to "
                                 f"{high:.0%} between readings: the OS cache held the database at times and not at "
                                 "others", evidence, subject)]
    if size and available.get("min") is not None and available["min"] < size <= available["max"]:
        between = f"{size_text(available['min'], unit='GiB').removesuffix(' GiB')} and " \
                  f"{size_text(available['max'], unit='GiB')}"
        return [finding("FB027", f"the host's available memory moved between {between}, across the database's "
                                 f"{_mib(size)}: it fit in the OS cache at times and not at others", evidence, subject)]
    return []


def lint_os_cache_series(runs: Sequence[StoredRun], label: str = "") -> list[Finding]:
    """FB028: runs of one series (or one side of a comparison) whose engine read from the OS cache
    in one run and from the storage in another."""
    shares = {}
    for run in runs:
        before = (run.get("database") or {}).get("before") or {}
        observed = engine_figures.os_cache(run.get("engine_samples") or {}, run.get("intervals", []),
                                           before.get("page_size"))
        if observed and observed.get("storage_share") is not None:
            shares[str(run.get("run_id"))] = float(observed["storage_share"])
    if len(shares) < 2 or max(shares.values()) - min(shares.values()) < MOVED_SHARE:
        return []
    low, high = min(shares.values()), max(shares.values())
    return [finding("FB028", f"the share of the engine's reads that reached the storage was {low:.0%} in one run and "
                             f"{high:.0%} in another", {"storage_share": shares}, label)]


def lint_disk_comparison(runs: Sequence[StoredRun]) -> list[Finding]:
    """FB025: a comparison of disk tests with forced writes off (on any side)."""
    off = [str(run.get("run_id")) for run in runs
           if ((run.get("database") or {}).get("before") or {}).get("forced_writes") is False and _is_disk_test(run)]
    if not off:
        return []
    return [finding("FB025", f"forced writes were off in {len(off)} of the {len(runs)} disk-test run(s) compared: "
                             "their commits did not wait for the disk", {"runs": off})]
