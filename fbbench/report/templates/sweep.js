"use strict";
/* The sweep report: fills sweep.html from the sweep document (fbbench/analysis/sweep.py). */
const sweep = fbb.data();
const {el, fmt, num, note, table, isNumber} = fbb;
const head = sweep.headline || {};
const unit = head.unit || "";
const better = head.better === "lower" ? "lower is better" : "higher is better";
const axes = sweep.axes || [];
const cells = sweep.cells || [];

fbb.section("header", () => {
  document.getElementById("sweep-id").textContent = sweep.sweep_id;
  document.getElementById("status").textContent = sweep.status;
  document.getElementById("subtitle").textContent =
    `${cells.length} cell(s) × ${sweep.repeats} repeat(s), mode ${sweep.mode}; axes: ` +
    axes.map(a => `${a.key} = ${a.values.join(", ")}${a.grow ? " (grows)" : ""}`).join("; ") +
    `; headline ${head.name} (${better})`;
});

fbb.section("best", () => {
  const box = document.getElementById("best");
  const best = sweep.best;
  if (!best) return note(box, "No cell completed a run with a headline figure.", "error-box");
  const verdict = el("div", {class: best.resolved ? "verdict resolved" : "verdict", id: "best-verdict"}, box);
  el("b", {}, verdict, `Best: cell ${best.cell} (${best.label}), ${head.name} ${best.n === 1 ? "of its one run" : "median"} ${fmt(best.median)}${unit}. `);
  verdict.appendChild(document.createTextNode(!best.versus_runner_up ? "The only cell with a figure."
    : (best.resolved ? "Against the runner-up: " : "Not distinguishable from the runner-up: ") + best.versus_runner_up));
  if (best.runner_up) {
    const r = best.ratio;
    note(box, `Runner-up: cell ${best.runner_up.cell} (${best.runner_up.label}), median ${fmt(best.runner_up.median)}${unit}` +
         (r && isNumber(r.low) ? `; ratio best/runner-up ${fmt(r.ratio, 3)}, 95 % CI ${fmt(r.low, 3)}–${fmt(r.high, 3)} over the ${r.basis}.`
                               : "."));
  }
});

fbb.section("advisor", () => {
  const advisor = sweep.one_at_a_time;
  if (!advisor) return;
  const box = document.getElementById("advisor");
  el("h2", {}, box, "One factor at a time, against the baseline");
  note(box, `Baseline: cell ${advisor.baseline_cell}. Each cell changes one setting (the last, if any, ` +
            "combines each axis's best value); a verdict appears only where the 95 % interval excludes no change.");
  table(box, ["cell", "settings", "kind", "against the baseline"],
        advisor.steps.map(s => ({cells: [String(s.cell), s.label, s.kind, s.text], cls: s.resolved ? "pass" : null})));
  el("p", {class: "conclusion"}, box, advisor.conclusion);
});

function band(summary, interval, range) {
  if (!summary) return null;
  if (isNumber(summary[interval])) return summary[interval];
  return summary.n >= 2 && isNumber(summary[range]) ? summary[range] : null;
}

// Curves: for each numeric axis, the headline against it, one line per combination of the others.
fbb.section("curves", () => {
  const box = document.getElementById("curves");
  const numeric = axes.filter(a => a.values.every(v => isNumber(Number(v))));
  if (!numeric.length) {  // no curve to draw: the cells themselves come first, where the curves would be
    const part = document.getElementById("curves-part");
    part.replaceWith(document.getElementById("cells-part"));
    return;
  }
  numeric.forEach(axis => {
    const xs = [...new Set(axis.values.map(Number))].sort((a, b) => a - b);
    const others = axes.filter(a => a.key !== axis.key);
    const groups = new Map();
    cells.forEach(cell => {
      const key = others.map(o => `${o.key}=${cell.values[o.key]}`).join(", ") || "all cells";
      if (!groups.has(key)) groups.set(key, new Map());
      groups.get(key).set(Number(cell.values[axis.key]), cell);
    });
    const series = [...groups.entries()].map(([label, byX]) => ({
      label,
      values: xs.map(x => byX.get(x)?.summary?.median ?? null),
      // Band: the median's 95 % interval (6+ repeats), else the repeats' range (see the note above).
      lo: xs.map(x => band(byX.get(x)?.summary, "low", "min")),
      hi: xs.map(x => band(byX.get(x)?.summary, "high", "max")),
    }));
    const ranges = cells.some(c => c.summary && !isNumber(c.summary.low) && c.summary.n >= 2);
    const chart = fbb.chartBox(box, `curve-${axis.key}`, `${head.name} against ${axis.key}`,
                               `median of each cell's repeats (${better}); band: ` +
                               (ranges ? "range of the repeats (fewer than 6: no interval)" : "95 % interval of the median"));
    fbb.lineChart(chart, {x: xs, xName: axis.key, xLabel: axis.key, yLabel: `${head.name} ${unit}`.trim(),
                          unit, series, xValue: v => fmt(v)});
    const latency = fbb.chartBox(box, `latency-${axis.key}`, `p95 latency against ${axis.key}`,
                                 "median over the repeats of each run's p95 (all units)");
    fbb.lineChart(latency, {x: xs, xName: axis.key, xLabel: axis.key, yLabel: "p95 ms", unit: "ms", digits: 2,
                            series: [...groups.entries()].map(([label, byX]) => ({
                              label, values: xs.map(x => byX.get(x)?.p95_ms_median ?? null)}))});
  });
  // Two axes: a heat map of the medians (rows: first axis, columns: second).
  if (axes.length === 2) {
    const [rowsAxis, colsAxis] = axes;
    el("h3", {}, box, `${head.name}: ${rowsAxis.key} × ${colsAxis.key}`);
    const byKey = new Map(cells.map(c => [`${c.values[rowsAxis.key]}|${c.values[colsAxis.key]}`, c]));
    const t = table(box, [rowsAxis.key, ...colsAxis.values.map(v => ({label: String(v), n: true}))],
                    rowsAxis.values.map(r => [String(r), ...colsAxis.values.map(c => {
                      const cell = byKey.get(`${r}|${c}`);
                      return num(cell?.summary?.median ?? null);
                    })]), {id: "heatmap"});
    fbb.heat(t, colsAxis.values.map((_, i) => i + 1));
  }
});

fbb.section("cells", () => {
  const box = document.getElementById("cells");
  table(box, ["cell", "settings", {label: "runs", n: true}, {label: `${head.name} median`, n: true},
              {label: "95 % CI", n: true}, {label: "CV", n: true}, {label: "min–max", n: true},
              {label: "p95 ms", n: true}, "runs (headline each)"],
        cells.map(cell => {
          const s = cell.summary || {};
          return [String(cell.index), cell.label, num(s.n ?? 0), fbb.withUnit(s.median ?? null, unit),
                  isNumber(s.low) ? `${fmt(s.low)}–${fmt(s.high)}${unit}` : "–",
                  isNumber(s.cv) ? `${fmt(s.cv * 100, 1)} %` : "–",
                  isNumber(s.min) ? `${fmt(s.min)}–${fmt(s.max)}` : "–",
                  num(cell.p95_ms_median, 2),
                  cell.runs.map(r => `${r.run_id}: ${r.status === "completed" ? fmt(r.headline) + unit : r.status}`).join("; ")];
        }), {id: "cells-table"});
});

fbb.section("size", () => {
  const box = document.getElementById("size");
  const points = sweep.size_series;
  if (!points || !points.length) {
    document.getElementById("size-heading").style.display = "none";
    return;
  }
  const x = points.map(p => (p.database_bytes || 0) / 1e6);
  fbb.lineChart(fbb.chartBox(box, "size-throughput", `${head.name} against database size`, "median of each size's repeats"),
                {x, xName: "database MB", xLabel: "database size, MB", yLabel: `${head.name} ${unit}`.trim(), unit,
                 series: [{label: head.name, values: points.map(p => p.headline)}]});
  fbb.lineChart(fbb.chartBox(box, "size-load", "load speed against database size", "MB/s of each growing step"),
                {x, xName: "database MB", xLabel: "database size, MB", yLabel: "MB/s", unit: "MB/s", digits: 2,
                 series: [{label: "load MB/s", values: points.map(p => p.load_mb_per_second)}]});
  table(box, [{label: "size", n: true}, {label: "database MB", n: true}, {label: "load MB/s", n: true},
              "load", {label: `${head.name}`, n: true}, {label: "p95 ms", n: true}],
        points.map(p => [String(p.size), num(p.database_bytes ? p.database_bytes / 1e6 : null, 1),
                         num(p.load_mb_per_second, 2), p.load_source || "–", num(p.headline), num(p.p95_ms, 2)]));
});

fbb.section("conditions", () => {
  const box = document.getElementById("conditions");
  const c = sweep.conditions || {};
  const labels = cells.map(cell => `cell ${cell.index}`);
  const cell = v => v === null || v === undefined ? {text: "not visible", cls: "dim"} : String(v);
  const rows = [
    ...(c.axis || []).map(r => ({cls: r.follows ? "axis-follows" : "axis-row",
      cells: [r.key, ...labels.map(l => cell(r.values[l])), {text: r.follows ? `axis (follows ${r.follows})` : "axis", cls: "what"}]})),
    ...(c.differences || []).map(r => ({cls: "differs-row",
      cells: [r.key, ...labels.map(l => cell(r.values[l])), {text: r.follows ? `follows ${r.follows}` : "differs", cls: "what"}]})),
  ];
  if (!rows.length) note(box, "Fewer than two cells completed a run: nothing to set side by side.");
  else table(box, ["condition", ...labels, ""], rows, {id: "conditions-table"});
  const equal = Object.entries(c.equal || {});
  document.getElementById("equal-summary").textContent = `${equal.length} equal conditions`;
  table(document.getElementById("equal"), ["condition", "value"], equal.map(([k, v]) => [k, String(v)]),
        {id: "equal-table"});
});

fbb.section("lint", () => {
  const box = document.getElementById("lint");
  const groups = sweep.lint_groups || [];
  if (!groups.length) return note(box, "Nothing to report.");
  fbb.lintGroups(box, groups);
});

fbb.section("overhead", () => {
  const box = document.getElementById("overhead");
  const o = sweep.overhead;
  if (!o) return note(box, "No run ended yet.");
  note(box, `The runs took ${fmt(o.runs_wall_seconds)} s for ${fmt(o.load_seconds)} s of warm-up and measurement: ` +
            `+${fmt(o.share * 100, 1)} % for populations, start-up, checks and reports.`);
});

fbb.done();
