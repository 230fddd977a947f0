"""The console summary at the end of a run (and of ``fbbench results show``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fbbench.sizes import size_text


def _ms(value: Any) -> str:
    return "–" if value is None else f"{value:,.2f}"


def _num(value: Any, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def headline_text(headline: Mapping[str, Any] | None, measured_seconds: float | None) -> str:
    """``score 12,345/min (higher is better)``; "–" when nothing was measured."""
    if not headline or headline.get("result") is None or not measured_seconds:
        return "–"
    value = headline["result"]
    digits = 0 if abs(value) >= 100 else 2
    arrow = "↑" if headline.get("better", "higher") == "higher" else "↓"
    return f"{headline['name']} {value:,.{digits}f}{headline.get('unit', '')} {arrow}"


def _on_off(value: Any) -> str:
    return "?" if value is None else ("on" if value else "off")


def _known(value: Any) -> str:
    """A setting as recorded, "?" where the run stopped before it was read."""
    return "?" if value is None else str(value)


def storage_text(disk: dict[str, Any] | None) -> str:
    """The storage under a directory as the host record has it: device (model), medium,
    filesystem and its mount options, I/O scheduler."""
    if not disk:
        return "not visible from this machine"
    rotational = disk.get("rotational")
    medium = disk.get("medium") or (None if rotational is None else "rotational" if rotational else "solid-state")
    device = f"{disk.get('device') or '?'}" + (f" ({disk['model']})" if disk.get("model") else "")
    parts = [device, medium, disk.get("filesystem"),
             f"mounted {disk['mount_options']}" if disk.get("mount_options") else None,
             f"scheduler {disk['scheduler']}" if disk.get("scheduler") else None]
    return " ".join(str(part) for part in parts if part)


def os_cache_text(cache: dict[str, Any] | None) -> str | None:
    """The OS cache beside the engine's reads, as one line; None when it was not observed."""
    if not cache:
        return None
    host, process = cache.get("host") or {}, cache.get("process") or {}

    def span(name: str) -> str:
        found = host.get(name)
        if not found:
            return "?"
        low, high = size_text(found["min"], unit="GiB"), size_text(found["max"], unit="GiB")
        return low if low == high else f"{low.removesuffix(' GiB')}–{high}"

    text = (f"OS cache: available memory {span('mem_available')}, page cache {span('page_cache')}, dirty up to "
            f"{size_text((host.get('dirty') or {}).get('max', 0), unit='MiB', digits=0)}; engine page reads "
            f"{_num(cache.get('engine_page_reads'))}")
    if cache.get("storage_share") is not None:
        text += (f", {cache['storage_share']:.0%} of their bytes from the storage "
                 f"({size_text(process.get('read_bytes', 0), unit='MB')} block reads, "
                 f"{_num(process.get('major_faults'))} major faults)")
    return text


def print_summary(document: dict[str, Any], console: Console) -> None:
    engine, database = document["engine"], document["database"]
    status = document["status"]
    colour = {"completed": "green", "interrupted": "yellow"}.get(status, "red")
    console.print(f"\n[bold]run {document['run_id']}[/] — [{colour}]{status}[/]"
                  + (f": {escape(document['failure'])}" if document.get("failure") else ""))
    if document.get("workload_description"):
        console.print(escape(f"{document['workload']}: {document['workload_description']}"))
    if document.get("tags"):
        console.print(escape(f"tags: {', '.join(document['tags'])}"), highlight=False, soft_wrap=True)
    console.print(
        f"engine {engine.get('version') or '?'} ({engine.get('label') or '?'}, {engine.get('mode') or '?'}); "
        f"page size {_known(database.get('page_size'))}, buffers {_known(database.get('page_buffers'))}, "
        f"forced writes {_on_off(database.get('forced_writes'))}, "
        f"replication {(document.get('replication') or {}).get('mode') or 'off'}; "
        f"{_known(document.get('connections'))} connection(s), seed {_known(document.get('seed'))}"
    )
    storage = document.get("storage") or {}
    console.print(escape(f"storage: {storage_text(storage.get('database'))}; forced writes "
                         f"{_on_off(storage.get('forced_writes'))}; OS file cache {storage.get('file_cache') or '?'}"
                         + ("; OS page cache dropped before measuring" if storage.get("caches_dropped") else "")),
                  highlight=False)
    if storage.get("temp"):
        console.print(escape(f"temp files: {storage_text(storage['temp'])}"), highlight=False)
    for line in (document.get("machine_shape") or {}).get("lines") or []:
        console.print(escape(f"machine shape: {line}"), highlight=False, soft_wrap=True)
    architecture = engine.get("architecture") or {}
    if architecture.get("requested") or architecture.get("verified"):
        evidence = architecture.get("evidence") or {}
        seen = architecture.get("verified")
        verified = (f"verified: {evidence.get('attachments')} attachment(s) in {evidence.get('server_processes')} "
                    f"server process(es)" if seen and seen == architecture.get("requested") else
                    f"the engine ran {seen}" if seen else "not verified" + (
                        f" ({evidence['error']})" if evidence.get("error") else ""))
        console.print(escape(f"architecture {architecture.get('requested') or seen} ({verified})"))
    trip = engine.get("round_trip")
    if trip:
        console.print(escape(f"network: round trip to {trip.get('server') or '?'} median {trip['median_ms']:.3f} ms, "
                             f"p99 {trip['p99_ms']:.3f} ms ({trip.get('queries')} trivial queries before the run"
                             + (", loopback)" if trip.get("loopback") else ")")), highlight=False)
    clients = engine.get("load_clients")
    if clients:
        console.print(escape("load from the lab's hosts: " + ", ".join(
            f"{c['host']} (attachments {c['first_attachment']}–{c['first_attachment'] + c['attachments'] - 1})"
            for c in clients) + "; the engine read here, once"), highlight=False)
    measured = document.get("measure_seconds")
    if measured:
        stored = document.get("headline") or {}
        windows = document.get("metric_windows") or {}

        def window(name: str) -> str:
            seconds = (windows.get(name) or {}).get("seconds")
            return f" (window {seconds:.1f} s)" if seconds else ""

        # A figure that is a metric (TPC-C's headline NOPM) is shown once, as the figure, with the
        # metric's window.
        stated = [stored, *(document.get("figures") or [])]
        headline = [f"[bold]{escape(headline_text({**stored, 'result': stored.get('value')}, measured))}[/]"
                    + window(stored.get("name", ""))]
        for figure in stated[1:]:
            headline.append(escape(headline_text({**figure, "result": figure.get("value")}, measured))
                            + window(figure.get("name", "")))
        if stored.get("definition") != "ok" or stored.get("per") != "minute":
            headline.append(f"score {_num(document.get('score_per_minute'))}/min")
        names = {figure.get("name") for figure in stated}
        units = document.get("metric_units") or {}
        for name, value in document.get("metrics", {}).items():
            if name not in names:
                shown = _num(value) + (units.get(name, "") if value is not None else "")
                headline.append(f"[bold]{escape(name)} {escape(shown)}[/]{window(name)}")
        headline.append(f"TPM {_num(document.get('tpm'))}")
        shown = f"{measured:.0f}" if measured >= 10 else f"{measured:.2f}"
        console.print(" · ".join(headline) + f"  (measured {shown} s after {document['warmup_seconds']:.0f} s "
                      "warm-up)")
    units = document.get("units", {})
    if units:
        # A run stopped before its measured period counted nothing: its zeros would read as measured.
        title = "per unit (measured period)" if measured else "per unit: nothing was measured"
        table = Table(title=title, title_justify="left")
        for column in ("unit", "count", "ok", "rolled back", "conflicts", "errors", "avg ms", "p50 ms", "p95 ms",
                       "p99 ms", "max ms"):
            table.add_column(column, justify="left" if column == "unit" else "right")
        for name, unit in units.items():
            count = unit["ok"] + unit["rolled_back"] + unit["conflicts"] + unit["errors"]
            if not measured:
                table.add_row(name, *["–"] * 10)
                continue
            # No unit ended: no latency to speak of, whatever the empty histogram says.
            latency = (unit.get("latency_ms") or {}) if count else {}
            table.add_row(name, f"{count:,}", f"{unit['ok']:,}", f"{unit['rolled_back']:,}", f"{unit['conflicts']:,}",
                          f"{unit['errors']:,}", *(_ms(latency.get(key)) for key in LATENCY_COLUMNS))
        console.print(table)
        for name, unit in units.items():
            for code, error in unit.get("errors_by_gdscode", {}).items():
                console.print(f"  [red]{name}: {error['count']} error(s) gdscode {code}[/]: {escape(error['message'])}")
    outcomes = [("check", c) for c in document.get("checks", [])] + [("audit", a) for a in document.get("audits", [])]
    if outcomes:
        table = Table(title="checks and audits", title_justify="left")
        for column in ("kind", "name", "result", "detail"):
            table.add_column(column)
        for kind, item in outcomes:
            result = {True: "[green]pass[/]", False: "[red]FAIL[/]", None: "info"}[item["passed"]]
            table.add_row(kind, escape(item["name"]), result, escape(item["detail"] or ""))
        console.print(table)
    for line in engine_lines(document):
        console.print(line, highlight=False, soft_wrap=True)
    if document.get("validation"):
        console.print(validation_line(document["validation"]), highlight=False, soft_wrap=True)
    population = (document.get("population") or {}).get("text")
    if population:
        console.print(escape(population), highlight=False, soft_wrap=True)
    replication = (document.get("replication") or {}).get("text")
    if replication:
        console.print(escape(replication), highlight=False, soft_wrap=True)
    for line in replay_lines(document.get("replay")):
        console.print(line, highlight=False, soft_wrap=True)
    trace = document.get("trace")
    if trace:
        console.print(f"trace: {escape(str(trace['file']))} — {trace['statements']:,} statement execution(s), "
                      f"{trace['committed']:,} commit(s) of {trace['attachments']} attachment(s)"
                      + ("; [bold red]the engine suspended the session: the trace is incomplete[/]"
                         if trace.get("suspended") else ""), highlight=False, soft_wrap=True)
    for line in profile_lines(document.get("profile")):
        console.print(line, highlight=False, soft_wrap=True)
    if document.get("client_cpu_seconds") is not None and measured:
        console.print(_client_share(document))
    for line in credibility_lines(document):
        console.print(line, highlight=False, soft_wrap=True)


def _duration(ms: float | None) -> str:
    if ms is None:
        return "–"
    return f"{ms / 1000:,.2f} s" if ms >= 1000 else f"{ms:,.1f} ms" if ms >= 1 else f"{ms * 1000:,.0f} µs"


def profile_lines(profile: Mapping[str, Any] | None, lines: int = 5, others: int = 3) -> list[str]:
    """Where the time went (--profile): what was profiled, the top PSQL lines by time, the top
    statements and record sources."""
    if not profile:
        return []
    head = f"where the time went (profiler): {escape(profile['text'])}"
    if profile.get("status") == "failed":
        return [f"[bold yellow]{head}[/]"]
    if profile.get("status") == "partial":
        head = f"[yellow]{head}[/]"
    out = [head]
    if not (profile.get("psql_lines") or profile.get("statements") or profile.get("record_sources")):
        return [*out, "  nothing was profiled: no PSQL ran and no cursor was opened in the profiled attachments"]
    if profile.get("psql_lines"):
        out.append(f"  PSQL lines by time ({_duration(profile.get('psql_ms'))} in {profile['counts']['psql_lines']:,} "
                   "line(s) in all):")
    for row in profile.get("psql_lines", [])[:lines]:
        share = f" ({row['share']:.0%})" if row.get("share") is not None else ""
        text = f" {escape(row['text'][:60])!r}" if row.get("text") else ""
        out.append(f"    {escape(row['statement'])} line {row['line']}:{row['column']}{text} — {row['count']:,} × avg "
                   f"{_duration((row.get('avg_us') or 0) / 1000)} = {_duration(row.get('total_ms'))}{share}")
    statements = profile.get("statements", [])[:others]
    if statements:
        out.append("  statements: " + ", ".join(f"{escape(r['statement'])} {_duration(r.get('total_ms'))}"
                                                for r in statements))
    sources = profile.get("record_sources", [])[:others]
    if sources:
        out.append("  record sources: " + "; ".join(
            f"{escape(r['statement'])} cursor {r['cursor_id']} {escape(access_step(r.get('access_path')))} "
            f"{_duration(r.get('own_ms'))} of its own ({r.get('opens') or 0:,} open(s), {r.get('fetches') or 0:,} "
            "fetch(es))"
            for r in sources))
    return out


def access_step(path: str | None) -> str:
    """A record source's own step of its access path (its first line: the rest is what it reads from)."""
    lines = [line.strip() for line in str(path or "").splitlines() if line.strip()]
    return lines[0] if lines else "?"


def validation_line(validation: Mapping[str, Any]) -> str:
    """Whether the database was still sound after the run: Firebird's validation, or why there was none."""
    if not validation.get("done"):
        return f"database validation: not done — {escape(str(validation.get('reason')))}"
    counts = (f"{validation['errors']} error(s)" if validation.get("errors") is not None else "errors not counted")
    if validation.get("warnings"):
        counts += f", {validation['warnings']} warning(s)"
    found = "[green]sound[/]" if validation.get("sound") else "[bold red]CORRUPT[/]"
    refused = (f"; the full one was refused or failed: {escape(validation['refused'])}" if validation.get("refused")
               else "")
    if validation.get("unchecked"):
        refused += f"; not checked (locked by other attachments): {escape(', '.join(validation['unchecked']))}"
    took = validation["seconds"]
    shown = f"{took:.2f}" if took < 1 else f"{took:.1f}"
    return f"database validation ({validation['method']}, {shown} s): {found} — {counts}{refused}"


SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "note": "dim"}


def finding_lines(findings: list[Mapping[str, Any]], *, why: bool = True, own: str | None = None) -> list[str]:
    """One line per lint finding, the most severe first (rule, severity, subject, what was found),
    its why beneath. ``own``: the run the findings are about, not named on each line."""
    lines = []
    order = list(SEVERITY_STYLE)
    for finding in sorted(findings, key=lambda f: order.index(f["severity"]) if f["severity"] in order else 9):
        style = SEVERITY_STYLE.get(finding["severity"], "")
        subject = f"{finding['subject']}: " if finding.get("subject") and finding["subject"] != own else ""
        lines.append(f"  [{style}]{finding['rule']} {finding['severity']}[/] {escape(subject + finding['message'])}")
        if why:
            lines.append(f"      [dim]why: {escape(finding['why'])}[/]")
    return lines


def lint_count(findings: Sequence[Mapping[str, Any]]) -> str:
    """``1 error, 2 warnings, 1 note`` (or ``nothing found``)."""
    counts = {severity: sum(f["severity"] == severity for f in findings) for severity in ("error", "warning", "note")}
    parts = [f"{n} {severity}{'s' if n > 1 else ''}" for severity, n in counts.items() if n]
    return ", ".join(parts) or "nothing found"


LATENCY_COLUMNS = ("mean", "p50", "p95", "p99", "max")  # the per-unit table's avg ms, p50 ms … max ms


def credibility_lines(document: Mapping[str, Any]) -> list[str]:
    """The run's steady state and trend, then its lint findings (analysis.steady, analysis.lint)."""
    lines = []
    state = document.get("steady")
    if state:
        colour = {"steady": "green", "trend": "yellow", "never settled": "yellow", "too short": "yellow"}
        figure = f" of the {state['figure']}" if state.get("figure") else ""
        lines.append(f"steady state{figure}: [{colour.get(state['verdict'], '')}]{escape(state['verdict'])}[/] — "
                     f"{escape(state['text'])}" + (f" ({escape(state['note'])})" if state.get("note") else ""))
    findings = document.get("lint") or []
    lines.append(f"credibility lint: {lint_count(findings)}")
    lines.extend(finding_lines(findings, own=document.get("run_id")))
    return lines


def _client_share(document: Mapping[str, Any]) -> str:
    """How much of the machine fbbench itself took: the check that the client is not the bottleneck.

    The core's figure is wall time spent in its own code between client-library calls (an upper
    bound of its CPU: it counts time its thread waited for a CPU, or the process was stopped for the
    other run of a time-shared pair); the Python figure is the CPU of the orchestrating and sampling
    threads over the same window as the process's. The share is at most 100 %: where the sum
    exceeds the process's CPU, the core's wall time overstated its CPU, and the line says so.
    """
    core = document["client_cpu_seconds"] or 0.0
    python = document.get("python_cpu_seconds") or 0.0
    process = document.get("process_cpu_seconds")
    line = f"fbbench itself: core {core:.2f} s in its own code + Python {python:.2f} s"
    if process:
        embedded = "embedded" in str((document.get("engine") or {}).get("label", ""))
        scope = "engine + client" if embedded else "client"
        line += (f" = {100 * min(core + python, process) / process:.2f} % of this process's "
                 f"{process:.2f} s CPU ({scope})")
        if core + python > process:
            line += " — at most: the core's wall time counts waits for a CPU"
    return line


def print_series(series_id: str, documents: list[dict[str, Any]], console: Console) -> None:
    """One line for a series of repeats: the headline's median with its 95 % interval and how far the
    repeats spread (:func:`fbbench.analysis.stats.summarize`), over the completed repeats only."""
    from fbbench.analysis.stats import MIN_EXACT_MEDIAN, summarize

    values = [d["headline"]["value"] for d in documents
              if d["status"] == "completed" and d.get("headline") and d["headline"].get("value") is not None]
    head = (documents[0].get("headline") or {}) if documents else {}
    if not values:
        console.print(f"\n[bold]series {series_id}[/]: {len(documents)} run(s), none completed with a headline figure")
        return
    summary = summarize(values)
    unit = head.get("unit", "")
    digits = 0 if abs(summary.median) >= 100 else 2
    interval = (f"95 % CI {summary.low:,.{digits}f}–{summary.high:,.{digits}f}{unit}" if math.isfinite(summary.low)
                else f"no 95 % interval below {MIN_EXACT_MEDIAN} repeats")
    cv = f", CV {summary.cv * 100:.1f} %" if math.isfinite(summary.cv) else ""
    arrow = "↑" if head.get("better", "higher") == "higher" else "↓"
    spread = (f"; repeats spread {summary.minimum:,.{digits}f}–{summary.maximum:,.{digits}f}{unit} "
              f"(±{summary.spread * 50:.1f} % of the median{cv})" if math.isfinite(summary.spread) else "")
    console.print(
        f"\n[bold]series {series_id}[/]: {len(values)} of {len(documents)} repeat(s) completed — "
        f"{escape(head.get('name', 'score'))} {arrow} median {summary.median:,.{digits}f}{unit} ({interval})"
        + spread, highlight=False, soft_wrap=True)
    if len(values) < len(documents):
        left = [f"{d['run_id']} ({d['status']})" for d in documents if d["status"] != "completed"]
        console.print(f"  [yellow]not in the figures:[/] {', '.join(left)}", highlight=False, soft_wrap=True)


def _rate(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def log_finding_text(finding: Mapping[str, Any]) -> str:
    """A firebird.log finding as the log wrote it (its first entry's values), else its kind."""
    detail = finding.get("detail") or {}
    text = detail.get("text") or finding["kind"]
    return text + (" (and other values)" if detail.get("values_vary") else "")


def engine_lines(document: Mapping[str, Any]) -> list[str]:
    """What the engine did: I/O and garbage collection per measured second, gaps, firebird.log."""
    lines = []
    activity = document.get("engine_activity")
    if activity:
        io = activity["io_per_second"]
        lines.append(f"engine per measured second: {_rate(io.get('page_reads'))} page reads, "
                     f"{_rate(io.get('page_writes'))} writes, {_rate(io.get('page_fetches'))} fetches, "
                     f"{_rate(io.get('page_marks'))} marks")
        gc, gap = activity["garbage_per_second"], activity["largest_gap"]
        collected = ", ".join(f"{name} {_rate(value)}" for name, value in gc.items())
        gaps = ", ".join(f"{label} {gap[name]:,.0f}" for name, label in
                         (("next_minus_oit", "Next−OIT"), ("next_minus_oat", "Next−OAT")) if gap.get(name) is not None)
        lines.append(f"garbage collection per second: {collected or '–'}; largest gap {gaps or '–'}")
        cache = os_cache_text(document.get("os_cache"))
        if cache:
            lines.append(escape(cache))
    elif document.get("settings", {}).get("monitor") is False:
        lines.append("engine: not watched (--no-monitor)")
    sampling = document.get("sampling")
    if sampling and sampling.get("heavy"):
        lines.append(f"[yellow]watching cost: one MON$ reading took {sampling['median_seconds'] * 1000:.0f} ms "
                     f"(median), {sampling['max_seconds'] * 1000:.0f} ms at most: it stalls the attachments while "
                     "the snapshot is built — compare with --no-monitor[/]")
    if document.get("sampler_errors"):
        lines.append(f"[yellow]engine sampling failed {document['sampler_errors']} time(s); see the run's "
                     "measure phase in the store[/]")
    findings = document.get("log_findings") or []
    if not findings:
        lines.append("firebird.log: nothing new")
    # One line per log the engine wrote (firebird.log; replication.log for a replicated run).
    for source in dict.fromkeys(finding.get("source") or "firebird.log" for finding in findings):
        worst = {"fatal": "red", "critical": "red", "error": "red", "warning": "yellow"}
        parts = []
        own = [finding for finding in findings if (finding.get("source") or "firebird.log") == source]
        for finding in own[:6]:
            colour = worst.get(finding["severity"])
            text = escape(f"{log_finding_text(finding)} ×{finding['count']}")
            parts.append(f"[{colour}]{text}[/]" if colour else text)
        more = f" and {len(own) - 6} more" if len(own) > 6 else ""
        lines.append(f"{escape(source)}: {'; '.join(parts)}{more}")
    return lines


def replay_lines(replay: dict[str, Any] | None, statements: int = 10) -> list[str]:
    """A replay's figures: what was replayed, the lag, the slowest statements against the trace,
    and the divergences by kind with the first few."""
    if not replay:
        return []
    tx, st = replay["transactions"], replay["statements"]
    lines = [f"replay of {replay['trace']} (sha256 {replay['sha256'][:16]}…), order {replay['order']}, speed "
             f"{replay['speed']:g}: {tx['replayed']:,} of {tx['planned']:,} transactions, {st['executed']:,} of "
             f"{st['planned']:,} statements; the traced {replay['seconds']:,.1f} s are "
             f"{replay['seconds'] / replay['speed']:,.1f} s at this speed",
             f"  lag behind the traced schedule: p50 {replay['lag_ms'].get('p50', 0):,.1f} ms, p95 "
             f"{replay['lag_ms'].get('p95', 0):,.1f} ms, max {replay['lag_max_ms']:,.1f} ms"
             + (f"; strict order given up {replay['stalls']} time(s)" if replay.get("stalls") else "")]
    rows = sorted(replay.get("statement_latency") or [], key=lambda r: -(r["latency_ms"].get("p50") or 0))
    for row in rows[:statements]:
        traced = row["traced_ms"]
        ratio = f" ({row['p50_ratio']:.2f}×)" if row.get("p50_ratio") else ""
        sql = escape(" ".join(row["sql"].split())[:70])
        errors = f", {row['errors']:,} failed (traced: {traced.get('failed', 0):,})" if row["errors"] else ""
        lines.append(f"  {row['executions']:>7,} × {sql}: p50 {row['latency_ms'].get('p50', 0):,.2f} ms, traced "
                     f"{traced.get('p50', 0):,.0f} ms{ratio}{errors}")
    if replay["divergences"]:
        kinds = ", ".join(f"{kind} {count:,}" for kind, count in sorted(replay["divergences_by_kind"].items()))
        lines.append(f"  [bold yellow]{replay['divergences']:,} divergence(s) from the trace[/]: {kinds} — a replay "
                     "that diverges measures something else than what was traced")
        for item in replay.get("divergence_list", [])[:5]:
            lines.append(f"    {escape(divergence_text(item))}")
    else:
        lines.append("  no divergence from the trace")
    for note, count in sorted((replay.get("notes") or {}).items()):
        lines.append(f"  {count:,} {escape(note)}")
    return lines


def divergence_text(item: dict[str, Any]) -> str:
    """One divergence of a replay: where (what the core knows of it) and what."""
    where = [f"attachment {item['attachment']}"]
    if item.get("transaction") is not None:
        where.append(f"traced transaction {item['transaction']}")
    if item.get("template") is not None:
        where.append(f"statement {item['template']}")
    detail = item["detail"]
    if item["kind"] == "order given up" and {"action", "for_action", "waited_seconds"} <= set(detail):
        owner = f" (attachment {detail['of_attachment']}'s)" if detail.get("of_attachment") else ""
        text = (f"its action {detail['action']} waited {detail['waited_seconds']:g} s for action "
                f"{detail['for_action']}{owner}, which did not come, and ran out of the traced order")
    else:
        text = ", ".join(f"{k} {v}" for k, v in detail.items())
    return f"{item['kind']}: {', '.join(where)}: {text}"
