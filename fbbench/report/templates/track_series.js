"use strict";
/* A track series: fills track_series.html from fbbench/track/site.py's series data. */
const series = fbb.data();
const {el, fmt, note, table, isNumber} = fbb;
const points = series.points;
const relative = series.kind === "relative";

function link(href, text) {
  const a = el("a", {href});
  a.textContent = text;
  return a;
}

fbb.section("header", () => {
  document.getElementById("benchmark").textContent = series.benchmark;
  document.getElementById("series-id").textContent = series.series_id;
  const kind = relative ? `relative to ${series.reference} (each point: time-shared pairs, values build / reference)`
                        : "absolute (each point: runs of the build)";
  document.getElementById("subtitle").textContent =
    `${points.length} point(s) over the ${series.axis}, ${kind}${series.host ? ", host " + series.host : ""}.` +
    (series.reason ? " " + series.reason + "." : "");
});

fbb.section("changes", () => {
  const box = document.getElementById("changes");
  if (!series.events.length) return note(box, "No change found in this series.", "verdict");
  const list = el("ul", {id: "change-list", class: "changes"}, box);
  series.events.forEach(event => {
    const item = el("li", {class: event.regression ? "regression" : "change"}, list);
    el("b", {}, item, `${event.before.label} → ${event.after.label}: `);
    item.appendChild(document.createTextNode(event.figures.map(f => f.text).join("; ") + (event.figures.length ? ". " : "")));
    item.appendChild(link(event.page, event.cause));
  });
  const ended = series.changes.filter(c => c.state !== "current");
  if (ended.length) {
    note(box, "Earlier changes no longer found: " + ended.map(c =>
      `${c.figure} ${c.before.label} → ${c.after.label} ${c.state} at point ${c.ended_at}`).join("; ") + ".");
  }
});

fbb.section("charts", () => {
  const box = document.getElementById("charts");
  document.getElementById("charts-note").textContent =
    "One chart a figure: each point's value with its 95 % interval (the band; none where a point has fewer than " +
    "two samples), a shaded bar where a change was found (between the two points). " +
    (relative ? "A value of 1 is the reference build's." : "");
  series.figures.forEach((name, index) => {
    const values = points.map(p => (p.figures[name] || {}).value);
    if (!values.some(isNumber)) return;
    const unit = points.map(p => (p.figures[name] || {}).unit).find(u => u) || "";
    const container = fbb.chartBox(box, `chart-${index}`, name + (relative ? " (build / reference)" : ""), null);
    const shade = series.changes.filter(c => c.state === "current" && c.figure === name).map(c => {
      const at = points.findIndex(p => p.point_id === c.after.point_id);
      return {from: at - 0.6, to: at - 0.4, label: `${fbb.fmtDelta((c.detail.ratio - 1) * 100, 1)} %`,
              colour: "rgba(217, 48, 37, 0.25)"};
    });
    fbb.lineChart(container, {
      x: points.map((_, i) => i), xName: "point", xValue: (v, i) => points[i] ? points[i].label : String(v),
      xNames: points.map(p => p.label), xLabel: "point", yLabel: relative ? "ratio" : name,
      unit: relative ? "" : unit.trim(),
      series: [{label: name, values, lo: points.map(p => (p.figures[name] || {}).low),
                hi: points.map(p => (p.figures[name] || {}).high)}],
      shade, height: 220,
    });
  });
});

fbb.section("points", () => {
  const box = document.getElementById("points");
  const shown = series.figures.slice(0, 4);
  table(box, ["point", "engine", "build", "made", ...shown, "runs"], points.map(p => {
    const runs = el("span", {});
    p.runs.forEach((run, i) => {
      if (i) runs.appendChild(document.createTextNode(" "));
      runs.appendChild(run.page ? link(run.page, run.side + String(i + 1)) : document.createTextNode(run.side + String(i + 1)));
    });
    return {cells: [p.label, p.engine, (p.engine_build || "").split(" ")[0], fbb.fmtTime(p.created_at),
                    ...shown.map(name => {
                      const f = p.figures[name] || {};
                      return {text: isNumber(f.value) ? fmt(f.value, relative ? 3 : undefined) +
                        (isNumber(f.low) && f.low !== f.high ? ` (${fmt(f.low, relative ? 3 : undefined)}–${fmt(f.high, relative ? 3 : undefined)})` : "")
                        : "–", n: true};
                    }),
                    {node: runs}]};
  }), {id: "points-table"});
});

fbb.section("conditions", () => {
  const box = document.getElementById("conditions");
  table(box, ["condition", "value"], Object.entries(series.conditions).map(([k, v]) => [k, String(v)]));
});

fbb.done();
