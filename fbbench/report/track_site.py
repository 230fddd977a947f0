"""The track site's pages, ``regressions.json`` and Atom feed, from the track document
(:func:`fbbench.track.series.suite_document`); :mod:`fbbench.track.site` writes them.

Every change has one identity — its series and the two points it lies between — and that is the
feed entry's id and the change page's name: publishing again (a re-run, another point) never adds
an entry or a page for a change already published.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from fbbench.analysis import track as tracking
from fbbench.report.html import render_page

ATOM = "http://www.w3.org/2005/Atom"


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class Pages:
    """The pages of one publication of a suite's document."""

    def __init__(self, document: Mapping[str, Any], published_at: float) -> None:
        self.document, self.published_at = document, published_at
        self.suite = document["suite"]

    @staticmethod
    def series_name(series: Mapping[str, Any]) -> str:
        return f"series/{series['series_id']}.html"

    @staticmethod
    def change_name(series: Mapping[str, Any], event: Mapping[str, Any]) -> str:
        return f"changes/{series['series_id']}-{event['before']['point_id']}-{event['after']['point_id']}.html"

    @staticmethod
    def _regression(series: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
        return any(tracking.worse(c) for c in series["changes"]
                   if c["state"] == "current" and c["after"]["point_id"] == event["after"]["point_id"])

    def _found_at(self, series: Mapping[str, Any], event: Mapping[str, Any]) -> float:
        """When the change was found: the point whose coming revealed it."""
        lengths = [c["first_seen"] for c in series["changes"]
                   if c["state"] == "current" and c["after"]["point_id"] == event["after"]["point_id"]]
        points = series["points"]
        if lengths:
            return float(points[min(min(lengths), len(points)) - 1]["created_at"])
        after = next(p for p in points if p["point_id"] == event["after"]["point_id"])
        return float(after["created_at"])

    def _events(self) -> list[dict[str, Any]]:
        """Every change event of every series, the newest found first."""
        found = []
        for series in self.document["series"]:
            for event in series["events"]:
                found.append({"series": series, "event": event, "found_at": self._found_at(series, event),
                              "regression": self._regression(series, event)})
        found.sort(key=lambda item: item["found_at"], reverse=True)
        return found

    # ------------------------------------------------------------------------------- the pages

    def index_page(self) -> str:
        events = self._events()
        latest = [{"benchmark": e["series"]["benchmark"], "host": e["series"].get("host"),
                   "before": e["event"]["before"]["label"], "after": e["event"]["after"]["label"],
                   "figures": [f["text"] for f in e["event"]["figures"]] or ["plans changed"],
                   "cause": e["event"]["cause"], "regression": e["regression"], "found_at": e["found_at"],
                   "page": self.change_name(e["series"], e["event"])} for e in events[:12]]
        newest: dict[str, dict[str, Any]] = {}
        for item in events:
            newest.setdefault(item["series"]["series_id"], item)
        rows = []
        for series in self.document["series"]:
            shown = newest.get(series["series_id"])
            first = self._figures(series)[:1]
            values = [p["figures"].get(first[0], {}).get("value") if first else None for p in series["points"]]
            index = {p["point_id"]: n for n, p in enumerate(series["points"])}
            rows.append({
                "series_id": series["series_id"], "benchmark": series["benchmark"], "host": series.get("host"),
                "kind": series["kind"] + (f" to {series['reference']}" if series["kind"] == "relative" else ""),
                "points": len(series["points"]), "page": self.series_name(series),
                "sparkline": [v if isinstance(v, int | float) and math.isfinite(v) else None for v in values],
                "marks": sorted({index[e["after"]["point_id"]] for e in series["events"]}),
                "latest_change": (f"{shown['event']['before']['label']} → {shown['event']['after']['label']}: "
                                  f"{shown['event']['cause']}") if shown else None,
                "latest_regression": bool(shown and shown["regression"]),
                "latest_at": item["found_at"] if shown else 0.0})
        rows.sort(key=lambda row: row["latest_at"], reverse=True)
        data = {"suite": self.suite, "published_at": self.published_at, "latest": latest, "series": rows,
                "points": sum(len(s["points"]) for s in self.document["series"]),
                "sparkline_note": "first figure over the points"}
        return render_page("track_index", f"fbbench track {self.suite['name']}", data)

    @staticmethod
    def _figures(series: Mapping[str, Any]) -> list[str]:
        names: dict[str, None] = {}
        for point in series["points"]:
            names |= dict.fromkeys(point["figures"])
        return list(names)

    def series_page(self, series: Mapping[str, Any], runs: Mapping[str, list[dict[str, Any]]]) -> str:
        events = [{**event, "page": "../" + self.change_name(series, event),
                   "regression": self._regression(series, event)} for event in series["events"]]
        points = [{key: p[key] for key in ("point_id", "label", "engine", "engine_build", "created_at")}
                  | {"figures": {name: {k: f.get(k) for k in ("value", "low", "high", "unit", "better", "n")}
                                 for name, f in p["figures"].items()},
                     "runs": runs.get(p["point_id"], [])} for p in series["points"]]
        data = {key: series[key] for key in ("series_id", "benchmark", "kind", "axis", "reference", "reason", "host",
                                             "conditions", "changes")}
        data |= {"points": points, "events": events, "figures": self._figures(series)}
        return render_page("track_series", f"fbbench track {series['benchmark']} {series['series_id']}", data)

    def change_page(self, series: Mapping[str, Any], event: Mapping[str, Any], before: Mapping[str, Any],
                    after: Mapping[str, Any], tables: Mapping[str, Any]) -> str:
        def side(point: Mapping[str, Any]) -> dict[str, Any]:
            return {key: point[key] for key in ("point_id", "label", "engine", "engine_build")}

        data = {"benchmark": series["benchmark"], "series_id": series["series_id"],
                "series_page": "../" + self.series_name(series), "before": side(before), "after": side(after),
                "figures": event["figures"], "plans": event["plans"], "cause": event["cause"],
                "regression": self._regression(series, event), "tables": tables}
        title = f"fbbench track {series['benchmark']}: {event['before']['label']} → {event['after']['label']}"
        return render_page("track_change", title, data)

    # ----------------------------------------------------------------------- machine-readable

    def regressions(self) -> dict[str, Any]:
        """Every current change that went the worse way (asv's regressions.json, with intervals)."""
        found = []
        for series in self.document["series"]:
            events = {e["after"]["point_id"]: e for e in series["events"]}
            for change in series["changes"]:
                if change["state"] != "current" or not tracking.worse(change):
                    continue
                event = events.get(change["after"]["point_id"])
                detail = change["detail"]
                found.append({
                    "id": f"{series['series_id']}/{change['before']['point_id']}/{change['after']['point_id']}",
                    "series_id": series["series_id"], "benchmark": series["benchmark"], "host": series.get("host"),
                    "figure": change["figure"], "before": change["before"], "after": change["after"],
                    "ratio": detail["ratio"], "low": detail.get("low"), "high": detail.get("high"),
                    "p_value": detail["p_value"], "method": detail["method"],
                    "cause": event["cause"] if event else None,
                    "page": self.change_name(series, event) if event else self.series_name(series)})
        return {"format": "fbbench-regressions", "schema_version": 1, "suite": self.suite["name"],
                "regressions": found}

    def feed(self) -> str:
        """An Atom feed, one entry a change event (its id: the suite, the series, the two points)."""
        ElementTree.register_namespace("", ATOM)
        root = ElementTree.Element(f"{{{ATOM}}}feed")
        events = self._events()

        def sub(parent: ElementTree.Element, tag: str, text: str | None = None, **attrs: str) -> ElementTree.Element:
            node = ElementTree.SubElement(parent, f"{{{ATOM}}}{tag}", attrs)
            if text is not None:
                node.text = text
            return node

        sub(root, "title", f"fbbench track {self.suite['name']}: changes")
        sub(root, "id", f"urn:fbbench:track:{self.suite['name']}")
        # The feed's time is its newest entry's, not the publication's: publishing again with no
        # new change leaves the feed byte for byte as it was.
        sub(root, "updated", _when(events[0]["found_at"] if events else 0.0))
        sub(root, "link", href="index.html")
        sub(root, "generator", "fbbench")
        for item in events:
            series, event = item["series"], item["event"]
            entry = sub(root, "entry")
            what = "; ".join(f["text"] for f in event["figures"]) or "plans changed"
            sub(entry, "title", f"{series['benchmark']}: {event['before']['label']} → {event['after']['label']}: "
                                f"{what}")
            sub(entry, "id", f"urn:fbbench:track:{self.suite['name']}:{series['series_id']}:"
                             f"{event['before']['point_id']}:{event['after']['point_id']}")
            sub(entry, "updated", _when(item["found_at"]))
            sub(entry, "link", href=self.change_name(series, event))
            author = sub(entry, "author")
            sub(author, "name", "fbbench")
            sub(entry, "summary", event["cause"])
        return ElementTree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
