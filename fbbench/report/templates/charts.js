"use strict";
/* fbbench page helpers, shared by every page (html.py inlines this after uPlot).

   A page script reads its data with fbb.data(), builds each part inside fbb.section() (a part that
   throws shows a one-line error instead of breaking the page) and ends with fbb.done(), which
   marks <body data-rendered="true" data-charts="N">. Charts are uPlot (vendored, unmodified):
   fbb.lineChart (per-interval lines, shaded ranges such as the warm-up, optional 95 % CI bands),
   fbb.barChart (grouped bars, vertical or horizontal) and fbb.ratioChart (ratios with their 95 %
   intervals against a line at 1). The legend toggles series on click and
   shows the values under the cursor; time charts with the same `sync` key move their cursors
   together. Every drawn chart's container gets data-rendered="true". */
const fbb = (() => {
  // fbbench's colours, in order. A page that shows the same things in several charts (units,
  // tables) maps each name to one colour with colourOf(), so a unit keeps its colour everywhere.
  const COLOURS = ["#1a73e8", "#e8710a", "#188038", "#d93025", "#9334e6", "#12b5cb", "#b08600", "#5f6368",
                   "#795548", "#e52592", "#00897b", "#3949ab"];
  const TOTAL = "#1d2330";
  const SHADE = "rgba(95, 99, 104, 0.13)";
  const FONT = "11px system-ui, -apple-system, 'Segoe UI', sans-serif";
  const LABEL_FONT = "12px system-ui, -apple-system, 'Segoe UI', sans-serif";
  const AXIS = {stroke: "#3c4043", font: FONT, labelFont: LABEL_FONT, grid: {stroke: "#eceff3", width: 1},
                ticks: {stroke: "#c4c9d2", width: 1, size: 4}};
  // Filled legend markers in the series' colour (uPlot's default fills them with the series'
  // area fill, which lines do not have).
  const LEGEND = {live: true, markers: {fill: (u, i) => u.series[i].stroke(u, i)}};
  const charts = [];
  const errors = [];

  // ---------------------------------------------------------------- errors
  // A script error must be visible to the reader (and to the tests), not only in a console.
  function recordError(message) {
    errors.push(String(message));
    const body = document.body;
    if (!body) return;
    body.dataset.errors = String(errors.length);
    let box = document.getElementById("page-errors");
    if (!box) {
      box = el("div", {id: "page-errors", class: "error-box"});
      body.insertBefore(box, body.firstChild);
    }
    el("div", {}, box, "This page did not draw completely: " + message);
  }
  window.addEventListener("error", event => recordError(event.message || String(event.error)));
  window.addEventListener("unhandledrejection", event => recordError(String(event.reason)));

  function section(target, build) {
    const node = typeof target === "string" ? document.getElementById(target) : target;
    try {
      build(node);
    } catch (error) {
      recordError(`${typeof target === "string" ? target : "a section"}: ${error && error.stack || error}`);
      if (node) el("p", {class: "error-box"}, node, `This part could not be drawn: ${error}`);
    }
  }

  function done() {
    // A chart drawn before its neighbours existed was sized for a wider cell: fit them all now.
    fit();
    document.body.dataset.rendered = "true";
    document.body.dataset.charts = String(charts.length);
  }

  // ---------------------------------------------------------------- data and numbers
  function data(id = "page-data") {
    return JSON.parse(document.getElementById(id).textContent);
  }

  const isNumber = v => typeof v === "number" && Number.isFinite(v);

  // Thousands separators always; decimals by magnitude unless given (experts compare digits).
  function fmt(value, digits) {
    if (value === null || value === undefined || value === "") return "–";
    if (typeof value !== "number") return String(value);
    if (!Number.isFinite(value)) return "–";
    if (digits === undefined) {
      const a = Math.abs(value);
      if (a !== 0 && a < 1) return value.toLocaleString("en", {maximumSignificantDigits: 3});
      digits = a === 0 || a >= 100 || Number.isInteger(value) ? 0 : a >= 10 ? 1 : 2;
    }
    return value.toLocaleString("en", {minimumFractionDigits: digits, maximumFractionDigits: digits});
  }

  // "+1,234" / "−5" for differences; zero stays "0".
  function fmtDelta(value, digits) {
    if (!isNumber(value)) return "–";
    if (value === 0) return "0";
    const text = fmt(Math.abs(value), digits);
    return value > 0 ? "+" + text : value < 0 ? "−" + text : text;
  }

  function fmtMB(bytes, digits = 1) {
    return isNumber(bytes) ? fmt(bytes / 1e6, digits) + " MB" : "–";
  }

  // Wall-clock stamps are shown in UTC with milliseconds, as stored (epoch seconds).
  function fmtTime(epochSeconds) {
    if (!isNumber(epochSeconds)) return "–";
    return new Date(epochSeconds * 1000).toISOString().replace("T", " ").replace("Z", " UTC");
  }

  // Counters per interval → per second, null where the interval has no length.
  function perSecond(values, seconds) {
    return values.map((v, i) => isNumber(v) && isNumber(seconds[i]) && seconds[i] > 0 ? v / seconds[i] : null);
  }

  function colourOf(names) {
    return name => COLOURS[Math.max(0, names.indexOf(name)) % COLOURS.length];
  }

  // ---------------------------------------------------------------- DOM
  function el(tag, attrs = {}, parent = null, text = null) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      node.setAttribute(key, value === true ? "" : String(value));
    }
    if (text !== null && text !== undefined) node.textContent = String(text);
    if (parent) parent.appendChild(node);
    return node;
  }

  function note(parent, text, cls = "note") {
    return el("p", {class: cls}, parent, text);
  }

  // A numeric cell: formatted text, right-aligned, the raw value kept for heat().
  function num(value, digits) {
    return {text: fmt(value, digits), n: true, value: isNumber(value) ? value : null};
  }

  // The same with its unit after the number ("391,299/min"); "–" alone where there is no number.
  function withUnit(value, unit, digits) {
    const cell = num(value, digits);
    return isNumber(value) && unit ? {...cell, text: cell.text + unit} : cell;
  }

  /* table(parent, columns, rows): columns are labels or {label, n (numeric), title}; a row is an
     array of cells or {cells, cls, title}; a cell is text, a number (formatted), a Node, or
     {text | node, n, cls, title, colspan, value}. Returns the <table>. */
  function table(parent, columns, rows, attrs = {}) {
    const t = el("table", attrs, parent);
    if (columns && columns.length) {
      const head = el("tr", {}, el("thead", {}, t));
      columns.forEach(column => {
        const c = typeof column === "string" ? {label: column} : column;
        el("th", {class: c.n ? "n" : null, title: c.title}, head, c.label);
      });
    }
    const body = el("tbody", {}, t);
    rows.forEach(row => {
      const spec = Array.isArray(row) ? {cells: row} : row;
      const tr = el("tr", {class: spec.cls, title: spec.title}, body);
      let column = 0;
      spec.cells.forEach(cell => {
        if (typeof cell === "number") cell = num(cell);
        const c = cell !== null && typeof cell === "object" && !(cell instanceof Node) ? cell : {text: cell};
        const classes = [c.n ? "n" : "", c.cls || ""].join(" ").trim();
        const td = el("td", {class: classes || null, title: c.title, colspan: c.colspan, "data-col": column}, tr);
        if (c.value !== undefined && c.value !== null) td.dataset.value = String(c.value);
        const content = cell instanceof Node ? cell : c.node;
        if (content) td.appendChild(content);
        else td.textContent = c.text === null || c.text === undefined ? "" : String(c.text);
        column += Number(c.colspan || 1);
      });
    });
    return t;
  }

  /* Heat-map colouring of numeric columns: each cell's background grows with its value relative
     to the largest in its column. `colour` is an "r, g, b" triple. */
  function heat(tableNode, columns, colour = "26, 115, 232") {
    columns.forEach(column => {
      const cells = [...tableNode.querySelectorAll(`td[data-col="${column}"][data-value]`)];
      const top = Math.max(0, ...cells.map(td => Math.abs(Number(td.dataset.value))));
      if (!(top > 0)) return;
      cells.forEach(td => {
        const share = Math.abs(Number(td.dataset.value)) / top;
        if (share > 0) td.style.background = `rgba(${colour}, ${(0.05 + 0.33 * share).toFixed(3)})`;
      });
    });
  }

  function details(parent, summary, open = false) {
    const node = el("details", {open: open || null}, parent);
    el("summary", {}, node, summary);
    return node;
  }

  /* The lint of a comparison or a sweep as the document groups it (analysis/lint.py grouped): one
     row per rule and side, with where and how many; the runs a group was found in are folded
     under its message, each with its own message when they differ. */
  function lintGroups(parent, groups) {
    return table(parent, ["severity", "rule", "about", "finding", "why it matters"], groups.map(g => {
      const what = el("div");
      el("div", {}, what, g.message + (g.excluded ? " (a run not used: this finding does not count)" : ""));
      if (g.scope === "run" && g.count > 1) {
        const fold = details(what, g.same_message ? `the ${g.count} runs` : `the ${g.count} runs, each with its figures`);
        const list = el("ul", {class: "runs"}, fold);
        g.findings.forEach(f => el("li", {}, list, g.same_message ? f.subject : `${f.subject}: ${f.message}`));
      }
      return {cls: g.excluded ? "dim" : "lint-" + g.severity,
              cells: [el("span", {class: "sev-" + g.severity}, null, g.severity), `${g.rule} ${g.title}`,
                      {text: g.about, cls: "what"}, what,
                      {text: g.why, cls: "why"}]};
    }), {id: "lint-table"});
  }

  // A titled chart container (its note says what is drawn and from where).
  function chartBox(parent, id, title, text) {
    const box = el("div", {class: "chart-box"}, parent);
    el("h3", {}, box, title);
    if (text) note(box, text);
    return el("div", {class: "chart", id}, box);
  }

  // ---------------------------------------------------------------- uPlot plumbing
  // Tick labels with as many decimals as the tick step needs (a step of 2.5 needs one).
  function tickValues(u, splits, axisIdx, space, incr) {
    let digits = 0;
    if (isNumber(incr)) {
      while (digits < 6 && Math.abs(Math.round(incr * 10 ** digits) - incr * 10 ** digits) > 1e-6) digits++;
    }
    return splits.map(v => v === null ? "" : fmt(v, digits));
  }

  // Tick steps for counts (transactions, attachments): whole numbers only.
  const WHOLE_STEPS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2500, 5e3, 1e4, 2e4, 25e3, 5e4,
                       1e5, 2e5, 25e4, 5e5, 1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8, 2e8, 5e8, 1e9, 2e9, 5e9];

  // Axis width from its longest tick label, so "1,234,567" is never clipped.
  function axisSize(u, values, axisIdx, cycleNum) {
    const axis = u.axes[axisIdx];
    if (cycleNum > 1) return axis._size;
    let size = axis.ticks.size + axis.gap + 6 + (axis.label ? 22 : 0);
    const longest = (values || []).reduce((a, v) => String(v).length > a.length ? String(v) : a, "");
    if (longest) {
      u.ctx.font = axis.font[0];
      size += u.ctx.measureText(longest).width / uPlot.pxRatio;
    }
    return Math.ceil(size);
  }

  function widthOf(container) {
    return Math.max(280, container.clientWidth || 800);
  }

  function empty(container, text) {
    container.textContent = "";
    note(container, text);
    container.dataset.empty = "true";
    return null;
  }

  function alpha(hex, a) {
    const v = parseInt(hex.slice(1), 16);
    return `rgba(${v >> 16 & 255}, ${v >> 8 & 255}, ${v & 255}, ${a})`;
  }

  function track(container, u, height) {
    charts.push({container, u, height});
    container.dataset.series = String(u.series.length - 1);
    return u;
  }

  // Shaded x ranges ({from, to, label}) under the grid and the lines, labelled at the top.
  function shadeRanges(u, ranges) {
    const {ctx, bbox} = u;
    ranges.forEach(range => {
      if (!isNumber(range.from) || !isNumber(range.to) || range.to <= range.from) return;
      const left = Math.max(bbox.left, u.valToPos(range.from, "x", true));
      const right = Math.min(bbox.left + bbox.width, u.valToPos(range.to, "x", true));
      if (right <= left) return;
      ctx.save();
      ctx.fillStyle = range.colour || SHADE;
      ctx.fillRect(left, bbox.top, right - left, bbox.height);
      ctx.restore();
    });
  }

  // The ranges' names, over the grid and the lines so that neither hides them.
  function labelRanges(u, ranges) {
    const {ctx, bbox} = u;
    const px = uPlot.pxRatio;
    ranges.forEach(range => {
      if (!range.label || !isNumber(range.from) || !isNumber(range.to) || range.to <= range.from) return;
      const left = Math.max(bbox.left, u.valToPos(range.from, "x", true));
      ctx.save();
      ctx.font = `${Math.round(11 * px)}px system-ui, sans-serif`;
      ctx.textBaseline = "top";
      ctx.textAlign = "left";  // uPlot leaves the last axis' alignment on the context
      const width = ctx.measureText(range.label).width;
      ctx.fillStyle = "rgba(255, 255, 255, 0.85)";
      ctx.fillRect(left + 2 * px, bbox.top + 2 * px, width + 4 * px, 14 * px);
      ctx.fillStyle = "#4a5160";
      ctx.fillText(range.label, left + 4 * px, bbox.top + 3 * px);
      ctx.restore();
    });
  }

  // Horizontal reference lines ({value, label}), e.g. a ratio of 1 = "no change".
  function drawRefs(u, refs) {
    const {ctx, bbox} = u;
    const px = uPlot.pxRatio;
    refs.forEach(ref => {
      if (!isNumber(ref.value)) return;
      const y = Math.round(u.valToPos(ref.value, "y", true)) + 0.5;
      if (y < bbox.top || y > bbox.top + bbox.height) return;
      ctx.save();
      ctx.strokeStyle = "#5f6368";
      ctx.lineWidth = px;
      ctx.setLineDash([4 * px, 4 * px]);
      ctx.beginPath();
      ctx.moveTo(bbox.left, y);
      ctx.lineTo(bbox.left + bbox.width, y);
      ctx.stroke();
      if (ref.label) {
        ctx.fillStyle = "#4a5160";
        ctx.font = `${Math.round(11 * px)}px system-ui, sans-serif`;
        ctx.textAlign = "right";
        ctx.textBaseline = "bottom";
        ctx.fillText(ref.label, bbox.left + bbox.width - 4 * px, y - 2 * px);
      }
      ctx.restore();
    });
  }

  function shadeKey(container, ranges) {
    const shown = ranges.filter(r => isNumber(r.from) && isNumber(r.to) && r.to > r.from);
    if (!shown.length) return;
    const key = el("div", {class: "band-key"}, container);
    shown.forEach(range => {
      el("i", {style: `background: ${range.colour || SHADE}`}, key);
      key.appendChild(document.createTextNode((range.key || range.label) + "  "));
    });
    container.dataset.shaded = shown.map(r => r.name || r.label).join(",");
  }

  /* lineChart(container, spec): one line per series over a shared numeric x.
     spec = {x: [...], xLabel, xValue(x, idx) → legend text, yLabel (name and unit), unit (legend
             suffix), digits, whole (counts: whole-number ticks), series: [{label, values, colour,
             width, dash, show, lo, hi, spanGaps}], shade: [{from, to, label, key, colour, name (data-shaded; default
             the label)}], refs: [{value, label}]
             (horizontal reference lines), sync: key, xMin, xMax, yMin0 (default true), points
             (false: no dots on the values), height, empty}
     A series with lo/hi arrays gets a shaded band between them (a 95 % CI) whose values the
     legend shows as "value [lo – hi]"; the band follows its series when toggled. */
  function lineChart(container, spec) {
    container.textContent = "";
    const given = (spec.series || []).filter(s => s && Array.isArray(s.values));
    const hasData = given.some(s => s.values.some(isNumber));
    if (!spec.x || !spec.x.length || !hasData) return empty(container, spec.empty || "No data for this chart.");
    const unit = spec.unit ? " " + spec.unit : "";
    const clean = values => spec.x.map((_, i) => isNumber(values[i]) ? values[i] : null);
    const data = [spec.x];
    const series = [{label: spec.xName || "x",
                     value: (u, v, si, idx) => idx === null || v === null ? "–"
                       : spec.xValue ? spec.xValue(v, idx) : fmt(v)}];
    const bands = [];
    const partners = {};  // main series index → [hi, lo] series indices
    given.forEach((s, i) => {
      const colour = s.colour || COLOURS[i % COLOURS.length];
      const values = clean(s.values);
      data.push(values);
      const lo = s.lo ? clean(s.lo) : null, hi = s.hi ? clean(s.hi) : null;
      series.push({
        label: s.label, stroke: colour, width: s.width || 1.5, dash: s.dash, show: s.show !== false,
        spanGaps: !!s.spanGaps,  // join the values across x positions the series has no value at
        // Dots on the values where they are few enough to tell apart (uPlot decides), never otherwise.
        points: {...(spec.points === false ? {show: false} : {}), size: 4, fill: colour, stroke: colour},
        value: (u, v, si, idx) => {
          if (idx === null || v === null) return "–";
          const text = fmt(v, spec.digits) + unit;
          return lo && hi ? `${text} [${fmt(lo[idx], spec.digits)} – ${fmt(hi[idx], spec.digits)}]` : text;
        },
      });
      s._colour = colour;
      s._lo = lo;
      s._hi = hi;
    });
    given.forEach((s, i) => {
      if (!s._lo || !s._hi) return;
      const hiIndex = data.length, loIndex = data.length + 1;
      data.push(s._hi, s._lo);
      const edge = {stroke: alpha(s._colour, 0.35), width: 1, show: s.show !== false, points: {show: false}};
      series.push({...edge, label: s.label + " 95 % CI high"}, {...edge, label: s.label + " 95 % CI low"});
      bands.push({series: [hiIndex, loIndex], fill: alpha(s._colour, 0.14)});
      partners[i + 1] = [hiIndex, loIndex];
    });
    const shade = spec.shade || [];
    const height = spec.height || 250;
    let mirroring = false;
    const opts = {
      width: widthOf(container), height,
      scales: {
        x: {time: false, range: (u, min, max) => [isNumber(spec.xMin) ? Math.min(spec.xMin, min) : min,
                                                  isNumber(spec.xMax) ? Math.max(spec.xMax, max) : max]},
        y: {range: (u, min, max) => {
          if (!isNumber(min) || !isNumber(max)) return [0, 1];
          const low = spec.yMin0 === false ? min : Math.min(0, min);
          return uPlot.rangeNum(low, Math.max(max, low + 1e-9), 0.1, true);
        }},
      },
      axes: [
        // spec.xNames: one name per x position 0, 1, 2 … (a track series' points), ticks at whole positions only.
        spec.xNames ? {...AXIS, label: spec.xLabel, size: 24, labelSize: 18, labelGap: 0, incrs: WHOLE_STEPS,
                       values: (u, splits) => splits.map(v => Number.isInteger(v) ? spec.xNames[v] ?? "" : "")}
                    : {...AXIS, label: spec.xLabel, values: tickValues, size: 24, labelSize: 18, labelGap: 0},
        {...AXIS, label: spec.yLabel, values: tickValues, size: axisSize, incrs: spec.whole ? WHOLE_STEPS : undefined},
      ],
      series, bands,
      legend: LEGEND,
      cursor: {sync: spec.sync ? {key: spec.sync} : undefined, drag: {x: true, y: false}, points: {size: 7}},
      hooks: {
        drawClear: [u => shadeRanges(u, shade)],
        draw: [u => { drawRefs(u, spec.refs || []); labelRanges(u, shade); container.dataset.rendered = "true"; }],
        setSeries: [(u, index, change) => {
          // A CI band belongs to its line: toggling the line toggles the band.
          if (mirroring || !partners[index] || !change || !("show" in change)) return;
          mirroring = true;
          partners[index].forEach(p => u.setSeries(p, {show: change.show}));
          mirroring = false;
        }],
      },
    };
    const u = new uPlot(opts, data, container);
    // The band edges are drawn but not listed: the line's legend entry shows their values.
    const rows = u.root.querySelectorAll(".u-legend .u-series");
    Object.values(partners).flat().forEach(index => { if (rows[index]) rows[index].style.display = "none"; });
    shadeKey(container, shade);
    return track(container, u, height);
  }

  /* barChart(container, spec): grouped bars, one group per category.
     spec = {categories: [...], categoryName, series: [{label, values, colour}], valueLabel (name
             and unit), unit (legend suffix), digits, horizontal, height, empty} */
  function barChart(container, spec) {
    container.textContent = "";
    const categories = spec.categories || [];
    const given = (spec.series || []).filter(s => s && Array.isArray(s.values));
    if (!categories.length || !given.some(s => s.values.some(isNumber))) {
      return empty(container, spec.empty || "No data for this chart.");
    }
    const n = categories.length, k = given.length;
    const slot = 0.84 / k;  // a group takes 84 % of its category's width
    const x = categories.map((_, i) => i);
    const unit = spec.unit ? " " + spec.unit : "";
    const data = [x];
    const series = [{label: spec.categoryName || "category", value: (u, v) => v === null ? "–" : categories[Math.round(v)]}];
    const width = slot * 0.92;  // a bar, in category units (a category is 1)
    given.forEach((s, j) => {
      const colour = s.colour || COLOURS[j % COLOURS.length];
      // uPlot 1.6 draws a bar placed by disp.x0 from x0 on (not centred on it): x0 is the bar's start.
      const start = (j - (k - 1) / 2) * slot - width / 2;
      data.push(x.map(i => isNumber(s.values[i]) ? s.values[i] : null));
      series.push({
        label: s.label, stroke: colour, fill: colour, width: 0, points: {show: false},
        paths: uPlot.paths.bars({
          size: [1, Infinity, 1],
          // uPlot's disp: each series' bars at their own place in the group (x units).
          // x0 in x units, size as a share of the plot's extent along the categories.
          disp: {x0: {unit: 1, values: () => x.map(i => i + start)},
                 size: {unit: 2, values: () => x.map(() => width / n)}},
        }),
        value: (u, v) => v === null ? "–" : fmt(v, spec.digits) + unit,
      });
    });
    const horizontal = !!spec.horizontal;
    const height = spec.height || (horizontal ? Math.max(140, n * (8 + 9 * k) + 70) : 260);
    const categoryAxis = {
      ...AXIS, grid: {show: false}, ticks: {show: false}, splits: () => x,
      values: (u, splits) => splits.map(v => Number.isInteger(v) ? categories[v] ?? "" : ""),
      side: horizontal ? 3 : 2, size: horizontal ? axisSize : 24, labelSize: 18, labelGap: 0,
      label: horizontal ? null : spec.categoryName,
    };
    const valueAxis = {...AXIS, label: spec.valueLabel, values: tickValues, side: horizontal ? 2 : 3,
                       size: horizontal ? 24 : axisSize, labelSize: horizontal ? 18 : 30, labelGap: 0,
                       space: horizontal ? 80 : 30};
    const opts = {
      width: widthOf(container), height,
      scales: {
        // Horizontal bars list the first category at the top.
        x: {time: false, ori: horizontal ? 1 : 0, dir: horizontal ? -1 : 1, range: () => [-0.5, n - 0.5]},
        y: {ori: horizontal ? 0 : 1, dir: 1, range: (u, min, max) =>
          uPlot.rangeNum(0, isNumber(max) && max > 0 ? max : 1, 0.1, true)},
      },
      axes: [categoryAxis, valueAxis],
      series,
      legend: LEGEND,
      cursor: {drag: {x: false, y: false}, points: {show: false}},
      hooks: {draw: [() => { container.dataset.rendered = "true"; }]},
    };
    const u = new uPlot(opts, data, container);
    return track(container, u, height);
  }

  const RATIO_FLOOR = 1e-6;  // the ratio chart's log scale: 1e-6 to 1e6 at the most

  /* ratioChart(container, spec): ratios with their 95 % intervals, one row per category (a figure):
     per series a dot at the ratio and a whisker over its interval, and a dashed line at 1 (no
     change). Categories run down the chart, the ratio across it (on a log scale when the ratios
     span more than a factor of 4).
     spec = {categories: [...], categoryName, series: [{label, colour, values, lo, hi}], valueLabel,
             digits, height, empty} */
  function ratioChart(container, spec) {
    container.textContent = "";
    const categories = spec.categories || [];
    const given = (spec.series || []).filter(s => s && Array.isArray(s.values));
    if (!categories.length || !given.some(s => s.values.some(isNumber))) {
      return empty(container, spec.empty || "No ratio to draw.");
    }
    container.dataset.categories = JSON.stringify(categories);  // drawn on a canvas: the names for a reader of the DOM
    const n = categories.length, k = given.length;
    const digits = spec.digits === undefined ? 3 : spec.digits;
    const x = categories.map((_, i) => i);
    const step = Math.min(0.25, 0.7 / k);
    const offset = j => (j - (k - 1) / 2) * step;  // series side by side within a category's row
    const data = [x];
    const series = [{label: spec.categoryName || "figure", value: (u, v) => v === null ? "–" : categories[Math.round(v)] ?? "–"}];
    given.forEach((s, j) => {
      s._colour = s.colour || COLOURS[j % COLOURS.length];
      s._lo = x.map(i => s.lo && isNumber(s.lo[i]) ? s.lo[i] : null);
      s._hi = x.map(i => s.hi && isNumber(s.hi[i]) ? s.hi[i] : null);
      data.push(x.map(i => isNumber(s.values[i]) ? s.values[i] : null));
      series.push({
        label: s.label, stroke: s._colour, width: 0, paths: () => null, points: {show: false},
        value: (u, v, si, idx) => {
          if (idx === null || v === null) return "–";
          const lo = s._lo[idx], hi = s._hi[idx];
          return fmt(v, digits) + (isNumber(lo) && isNumber(hi) ? ` [${fmt(lo, digits)} – ${fmt(hi, digits)}]` : " (no interval)");
        },
      });
    });
    const all = given.flatMap(s => [...s.values, ...s._lo, ...s._hi]).filter(v => isNumber(v) && v > 0);
    const low = Math.min(1, ...all), high = Math.max(1, ...all);
    // Ratios spanning more than a factor of 4 on a log scale, where 0.5 and 2 lie as far from 1;
    // narrower ones on a linear scale, whose ticks read better.
    const log = high / low > 4;
    // At least ±0.5 % around the ratios: a span within rounding error of them (1 and
    // 1.0000000000000004) leaves uPlot no tick step above their precision, and its tick loop
    // grows an array until "Invalid array length".
    const pad = Math.max((high - low) * 0.08, 0.005);
    // A log scale from one power of ten to another, within a millionfold either way: uPlot steps
    // its log ticks from the scale's minimum, and from one that is no power of ten (0.0987) or a
    // tiny one (1e-22) the steps round to nothing and its tick loop grows an array until "Invalid
    // array length" (or runs on). A whisker beyond the scale ends at its edge; the legend keeps
    // the bound's value.
    const decade = (v, round) => 10 ** round(Math.log10(v) + (round === Math.floor ? 1e-9 : -1e-9));
    const range = log ? [Math.max(decade(low / 1.05, Math.floor), RATIO_FLOOR),
                         Math.min(decade(high * 1.05, Math.ceil), 1 / RATIO_FLOOR)]
                      : [Math.max(0, low - pad), high + pad];
    const height = spec.height || Math.max(150, n * (10 + 12 * k) + 70);
    const px = uPlot.pxRatio;
    const draw = u => {
      const {ctx, bbox} = u;
      ctx.save();
      ctx.beginPath();
      ctx.rect(bbox.left, bbox.top, bbox.width, bbox.height);
      ctx.clip();  // a whisker beyond the scale ends at its edge
      const one = Math.round(u.valToPos(1, "y", true)) + 0.5;
      ctx.strokeStyle = "#5f6368";
      ctx.lineWidth = px;
      ctx.setLineDash([4 * px, 4 * px]);
      ctx.beginPath();
      ctx.moveTo(one, bbox.top);
      ctx.lineTo(one, bbox.top + bbox.height);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = "#4a5160";
      ctx.font = `${Math.round(11 * px)}px system-ui, sans-serif`;
      ctx.textAlign = "left";
      ctx.textBaseline = "top";
      ctx.fillText("no change", one + 4 * px, bbox.top + 2 * px);
      given.forEach((s, j) => {
        if (!u.series[j + 1].show) return;
        x.forEach(i => {
          const v = data[j + 1][i];
          if (!isNumber(v)) return;
          const y = u.valToPos(i + offset(j), "x", true);
          ctx.strokeStyle = s._colour;
          ctx.fillStyle = s._colour;
          ctx.lineWidth = 2 * px;
          if (isNumber(s._lo[i]) && isNumber(s._hi[i])) {
            const a = u.valToPos(s._lo[i], "y", true), b = u.valToPos(s._hi[i], "y", true);
            ctx.beginPath();
            ctx.moveTo(a, y); ctx.lineTo(b, y);
            ctx.moveTo(a, y - 4 * px); ctx.lineTo(a, y + 4 * px);
            ctx.moveTo(b, y - 4 * px); ctx.lineTo(b, y + 4 * px);
            ctx.stroke();
          }
          ctx.beginPath();
          ctx.arc(u.valToPos(v, "y", true), y, 4 * px, 0, 2 * Math.PI);
          ctx.fill();
        });
      });
      ctx.restore();
      container.dataset.rendered = "true";
    };
    const opts = {
      width: widthOf(container), height,
      scales: {
        x: {time: false, ori: 1, dir: -1, range: () => [-0.5, n - 0.5]},
        y: {ori: 0, dir: 1, distr: log ? 3 : 1, log: 10, range: () => range},
      },
      axes: [
        {...AXIS, grid: {show: false}, ticks: {show: false}, splits: () => x, side: 3, size: axisSize,
         values: (u, splits) => splits.map(v => Number.isInteger(v) ? categories[v] ?? "" : "")},
        {...AXIS, label: spec.valueLabel, side: 2, size: 24, labelSize: 18, labelGap: 0, space: log ? 20 : 60,
         // A log axis labels 1, 2 and 5 times a power of ten only (its other ticks stay unlabelled).
         values: log ? (u, splits) => splits.map(v => {
           const mantissa = v / 10 ** Math.floor(Math.log10(v) + 1e-9);
           return [1, 2, 5].some(m => Math.abs(mantissa - m) < 1e-6) ? fmt(v) : "";
         }) : tickValues},
      ],
      series,
      legend: LEGEND,
      cursor: {drag: {x: false, y: false}, points: {show: false}},
      hooks: {draw: [draw]},
    };
    const u = new uPlot(opts, data, container);
    return track(container, u, height);
  }

  // Charts follow their container's width.
  function fit() {
    charts.forEach(c => {
      const width = widthOf(c.container);
      if (Math.abs(width - c.u.width) > 1) c.u.setSize({width, height: c.height});
    });
  }
  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(fit, 100);
  });

  return {COLOURS, TOTAL, SHADE, data, section, done, errors, charts, isNumber, fmt, fmtDelta, fmtMB, fmtTime,
          perSecond, colourOf, el, note, num, withUnit, table, heat, details, lintGroups, chartBox, lineChart, barChart, ratioChart};
})();
