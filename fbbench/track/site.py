"""``fbbench track publish SUITE -o DIR``: a static site of a suite's series.

The site: ``index.html`` (every series with a sparkline and its latest change, the newest change
first), a page per series (``series/ID.html``: the figures over the points with their intervals,
the changes marked, each point's runs linked), a page per change (``changes/ID.html``: what moved,
the plans that changed, and what the engine did table by table at both points), each run's own
report (``runs/ID.html``, copied in: hard-linked from the report the run wrote beside the results
store, or rendered from the store), ``regressions.json`` and an Atom feed (``feed.xml``) whose
entries are keyed by the series and the two points of a change, so publishing again never adds an
entry for the same change.

Incremental: ``fbbench-site.json`` lists every file the site holds with the hash of its content
(and, for the pages that read runs, of their inputs); publishing again rewrites only what changed,
removes what no longer belongs, and never reads a run twice. A directory that holds any file this
list does not name (a directory fbbench did not make, someone's files) is refused, naming them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fbbench import paths
from fbbench.errors import FbbenchError, Interrupted
from fbbench.report import track_site
from fbbench.store import ResultsStore
from fbbench.track.series import suite_document
from fbbench.track.suite import Suite

MARKER = "fbbench-site.json"
# The files a publish is about to write, a line each, written before each one: a publish cut short
# (Ctrl-C, kill -9, a full disk) leaves nothing the next publish would take for someone else's.
JOURNAL = "fbbench-site.pending"
# What a write cut short leaves beside its file: paths.write_whole's part, _Writer.copy's link.
_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.\d+(?:-[0-9a-f]{8}\.part|\.tmp)$")
FORMAT = "fbbench-site"
SCHEMA_VERSION = 1


@dataclass
class Published:
    directory: Path
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    runs_rendered: int = 0
    seconds: float = 0.0


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _inputs(*made_from: Any) -> str:
    """The digest of what a page is made from, kept beside it to know it is still up to date."""
    return _digest(json.dumps(made_from, sort_keys=True, default=str).encode())


def _marker(directory: Path) -> dict[str, Any] | None:
    path = directory / MARKER
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def _entries_under(directory: Path, prefix: str = "") -> dict[str, bool]:
    """Every entry below ``directory`` but its folders (links included, not followed), relative to
    it, and whether it is a file (a link to a file is, as Path.is_file says); read from the
    directory entries, without a stat for each."""
    found: dict[str, bool] = {}
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return found
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            found.update(_entries_under(Path(entry.path), prefix + entry.name + os.sep))
        else:
            found[prefix + entry.name] = entry.is_file()
    return found


def _pending(directory: Path) -> set[str]:
    """The files an earlier publish was about to write when it was cut short (JOURNAL)."""
    try:
        text = (directory / JOURNAL).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    return {line for line in text.splitlines() if line}


def _ours(name: str, known: set[str]) -> bool:
    """A file of the site, or what a write of one cut short left beside it."""
    if name in known:
        return True
    folder, _, base = name.rpartition(os.sep)
    leftover = _LEFTOVER.match(base)
    return leftover is not None and (folder + os.sep if folder else "") + leftover["name"] in known


def check_directory(directory: Path, suite: str) -> dict[str, Any]:
    """The site's record of its files, or a refusal: a directory that holds files fbbench did not
    write here (or another suite's site) is never published into."""
    if directory.exists() and not directory.is_dir():
        raise FbbenchError(f"-o {directory} is a file, not a directory", hint="name a new or empty directory")
    if not directory.exists():
        return {"format": FORMAT, "schema_version": SCHEMA_VERSION, "suite": suite, "files": {}}
    marker = _marker(directory)
    try:
        # Without a marker the top level decides (never a walk through /usr or /proc).
        present = sorted(os.listdir(directory)) if marker is None else sorted(_entries_under(directory))
    except OSError as error:
        raise FbbenchError(f"-o {directory} cannot be read: {error.strerror or error}",
                           hint="name a new or empty directory") from None
    if marker is None:
        if present:
            shown = ", ".join(present[:3]) + (f" and {len(present) - 3} more" if len(present) > 3 else "")
            raise FbbenchError(f"-o {directory} holds files fbbench did not write ({shown}): nothing is published "
                               "there", hint="name a new or empty directory, or one an earlier track publish made")
        return {"format": FORMAT, "schema_version": SCHEMA_VERSION, "suite": suite, "files": {}}
    if int(marker.get("schema_version") or 0) > SCHEMA_VERSION:
        raise FbbenchError(f"-o {directory} was published by a newer fbbench", hint="upgrade fbbench")
    if marker.get("suite") != suite:
        raise FbbenchError(f"-o {directory} holds the site of suite {marker.get('suite')!r}, not {suite!r}",
                           hint="publish each suite into a directory of its own")
    known = set(marker.get("files") or {}) | {MARKER, JOURNAL} | _pending(directory)
    foreign = [name for name in present if not _ours(name, known)]
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise FbbenchError(f"-o {directory} holds files fbbench did not write ({shown}): nothing is published there",
                           hint="move them away, or publish into another directory")
    marker.setdefault("files", {})
    return marker


class _Writer:
    """Writes a file only when its content differs from what the site's record says it holds."""

    def __init__(self, directory: Path, record: dict[str, Any], published: Published) -> None:
        self.directory, self.record, self.published = directory, record, published
        self.files: dict[str, dict[str, str]] = {}
        # What is there, listed once: a site of 1,000 points asked the file system about 3,000
        # run pages one by one, a tenth of publishing one more point. Listed again, not taken from
        # check_directory: the store was looked at in between, and a page removed meanwhile is made.
        self.entries = _entries_under(directory)
        self.present = {name for name, is_file in self.entries.items() if is_file}
        self.intended = _pending(directory)
        self._journal: Any = None

    def _intend(self, name: str) -> None:
        """Journals ``name`` before it is written (JOURNAL), unless the site's record or the
        journal names it already."""
        if name in self.record["files"] or name in self.intended:
            return
        if self._journal is None:
            self._journal = open(self.directory / JOURNAL, "a", encoding="utf-8")  # noqa: SIM115 (closed by close())
        self._journal.write(name + "\n")
        self._journal.flush()
        self.intended.add(name)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def holds(self, name: str) -> bool:
        return name in self.present

    def unchanged(self, name: str, inputs: str) -> bool:
        """A page whose inputs are those it was made from, and which is still there: kept as it is."""
        earlier = self.record["files"].get(name) or {}
        if earlier.get("inputs") == inputs and self.holds(name):
            self.files[name] = earlier
            self.published.unchanged += 1
            return True
        return False

    def text(self, name: str, text: str, inputs: str | None = None) -> None:
        data = text.encode("utf-8")
        digest = _digest(data)
        earlier = self.record["files"].get(name) or {}
        target = self.directory / name
        entry = {"sha256": digest, **({"inputs": inputs} if inputs else {})}
        self.files[name] = entry
        if earlier.get("sha256") == digest and self.holds(name):
            self.published.unchanged += 1
            return
        self._intend(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        paths.write_whole(target, text)
        self.published.written.append(name)

    def copy(self, name: str, source: Path) -> None:
        self._intend(name)
        target = self.directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            os.link(source, temporary)  # the same file system: no second copy of the bytes
        except OSError:
            shutil.copyfile(source, temporary)
        os.replace(temporary, target)
        self.files[name] = {"sha256": "", "inputs": f"copy:{source}"}
        self.published.written.append(name)


def _held_runs(store: ResultsStore) -> set[str]:
    """The runs the store holds, read once: a site of 1,000 points asks about 3,000 runs twice."""
    return {row[0] for row in store.db.execute("select run_id from runs")}


def _runs_of(held: set[str], point: dict[str, Any]) -> list[tuple[str, str]]:
    """(side, run id) of a point's runs that the store holds: B, and A (the reference's) for a
    relative point."""
    found = [(side, run) for side in ("B", "A") for run in (point.get("runs") or {}).get(side, [])]
    return [(side, run) for side, run in found if run in held]


def _run_page(store: ResultsStore, writer: _Writer, results: Path, run_id: str) -> None:
    name = f"runs/{run_id}.html"
    if name in writer.record["files"] and writer.holds(name):
        writer.files[name] = writer.record["files"][name]
        writer.published.unchanged += 1
        return
    report = paths.default_report(results, run_id)
    if report.is_file() and paths.written_by_fbbench(report):
        writer.copy(name, report)
        return
    from fbbench.analysis.run import result_document
    from fbbench.report import html

    run = store.load_run(run_id)
    writer.text(name, html.render(result_document(run), run.get("firebird_log") or ""), inputs=f"run:{run_id}")
    writer.published.runs_rendered += 1


def _tables(store: ResultsStore, held: set[str], point: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Table by table for a point's first run: record operations per unit, and gstat's records and
    versions after the run."""
    from fbbench.analysis.run import result_document

    runs = [run for side, run in _runs_of(held, point) if side == "B"]
    if not runs:
        return {}
    document = result_document(store.load_run(runs[0]))
    units = sum(int(u.get("ok") or 0) + int(u.get("rolled_back") or 0) + int(u.get("conflicts") or 0)
                + int(u.get("errors") or 0) for u in (document.get("units") or {}).values())
    found = {}
    for name, table in (document.get("tables") or {}).items():
        activity = table.get("activity") or {}
        after = table.get("gstat_after") or {}
        found[name] = {"per_unit": {k: v / units for k, v in activity.items() if units and v is not None},
                       "records": after.get("records"), "versions": after.get("versions"),
                       "max_versions": after.get("max_versions")}
    return found


def publish(store: ResultsStore, suite: Suite, directory: Path, results: Path,
            record: dict[str, Any] | None = None) -> Published:
    """Publish (or bring up to date) the site of ``suite`` in ``directory``; ``record``: what
    :func:`check_directory` returned for it, when the caller has checked it already."""
    started = time.monotonic()
    directory = directory.expanduser().absolute()
    if record is None:
        record = check_directory(directory, suite.name)
    published = Published(directory)
    document = suite_document(store, suite)
    held = _held_runs(store)
    try:
        _publish(store, directory, results, record, published, document, held)
    except OSError as error:
        raise paths.file_error(error, f"publish into {directory}", directory, "give -o another directory") from None
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted: {directory} holds the pages written so far",
                          hint="publish again to bring the whole site up to date") from None
    published.seconds = time.monotonic() - started
    return published


def _publish(store: ResultsStore, directory: Path, results: Path, record: dict[str, Any], published: Published,
             document: dict[str, Any], held: set[str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    if not (directory / MARKER).is_file():  # marked as a site before its first file is written
        _write_record(directory, record)
    writer = _Writer(directory, record, published)
    try:
        _write_pages(store, writer, results, document, held)
    finally:
        writer.close()
    known = set(record["files"]) | writer.intended
    for name in sorted(known - set(writer.files)):
        target = paths.assert_inside(directory / name, directory)
        existed = target.is_file()
        if existed:
            target.unlink()
        if existed or name in record["files"]:
            published.removed.append(name)
    for name in sorted(set(writer.entries) - known - {MARKER, JOURNAL}):
        if _ours(name, known):  # what a write cut short left beside its file
            paths.assert_inside(directory / name, directory).unlink(missing_ok=True)
    record["files"] = writer.files
    record["published_at"] = time.time()
    _write_record(directory, record)
    (directory / JOURNAL).unlink(missing_ok=True)


def _write_record(directory: Path, record: dict[str, Any]) -> None:
    # Compact: indented, json takes its pure-Python encoder, 0.09 s for the 3,000 files of 1,000 points.
    paths.write_whole(directory / MARKER, json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n")


def _write_pages(store: ResultsStore, writer: _Writer, results: Path, document: dict[str, Any],
                 held: set[str]) -> None:
    pages = track_site.Pages(document, time.time())
    for series in document["series"]:
        runs = {p["point_id"]: [{"side": side, "run_id": run, "page": f"../runs/{run}.html"}
                                for side, run in _runs_of(held, p)] for p in series["points"]}
        # A series page is made from its series and its runs alone: kept when neither changed.
        name = pages.series_name(series)
        inputs = _inputs(series, runs)
        if not writer.unchanged(name, inputs):
            writer.text(name, pages.series_page(series, runs), inputs=inputs)
        for of_point in runs.values():
            for run in of_point:
                _run_page(store, writer, results, run["run_id"])
        points = {p["point_id"]: p for p in series["points"]}
        for event in series["events"]:
            name = pages.change_name(series, event)
            inputs = _inputs(event, series["series_id"])
            if writer.unchanged(name, inputs):
                continue
            before, after = points[event["before"]["point_id"]], points[event["after"]["point_id"]]
            tables = {"before": _tables(store, held, before), "after": _tables(store, held, after)}
            writer.text(name, pages.change_page(series, event, before, after, tables), inputs=inputs)
    writer.text("index.html", pages.index_page())
    writer.text("regressions.json", json.dumps(pages.regressions(), indent=2, default=str) + "\n")
    writer.text("feed.xml", pages.feed())
