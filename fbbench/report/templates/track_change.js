"use strict";
/* What the engine did between two points of a track series: fills track_change.html. */
const change = fbb.data();
const {el, fmt, note, table, isNumber} = fbb;

fbb.section("header", () => {
  document.getElementById("benchmark").textContent = change.benchmark;
  document.getElementById("transition").textContent = `${change.before.label} → ${change.after.label}`;
  document.getElementById("back").setAttribute("href", change.series_page);
});

fbb.section("verdict", () => {
  const box = document.getElementById("verdict");
  el("div", {class: change.regression ? "verdict fail" : "verdict resolved", id: "cause"}, box, change.cause);
  note(box, `Points ${change.before.label} (${change.before.engine_build || change.before.engine}) and ` +
            `${change.after.label} (${change.after.engine_build || change.after.engine}).`);
});

fbb.section("moved", () => {
  const box = document.getElementById("moved");
  if (!change.figures.length) return note(box, "No figure moved: only plans changed.");
  table(box, ["figure", "change", "p-value", "method"],
        change.figures.map(f => [f.figure, f.text, {text: fmt(f.p_value, 3), n: true}, f.method]), {id: "moved-table"});
});

fbb.section("plans", () => {
  const box = document.getElementById("plans");
  if (!change.plans.length) return note(box, "No plan changed between the two points.");
  change.plans.forEach(plan => {
    el("h3", {}, box, `${plan.name}: ${plan.change}`);
    if (plan.sql) el("pre", {class: "sql"}, box, plan.sql);
    if (plan.change !== "plan") return;
    const pair = el("div", {class: "side-by-side"}, box);
    [["before", change.before.label], ["after", change.after.label]].forEach(([side, label]) => {
      const column = el("div", {}, pair);
      el("b", {}, column, label);
      el("pre", {class: "plan"}, column, plan[side] || "(none)");
    });
  });
});

fbb.section("tables", () => {
  const box = document.getElementById("tables");
  const names = [...new Set([...Object.keys(change.tables.before), ...Object.keys(change.tables.after)])].sort();
  if (!names.length) return note(box, "No table statistics: the engine was not sampled (--no-monitor).");
  const keys = ["seq_reads", "idx_reads", "inserts", "updates", "deletes", "backouts", "purges", "expunges"];
  const rows = [];
  names.forEach(name => {
    ["before", "after"].forEach(side => {
      const t = change.tables[side][name] || {};
      rows.push({cls: side === "after" ? "after" : null,
                 cells: [side === "before" ? name : "", change[side].label,
                         ...keys.map(k => ({text: fmt(t.per_unit ? t.per_unit[k] : null, 2), n: true})),
                         {text: fmt(t.records), n: true}, {text: fmt(t.versions), n: true},
                         {text: fmt(t.max_versions), n: true}]});
    });
  });
  table(box, ["table", "point", ...keys.map(k => k.replace("_", " ") + "/unit"), "records", "versions",
              "max versions"], rows, {id: "tables-table"});
});

fbb.done();
