"use strict";
/* The track site's index: fills track_index.html from fbbench/track/site.py's index data. */
const site = fbb.data();
const {el, fmt, note, table, isNumber} = fbb;

function sparkline(values, marks) {
  const width = 160, height = 28, pad = 2;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("class", "sparkline");
  const present = values.filter(isNumber);
  if (present.length < 1) return svg;
  const min = Math.min(...present), max = Math.max(...present);
  const span = max > min ? max - min : 1;
  const x = i => pad + (values.length > 1 ? i * (width - 2 * pad) / (values.length - 1) : (width - 2 * pad) / 2);
  const y = v => height - pad - (v - min) * (height - 2 * pad) / span;
  const points = values.map((v, i) => isNumber(v) ? `${x(i).toFixed(1)},${y(v).toFixed(1)}` : null).filter(Boolean);
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  line.setAttribute("points", points.join(" "));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", fbb.COLOURS[0]);
  line.setAttribute("stroke-width", "1.5");
  svg.appendChild(line);
  marks.forEach(i => {
    if (!isNumber(values[i])) return;
    const dot = document.createElementNS("http://www.w3.org/2000/svg", "circle");
    dot.setAttribute("cx", x(i).toFixed(1));
    dot.setAttribute("cy", y(values[i]).toFixed(1));
    dot.setAttribute("r", "2.5");
    dot.setAttribute("fill", "#d93025");
    svg.appendChild(dot);
  });
  return svg;
}

function link(href, text) {
  const a = el("a", {href});
  a.textContent = text;
  return a;
}

fbb.section("header", () => {
  document.getElementById("suite-name").textContent = site.suite.name;
  const method = site.suite.method;
  document.getElementById("subtitle").textContent =
    `${site.series.length} series, ${site.points} point(s); published ${fbb.fmtTime(site.published_at)}. ` +
    `Changes at p ≤ ${method.p_value}, point against point below ${method.long_series} points, else Otava's ` +
    `e-divisive means (window ${method.window}); the check's threshold ${fmt(site.suite.threshold * 100)} %.`;
});

fbb.section("latest", () => {
  const box = document.getElementById("latest");
  if (!site.latest.length) return note(box, "No change found in any series.", "verdict");
  const list = el("ul", {id: "latest-changes", class: "changes"}, box);
  site.latest.forEach(event => {
    const item = el("li", {class: event.regression ? "regression" : "change"}, list);
    el("b", {}, item, `${event.benchmark}${event.host ? " on " + event.host : ""}: ${event.before} → ${event.after}: `);
    item.appendChild(document.createTextNode(event.figures.join("; ") + ". "));
    item.appendChild(link(event.page, event.cause));
  });
});

fbb.section("series", () => {
  const box = document.getElementById("series");
  if (!site.series.length) return note(box, "No series yet: fbbench track run SUITE --engine NAME.");
  table(box, ["series", "benchmark", "host", "kind", "points", {label: site.sparkline_note}, "latest change"],
        site.series.map(s => ({
          cls: s.latest_regression ? "fail" : null,
          cells: [{node: link(s.page, s.series_id)}, s.benchmark, s.host || "–", s.kind, {text: String(s.points), n: true},
                  {node: sparkline(s.sparkline, s.marks)}, s.latest_change || "none"],
        })), {id: "series-table"});
});

fbb.section("feeds", () => {
  const box = document.getElementById("feeds");
  box.appendChild(document.createTextNode("Machine-readable: "));
  box.appendChild(link("regressions.json", "regressions.json"));
  box.appendChild(document.createTextNode(", and an Atom feed of the changes, one entry a change: "));
  box.appendChild(link("feed.xml", "feed.xml"));
  box.appendChild(document.createTextNode("."));
});

fbb.done();
