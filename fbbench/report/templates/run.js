"use strict";
/* The run report: fills run.html from the run result document (docs/run-result.md).
   Figures are shown as the document holds them; the only arithmetic here is unit conversion
   (counters per interval → per second, bytes → MB, pages × page size) and sums across units. */
const run = fbb.data();
const {el, fmt, num, withUnit, note, table, isNumber} = fbb;

// ------------------------------------------------------------------ interval geometry
// One row per (interval, unit) in run.intervals; their start and length are the same for every unit.
const geometry = new Map();
(run.intervals || []).forEach(row => {
  if (!geometry.has(row.index)) {
    geometry.set(row.index, {start: row.start_offset, seconds: row.seconds, phase: row.phase});
  }
});
const indices = [...geometry.keys()].sort((a, b) => a - b);
const seconds = v => isNumber(v) ? v.toLocaleString("en", {maximumFractionDigits: 2}) : "?";
const spanText = (start, end) => `${seconds(start)}–${seconds(end)} s`;
// Charts put each interval's figure at the interval's middle: the warm-up shading then never
// splits a point, and the legend names the interval the value belongs to.
const intervalX = indices.map(i => geometry.get(i).start + geometry.get(i).seconds / 2);
const intervalLabel = indices.map(i => spanText(geometry.get(i).start, geometry.get(i).start + geometry.get(i).seconds));
const warmup = indices.filter(i => geometry.get(i).phase === "warmup").map(i => geometry.get(i));
const shade = warmup.length
  ? [{from: Math.min(...warmup.map(g => g.start)), to: Math.max(...warmup.map(g => g.start + g.seconds)),
      label: "warm-up", key: "warm-up (not measured)"}]
  : [];
const X_LABEL = "seconds since the load started";
// Every time chart spans the whole load, so that one second sits at one place on the page.
const TIME = {xLabel: X_LABEL, xMin: 0, xMax: indices.length ? Math.max(...indices.map(i => geometry.get(i).start + geometry.get(i).seconds)) : undefined,
              shade, sync: "time", xName: "interval"};

const units = Object.keys(run.units || {}).length ? Object.keys(run.units)
  : [...new Set((run.intervals || []).map(i => i.unit))];
const unitColour = fbb.colourOf(units);  // one colour per unit in every chart
const monitorOff = (run.settings || {}).monitor === false;

// ------------------------------------------------------------------ header and headline
fbb.section("status", node => {
  document.getElementById("run-id").textContent = run.run_id;
  node.textContent = run.status;
  node.className = "status-" + run.status;
  const started = isNumber(run.started_at) ? fbb.fmtTime(run.started_at) : "?";
  document.getElementById("subtitle").textContent =
    `${run.workload}${run.workload_description ? " — " + run.workload_description : ""}. Started ${started}.`;
  if (run.failure) el("p", {class: "error-box"}, document.getElementById("failure"), run.failure);
});

function figure(parent, value, unit, label, sub, cls = "figure") {
  const box = el("div", {class: cls}, parent);
  const big = el("b", {}, box, typeof value === "number" ? fmt(value) : value ?? "–");
  if (unit) el("span", {class: "unit"}, big, " " + unit);
  el("span", {class: "label"}, box, label);
  if (sub) el("span", {class: "sub"}, box, sub);
  return box;
}

// A figure's definition as its card shows it: a long sum (docflow adds up 16 units) by its first
// and last terms, the whole expression on hover.
function shortDefinition(definition) {
  const terms = String(definition).split("+").map(term => term.trim()).filter(Boolean);
  return terms.length > 3 ? `the sum of ${terms.length} terms, ${terms[0]} + … + ${terms[terms.length - 1]}`
                          : String(definition).replace(/\s+/g, " ").trim();
}

fbb.section("headline", node => {
  const h = run.headline;
  if (h) {
    const better = h.better === "lower" ? "↓ lower is better" : "↑ higher is better";
    const window = (run.metric_windows || {})[h.name];
    const defined = window && isNumber(window.seconds) ? `over a ${seconds(window.seconds)} s window`
      : h.definition ? `counts ${shortDefinition(h.definition)}${h.per ? " per " + h.per : ""}` : "";
    const card = figure(node, h.value, h.unit, `${h.name} (${better})`,
                        [h.description, defined].filter(Boolean).join("; "), "figure main");
    card.id = "headline-figure";
    if (h.definition) card.title = `${h.name} = ${String(h.definition).replace(/\s+/g, " ").trim()}`;
  } else if (isNumber(run.score_per_minute)) {
    figure(node, run.score_per_minute, "/min", "score", "", "figure main");
  } else {
    figure(node, "–", "", "no headline figure",
           run.status === "completed" ? "" : `the run ${run.status} before it had one`, "figure main");
  }
  // The score beside a headline of another definition (TPC-C's NOPM); a metric that is the
  // headline is not shown twice.
  if (h && !(h.definition === "ok" && h.per === "minute") && isNumber(run.score_per_minute)) {
    figure(node, run.score_per_minute, "/min", "score", "successful units per minute");
  }
  for (const [name, value] of Object.entries(run.metrics || {})) {
    if (h && name === h.name) continue;
    const window = (run.metric_windows || {})[name];
    const unit = metricUnit(name);
    const over = window && isNumber(window.seconds) ? ` over a ${seconds(window.seconds)} s window` : "";
    figure(node, value, unit, name, (unit ? "per minute" : "its change") + over);
  }
  if (isNumber(run.tpm)) figure(node, run.tpm, "/min", "transactions (TPM)", "committed and rolled back units");
  figure(node, run.connections, "", "connections");
  figure(node, isNumber(run.measure_seconds) ? seconds(run.measure_seconds) : "–", "s", "measured");
});

// A metric's unit as the document gives it: "/min", or "" for a count (its change over the window).
function metricUnit(name) { return (run.metric_units || {})[name] || ""; }

fbb.section("metric-windows", node => {
  const windows = Object.entries(run.metric_windows || {});
  if (!windows.length) return;
  note(node, "The database-side metrics count the change of their SQL's value over their own window " +
             "(from the reading that opened the measured period to the one that closed it):");
  table(node, ["metric", {label: "value", n: true}, "window from", "to", {label: "seconds", n: true}],
        windows.map(([name, w]) => [name, withUnit((run.metrics || {})[name], metricUnit(name)), fbb.fmtTime(w.start_at),
                                    fbb.fmtTime(w.end_at), num(w.seconds, 2)]));
});

// ------------------------------------------------------------------ credibility
// The run's steady state (analysis.steady) and lint findings (analysis.lint), as the document holds them.
const steady = run.steady;
const LINT_ORDER = ["error", "warning", "note"];

fbb.section("steady", node => {
  if (!steady) return note(node, "No measured interval: there is no steady state to judge.");
  const settled = steady.verdict === "steady";
  const box = el("p", {id: "steady-text", class: settled ? "note" : "warn"}, node);
  el("b", {}, box, `Steady state of the ${steady.figure}: ${steady.verdict}`);
  box.appendChild(document.createTextNode(` — ${steady.text}` + (steady.note ? ` (${steady.note})` : "")));
  if (isNumber(steady.settled_after) || (steady.trend_line || []).length) {
    note(node, "The throughput chart below shades where the run settled and draws the fitted trend (Theil–Sen).");
  }
});

fbb.section("lint", node => {
  const findings = [...(run.lint || [])].sort((a, b) =>
    (LINT_ORDER.indexOf(a.severity) + 1 || 9) - (LINT_ORDER.indexOf(b.severity) + 1 || 9) || a.rule.localeCompare(b.rule));
  if (!findings.length) return note(node, "The credibility lint found nothing to report in this run.");
  table(node, ["severity", "rule", "finding", "why it matters"], findings.map(f => {
    const what = el("div");
    el("div", {}, what, f.message);
    if (f.evidence && Object.keys(f.evidence).length) {
      el("pre", {class: "example"}, fbb.details(what, "evidence"), JSON.stringify(f.evidence, null, 1));
    }
    return {cls: "lint-" + f.severity, cells: [el("span", {class: "sev-" + f.severity}, null, f.severity),
                                               `${f.rule} ${f.title}`, what, {text: f.why, cls: "why"}]};
  }), {id: "lint-table"});
});

// ------------------------------------------------------------------ throughput and latency
const rowsOf = (unit) => {
  const byIndex = new Map((run.intervals || []).filter(r => r.unit === unit).map(r => [r.index, r]));
  return indices.map(i => byIndex.get(i));
};

fbb.section("throughput", node => {
  const perUnit = units.map(u => ({label: u, colour: unitColour(u), values: rowsOf(u).map(r => r ? r.ok_per_minute : null)}));
  const scores = new Map((run.interval_scores || []).map(r => [r.index, r.score_per_minute]));
  const total = indices.map(i => scores.has(i) ? scores.get(i) : null);
  // The steady state on the same axis: where the run settled (shaded), and the fitted trend of
  // its figure — the score is the "all units" line; another per-minute headline gets its own line.
  const extra = [];
  const at = points => intervalX.map(x => {
    const hit = (points || []).find(p => Math.abs(p.at - x) < 1e-6);
    return hit ? hit.value : null;
  });
  const perMinute = steady && steady.unit === "/min";
  if (perMinute && steady.figure !== "score") {
    extra.push({label: `${steady.figure} (headline)`, colour: "#9334e6", width: 2, values: at(steady.values)});
  }
  if (perMinute && (steady.trend_line || []).length) {
    extra.push({label: `trend of the ${steady.figure} (Theil–Sen)`, colour: "#d93025", dash: [6, 4], width: 1.5,
                values: at(steady.trend_line)});
  }
  const settledShade = steady && isNumber(steady.settled_after) && isNumber(TIME.xMax)
    // Labelled on the chart only where it does not sit on the warm-up's label (the key names it).
    ? [{from: steady.settled_after, to: TIME.xMax, colour: "rgba(24, 128, 56, 0.07)", name: "settled",
        label: shade.some(w => steady.settled_after < w.to) ? "" : "settled",
        key: `settled from ${seconds(steady.settled_after)} s on (${steady.figure} within ` +
             `${fmt(steady.band_low, 0)}–${fmt(steady.band_high, 0)}${steady.unit || ""})`}]
    : [];
  fbb.lineChart(node, {
    ...TIME, shade: [...TIME.shade, ...settledShade], x: intervalX, xValue: (v, idx) => intervalLabel[idx],
    yLabel: "successful units per minute", unit: "/min", digits: 0,
    series: [{label: "all units", colour: fbb.TOTAL, width: 2.5, values: total}, ...perUnit, ...extra],
    empty: "No intervals were measured.",
  });
});

fbb.section("latency-time", node => {
  fbb.lineChart(node, {
    ...TIME, x: intervalX, xValue: (v, idx) => intervalLabel[idx],
    yLabel: "p95 latency, ms", unit: "ms", digits: 2,
    series: units.map(u => ({label: u + " p95", colour: unitColour(u),
                             values: rowsOf(u).map(r => r && r.latency_ms ? r.latency_ms.p95 : null)})),
    empty: "No interval has a latency histogram.",
  });
});

const PERCENTILES = [["p50", "#a8c7fa"], ["p90", "#669df6"], ["p95", "#1a73e8"], ["p99", "#0b3d91"]];
fbb.section("latency-units", node => {
  // The units that ended in the measured period (a unit that never ended has no latency).
  const measured = isNumber(run.measure_seconds) && run.measure_seconds > 0;
  const rows = Object.entries(run.units || {})
    .filter(([, u]) => measured && u.ok + u.rolled_back + u.conflicts + u.errors > 0);
  // Names that would not fit under their bars side by side (docflow's 18 units) lie along the
  // side instead, one row per unit: about 7 px a character against the page's width.
  const longest = Math.max(0, ...rows.map(([name]) => name.length));
  const horizontal = longest * 7 > 1000 / Math.max(1, rows.length);
  fbb.barChart(node, {
    categories: rows.map(([name]) => name), categoryName: "unit", horizontal,
    series: PERCENTILES.map(([p, colour]) => ({label: p, colour, values: rows.map(([, u]) => (u.latency_ms || {})[p])})),
    valueLabel: "latency, ms", unit: "ms", digits: 2, empty: "No unit ran in the measured period.",
  });
  node.dataset.orientation = horizontal ? "horizontal" : "vertical";
});

fbb.section("units-table", node => {
  const rows = Object.entries(run.units || {});
  if (!rows.length) return note(node, "No units.");
  // A run stopped before its measured period counted nothing: "–", not zeros that read as measured;
  // a unit that never ended has no latency, whatever its empty histogram says.
  const measured = isNumber(run.measure_seconds) && run.measure_seconds > 0;
  if (!measured) note(node, `Nothing was measured: the run ${run.status} before its measured period.`, "warn");
  const count = u => u.ok + u.rolled_back + u.conflicts + u.errors;
  const cnt = v => measured ? num(v) : num(null);
  const lat = (u, k) => num(measured && count(u) ? (u.latency_ms || {})[k] : null, 2);
  table(node, ["unit", ...["count", "ok", "rolled back", "conflicts", "errors", "mean ms", "p50 ms", "p90 ms",
                           "p95 ms", "p99 ms", "max ms"].map(label => ({label, n: true}))],
        rows.map(([name, u]) => [name, cnt(count(u)), cnt(u.ok), cnt(u.rolled_back), cnt(u.conflicts), cnt(u.errors),
                                 lat(u, "mean"), lat(u, "p50"), lat(u, "p90"), lat(u, "p95"), lat(u, "p99"),
                                 lat(u, "max")]));
  rows.forEach(([name, u]) => {
    Object.entries(u.errors_by_gdscode || {}).forEach(([code, e]) =>
      el("p", {class: "fail"}, node, `${name}: ${fmt(e.count)} error(s), gdscode ${code}: ${e.message}`));
    Object.entries(u.conflicts_by_gdscode || {}).forEach(([code, count]) =>
      note(node, `${name}: ${fmt(count)} conflict(s), gdscode ${code}`));
  });
});

// ------------------------------------------------------------------ checks and audits
fbb.section("checks", node => {
  const verdict = p => el("span", {class: p === true ? "pass" : p === false ? "fail" : "info"}, null,
                          p === true ? "pass" : p === false ? "FAIL" : "info");
  const rows = [...(run.checks || []).map(c => ["check", c.name, verdict(c.passed), c.detail || ""]),
                ...(run.audits || []).map(a => ["audit", a.name, verdict(a.passed), a.detail || ""])];
  if (!rows.length) return note(node, "No checks or audits ran" + (run.status === "completed" ? "." : ` (the run ${run.status}).`));
  table(node, ["kind", "name", "result", "detail"], rows);
});

// ------------------------------------------------------------------ database validation
fbb.section("validation", node => {
  const v = run.validation;
  if (!v) return note(node, "No validation is recorded for this run: it ended before its load ran, or an fbbench " +
                            "older than validation made it.");
  if (!v.done) return note(node, `Not validated: ${v.reason}.`);
  const counts = (isNumber(v.errors) ? `${num(v.errors)} error(s)` : "errors it did not count") +
                 (v.warnings ? `, ${num(v.warnings)} warning(s)` : "");
  const verdict = el("p", {}, node);
  el("span", {class: v.sound ? "pass" : "fail"}, verdict, v.sound ? "sound" : "CORRUPT");
  verdict.append(` — ${v.method} validation in ${seconds(v.seconds)} s found ${counts}.`);
  if (v.refused) note(node, `The full validation was refused or ended without its findings (${v.refused}); the ` +
                            "online one was done instead.", "warn");
  if ((v.unchecked || []).length) note(node, `Not checked — other attachments held their locks: ${v.unchecked.join(", ")}.`, "warn");
  if ((v.output || []).length) el("pre", {id: "validation-output"}, node, v.output.join("\n"));
});

// ------------------------------------------------------------------ how Firebird worked
// The sampler's readings, one per interval boundary; a reading that fell behind answers for
// several intervals (sample.intervals_covered) and its `seconds` spans all of them.
// A reading may lack a group (in Classic/SuperClassic the last one has no counters once the
// attachments have left): its other figures are still drawn, the missing ones leave a gap.
const ENGINE_GROUPS = ["io", "record", "header", "memory", "database", "host", "process"];
const readings = (run.engine_samples || []).filter(s => s && geometry.has(s.index) && ENGINE_GROUPS.some(g => s[g]));
const readingSpan = readings.map(s => {
  const covered = Math.max(1, Math.round((s.sample || {}).intervals_covered || 1));
  const last = geometry.get(s.index);
  const first = geometry.get(s.index - covered + 1) || last;
  return {start: first.start, end: last.start + last.seconds, first: s.index - covered + 1, last: s.index};
});
const readingX = readingSpan.map(s => (s.start + s.end) / 2);
const readingLabel = readingSpan.map(s => spanText(s.start, s.end));
const readingSeconds = readings.map(s => s.seconds);
const pick = (group, name) => readings.map(s => (s[group] || {})[name]);
const rate = (group, name) => fbb.perSecond(pick(group, name), readingSeconds);
const activity = run.engine_activity;

function engineChart(parent, id, title, text, spec) {
  const node = fbb.chartBox(parent, id, title, text);
  // A figure this engine does not count (imgc before 4.0) is left out, not drawn as zero.
  const series = spec.series.filter(s => s.values.some(isNumber));
  fbb.lineChart(node, {...TIME, x: readingX, xValue: (v, idx) => readingLabel[idx], ...spec, series});
  return node;
}

fbb.section("engine-note", node => {
  if (monitorOff) {
    note(node, "Not watched (--no-monitor): no MON$ readings, per-table figures or gstat for this run; " +
               "the firebird.log findings below are still read.", "warn");
  } else if (!readings.length) {
    note(node, run.status === "completed"
      ? "No engine readings were stored for this run" + (run.sampler_errors ? ` (the sampler failed ${run.sampler_errors} time(s)).` : ".")
      : `No engine readings: the run ${run.status} before its load was watched.`, "warn");
  } else {
    const sums = readings.some(s => (s.database || {}).per_attachment_sums);
    note(node, "Read from MON$ at every interval boundary by fbbench's own attachment. Counters are changes " +
               "over each interval, shown per second; levels (gaps, size, memory) are values at the interval's end. " +
               "A small series next to a large one: click the large one's name to hide it, the axis rescales." +
               (sums ? " This architecture has no database-wide counters (Classic/SuperClassic): the figures are " +
                       "sums over the load's attachments, and the database pool's memory is zero." : ""));
  }
});

fbb.section("engine-rates", node => {
  if (!activity) return;
  const line = (figures, names) => names.filter(([k]) => isNumber((figures || {})[k]))
    .map(([k, label]) => `${label} ${fmt(figures[k])}`).join(" · ") || "–";
  const gap = activity.largest_gap || {};
  const pageSize = (run.database || {}).page_size;
  table(node, [`per measured second (${seconds(activity.seconds)} s)`, ""], [
    ["page I/O", line(activity.io_per_second, [["page_reads", "reads"], ["page_writes", "writes"],
                                               ["page_fetches", "fetches"], ["page_marks", "marks"]])],
    ["records", line(activity.records_per_second, [["seq_reads", "sequential reads"], ["idx_reads", "indexed reads"],
                                                   ["inserts", "inserts"], ["updates", "updates"], ["deletes", "deletes"]])],
    ["garbage collection", line(activity.garbage_per_second, [["backouts", "backouts"], ["purges", "purges"],
                                                              ["expunges", "expunges"], ["imgc", "imgc"]])],
    ["contention", line(activity.contention_per_second, [["conflicts", "conflicts"], ["waits", "waits"], ["locks", "locks"]])],
    ["largest gaps", `Next − OIT ${fmt(gap.next_minus_oit)} · Next − OAT ${fmt(gap.next_minus_oat)}`],
    ["database at the end", isNumber(activity.database_pages_end)
      ? `${fmt(activity.database_pages_end)} pages` + (isNumber(pageSize) ? ` × ${fmt(pageSize)} B = ${fbb.fmtMB(activity.database_pages_end * pageSize)}` : "")
      : "–"],
  ], {id: "engine-rates-table"});
});

fbb.section("engine-charts", node => {
  if (!readings.length) return;
  const perSec = (group, names) => names.map(([name, label]) => ({label, values: rate(group, name)}));
  engineChart(node, "engine-pages", "Page reads and writes", "Physical page I/O between Firebird's cache and the file system.",
              {yLabel: "pages per second", unit: "/s", series: perSec("io", [["page_reads", "page reads"], ["page_writes", "page writes"]])});
  engineChart(node, "engine-cache", "Page fetches and marks", "Pages looked up in Firebird's cache (fetches) and changed there (marks).",
              {yLabel: "pages per second", unit: "/s", series: perSec("io", [["page_fetches", "page fetches"], ["page_marks", "page marks"]])});
  engineChart(node, "engine-records", "Record operations", "All attachments, all tables (MON$RECORD_STATS).",
              {yLabel: "records per second", unit: "/s", series: perSec("record", [
                ["seq_reads", "sequential reads"], ["idx_reads", "indexed reads"], ["inserts", "inserts"],
                ["updates", "updates"], ["deletes", "deletes"]])});
  const hasImgc = readings.some(s => isNumber((s.record || {}).imgc));
  engineChart(node, "engine-garbage", "Garbage collection",
              "Back versions removed: backouts (own undone changes), purges, expunges, and imgc (intermediate GC)." +
              (hasImgc ? "" : " This engine does not count imgc (Firebird 4.0 and later do)."),
              {yLabel: "records per second", unit: "/s", series: perSec("record", [
                ["backouts", "backouts"], ["purges", "purges"], ["expunges", "expunges"], ["imgc", "imgc"]])});
  // The units' conflicts (counted by the client) over the same spans as the readings.
  const unitConflicts = readingSpan.map((span, k) => {
    let total = 0, seen = false;
    (run.intervals || []).forEach(r => {
      if (r.index >= span.first && r.index <= span.last && isNumber(r.conflicts)) { total += r.conflicts; seen = true; }
    });
    return seen && readingSeconds[k] > 0 ? total / readingSeconds[k] : null;
  });
  engineChart(node, "engine-contention", "Conflicts, waits and locks",
              "Record-level figures of the engine next to the units the load saw end in an update conflict.",
              {yLabel: "events per second", unit: "/s", series: [
                ...perSec("record", [["conflicts", "record conflicts"], ["waits", "record waits"], ["locks", "record locks"]]),
                {label: "units ended by a conflict", values: unitConflicts, dash: [5, 3], colour: fbb.TOTAL}]});
  engineChart(node, "engine-gaps", "Transaction gaps", "Next − OIT and Next − OAT at each interval's end: how far the " +
              "oldest interesting and oldest active transactions lag behind.",
              {yLabel: "transactions", digits: 0, whole: true, series: [
                {label: "Next − OIT", values: pick("header", "next_minus_oit")},
                {label: "Next − OAT", values: pick("header", "next_minus_oat")}]});
  const pageSize = (run.database || {}).page_size || ((run.gstat || {}).after || {}).header?.page_size;
  const mb = values => values.map(v => isNumber(v) ? v / 1e6 : null);
  engineChart(node, "engine-size", "Database size and memory",
              "Size = pages × page size" + (isNumber(pageSize) ? ` (${fmt(pageSize)} B)` : " (page size unknown: not drawn)") +
              "; memory from MON$MEMORY_USAGE: the database pool and the sum over attachments.",
              {yLabel: "MB (10⁶ bytes)", unit: "MB", digits: 2, series: [
                {label: "database size", values: isNumber(pageSize) ? mb(pick("header", "pages").map(p => isNumber(p) ? p * pageSize : null)) : [], width: 2.5, colour: fbb.TOTAL},
                {label: "memory used", values: mb(pick("memory", "used"))},
                {label: "memory allocated", values: mb(pick("memory", "allocated"))},
                {label: "attachments' memory used", values: mb(pick("memory", "attachments_used"))},
                {label: "attachments' memory allocated", values: mb(pick("memory", "attachments_allocated"))}]});
  if (readings.some(s => s.host)) {
    const pageBytes = isNumber(pageSize) ? rate("io", "page_reads").map(v => isNumber(v) ? v * pageSize / 1e6 : null) : [];
    // Two charts: levels of memory (tens of thousands of MB) and rates of reading (a few MB/s) on one
    // axis left the rates flat at 0.
    engineChart(node, "engine-os-cache", "The OS file cache beside the engine",
                "The host's available memory and page cache (/proc/meminfo) at each reading: what the OS could hold " +
                "of the database, beside Firebird's own page cache.",
                {yLabel: "MB (10⁶ bytes)", unit: "MB", digits: 0, series: [
                  {label: "available memory", values: mb(pick("host", "mem_available")), width: 2.5, colour: fbb.TOTAL},
                  {label: "page cache", values: mb(pick("host", "page_cache"))},
                  {label: "dirty + writeback", values: readings.map(s => {
                    const h = s.host || {};
                    return isNumber(h.dirty) ? (h.dirty + (h.writeback || 0)) / 1e6 : null; })}]});
    engineChart(node, "engine-os-reads", "The engine's reads against the storage's",
                "What the engine read — its page reads × page size — against its processes' block reads " +
                "(/proc/PID/io), which only count what reached the storage: the rest came from the OS cache.",
                {yLabel: "MB per second", unit: "MB/s", digits: 1, series: [
                  {label: "engine page reads", values: pageBytes, width: 2.5, colour: fbb.TOTAL},
                  {label: "block reads from storage", values: rate("process", "read_bytes").map(v => isNumber(v) ? v / 1e6 : null), dash: [2, 3]}]});
  }
  engineChart(node, "engine-activity", "Active attachments and transactions",
              "Attachments running a statement and their transactions at each interval's end (fbbench's own not counted).",
              {yLabel: "attachments, transactions", digits: 0, whole: true, series: [
                {label: "active attachments", values: pick("database", "active_attachments")},
                // dashed: the two are often equal and one line would hide the other
                {label: "active transactions", values: pick("database", "active_transactions"), dash: [6, 4]}]});
});

// Two tables side by side would not fit: reads and writes first, then versions, garbage and contention.
const ACCESS = [["reads", "reads"], ["writes", "writes"], ["seq_reads", "seq reads"], ["idx_reads", "idx reads"],
                ["inserts", "inserts"], ["updates", "updates"], ["deletes", "deletes"]];
const VERSIONS = [["backversion_reads", "back-version reads"], ["fragment_reads", "fragment reads"],
                  ["repeated_reads", "repeated reads"], ["backouts", "backouts"], ["purges", "purges"],
                  ["expunges", "expunges"], ["imgc", "imgc"], ["locks", "locks"], ["waits", "waits"],
                  ["conflicts", "conflicts"]];
fbb.section("busiest-tables", node => {
  const active = Object.entries(run.tables || {}).filter(([, t]) => t.activity)
    .sort(([, a], [, b]) => (b.activity.reads + b.activity.writes) - (a.activity.reads + a.activity.writes));
  if (!active.length) {
    return note(node, monitorOff ? "Not watched (--no-monitor)." : "No per-table figures for the measured period.");
  }
  const period = activity && isNumber(activity.seconds) ? ` (${seconds(activity.seconds)} s)` : "";
  note(node, `Record operations per table summed over the measured period${period}, from MON$TABLE_STATS; ` +
             "reads = sequential + indexed, writes = inserts + updates + deletes.");
  const top = active.slice(0, 12);
  fbb.barChart(fbb.chartBox(node, "busiest-chart", "", ""), {
    categories: top.map(([name]) => name), categoryName: "table", horizontal: true, digits: 0,
    series: [{label: "reads", colour: "#1a73e8", values: top.map(([, t]) => t.activity.reads)},
             {label: "writes", colour: "#e8710a", values: top.map(([, t]) => t.activity.writes)}],
    valueLabel: `records in the measured period${period}`,
  });
  [[ACCESS, "busiest-table"], [VERSIONS, "busiest-versions"]].forEach(([figures, id]) => {
    const columns = figures.filter(([k]) => active.some(([, t]) => isNumber(t.activity[k])));
    const t = table(el("div", {class: "wide"}, node), ["table", ...columns.map(([, label]) => ({label, n: true}))],
                    active.map(([name, tb]) => [name, ...columns.map(([k]) => num(tb.activity[k], 0))]), {id});
    fbb.heat(t, columns.map((_, i) => i + 1));
  });
});

const GSTAT_TABLE = [["records", "records", 0], ["versions", "versions", 0], ["max_versions", "max versions", 0],
                     ["avg_record_length", "avg record length", 2], ["avg_version_length", "avg version length", 2],
                     ["data_pages", "data pages", 0], ["avg_fill", "avg fill %", 0], ["fragments", "fragments", 0]];
const GSTAT_INDEX = [["depth", "depth", 0], ["nodes", "nodes", 0], ["avg_key_length", "avg key length", 2],
                     ["total_dup", "total dup", 0], ["max_dup", "max dup", 0]];

function flagRow(flag, width) {
  const cell = el("span");
  el("span", {class: "flag"}, cell, "⚑ " + flag.text);
  const facts = [`limit ${fmt(flag.limit)}`];
  if (isNumber(flag.before)) facts.push(`before the run ${fmt(flag.before)}`);
  facts.push(flag.new ? "new in this run" : "already so before the run");
  cell.appendChild(document.createTextNode(` (${flag.rule}; ${facts.join("; ")}). `));
  el("span", {class: "why"}, cell, flag.why || "");
  return {cls: "flag-row", cells: [{node: cell, colspan: width}]};
}

// Rows "before", "after", "change" for one object; the change row only where the document has it.
function gstatRows(name, before, after, change, fields, extra) {
  const rows = [];
  const line = (when, figures, delta) => rows.push({
    cls: (rows.length ? "" : "group-start") + (delta ? " delta" : ""),
    cells: [rows.length ? {text: "", cls: "dim"} : name, ...extra(rows.length === 0), {text: when, cls: delta ? "dim" : ""},
            // Whole numbers without decimals, fractions with the field's (gstat prints two).
            ...fields.map(([k, , d]) => delta ? {text: fbb.fmtDelta(figures[k], Number.isInteger(figures[k]) ? 0 : d), n: true,
                                                 cls: isNumber(figures[k]) && figures[k] !== 0 ? "changed" : "dim"}
                                              : num(figures[k], Number.isInteger(figures[k]) ? 0 : d))]});
  if (before) line("before", before, false);
  if (after) line("after", after, false);
  if (change) line("change", change, true);
  return rows;
}

fbb.section("gstat", node => {
  const gstat = run.gstat || {};
  if (!Object.keys(gstat).length) {
    return note(node, monitorOff ? "Not watched (--no-monitor): no gstat was taken." : "No gstat was taken for this run.");
  }
  const header = ["before", "after"].filter(m => gstat[m]).map(m => {
    const g = gstat[m], h = g.header || {};
    return [m, fbb.fmtTime(g.taken_at), num(h.oit), num(h.oat), num(h.ost), num(h.next_transaction),
            g.problem ? {text: g.problem, cls: "fail"} : g.skipped_lines ? `${fmt(g.skipped_lines)} line(s) skipped` : "read"];
  });
  table(node, ["gstat", "taken at", {label: "OIT", n: true}, {label: "OAT", n: true}, {label: "OST", n: true},
               {label: "Next", n: true}, "parsed"], header, {id: "gstat-header"});
  ["before", "after"].forEach(m => {
    const g = gstat[m];
    if (!g || !g.problem) return;
    note(node, `gstat ${m} the run could not be read: ${g.problem}`, "error-box");
    const raw = g.raw || g.text;
    if (raw) el("pre", {}, fbb.details(node, `gstat ${m}: the raw text`), raw);
    else note(node, "The raw gstat text is kept in the results store.");
  });
  if (!gstat.after) note(node, "No gstat after the run" + (run.status === "completed" ? "." : ` (the run ${run.status}).`));

  const flags = run.gstat_flags || [];
  if (flags.length) {
    const box = el("div", {id: "gstat-flags", class: "warn"}, node);
    el("b", {}, box, `gstat found ${flags.length} thing(s) to look at (marked ⚑ in the tables below):`);
    const list = el("ul", {}, box);
    flags.forEach(f => el("li", {}, list, f.text));
  }
  const tables = Object.entries(run.tables || {}).filter(([, t]) => t.gstat_before || t.gstat_after)
    .sort(([a], [b]) => a.localeCompare(b));
  if (!tables.length) return note(node, "gstat listed no tables.");
  const width = 2 + GSTAT_TABLE.length;
  const rows = [];
  tables.forEach(([name, t]) => {
    rows.push(...gstatRows(name, t.gstat_before, t.gstat_after, t.gstat_before && t.gstat_after ? t.gstat_delta : null,
                           GSTAT_TABLE, () => []));
    flags.filter(f => f.table === name && !f.index).forEach(f => rows.push(flagRow(f, width)));
  });
  table(el("div", {class: "wide"}, node), ["table", "", ...GSTAT_TABLE.map(([, label]) => ({label, n: true}))], rows,
        {id: "gstat-tables"});
});

// --gstat-every: the record versions of the tables over the run, as OLTP-EMUL shows them.
fbb.section("gstat-series", node => {
  const readings = run.gstat_series || [];
  if (!readings.length) return;
  el("h3", {}, node, "Record versions per table as the run went (--gstat-every)");
  const cost = readings.map(r => r.seconds).filter(isNumber);
  note(node, `${readings.length} gstat reading(s) while the load ran; each read every data page, taking ` +
             (cost.length ? `${fmt(Math.min(...cost), 2)}–${fmt(Math.max(...cost), 2)} s` : "an unknown time") +
             " with the load running beside it.");
  const peak = {};
  readings.forEach(r => Object.entries(r.tables || {}).forEach(([name, t]) => {
    peak[name] = Math.max(peak[name] || 0, isNumber(t.versions) ? t.versions : 0);
  }));
  const names = Object.keys(peak).filter(n => peak[n] > 0).sort((a, b) => peak[b] - peak[a]).slice(0, 8);
  if (!names.length) return note(node, "No table had a record version at any reading.");
  const colour = fbb.colourOf(names);
  fbb.lineChart(fbb.chartBox(node, "gstat-versions", "Record versions per table", null), {
    x: readings.map(r => isNumber(r.offset_seconds) ? r.offset_seconds : null), xLabel: "seconds since the load began",
    yLabel: "record versions", whole: true,
    series: names.map(name => ({label: name, colour: colour(name),
                                values: readings.map(r => ((r.tables || {})[name] || {}).versions)})),
  });
});

fbb.section("gstat-indices", node => {
  const indices = Object.entries(run.indices || {}).sort(([a, x], [b, y]) =>
    (x.table || "").localeCompare(y.table || "") || a.localeCompare(b));
  if (!indices.length) return note(node, monitorOff ? "Not watched (--no-monitor)." : "No index statistics.");
  const flags = run.gstat_flags || [];
  const width = 3 + GSTAT_INDEX.length;
  const rows = [];
  indices.forEach(([name, ix]) => {
    // The change of an index figure is after − before, both shown in the rows above it.
    const change = ix.before && ix.after ? Object.fromEntries(GSTAT_INDEX.map(([k, , d]) =>
      [k, isNumber(ix.before[k]) && isNumber(ix.after[k]) ? Number((ix.after[k] - ix.before[k]).toFixed(d)) : null])) : null;
    rows.push(...gstatRows(name, ix.before, ix.after, change, GSTAT_INDEX, first => [first ? ix.table || "" : ""]));
    flags.filter(f => f.index === name).forEach(f => rows.push(flagRow(f, width)));
  });
  const open = flags.some(f => f.index);
  const box = fbb.details(node, `${indices.length} indices (depth, nodes, average key length, duplicates)`, open);
  table(el("div", {class: "wide"}, box), ["index", "table", "", ...GSTAT_INDEX.map(([, label]) => ({label, n: true}))],
        rows, {id: "gstat-index-table"});
});

const SEVERITY = ["fatal", "critical", "error", "warning", "info"];
fbb.section("log-findings", node => {
  const findings = [...(run.log_findings || [])].sort((a, b) =>
    (SEVERITY.indexOf(a.severity) + 1 || 9) - (SEVERITY.indexOf(b.severity) + 1 || 9) || String(a.kind).localeCompare(String(b.kind)));
  if (!findings.length) return note(node, "Nothing new in firebird.log during the run.");
  // What the log said, with the values its first entry had; the kind (values as <name>) on hover.
  const said = f => {
    const detail = f.detail || {};
    return {text: (detail.text || f.kind) + (detail.values_vary ? " (and other values)" : ""), title: f.kind};
  };
  table(node, ["log", "severity", "message", {label: "count", n: true}, "first", "last", "example"],
        findings.map(f => [f.source || "firebird.log", el("span", {class: "sev-" + f.severity}, null, f.severity), said(f), num(f.count),
                           // firebird.log's own local time stamps, as the log writes them
                           {text: String(f.first_at || "–").replace("T", " "), cls: "n"},
                           {text: String(f.last_at || "–").replace("T", " "), cls: "n"}, el("pre", {class: "example"}, null, f.example || "")]),
        {id: "log-findings-table"});
});

fbb.section("watching", node => {
  const s = run.sampling;
  if (!s) return note(node, monitorOff ? "Not watched (--no-monitor)." : "No readings were taken.");
  const interval = (run.settings || {}).interval;
  const ms = v => isNumber(v) ? fmt(v * 1000, 1) + " ms" : "–";
  const own = readings.map(r => (r.sampler || {}).page_fetches).filter(isNumber);
  const ownText = own.length ? `; its own page fetches ${fmt(own.reduce((a, b) => a + b, 0) / own.length, 1)} per reading ` +
    "(in SuperServer they are part of the page figures above)" : "";
  note(node, `${fmt(s.readings)} reading(s)${monitorOff ? " (the workload's metrics only)" : ""}; one took ` +
             `${ms(s.median_seconds)} (median), ${ms(s.max_seconds)} at most` +
             (isNumber(interval) ? `, against an interval of ${seconds(interval)} s` : "") + ownText + ".");
  if (s.heavy) {
    note(node, `Watching was heavy: a MON$ reading stalls the attachments while the engine builds its snapshot, and ` +
               `these took ${ms(s.median_seconds)} (median), ${ms(s.max_seconds)} at most. Compare with a run ` +
               "under --no-monitor before trusting small differences.", "warn");
  }
  if (run.sampler_errors) note(node, `Engine sampling failed ${fmt(run.sampler_errors)} time(s); see the run's measure phase in the store.`, "warn");
});

// ------------------------------------------------------------------ the profile
// The profile as the document holds it (analysis/profile.py): times in ms, a line's average in µs.
const ms = v => isNumber(v) ? (v >= 1000 ? fmt(v / 1000, 2) + " s" : fmt(v, v >= 1 ? 1 : 3) + " ms") : "–";
const us = v => isNumber(v) ? (v >= 1000 ? fmt(v / 1000, 2) + " ms" : fmt(v, 1) + " µs") : "–";
const shortSql = v => String(v || "").split("\n").map(x => x.trim()).filter(Boolean)[0] || "";
fbb.section("profile", node => {
  const p = run.profile;
  if (!p) return note(node, "Not profiled (fbbench run --profile, Firebird 5.0 or later).");
  note(node, p.text, p.status === "complete" ? "note" : "warn");
  if (p.status === "failed") return;
  const timing = [];
  if (isNumber(p.start_delay_seconds)) timing.push(`the sessions started ${seconds(p.start_delay_seconds)} s into the measured period`);
  if (isNumber(p.end_delay_seconds)) timing.push(`were finished by their own attachments ${seconds(p.end_delay_seconds)} s after its planned end, once the load had ended`);
  if (timing.length) note(node, timing.join(" and ") + ".");
  (p.lost || []).slice(0, 10).forEach(l => note(node, `attachment ${l.attachment_id}: ${l.why}`, "warn"));
  el("h3", {}, node, `PSQL lines by time (${ms(p.psql_ms)} in ${fmt((p.counts || {}).psql_lines)} line(s) in all)`);
  if (!(p.psql_lines || []).length) note(node, "No PSQL line ran in the profiled attachments.");
  else {
    const t = table(el("div", {class: "wide"}, node), ["routine", {label: "line", n: true}, {label: "column", n: true},
      "text", {label: "executions", n: true}, {label: "total", n: true}, {label: "share", n: true}, {label: "average", n: true},
      {label: "min", n: true}, {label: "max", n: true}],
      p.psql_lines.map(r => [{text: r.statement, title: r.sql || ""}, num(r.line), num(r.column),
                             {text: r.text || "–", cls: "sql"}, num(r.count),
                             {text: ms(r.total_ms), n: true, value: r.total_ms}, {text: isNumber(r.share) ? fmt(100 * r.share, 1) + " %" : "–", n: true},
                             {text: us(r.avg_us), n: true}, {text: us(r.min_us), n: true}, {text: us(r.max_us), n: true}]),
      {id: "profile-psql"});
    fbb.heat(t, [5]);
  }
  el("h3", {}, node, "Statements by time");
  note(node, "A routine's time is its PSQL lines'; a statement without PSQL (a query) is timed by its cursors' top record " +
             "sources. Without per-request detail the profiler times no statement as a whole.");
  table(el("div", {class: "wide"}, node), ["statement", {label: "time", n: true}, {label: "PSQL lines", n: true},
    {label: "in its PSQL lines", n: true}, {label: "cursors", n: true}, {label: "in its cursors", n: true}],
    (p.statements || []).map(r => [{text: r.statement, title: r.sql || ""}, {text: ms(r.total_ms), n: true}, num(r.lines),
                                   {text: ms(r.psql_ms), n: true}, num(r.cursors), {text: ms(r.cursor_ms), n: true}]),
    {id: "profile-statements"});
  el("h3", {}, node, "Record sources by their own time");
  note(node, "A record source's own time: its opens and fetches less those of the record sources it reads from.");
  const rs = table(el("div", {class: "wide"}, node), ["statement", {label: "cursor", n: true}, "access path",
    {label: "opens", n: true}, {label: "fetches", n: true}, {label: "own", n: true}, {label: "with what it reads", n: true}],
    (p.record_sources || []).map(r => [{text: r.statement, title: r.sql || ""}, num(r.cursor_id),
                                       {text: shortSql(r.access_path), title: r.access_path || ""}, num(r.opens), num(r.fetches),
                                       {text: ms(r.own_ms), n: true, value: r.own_ms}, {text: ms(r.total_ms), n: true}]),
    {id: "profile-record-sources"});
  fbb.heat(rs, [5]);
});

// ------------------------------------------------------------------ conditions
// The storage under a directory (engines/platform.py storage_of): device and model, medium, filesystem and
// its mount options, I/O scheduler, free space.
function disk(s) {
  if (!s) return "not visible from this machine";
  const medium = s.medium || (s.rotational === undefined ? null : s.rotational ? "rotational" : "solid-state");
  return [`${s.device || "?"}${s.model ? ` (${s.model})` : ""}`, medium, s.filesystem,
          s.mount_options ? `mounted ${s.mount_options}` : null, s.scheduler ? `scheduler ${s.scheduler}` : null,
          s.free_bytes === undefined ? null : `${fbb.fmtMB(s.free_bytes)} free`].filter(Boolean).join("; ");
}

fbb.section("conditions", node => {
  const e = run.engine || {}, d = run.database || {}, h = run.host || {}, p = run.population || {};
  const set = e.firebird_conf_set && Object.keys(e.firebird_conf_set).length
    ? Object.entries(e.firebird_conf_set).map(([k, v]) => `${k}=${v}`).join(", ") : "defaults";
  const hb = d.header_before || {}, ha = d.header_after || {};
  table(node, [], [
    ["engine", `${e.version || "?"} (${e.label || "?"}), mode ${e.mode || "?"}`],
    ["firebird.conf (set)", set],
    ["database", `${d.path || "?"}; ODS ${d.ods || "?"}, page size ${fmt(d.page_size)}, buffers ${fmt(d.page_buffers)}, ` +
                 `forced writes ${d.forced_writes === undefined || d.forced_writes === null ? "?" : d.forced_writes ? "on" : "off"}, sweep interval ${fmt(d.sweep_interval)}`],
    ["disk settings", (() => {
      const s = run.storage || {};
      const onOff = v => v === undefined || v === null ? "?" : (v === true || v === "on") ? "on" : "off";
      return `forced writes ${onOff(s.forced_writes)}; OS file cache ${s.file_cache || "?"}` +
             (s.caches_dropped ? `; OS page cache dropped before measuring (${fbb.fmtMB(s.caches_dropped.page_cache_before)} → ` +
                                 `${fbb.fmtMB(s.caches_dropped.page_cache_after)})` : "");
    })()],
    ["size", `${fbb.fmtMB(d.size_bytes_before)} before, ${fbb.fmtMB(d.size_bytes)} after`],
    ["header before / after", `OIT ${fmt(hb.oldest_transaction)} / ${fmt(ha.oldest_transaction)}, ` +
                              `OAT ${fmt(hb.oldest_active)} / ${fmt(ha.oldest_active)}, Next ${fmt(hb.next_transaction)} / ${fmt(ha.next_transaction)}`],
    ["population", p.text || "–"],
    ["replication", (run.replication || {}).text || "off"],
    ["workload", `${run.workload}, scale ${JSON.stringify(run.scale || {})}, seed ${run.seed}`],
    ["load", `${fmt(run.connections)} connection(s), warm-up ${fmt(run.warmup_seconds)} s, measured ${fmt(run.measure_seconds)} s` +
             (run.transactions_per_attachment ? `, ${fmt(run.transactions_per_attachment)} units per attachment` : "")],
    ["client", `fbbench core ${fmt(run.client_cpu_seconds, 2)} s in its own code (wall, an upper bound of its CPU), ` +
               `Python ${fmt(run.python_cpu_seconds, 2)} s CPU; attachment threads ${fmt(run.thread_cpu_seconds, 2)} s CPU; ` +
               `whole process ${fmt(run.process_cpu_seconds, 2)} s CPU`],
    ["host", `${h.name || h.hostname || "?"}: ${h.cpu_model || "?"} × ${h.cpu_count || "?"}, ${fmt((h.memory_bytes || 0) / 2 ** 30, 1)} GiB, ${h.os || "?"}, ` +
             `kernel ${h.kernel || "?"}, ${h.client_bits || "?"}-bit client`],
    ["disk (database)", disk(h.database_disk || h.workdir_disk)],
    ["disk (temp)", disk(h.temp_disk)],
    ["machine shape", run.machine_shape ? run.machine_shape.lines.join("; ") : "–"],
    ["network", e.round_trip ? `round trip to ${e.round_trip.server || "?"}: median ${fmt(e.round_trip.median_ms, 3)} ms, ` +
                               `p99 ${fmt(e.round_trip.p99_ms, 3)} ms` + (e.round_trip.loopback ? " (loopback)" : "") : "–"],
    ["fbbench", `${h.fbbench || "?"}, Python ${h.python || "?"}`],
    ["tags", (run.tags || []).join(", ") || "–"],
  ]);
});

fbb.section("conf", node => {
  const conf = (run.engine || {}).firebird_conf;
  node.textContent = typeof conf === "string" ? conf || "(not known)"
    : Object.entries(conf || {}).map(([k, v]) => `${k} = ${v}`).join("\n") || "(not known)";
});
fbb.section("replconf", node => {
  const r = run.replication || {};
  node.textContent = r.conf_text || (r.mode && r.mode !== "off" ? "(not kept)" : "(replication off: none written)");
});
fbb.section("phases", node => {
  table(node, ["phase", {label: "seconds", n: true}], (run.phases || []).map(ph => [ph.name, num(ph.seconds, 1)]));
});
fbb.section("fblog", node => { node.textContent = run.firebird_log || "(empty)"; });
fbb.done();
