"use strict";
/* The comparison page: fills compare.html from the comparison document (docs/compare-result.md).
   Every figure, ratio, interval and verdict is the document's; nothing is computed here. */
const doc = fbb.data();
const {el, fmt, num, note, table, isNumber} = fbb;
const sides = doc.sides || [];
const base = doc.baseline;
const others = sides.filter(s => s.label !== base);
const nameOf = Object.fromEntries(sides.map(s => [s.label, s.name]));
const colourOf = fbb.colourOf(sides.map(s => s.label));
const LINT_ORDER = ["error", "warning", "note"];

fbb.section("workload", node => {
  node.textContent = (doc.workload || []).join(", ");
  document.getElementById("subtitle").textContent =
    `${sides.map(s => s.name).join(" · ")}; ratios against ${nameOf[base]}. Made ${fbb.fmtTime(doc.created_at)}.`;
});

fbb.section("sides", node => {
  const headUnit = ((doc.figures || []).find(r => r.kind === "headline") || {}).unit || "";
  const rows = [];
  sides.forEach(s => s.runs.forEach((r, i) => rows.push({
    cls: r.used ? "" : "flag-row",
    cells: [i ? {text: "", cls: "dim"} : `${s.name}${s.label === base ? " (baseline)" : ""}`,
            i ? "" : s.description, r.run_id, r.repeat_index ?? "–",
            el("span", {class: r.used ? "pass" : "fail"}, null, r.used ? r.status : `${r.status}: not used`),
            fbb.withUnit(r.headline, headUnit), r.failure || ""]})));
  table(node, ["side", "what", "run", "repeat", "status", {label: "headline", n: true}, "failure"], rows,
        {id: "sides-table"});
});

// ------------------------------------------------------------------ conditions
fbb.section("conditions", node => {
  const c = doc.conditions || {};
  const ruleOf = {};
  (doc.lint || []).filter(f => f.scope === "comparison" && f.evidence && f.evidence.key)
    .forEach(f => { ruleOf[f.evidence.key] = f; });
  const cell = v => v === null || v === undefined ? {text: "not visible", cls: "dim"} : String(v);
  const rows = [
    // The axis itself in bold; what follows from it (an engine's ODS, its conf defaults) plainer.
    ...(c.axis || []).map(r => ({cls: r.follows ? "axis-follows" : "axis-row",
      cells: [r.key, ...sides.map(s => cell(r.values[s.label])),
              {text: r.follows ? `axis (follows ${r.follows})` : "axis", cls: "what"}]})),
    ...(c.differences || []).map(r => {
      const f = ruleOf[r.key];
      const what = f ? el("span", {class: "sev-" + f.severity}, null, `${f.rule} ${f.severity}`)
                     : el("span", {}, null, r.follows ? `follows ${r.follows}` : "differs");
      return {cls: "differs-row", cells: [r.key, ...sides.map(s => cell(r.values[s.label])), {node: what, cls: "what"}]};
    }),
  ];
  if (!rows.length) {
    note(node, "The runs have the same conditions: no axis, the sides repeat each other.");
  } else {
    table(node, ["condition", ...sides.map(s => s.name), ""], rows, {id: "conditions-table"});
  }
  Object.entries(c.series_differences || {}).forEach(([label, within]) =>
    note(node, `The runs of series ${label} differ in ${within.map(r => r.key).join(", ")}.`, "error-box"));
});

fbb.section("equal", node => {
  const equal = Object.entries((doc.conditions || {}).equal || {});
  document.getElementById("equal-summary").textContent = `${equal.length} equal conditions`;
  table(node, ["condition", "value"], equal.map(([k, v]) => [k, String(v)]), {id: "equal-table"});
});

// ------------------------------------------------------------------ lint and verdict
fbb.section("lint", node => {
  const groups = doc.lint_groups || [];
  if (!groups.length) return note(node, "The credibility lint found nothing.");
  fbb.lintGroups(node, groups);
});

fbb.section("verdicts", node => {
  Object.entries(doc.verdicts || {}).forEach(([label, v]) => {
    const cls = v.withheld ? "error-box" : v.resolved ? "verdict resolved" : "verdict";
    const box = el("div", {class: cls, id: "verdict-" + label}, node);
    el("b", {}, box, `${nameOf[label]} against ${nameOf[base]}: `);
    box.appendChild(document.createTextNode(v.text));
  });
  if (doc.forced) note(node, "Forced (--force): the lint found errors, the verdict is shown anyway.", "warn");
  const until = doc.sequential;
  if (until) note(node, `Until resolved: ${until.text}; ${until.looks.length} look(s), one after each complete pair. ` +
    `The ${until.figure}'s interval is a ${fmt(until.design.confidence * 100)} % confidence sequence, valid at every ` +
    `look (${until.design.method}), not a fixed-sample interval, which looking after every pair would make too narrow.`);
});

// The headline's ratio for each side, with its interval and how it was taken (the verdict's ground).
fbb.section("headline-ratio", node => {
  const h = (doc.figures || []).find(r => r.kind === "headline");
  if (!h) return note(node, "The runs have no headline figure to divide.");
  const value = label => `${nameOf[label]} ${fmt(h.values[label])}${isNumber(h.values[label]) ? h.unit || "" : ""}` +
    (h.centres[label] && h.centres[label] !== "value" ? ` (${h.centres[label]})` : "");
  others.forEach(s => {
    const r = h.ratios[s.label];
    const box = el("p", {class: "headline-ratio", id: "headline-ratio-" + s.label}, node);
    el("b", {}, box, `${h.name} ${s.label}/${base} = ${r ? fmt(r.ratio, 3) : "–"}`);
    const interval = !r ? "no ratio: a side lacks the figure"
      : isNumber(r.low) && isNumber(r.high) ? `95 % CI ${fmt(r.low, 3)}–${fmt(r.high, 3)} over the ${r.basis} (${r.method})`
      : `no interval: ${r.note || "none could be computed"}`;
    box.appendChild(document.createTextNode(` — ${interval}; ${value(base)}, ${value(s.label)}` +
      (h.better === "lower" ? " (lower is better)" : " (higher is better)")));
  });
});

// ------------------------------------------------------------------ results
const KIND = {headline: "headline", figure: "figure", metric: "database metric", score: "score", tpm: "TPM",
              unit: "throughput", latency: "latency", outcomes: "conflicts and errors"};
const ratioCell = r => !r ? {text: "–", cls: "dim"} : {text: fmt(r.ratio, 3), n: true, value: r.ratio};
const ciCell = r => !r ? "" : isNumber(r.low) && isNumber(r.high)
  ? {text: `${fmt(r.low, 3)}–${fmt(r.high, 3)}`, n: true, title: `${r.basis}: ${r.method}`}
  : {text: "no interval", cls: "dim", title: r.note || ""};
const verdictCell = v => {
  if (!v) return "";
  if (v.withheld) return el("span", {class: "fail"}, null, "withheld");
  if (!v.resolved) return {text: "not resolved", cls: "dim", title: v.text};
  return el("span", {class: v.better ? "pass" : "fail", title: v.text}, null, v.word);
};

function figureTable(parent, rows, verdicts, id) {
  const kinds = rows.some(row => KIND[row.kind]);  // the engine's figures have none: no empty column
  const columns = ["figure", ...(kinds ? ["kind"] : []), "better", ...sides.map(s => ({label: s.name, n: true}))];
  others.forEach(s => {
    columns.push({label: `${s.label}/${base}`, n: true}, {label: "95 % CI", n: true});
    if (verdicts) columns.push("verdict");
  });
  return table(parent, columns, rows.map(row => {
    const cells = [row.name, ...(kinds ? [KIND[row.kind] || ""] : []), row.better === "higher" ? "↑ higher" : "↓ lower",
                   ...sides.map(s => fbb.withUnit(row.values[s.label], row.unit, row.kind === "latency" ? 2 : undefined))];
    others.forEach(s => {
      cells.push(ratioCell(row.ratios[s.label]), ciCell(row.ratios[s.label]));
      if (verdicts) cells.push(verdictCell(row.verdicts[s.label]));
    });
    return {cls: row.kind === "headline" ? "headline-row" : "", cells};
  }), {id});
}

fbb.section("results", node => {
  const rows = doc.figures || [];
  const series = sides.some(s => s.kind === "series");
  const methods = [...new Set(rows.flatMap(r => others.map(s => r.ratios[s.label]).filter(Boolean)
    .map(r => `over the ${r.basis}: ${r.method}` + (r.basis === "intervals"
      ? " (weaker: the drift between runs is not in it; repeat the runs for a verdict across runs)" : ""))))];
  const centres = [...new Set(rows.flatMap(r => Object.values(r.centres || {}))
    .filter(c => c === "median" || c === "geometric mean"))];
  document.getElementById("results-note").textContent =
    (series && centres.length ? `A series shows the ${centres.join(" or ")} of its runs: the centre its ratio divides. ` : "") +
    `Ratios are against ${nameOf[base]}, with 95 % intervals ${methods.join("; ") || "(none could be computed)"}. ` +
    "A verdict word appears only where the interval excludes no change; the headline's is the comparison's verdict, " +
    "the others are each judged at 95 % (about 1 in 20 resolves by chance alone).";
  figureTable(node, rows, true, "results-table");
  sides.filter(s => s.summary).forEach(s => note(node, `${s.name} repeats: ${s.summary.text}.`));
});

// Figures that are one figure (score, TPM, a unit's ok, orders and orders/s of one count) have the
// same ratio and interval: one category names them all, instead of one interval drawn five times.
function distinctRatios(rows) {
  const merged = new Map();
  rows.forEach(r => {
    const key = JSON.stringify(others.map(s => {
      const q = r.ratios[s.label] || {};
      return [q.ratio, q.low, q.high].map(v => isNumber(v) ? v.toPrecision(9) : null);
    }));
    if (merged.has(key)) merged.get(key).names.push(r.name);
    else merged.set(key, {...r, names: [r.name]});
  });
  return [...merged.values()].map(r => ({...r, name: r.names.join(" = ")}));
}

function ratioSeries(rows) {
  return others.map(s => ({label: `${nameOf[s.label]} / ${nameOf[base]}`, colour: colourOf(s.label),
    values: rows.map(r => (r.ratios[s.label] || {}).ratio), lo: rows.map(r => (r.ratios[s.label] || {}).low),
    hi: rows.map(r => (r.ratios[s.label] || {}).high)}));
}
fbb.section("ratios-throughput", node => {
  const rows = distinctRatios((doc.figures || []).filter(r => r.kind !== "latency" && r.ratios &&
                                                        others.some(s => r.ratios[s.label])));
  fbb.ratioChart(node, {categories: rows.map(r => r.name), categoryName: "figure", series: ratioSeries(rows),
                        valueLabel: `ratio to ${nameOf[base]} (rates: higher is faster)`,
                        empty: "No throughput figure could be divided."});
});
fbb.section("ratios-latency", node => {
  const rows = (doc.figures || []).filter(r => r.kind === "latency" && others.some(s => r.ratios[s.label]));
  fbb.ratioChart(node, {categories: rows.map(r => r.name), categoryName: "figure", series: ratioSeries(rows),
                        valueLabel: `latency ratio to ${nameOf[base]} (lower is better)`,
                        empty: "No latency could be divided."});
});

// ------------------------------------------------------------------ every run's intervals
fbb.section("intervals", node => {
  const runs = (doc.intervals || []).filter(r => r.values && r.values.length);
  const figure = runs.length ? `${runs[0].figure} (${runs[0].unit})` : "";
  document.getElementById("intervals-note").textContent = runs.length
    ? `The ${figure} of each run per interval, at the interval's middle (seconds since the run's load started: ` +
      "its warm-up intervals come first, not measured). One colour per side; a run not used is dashed."
    : "";
  // One x for all: every run's interval middles, each run's values where it has them.
  const xs = [...new Set(runs.flatMap(r => r.at))].sort((a, b) => a - b);
  const series = runs.map(r => {
    const byX = new Map(r.at.map((x, i) => [x, r.values[i]]));
    return {label: r.label + (r.used ? "" : ` (${r.status})`), colour: colourOf(r.side), spanGaps: true,
            dash: r.used ? undefined : [4, 4], width: r.used ? 1.8 : 1,
            values: xs.map(x => byX.has(x) ? byX.get(x) : null)};
  });
  fbb.lineChart(node, {x: xs, xLabel: "seconds since the run's load started", yLabel: figure, digits: 0,
                       unit: runs.length ? runs[0].unit : "", series, empty: "No run has measured intervals."});
});

// ------------------------------------------------------------------ engine
fbb.section("engine", node => {
  const e = doc.engine || {};
  if (!e.available) return note(node, "No engine samples (runs under --no-monitor, or none measured).");
  figureTable(node, e.figures, false, "engine-table");
});

// ------------------------------------------------------------------ profile
fbb.section("profile", node => {
  const p = doc.profile;
  if (!p) return document.getElementById("profile-part").remove();  // nothing was profiled: no section
  note(node, p.note);
  if (!p.available) return note(node, "Not comparable: the baseline and at least one other side need a profile.", "warn");
  const labels = Object.keys(p.sides).filter(label => p.sides[label]);
  const rate = v => isNumber(v) ? fmt(v, Math.abs(v) < 100 ? 2 : 0) + " ms/s" : "–";
  const change = v => isNumber(v) ? (v >= 0 ? "+" : "−") + rate(Math.abs(v)) : "–";
  [["PSQL lines", p.psql_lines, true, "profile-psql-changes"], ["Statements", p.statements, false, "profile-statement-changes"]]
    .forEach(([title, rows, lines, id]) => {
      el("h3", {}, node, `${title}: the top changes`);
      if (!rows.length) return note(node, "Nothing to compare.");
      const others = labels.filter(label => label !== base);
      const columns = [title === "PSQL lines" ? "line" : "statement",
                       ...labels.map(label => ({label: nameOf[label] || label, n: true})),
                       ...others.map(label => ({label: `change in ${label}`, n: true}))];
      if (lines) columns.push(...others.map(label => ({label: `average × in ${label}`, n: true})));
      const t = table(node, columns, rows.map(r => {
        const what = {text: r.statement + (lines ? ` line ${r.line}:${r.column}` : ""), title: r.sql || ""};
        const cells = [what, ...labels.map(label => ({text: rate((r.values[label] || {}).ms_per_second), n: true})),
                       ...others.map(label => ({text: change(r.change_ms_per_second[label]), n: true,
                                                value: r.change_ms_per_second[label]}))];
        if (lines) cells.push(...others.map(label => ({text: isNumber((r.avg_ratio || {})[label]) ? fmt(r.avg_ratio[label], 3) : "–", n: true})));
        return cells;
      }), {id});
      fbb.heat(t, others.map((_, i) => 1 + labels.length + i));
    });
});
fbb.done();
