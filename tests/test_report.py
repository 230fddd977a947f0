"""The single-file HTML report, rendered by headless Chromium from real runs.

One watched TPC-C run on embedded 5.0 (module-scoped, tiny: 1,000 items, 2 attachments, 1 s
warm-up, 4 s measured), one under --no-monitor, one that fails before measuring; a copy of the
real document with gstat flags, an unreadable gstat and a heavy sampling added; and a page of the
framework's own (render_page) with a 95 % CI band. A page passes when its script ran to its last
line (<body data-rendered="true">) without an error, every chart container was drawn by uPlot
(a canvas with a size, the expected names in its legend), and its tables hold the document's figures.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fbbench.report import html
from tests import chromium
from tests.conftest import run_cli

SCALE = ("--scale", "items=1000", "--scale", "customers=100", "--scale", "orders=100")
TIMED = ("--connections", "2", "--warmup", "1s", "--duration", "4s", "--interval", "1s")
UNITS = ["delivery", "new_order", "order_status", "payment", "stock_level"]
TPCC_TABLES = {"WAREHOUSE", "DISTRICT", "CUSTOMER", "HISTORY", "NEW_ORDER", "ORDERS", "ORDER_LINE", "ITEM", "STOCK"}
# User text that must neither end the report's <script> early nor become markup.
TAG = "e2e </script><b>bold</b> <!-- x"
BANK = Path(__file__).parent / "workloads" / "bank"

# Every chart of a watched run: its container's id → the series its legend names (after the x series).
CHARTS = {
    "throughput": ["all units", *UNITS],
    "latency-time": [f"{unit} p95" for unit in UNITS],
    "latency-units": ["p50", "p90", "p95", "p99"],
    "engine-pages": ["page reads", "page writes"],
    "engine-cache": ["page fetches", "page marks"],
    "engine-records": ["sequential reads", "indexed reads", "inserts", "updates", "deletes"],
    "engine-garbage": ["backouts", "purges", "expunges", "imgc"],
    "engine-contention": ["record conflicts", "record waits", "record locks", "units ended by a conflict"],
    "engine-gaps": ["Next − OIT", "Next − OAT"],
    "engine-size": ["database size", "memory used", "memory allocated", "attachments' memory used",
                    "attachments' memory allocated"],
    # Levels (MB) and rates (MB/s) apart: on one axis the rates lay flat at 0.
    "engine-os-cache": ["available memory", "page cache", "dirty + writeback"],
    "engine-os-reads": ["engine page reads", "block reads from storage"],
    "engine-activity": ["active attachments", "active transactions"],
    "busiest-chart": ["reads", "writes"],
}


@dataclass
class Run:
    doc: dict[str, Any]
    report: Path


def _run(out: Path, *args: str, workload: str = "tpcc", ok: bool = True) -> Run:
    out.mkdir(parents=True, exist_ok=True)
    json_path, report = out / "run.json", out / "report.html"
    cli = run_cli("run", workload, *args, "--json", str(json_path), "--report", str(report), timeout=300)
    assert (cli.returncode == 0) == ok, cli.stdout[-3000:] + cli.stderr[-3000:]
    assert "Traceback" not in cli.stdout + cli.stderr, cli.stderr
    assert json_path.is_file() and report.is_file(), cli.stdout[-2000:] + cli.stderr[-2000:]
    return Run(json.loads(json_path.read_text()), report)


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run(tmp_path_factory.mktemp("report-watched"), *SCALE, "--engine", "5.0", *TIMED, "--tag", TAG)


def _render(page: Path, tmp_path: Path) -> chromium.Rendered:
    return chromium.render_ok(page, tmp_path / "chromium-profile")


def assert_chart(dom: chromium.Node, chart_id: str, series: list[str]) -> None:
    chart = dom.by_id(chart_id)
    assert chart.attrs.get("data-rendered") == "true", chart_id
    sizes = chromium.canvases(chart)
    assert len(sizes) == 1 and sizes[0][0] > 200 and sizes[0][1] > 100, (chart_id, sizes)
    assert chromium.legend(chart)[1:] == series, (chart_id, chromium.legend(chart))


# ------------------------------------------------------------------ a watched run


def test_report_renders_its_charts(watched: Run, tmp_path: Path) -> None:
    dom = _render(watched.report, tmp_path).body
    for chart_id, series in CHARTS.items():
        assert_chart(dom, chart_id, series)
    assert int(dom.attrs["data-charts"]) == len(CHARTS)
    # The warm-up is shaded on every time chart; the legend says so.
    for chart_id in ("throughput", "latency-time", "engine-pages", "engine-gaps"):
        assert dom.by_id(chart_id).attrs.get("data-shaded") == "warm-up", chart_id
    assert "warm-up (not measured)" in dom.by_id("throughput").text
    # Units keep one colour across charts: delivery's marker is the same in throughput and latency.
    markers = {chart_id: {row.all(cls="u-label")[0].text.removesuffix(" p95"): row.all(cls="u-marker")[0].attrs["style"]
                          for row in dom.by_id(chart_id).all("tr", "u-series")[1:]}
               for chart_id in ("throughput", "latency-time")}
    assert all(markers["throughput"][unit] == markers["latency-time"][unit] for unit in UNITS), markers


def test_legends_show_values_only_under_the_cursor_and_wide_tables_scroll(watched: Run, tmp_path: Path) -> None:
    """A page read without a cursor on a chart showed "x: –" and a dash beside every series; the
    gstat tables were cut off on the right."""
    shown = chromium.probe(watched.report, tmp_path / "probe", "JSON.stringify(["
                           "getComputedStyle(document.querySelector('#throughput .u-legend .u-value')).display, "
                           "getComputedStyle(document.querySelector('#throughput .u-legend .u-series')).display, "
                           "getComputedStyle(document.getElementById('gstat')).overflowX])")
    assert json.loads(shown) == ["none", "none", "auto"], shown


def test_report_shows_the_documents_figures(watched: Run, tmp_path: Path) -> None:
    doc = watched.doc
    dom = _render(watched.report, tmp_path).body
    text = dom.text
    assert dom.by_id("status").text == "completed"
    headline = doc["headline"]
    figure = dom.by_id("headline-figure").text
    assert f"{headline['value']:,.0f}" in figure and headline["name"] in figure and "higher is better" in figure
    nopm = next(box for box in dom.by_id("headline").all("div", "figure") if "NOPM" in box.text)
    assert doc["metric_units"]["NOPM"] == "/min" and f"{doc['metrics']['NOPM']:,.0f} /min" in nopm.text, nopm.text
    assert "NOPM" in dom.by_id("metric-windows").text
    # Units, checks and audits, conditions.
    assert all(unit in dom.by_id("units-table").text for unit in UNITS)
    assert len(dom.by_id("checks").all("span", "pass")) >= 12 and dom.by_id("checks").text.count("3.3.2.") == 12
    conditions = dom.by_id("conditions").text
    assert doc["engine"]["version"].splitlines()[0] in conditions
    assert f"seed {doc['seed']}" in conditions  # a 64-bit seed, not rounded to a double
    # The tag is shown as text: it neither ended the data <script> early nor became markup.
    assert TAG in conditions and not dom.by_id("conditions").all("b")
    # How Firebird worked: rates, the busiest tables, gstat of the nine TPC-C tables, the log, the cost.
    assert "per measured second" in dom.by_id("engine-rates").text
    busiest = [row.all("td")[0].text for row in dom.by_id("busiest-table").all("tr")[1:]]
    assert "ORDER_LINE" in busiest[:4], busiest
    gstat_tables = {row.all("td")[0].text for row in dom.by_id("gstat-tables").all("tr")[1:] if row.all("td")}
    assert gstat_tables >= TPCC_TABLES, gstat_tables
    order_line = doc["tables"]["ORDER_LINE"]
    assert f"+{order_line['gstat_delta']['records']:,}" in dom.by_id("gstat-tables").text
    assert dom.has_id("gstat-index-table") and "ORDER_LINE_PK" in dom.by_id("gstat-index-table").text
    for flag in doc["gstat_flags"]:  # a real run's flags, when it has any, next to their rows
        assert flag["text"] in dom.by_id("gstat").text
    findings = dom.by_id("log-findings")
    if doc["log_findings"]:
        # As the log wrote them (e.g. "Sweep is started by SYSDBA"), the kind with <name>s on hover.
        assert all(f["detail"]["text"] in findings.text for f in doc["log_findings"]), findings.text
        messages = [row.all("td")[1].text for row in findings.all("tr")[1:]]
        assert messages and not [m for m in messages if "<" in m], messages
    else:
        assert "Nothing new" in findings.text
    assert f"{doc['sampling']['readings']} reading(s)" in dom.by_id("watching").text
    assert "Not watched" not in dom.by_id("engine-note").text
    assert "firebird.log" in text


def test_report_opens_offline(watched: Run) -> None:
    page = watched.report.read_text()
    assert page.lstrip().lower().startswith("<!doctype html>")
    external = re.findall(r"""(?:src|href|action|poster)\s*=\s*["']?\s*(?:https?:)?//""", page, re.IGNORECASE)
    assert not external, external
    assert not re.search(r"""url\(\s*["']?\s*(?:https?:)?//|@import""", page, re.IGNORECASE)
    assert not re.search(r"<(?:link|iframe|img|object|embed)\b", page, re.IGNORECASE)
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.IGNORECASE)
    assert not re.search(r"""fetch\(|XMLHttpRequest|import\(|new WebSocket|navigator\.sendBeacon""", page)
    # uPlot is inlined as vendored, byte for byte.
    assert (Path(html.__file__).with_name("vendor") / "uplot" / "uPlot.iife.min.js").read_text() in page
    # The run document is embedded whole, and "</script>" in it did not end its element.
    data = re.search(r'<script type="application/json" id="page-data">(.*?)</script>', page, re.DOTALL)
    assert data is not None
    embedded = json.loads(data.group(1))
    assert embedded["run_id"] == watched.doc["run_id"]
    assert embedded["tags"] == [TAG]
    assert embedded["seed"] == str(watched.doc["seed"])


# ------------------------------------------------------------------ what a run may lack


def test_report_without_monitor_says_so(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    run = _run(tmp_path_factory.mktemp("report-nomon"), *SCALE, "--engine", "5.0", *TIMED, "--no-monitor")
    dom = _render(run.report, tmp_path).body
    assert "Not watched (--no-monitor)" in dom.by_id("engine-note").text
    assert not dom.by_id("engine-charts").all("div", "chart")  # no engine charts, not empty ones
    for section in ("busiest-tables", "gstat", "gstat-indices"):
        assert "Not watched (--no-monitor)" in dom.by_id(section).text, section
    # The load's own charts are still there.
    assert_chart(dom, "throughput", ["all units", *UNITS])
    assert_chart(dom, "latency-units", ["p50", "p90", "p95", "p99"])


def test_report_of_a_run_that_failed_before_measuring(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    out = tmp_path_factory.mktemp("report-failed")
    workload = out / "bank"
    shutil.copytree(BANK, workload)
    toml = workload / "workload.toml"
    toml.write_text(toml.read_text().replace("select count(*) from account a", "select count(*) from acount a"))
    run = _run(out, "--connections", "2", "--warmup", "1s", "--duration", "2s", "--no-sweep",
               workload=str(workload), ok=False)
    assert run.doc["status"] == "failed" and not run.doc["intervals"]
    dom = _render(run.report, tmp_path).body
    assert dom.by_id("status").text == "failed"
    assert "does not prepare" in dom.by_id("failure").text
    assert dom.by_id("throughput").attrs.get("data-empty") == "true"
    assert "No intervals were measured" in dom.by_id("throughput").text
    assert "No engine readings" in dom.by_id("engine-note").text
    assert "ACCOUNT" in dom.by_id("gstat-tables").text  # gstat before the run was taken
    assert "No gstat after the run" in dom.by_id("gstat").text


def test_report_shows_flags_problems_and_warnings(watched: Run, tmp_path: Path) -> None:
    # The real document with what a troubled run would add: gstat flags on a table and an index, a
    # gstat after the run that could not be read, a heavy sampling, an error in firebird.log, and
    # values JSON cannot carry (NaN) or a script must not see ("</script>", "<!--").
    doc = copy.deepcopy(watched.doc)
    why = "Back versions above a fifth of the records mean garbage is piling up"
    doc["gstat_flags"] = [
        {"rule": "versions", "table": "ORDER_LINE", "index": None, "value": 9000, "limit": 6000.0, "before": 0,
         "new": True, "text": "ORDER_LINE: 9,000 back versions for 30,000 records (30% of the records)", "why": why},
        {"rule": "index_depth", "table": "ORDER_LINE", "index": "ORDER_LINE_PK", "value": 4, "limit": 4, "before": 3,
         "new": True, "text": "ORDER_LINE_PK on ORDER_LINE: depth 4 (1,000,000 nodes)", "why": "An index four levels"},
    ]
    doc["gstat"]["after"].update(problem="firebird-lib could not read this gstat output: ValueError: x",
                                 raw="Database header page information: </script><!-- raw gstat text")
    doc["sampling"] = {**doc["sampling"], "heavy": True, "median_seconds": 0.2, "max_seconds": float("nan")}
    doc["log_findings"] = [*doc["log_findings"], {"source": "firebird.log", "kind": "I/O error", "severity": "error",
                                                   "count": 3, "first_at": "2026-01-01T10:00:00",
                                                   "last_at": "2026-01-01T10:00:05", "example": "I/O error </script>",
                                                   "detail": {}}]
    page = html.write(doc, tmp_path / "troubled.html", firebird_log="log </script><script>alert(1)</script>")
    dom = _render(page, tmp_path).body
    gstat = dom.by_id("gstat")
    flag_rows = dom.by_id("gstat-tables").all("tr", "flag-row")
    assert len(flag_rows) == 1 and "ORDER_LINE: 9,000 back versions" in flag_rows[0].text and why in flag_rows[0].text
    assert "new in this run" in flag_rows[0].text
    # The flag row sits right under ORDER_LINE's rows.
    rows = dom.by_id("gstat-tables").all("tr")
    at = rows.index(flag_rows[0])
    above = rows[at - 3:at]
    assert any(r.all("td") and r.all("td")[0].text == "ORDER_LINE" for r in above), [r.text for r in above]
    index_flags = dom.by_id("gstat-index-table").all("tr", "flag-row")
    assert len(index_flags) == 1 and "depth 4" in index_flags[0].text
    assert "ORDER_LINE: 9,000 back versions" in dom.by_id("gstat-flags").text
    assert "could not be read: firebird-lib could not read" in gstat.text
    raw = [d for d in gstat.all("details") if "raw text" in d.text]
    assert raw and "</script><!-- raw gstat text" in raw[0].text
    assert "Watching was heavy" in dom.by_id("watching").text and "200.0 ms" in dom.by_id("watching").text
    assert dom.by_id("log-findings").all("span", "sev-error")
    assert "log </script><script>alert(1)</script>" in dom.by_id("fblog").text


# ------------------------------------------------------------------ the framework for other pages


def test_render_page_draws_a_page_of_its_own(tmp_path: Path) -> None:
    # What a comparison page does with the framework: a line with its 95 % CI band, and bars.
    (tmp_path / "compare.html").write_text('<h1 id="title"></h1><div class="chart" id="ratio"></div>'
                                           '<div class="chart" id="bars"></div><div id="cells"></div>')
    (tmp_path / "compare.js").write_text("""
const page = fbb.data();
fbb.section("title", node => { node.textContent = page.title; });
let chart = null;
fbb.section("ratio", node => {
  chart = fbb.lineChart(node, {x: page.x, xLabel: "connections", yLabel: "ratio B / A", digits: 3, yMin0: false,
    refs: [{value: 1, label: "no change"}],
    series: [{label: "score ratio", values: page.ratio, lo: page.lo, hi: page.hi}]});
});
fbb.section("bars", node => fbb.barChart(node, {categories: ["A", "B"], valueLabel: "score, /min",
  series: [{label: "median", values: [1000, 1200]}]}));
fbb.section("cells", node => fbb.heat(fbb.table(node, ["cell", {label: "ratio", n: true}],
  page.x.map((x, i) => [String(x), fbb.num(page.ratio[i], 3)])), [1]));
fbb.done();
// As if hovered over the second point, once uPlot has drawn (it commits in a microtask).
setTimeout(() => chart.setCursor({left: chart.valToPos(page.x[1], "x"), top: 10}), 0);
""")
    data = {"title": "A </script> vs B", "x": [1, 10, 50], "ratio": [1.0, 0.95, 0.9], "lo": [0.98, 0.9, 0.85],
            "hi": [1.02, 1.0, 0.95]}
    page = tmp_path / "page.html"
    page.write_text(html.render_page(tmp_path / "compare.html", "A </script> vs B", data), encoding="utf-8")
    assert "<title>A &lt;/script&gt; vs B</title>" in page.read_text()
    dom = _render(page, tmp_path).body
    assert dom.by_id("title").text == "A </script> vs B"
    # The band's edges are series of their own but not listed; the line's value shows the interval.
    assert chromium.legend(dom.by_id("ratio")) == ["x", "score ratio"]
    values = [td.text for td in dom.by_id("ratio").all("td", "u-value")]
    assert "0.950 [0.900 – 1.000]" in values, values
    assert chromium.legend(dom.by_id("bars")) == ["category", "median"]
    assert int(dom.attrs["data-charts"]) == 2
    assert [td.attrs.get("style", "") != "" for td in dom.by_id("cells").all("td", "n")] == [True, True, True]


def test_embedded_data_cannot_end_its_script() -> None:
    text = html.embed_json({"a": "</script><!--<script>", "nan": float("nan"), "inf": float("-inf"),
                            "seed": 4960311863018063180, "small": 2**53, "flag": True, "nested": [float("inf")]})
    assert "<" not in text
    assert json.loads(text) == {"a": "</script><!--<script>", "nan": None, "inf": None, "seed": "4960311863018063180",
                                "small": 2**53, "flag": True, "nested": [None]}


def test_a_script_that_would_end_its_element_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.html").write_text("<p></p>")
    (tmp_path / "bad.js").write_text('const s = "</script>";')
    with pytest.raises(ValueError, match="cannot be inlined"):
        html.render_page(tmp_path / "bad.html", "bad", {})


def test_report_of_a_document_with_nothing_in_it(tmp_path: Path) -> None:
    # A document from before a section existed (or of a run that ended at once) still renders:
    # every missing section says what is missing instead of breaking the page.
    page = html.write({"run_id": "bare", "status": "incomplete"}, tmp_path / "bare.html")
    dom = _render(page, tmp_path).body
    assert dom.by_id("status").text == "incomplete"
    assert int(dom.attrs["data-charts"]) == 0
    assert "No intervals were measured" in dom.by_id("throughput").text
    assert "No engine readings" in dom.by_id("engine-note").text
    assert "No gstat was taken" in dom.by_id("gstat").text


def test_charts_of_values_within_rounding_error_of_each_other_draw(tmp_path: Path) -> None:
    # Two series' geometric means of the same runs differ in the last bit (a ratio of
    # 1.0000000000000004): a scale that narrow made uPlot's tick step vanish and its tick loop
    # grow an array until "RangeError: Invalid array length" (a compare page of a CI run).
    (tmp_path / "edge.html").write_text('<div class="chart" id="ratios"></div><div class="chart" id="line"></div>'
                                        '<div class="chart" id="flat"></div><div class="chart" id="wide"></div>'
                                        '<div class="chart" id="tight"></div>')
    (tmp_path / "edge.js").write_text("""
const page = fbb.data();
fbb.section("ratios", node => fbb.ratioChart(node, {categories: ["score", "TPM"], series: [
  {label: "B / A", values: page.ratios, lo: [null, null], hi: [null, null]}]}));
fbb.section("line", node => fbb.lineChart(node, {x: [1, 2, 3], yMin0: false,
  series: [{label: "score", values: page.close}]}));
fbb.section("flat", node => fbb.lineChart(node, {x: [1, 2, 3], yMin0: false,
  series: [{label: "score", values: page.flat}]}));
fbb.section("wide", node => fbb.ratioChart(node, {categories: ["p50", "p99"], series: [
  {label: "B / A", values: [0.5, 1.2], lo: page.wide_lo, hi: page.wide_hi}]}));
fbb.section("tight", node => fbb.ratioChart(node, {categories: ["p95"], series: [
  {label: "B / A", values: [0.1234295467501702], lo: [0.12337228249716865], hi: [0.12348683758284269]}]}));
fbb.done();
""")
    # And log scales (ratios beyond a factor of 4) that uPlot's log ticks cannot step through from
    # their minimum: an interval from 1e-22 to 1e30, and one tight ratio of 0.1234 (with 1, a scale
    # from 0.0987) — each broke the whole page the same way, or hung it.
    data = {"ratios": [1.0000000000000004, 0.9999999999999998], "close": [3096.0000000000014, 3096.0, 3096.0],
            "flat": [1e6, 1e6, 1e6 + 1e-9], "wide_lo": [1e-22, 0.9], "wide_hi": [1e30, 1.5]}
    page = tmp_path / "page.html"
    page.write_text(html.render_page(tmp_path / "edge.html", "edge", data), encoding="utf-8")
    dom = _render(page, tmp_path).body
    assert int(dom.attrs["data-charts"]) == 5


def test_cells_not_listed_on_the_console_are_named_as_ranges() -> None:
    from fbbench.report.sweep import _ranges

    assert _ranges([1, 2, 3, 5, 7, 8]) == "cells 1–3, 5, 7–8"
    assert _ranges(list(range(1, 40, 2))) == "cells 1, 3, 5, 7, 9, 11, 13, 15, …"
