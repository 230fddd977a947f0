"""The conditions of a run: one canonical record, built only from what the results store holds.

A comparison diffs conditions first (:func:`diff`); the user's axis is the difference they meant
(:func:`axis`), and every other difference is a lint finding (:mod:`fbbench.analysis.lint`).

A record (:class:`Conditions`) is a flat mapping ``dotted name → display string``:

===========================  ===============================================================
key                          from
===========================  ===============================================================
``engine.version``           the engine's ENGINE_VERSION (5.0.4)
``engine.build``             the server version string (LI-V5.0.4.1812 Firebird 5.0)
``engine.binaries``          sha256 over the engine's binaries: its client library, plugins, intl
                             and bin/ (each file's path in its root and content; see
                             fbbench/engines/binaries.py), for embedded engines (PyPI's and
                             registered builds) and managed servers; absent for an external
                             server. The same files under two names are the same build: the
                             name a build was registered under is the run's engine label,
                             never a condition
``engine.bits``              embedded: the bitness of the process that runs the engine
                             (a server's is not visible to a client: absent)
``client.bits``              the fbclient library's bitness
``client.version``           the client library's version
``protocol``                 embedded, TCP (a server DSN), XNET
``architecture``             Super, SuperClassic or Classic as verified from MON$ATTACHMENTS (else
                             ServerMode as the engine reports it)
``conf.<Key>``               effective firebird.conf: every key from RDB$CONFIG on 4.0+; on 3.0
                             the keys set in the generated file (the rest are engine defaults,
                             not visible). ServerMode is ``architecture``.
``database.page_size`` …     the database before the run: page_size, page_buffers (effective,
                             MON$PAGE_BUFFERS), forced_writes, sweep_interval, ods
``database.file_cache``      on / off: whether the OS file cache sits under Firebird's page cache,
                             one condition whatever key set it (UseFileSystemCache on 4.0+,
                             FileSystemCacheThreshold against the page buffers on 3.0), which
                             therefore are not ``conf.*`` keys of their own
``replication``              off, async or sync (Firebird's built-in replication, which fbbench
                             sets up on embedded engines; an external server's is not visible)
``replication.<key>``        the replication.conf the engine read, but the paths fbbench chose
                             per run (journal_directory, journal_archive_directory, sync_replica)
``database.restored_from``   ``--database-from``: sha256 of the gbak backup the database was restored
                             from (its file name and place are not conditions)
``workload.name``/``.hash``  the workload's name; sha256 of the files the run used
``scale.<name>``             the effective scale (workload defaults with the run's overrides)
``load.*``                   connections, warmup, duration or transactions, interval,
                             target_rate, connect_rate, sweep, monitor, drop_caches; ``load.seed``
                             only when fixed; ``load.timeshare`` for runs that shared the machine
                             in turns; ``load.trace`` for runs recorded by a trace session (--trace);
                             ``load.profile`` for runs under Firebird's profiler (--profile);
                             ``load.gstat_every`` for runs that read gstat as they went;
                             ``load.replay`` (order, speed) for a replay of a trace
                             ``load.clients``: a lab's hosts that drove the attachments (host (n), …)
``host.*``                   name (the stable name: --host-name, a lab worker's), cpu_model, cpus
                             (threads, cores, usable), cpu_max_mhz, governor, hypervisor,
                             container, memory, os, kernel, machine
``host.disk.*``              the storage under the database: device (and model), medium
                             (rotational, solid-state, memory), filesystem, mount_options,
                             scheduler (not visible for an external server's database)
``host.temp_disk.*``         the same for the engine's temp directory (sort files)
``host.shape``, ``.shape.*`` a machine shape (--machine, fbbench.shape): "emulated: memory=1GiB, …",
                             each limit (``host.shape.memory``: "1GiB (emulated)") and for a link
                             how its round trip was made (``host.shape.net.method``: netem, relay).
                             One factor, ``machine`` (``--axis machine``), apart from ``host``
``network.round_trip``       a run over the network: loopback, or the class of the client-to-server
                             round trip (a trivial query's median, measured before the run)
``fbbench.*``                version, python
===========================  ===============================================================

**Not conditions** — expected to differ between repeats of the same conditions, so never
compared: the run id, start and end times, status, series and repeat numbers, the database's
location and its sizes before and after (outcomes of scale, page size and ODS), whether the
population was built or copied from the cache, tags, output paths, the work directory, the
disk's free space and mount point, the hostname behind a host's stable name, the round trip's
exact figures, and the seed when it was drawn at random. A fixed seed is a condition: the
store does not say whether a seed was given (``settings.seed_fixed`` is read when present), but
the repeats of a series that all share one seed had it fixed (:func:`series_record`).

Nor are the firebird.conf values fbbench makes for each run (:func:`_made_for_the_run`): a path
inside the run's runtime directory (``SecurityDatabase``'s default lies in the runtime root),
and the keys it sets itself for a managed server (its port, bind address and security
database). They name the run's work directory and differ between any two runs, so they would
make every comparison across directories or machines a comparison of paths; the store keeps them
with the engine's facts (``engine.firebird_conf``), and the run's report shows them.
"""

from __future__ import annotations

import difflib
import hashlib
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from fbbench.analysis.host_conditions import host_values, round_trip_class
from fbbench.engines.catalog import looks_like_dsn
from fbbench.engines.firebird_conf import (
    ARCHITECTURES,
    REPLICATION_OWNED,
    REPLICATION_REFUSED,
    os_cache_in_play,
    parse_conf_text,
)
from fbbench.engines.installation import RESERVED_KEYS
from fbbench.errors import FbbenchError
from fbbench.store.model import StoredRun

# Keys that describe one factor a user would name as an axis.
_FACTORS = (("engine.", "engine"), ("host.shape", "machine"), ("host.", "host"), ("replication.", "replication"))
# Keys that follow from a factor: when the factor is the axis (or differs), they are expected to.
_CONSEQUENCES: dict[str, tuple[str, ...]] = {
    "engine": ("database.ods", "client.version"),
    "architecture": ("database.page_buffers",),  # a per-architecture default cache (3.0)
    "conf.DefaultDbCachePages": ("database.page_buffers",),
    "protocol": ("client.version", "architecture", "engine.bits"),
    "machine": ("network.round_trip",),  # a shaped link's round trip is the shape's
}


class AxisError(FbbenchError):
    """The requested axis is not a difference between the runs, or no axis was given among several."""


@dataclass(frozen=True)
class Conditions(Mapping[str, str]):
    """One run's conditions: a flat mapping ``dotted name → display string`` (held in ``data``).

    ``defaults``: the ``conf.*`` keys whose value is the engine's default (nobody set them);
    ``conf_complete``: every firebird.conf key is known (RDB$CONFIG); on 3.0 only the keys set are,
    and a key missing from the record is then the engine's default. ``seed``: the run's seed,
    kept aside (a condition only when fixed); ``label``: the run it describes.
    """

    data: dict[str, str]
    defaults: frozenset[str] = frozenset()
    conf_complete: bool = True
    seed: int | None = None
    label: str = ""

    def __getitem__(self, key: str) -> str:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


def _on_off(value: Any) -> str | None:
    return None if value is None else ("on" if value else "off")


def _seconds(value: Any) -> str | None:
    return None if value is None else f"{float(value):g} s"


def _timeshare(value: Any) -> str | None:
    """A time-shared run (compare --paired) got part of the machine: its figures compare only with
    runs that shared it the same way. Which pair it was in is not a condition."""
    if not isinstance(value, dict) or not value.get("turn"):
        return None
    return f"{int(value.get('runs') or 2)} runs in turns of {float(value['turn']):g} s"


def _backup(load: Mapping[str, Any]) -> str | None:
    restored = load.get("restored_from")
    return f"backup sha256 {restored['sha256'][:16]}" if isinstance(restored, dict) and restored.get("sha256") else None


def protocol_of(run: StoredRun) -> str:
    """embedded, TCP or XNET: how the run's client reached its engine (a server DSN in settings.engine)."""
    engine = run.get("engine") or {}
    if engine.get("protocol"):
        return str(engine["protocol"])
    label = str(run.get("engine_label") or "")
    text = str((run.get("settings") or {}).get("engine") or "")
    if "embedded" in label or not looks_like_dsn(text):
        return "embedded"
    return "XNET" if text.lower().startswith("xnet://") else "TCP"


def effective_scale(run: StoredRun) -> dict[str, str]:
    """The scale a stored run ran at: its workload's defaults with the run's overrides, as the
    workload format reads them; a stored workload this fbbench no longer reads, from its
    ``[scale]`` table as written."""
    from fbbench.workloads.scale import parse_scale_value
    from fbbench.workloads.spec import stored_workload

    files = run.get("workload_files") or {}
    overrides = (run.get("settings") or {}).get("scale") or {}
    if files.get("workload.toml"):
        try:
            read = stored_workload(files, overrides).scale
        except FbbenchError:
            pass
        else:
            return {name: value if isinstance(value, str) else f"{value:g}" for name, value in read.items()}
    text = files.get("workload.toml") or ""
    try:
        defaults = tomllib.loads(text).get("scale", {}) if text else {}
    except tomllib.TOMLDecodeError:
        defaults = {}
    # A scale word is a table: { default = "fixed", choices = [...] }.
    defaults = {name: value.get("default") if isinstance(value, dict) else value
                for name, value in (defaults if isinstance(defaults, dict) else {}).items()}
    merged = {**defaults, **((run.get("settings") or {}).get("scale") or {})}
    scale = {}
    for name, value in merged.items():
        try:
            scale[name] = f"{parse_scale_value(name, value):g}"
        except (FbbenchError, TypeError, ValueError):
            scale[name] = str(value)
    return scale


def workload_hash(files: Mapping[str, str]) -> str:
    """sha256 of a workload's files (names and texts, in name order), first 16 hex digits."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return digest.hexdigest()[:16]


# The firebird.conf keys that decide whether the OS file cache is in play: database.file_cache.
FILE_CACHE_KEYS = ("conf.UseFileSystemCache", "conf.FileSystemCacheThreshold")


def _file_cache(values: Mapping[str, Any], defaults: set[str], visible: bool, buffers: Any) -> str | None:
    """database.file_cache from the conf keys already in ``values`` (None when the engine's
    firebird.conf is not visible — an external 3.0 server — or the answer needs page buffers the
    run did not read)."""
    if not visible or (buffers is None and "conf.UseFileSystemCache" not in values):
        return None  # 3.0 compares the threshold with the page buffers, which the run did not read
    conf = {key[len("conf."):]: str(values[key]) for key in FILE_CACHE_KEYS if key in values}
    set_keys = [name for name in conf if f"conf.{name}" not in defaults]
    return _on_off(os_cache_in_play(conf, set_keys, int(buffers) if buffers else None))


def _made_for_the_run(run: StoredRun) -> Callable[[str, str], bool]:
    """Whether a firebird.conf key's value is one fbbench made for this run alone (see the module)."""
    runtime = next(((p.get("detail") or {}) for p in run.get("phases") or [] if p.get("name") == "runtime"), {})
    root = runtime.get("root")
    inside = str(PurePosixPath(root).parent) + "/" if root else None
    managed = "server" in runtime

    def made(name: str, value: str) -> bool:
        return (managed and name in RESERVED_KEYS) or (inside is not None and value.startswith(inside))

    return made


def record(run: StoredRun) -> Conditions:
    """The conditions of one stored run (``ResultsStore.load_run``); see the module for the keys."""
    settings = run.get("settings") or {}
    engine = run.get("engine") or {}
    before = (run.get("database") or {}).get("before") or {}
    host = run.get("host") or {}
    run_id = str(run.get("run_id") or "")
    protocol = protocol_of(run)
    bits = host.get("fbclient_bits") or host.get("client_bits")
    values: dict[str, Any] = {
        "engine.version": engine.get("engine_version"),
        "engine.build": engine.get("server_version") or run.get("engine_version"),
        "engine.binaries": (engine.get("binaries") or {}).get("sha256"),
        # An embedded engine runs inside the client's process: it has the client library's bitness.
        "engine.bits": bits if protocol == "embedded" else None,
        "client.bits": bits,
        "client.version": next((str(p["detail"]["client"]) for p in run.get("phases") or []
                                if p.get("name") == "runtime" and (p.get("detail") or {}).get("client")), None),
        "protocol": protocol,
        # What the engine was seen to run (MON$ATTACHMENTS), spelled one way whatever ServerMode's
        # spelling; runs from before the verification have the ServerMode as reported.
        "architecture": ARCHITECTURES.get((engine.get("architecture_verified") or {}).get("architecture") or "")
        or engine.get("server_mode") or run.get("architecture"),
    }
    defaults: set[str] = set()
    rows = engine.get("firebird_conf") or []
    conf_complete = bool(rows)
    made_for_the_run = _made_for_the_run(run)
    if rows:
        for row in rows:
            value = "" if row.get("value") is None else str(row["value"])
            if row["name"] == "ServerMode" or made_for_the_run(row["name"], value):
                continue
            key = f"conf.{row['name']}"
            values[key] = value
            if not row.get("is_set"):
                defaults.add(key)
    else:
        for name, value in parse_conf_text(engine.get("firebird_conf_text") or "").items():
            if name != "ServerMode" and not made_for_the_run(name, value):
                values[f"conf.{name}"] = value
    visible = bool(rows) or bool(engine.get("firebird_conf_text"))
    file_cache = _file_cache(values, defaults, visible, before.get("page_buffers"))
    for key in FILE_CACHE_KEYS:
        values.pop(key, None)
        defaults.discard(key)
    values |= {
        "database.page_size": before.get("page_size"),
        "database.page_buffers": before.get("page_buffers"),
        "database.forced_writes": _on_off(before.get("forced_writes")),
        "database.file_cache": file_cache,
        "database.sweep_interval": before.get("sweep_interval"),
        "database.ods": before.get("ods"),
        "database.restored_from": _backup(run.get("load") or {}),
        "workload.name": run.get("workload"),
        "workload.hash": workload_hash(run.get("workload_files") or {}) if run.get("workload_files") else None,
    }
    values |= replication_record(run, protocol)
    values |= {f"scale.{name}": value for name, value in sorted(effective_scale(run).items())}
    fixed_work = settings.get("transactions") is not None
    values |= {
        "load.connections": settings.get("connections"),
        "load.warmup": _seconds(0 if fixed_work else settings.get("warmup")),
        # A replay lasts as long as its trace at its speed: the trace is the workload (its hash).
        "load.duration": None if fixed_work or settings.get("replay") else _seconds(settings.get("duration")),
        "load.replay": f"{settings.get('order', 'timed')}, speed {float(settings.get('speed') or 1):g}"
        if settings.get("replay") else None,
        "load.transactions": f"{settings['transactions']} per attachment" if fixed_work else None,
        "load.interval": _seconds(settings.get("interval")),
        "load.target_rate": f"{settings['target_rate']:g}/s" if settings.get("target_rate") else None,
        "load.connect_rate": f"{settings['connect_rate']:g}/s" if settings.get("connect_rate") else None,
        "load.sweep": _on_off(settings.get("sweep")),
        "load.monitor": _on_off(settings.get("monitor")),  # the engine sampler's own attachment
        "load.drop_caches": "on" if settings.get("drop_caches") else None,
        "load.seed": str(settings.get("seed")) if settings.get("seed_fixed") else None,
        "load.timeshare": _timeshare(settings.get("timeshare")),
        # A trace session costs the engine work: a traced run is compared with traced runs.
        "load.trace": "on" if settings.get("trace") else None,
        # The engine's profiler (--profile, 5.0+) costs the engine work: a profiled run is compared with
        # profiled runs (benchmarks/profiler_overhead.py measures how much).
        "load.profile": "on" if settings.get("profile") else None,
        # gstat at a cadence reads every data page while the load runs: a load of its own.
        "load.gstat_every": _seconds(settings.get("gstat_every")) if settings.get("gstat_every") else None,
        # Load generators on a lab's hosts: which machines drove how many attachments.
        "load.clients": ", ".join(f"{c['host']} ({c['attachments']})" for c in engine["load_clients"])
        if engine.get("load_clients") else None,
    }
    values |= host_values(host)
    values |= {
        "network.round_trip": round_trip_class(engine.get("round_trip")),
        "fbbench.version": host.get("fbbench"),
        "fbbench.python": host.get("python"),
    }
    shown = {key: str(value) for key, value in values.items() if value is not None}
    return Conditions(shown, frozenset(defaults), conf_complete, settings.get("seed"), run_id)


def replication_record(run: StoredRun, protocol: str) -> dict[str, str]:
    """``replication`` and the replication.conf keys the engine read (``replication.<key>``), the
    paths chosen per run left out. A run recorded before fbbench knew replication ran without it;
    a server's replication is its own replication.conf's, not visible to a client (no key)."""
    mode = (run.get("settings") or {}).get("replication") or "off"
    if mode == "off" and protocol != "embedded":
        return {}
    values = {"replication": mode}
    text = (run.get("engine") or {}).get("replication_conf_text") or ""
    for key, value in parse_conf_text(text).items():
        if key != "database" and key not in REPLICATION_OWNED and key not in REPLICATION_REFUSED:
            values[f"replication.{key}"] = value
    return values


def without_host(conditions: Conditions) -> Conditions:
    """The record without the host's keys: for runs whose host is a block of the comparison (a
    lab's sweep ran every cell on every host), the hosts differ by design, within each side."""
    return replace(conditions, data={k: v for k, v in conditions.data.items() if factor_of(k) != "host"})


def series_record(records: Sequence[Conditions]) -> tuple[Conditions, list[DiffRow]]:
    """The conditions a series shares, and the rows in which its runs differ (should be none).

    A seed that every run of the series (two or more) shares was fixed: it becomes ``load.seed``.
    """
    if not records:
        raise ValueError("a series needs at least one run")
    rows = diff({r.label or str(i + 1): r for i, r in enumerate(records)})
    differing = {row.key for row in rows}
    first = records[0]
    values = {k: v for k, v in first.data.items() if k not in differing}
    seeds = {r.seed for r in records}
    if len(records) > 1 and len(seeds) == 1 and first.seed is not None:
        values["load.seed"] = str(first.seed)
    label = f"series of {len(records)}" if len(records) > 1 else first.label
    return Conditions(values, first.defaults - differing, all(r.conf_complete for r in records), first.seed,
                      label), rows


# --------------------------------------------------------------------------------------- diff


@dataclass(frozen=True)
class DiffRow:
    """One condition that differs between the records.

    ``values``: label → display string, None where the record does not have it (not recorded,
    or a firebird.conf key a 3.0 engine does not show). ``defaults``: a conf key nobody set on any
    side, so every value is its engine's default. ``follows``: the axis factor it follows from,
    set by :func:`axis` (an ODS follows the engine, page buffers follow DefaultDbCachePages).
    """

    key: str
    values: dict[str, str | None]
    defaults: bool = False
    follows: str | None = None

    @property
    def factor(self) -> str:
        return factor_of(self.key)

    @property
    def unknown(self) -> bool:
        """Some record does not have the key: a difference that cannot be told."""
        return any(value is None for value in self.values.values())

    @property
    def told(self) -> bool:
        """The records that have the key differ in it (not only some record missing it: a run
        that failed before its engine was read has no engine version, which is no difference)."""
        return len({value for value in self.values.values() if value is not None}) > 1

    def shown(self) -> str:
        return "; ".join(f"{label}: {'not visible' if value is None else value}"
                         for label, value in self.values.items())


def factor_of(key: str) -> str:
    """The factor a key belongs to: engine.* is "engine", host.* is "host", others are themselves.

    Bitness is its own factor ("bits"): comparing engines must never silently compare a 32-bit
    one with a 64-bit one (the published mistake).
    """
    if key in ("engine.bits", "client.bits"):
        return "bits"
    return next((name for prefix, name in _FACTORS if key.startswith(prefix)), key)


def diff(records: Mapping[str, Mapping[str, str]]) -> list[DiffRow]:
    """The rows in which the records differ, in the first record's key order (equal rows fold away).

    A conf key missing from a record whose firebird.conf is incomplete (3.0) counts as that
    engine's default, not as a difference by itself.
    """
    labels = list(records)
    order: dict[str, None] = {}
    for conditions in records.values():
        order |= dict.fromkeys(conditions)
    rows = []
    for key in order:
        values = {label: records[label].get(key) for label in labels}
        if len(set(values.values())) == 1:
            continue
        all_default = key.startswith("conf.") and all(_is_default(records[label], key) for label in labels)
        rows.append(DiffRow(key, values, all_default))
    return rows


def _is_default(conditions: Mapping[str, str], key: str) -> bool:
    if isinstance(conditions, Conditions):
        return key in conditions.defaults or (key not in conditions and not conditions.conf_complete)
    return False


# --------------------------------------------------------------------------------------- axis


def _consequence_of(row: DiffRow, factors: set[str]) -> str | None:
    """The differing factor ``row`` follows from, if any (other than its own)."""
    for name in factors:
        if name != row.factor and row.key in _CONSEQUENCES.get(name, ()):
            return name
    # firebird.conf defaults (and keys a 3.0 engine does not show) follow the engine's version, and
    # some follow the architecture (DefaultDbCachePages, TempCacheLimit, GCPolicy: ServerMode's defaults).
    if row.key.startswith("conf.") and (row.defaults or row.unknown):
        for name in ("engine", "protocol", "architecture"):
            if name in factors:
                return name
    return None


def _matches(requested: str, key: str) -> bool:
    """Whether ``--axis requested`` names ``key``: the key, its last part, its factor, or a group
    prefix (``scale``, ``conf``, ``load``); bitness only by name, never as part of a group."""
    wanted = requested.strip().lower()
    key_lower, factor = key.lower(), factor_of(key).lower()
    if wanted in (key_lower, factor) or key_lower.endswith("." + wanted):
        return True
    return factor != "bits" and key_lower.startswith(wanted + ".")


def axis(rows: Sequence[DiffRow], requested: Sequence[str] | None = None,
         known: Sequence[str] = ()) -> tuple[list[DiffRow], list[DiffRow]]:
    """Split ``diff`` rows into (the axis, every other difference).

    ``requested``: what the user named with ``--axis`` — a key (``database.page_size``), its last
    part (``page_size``, ``DefaultDbCachePages``) or a factor (``engine``, ``host``). None: the
    one factor the runs are known to differ in, when there is exactly one (none: no axis, and a
    key some record does not have is not a difference by itself). Rows that follow from an axis
    factor (:data:`_CONSEQUENCES`, conf defaults of two engine versions) join the axis, with
    ``follows`` set; among the other differences, ``follows`` names the other difference a row
    follows from. ``known``: every key of the records, so that a misspelt axis gets a
    did-you-mean. Raises :class:`AxisError` when a requested axis is not among the differences,
    and when none is requested and the runs differ in several factors.
    """
    factors = {row.factor for row in rows}
    primary = [row for row in rows if row.told and _consequence_of(row, factors) is None]
    primary_factors = list(dict.fromkeys(row.factor for row in primary))
    chosen: set[str] = set()
    if requested:
        for name in requested:
            hits = {row.factor for row in rows if _matches(name, row.key)}
            if not hits:
                raise _not_a_difference(name, rows, primary_factors, known)
            chosen |= hits
    elif not rows:
        return [], []
    elif len(primary_factors) == 1:
        chosen = set(primary_factors)
    elif primary_factors:
        raise AxisError(f"several differences: say which is the axis with --axis ({', '.join(primary_factors)})",
                        hint="every difference that is not the axis is reported as a lint finding")
    on_axis, others = [], []
    for row in rows:
        if row.factor in chosen:
            on_axis.append(row)
            continue
        follows = _consequence_of(row, chosen)
        if follows is not None:
            on_axis.append(replace(row, follows=follows))
        else:
            others.append(row)
    # Outside the axis too, a row may follow from another difference (page buffers from
    # DefaultDbCachePages): it says so, so that the cause is the one reported.
    outside = {row.factor for row in others}
    others = [replace(row, follows=_consequence_of(row, outside)) for row in others]
    return on_axis, others


def differences_outside(records: Mapping[str, Conditions], factor: str) -> list[DiffRow]:
    """The known differences between the records that neither are ``factor`` (``engine``, or
    ``workload.hash``) nor follow from it: what keeps two points out of one track series."""
    return [row for row in diff(records)
            if row.told and row.factor != factor and _consequence_of(row, {factor}) is None]


def to_json(conditions: Conditions) -> dict[str, Any]:
    """A record as JSON (a track point keeps the conditions its runs shared)."""
    return {"data": conditions.data, "defaults": sorted(conditions.defaults),
            "conf_complete": conditions.conf_complete, "seed": conditions.seed, "label": conditions.label}


def from_json(data: Mapping[str, Any]) -> Conditions:
    return Conditions(dict(data["data"]), frozenset(data.get("defaults") or ()), bool(data.get("conf_complete", True)),
                      data.get("seed"), str(data.get("label") or ""))


def _not_a_difference(name: str, rows: Sequence[DiffRow], factors: Sequence[str], known: Sequence[str]) -> AxisError:
    differences = ", ".join(factors) or "none: the runs have the same conditions"
    same = [key for key in known if _matches(name, key)]
    if same:
        return AxisError(f"--axis {name}: {', '.join(same)} is the same in every run, so it is not what they compare",
                         hint=f"the runs differ in: {differences}")
    close = difflib.get_close_matches(name, [*dict.fromkeys([*known, *(factor_of(k) for k in known)])], n=1)
    return AxisError(f"--axis {name}: no such condition" + (f" (did you mean {close[0]}?)" if close else ""),
                     hint=f"the runs differ in: {differences}")


@dataclass(frozen=True)
class Comparison:
    """What :func:`split` found: the axis rows, the other differences, and every key seen."""

    axis: list[DiffRow]
    others: list[DiffRow]
    keys: list[str] = field(default_factory=list)


def split(records: Mapping[str, Conditions], requested: Sequence[str] | None = None) -> Comparison:
    """:func:`diff` then :func:`axis`, with every key of the records for did-you-mean."""
    keys = list(dict.fromkeys(key for conditions in records.values() for key in conditions))
    on_axis, others = axis(diff(records), requested, keys)
    return Comparison(on_axis, others, keys)

