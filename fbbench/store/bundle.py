"""A bundle: stored runs in one file that travels between results stores (and machines).

A bundle is one gzip'd JSON document (``gunzip -c FILE | python -m json.tool`` shows it)::

    {"format": "fbbench-bundle", "version": 1, "fbbench": "0.1.0", "store_schema": 6,
     "created_at": 1700000000.0, "runs": [run ids], "sweeps": [sweep ids], "track_series": [ids],
     "tables": {"runs": {"columns": [...], "rows": [[...], ...]}, "intervals": {...}, ...},
     "sha256": "…"}

``tables`` holds every stored row of the runs, column by column as the store has them (the run
row with its settings, conditions, summary, validation and workload files; phases, intervals with
their HDR histograms, unit totals, metrics, engine samples, gstat, log findings, checks — every
table of the store with a ``run_id`` column, read from its schema, so that a table a later
migration adds travels without a change here: :func:`~fbbench.store.exchange.run_tables`),
the rows of the sweeps named, and of the track series named (their series, points and changes:
:data:`TRACK_TABLES`; the runs of their points are among ``runs``). The one exception is
:data:`LOCAL_TABLES`: the bookkeeping of the machine that ran the run, which means nothing anywhere
else.
``sha256`` is over the canonical JSON of every other key, so that a bundle
changed anywhere is refused; gzip's own CRC finds a changed byte in the compressed stream, and
the gzip header must be the one this module writes (no stored name, no time stamp). A store
holds no passwords, so no bundle does.

Reading refuses, with one line each: a file that is not a bundle, one cut short, one whose
checksum does not match (checked before any field is believed: an edited version is damage, not a
newer format), and one of a newer format version than this fbbench reads. Importing counts the
runs it added from the rows it inserted, not from the bundle's list.
:func:`fbbench.store.exchange.import_bundle` adds a read bundle to a store.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import time
import zlib
from pathlib import Path
from typing import Any

from fbbench import __version__
from fbbench.errors import FbbenchError
from fbbench.sizes import size_text

FORMAT = "fbbench-bundle"
VERSION = 1
SUFFIX = ".fbbundle"
_LEVEL = 6
# What a bundle may unpack to: far above a lab's export, far below what a decompression bomb of a
# few megabytes would take of the memory.
MAX_UNPACKED = 2 << 30
_HEADER = gzip.compress(b"", compresslevel=_LEVEL, mtime=0)[:10]  # what this module writes, byte for byte

# Tables with a run_id column that no bundle carries, and why. run_files: the paths a run created
# in its work directory, for that machine's clean-up (fbbench.runner.cleanup). They name files on
# the machine that ran it; in another store they could only ever be wrong, and a clean-up there
# must never delete a file because an imported run once had it (two stores can share a work
# directory on one machine). A bundle that holds them anyway (another fbbench) has them left out.
LOCAL_TABLES = {"run_files": "the files a run created in its machine's work directory (that machine's clean-up)"}
# Tables that hold no run's rows: the sweeps (a bundle carries those it names).
SWEEP_TABLES = ("sweeps",)
# fbbench track's series, points and changes (a bundle carries the series it names, with the runs
# of their points): a CI job hands its store to the next as one file.
TRACK_TABLES = ("track_series", "track_points", "track_changes")


class BundleError(FbbenchError):
    """A bundle that cannot be read: not a bundle, cut short, changed, or of a newer format."""


def _canonical(document: dict[str, Any]) -> bytes:
    return json.dumps({k: v for k, v in document.items() if k != "sha256"}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False).encode()


def new_document(tables: dict[str, dict[str, Any]], runs: list[str], sweeps: list[str],
                 store_schema: int, track_series: list[str] | None = None) -> dict[str, Any]:
    """A bundle document with its checksum (``track_series``: the track series it carries)."""
    document: dict[str, Any] = {"format": FORMAT, "version": VERSION, "fbbench": __version__,
                                "store_schema": store_schema, "created_at": time.time(), "runs": runs,
                                "sweeps": sweeps, "tables": tables}
    if track_series:
        document["track_series"] = track_series
    document["sha256"] = hashlib.sha256(_canonical(document)).hexdigest()
    return document


def encode(document: dict[str, Any]) -> bytes:
    return gzip.compress(json.dumps(document, ensure_ascii=False).encode(), compresslevel=_LEVEL, mtime=0)


def _check_gzip(start: bytes, name: str) -> None:
    if start[:2] != _HEADER[:2]:
        raise BundleError(f"{name} is not an fbbench bundle (not gzip data)",
                          hint="fbbench results export RUN -o FILE writes one")


def decode(data: bytes, name: str = "the bundle") -> dict[str, Any]:
    """The document of a bundle's bytes, checked; :class:`BundleError` saying why not."""
    _check_gzip(data, name)
    if data[:10] != _HEADER:
        raise BundleError(f"{name} is damaged: its gzip header is not the one fbbench writes")
    try:
        inflating = zlib.decompressobj(wbits=31)  # gzip, trailer (CRC-32 and length) checked
        text = inflating.decompress(data, MAX_UNPACKED + 1)
        if len(text) > MAX_UNPACKED:
            raise BundleError(f"{name} unpacks to more than {size_text(MAX_UNPACKED, binary=True)}: refused before "
                              "it fills the memory", hint="export fewer runs to each bundle")
        text += inflating.flush()
        if not inflating.eof:
            raise zlib.error("incomplete or truncated stream")
    except zlib.error as error:
        shown = str(error)
        why = "it is cut short" if "incomplete" in shown or "truncated" in shown else f"its data is damaged ({shown})"
        raise BundleError(f"{name} cannot be read: {why}") from None
    try:
        document = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BundleError(f"{name} is damaged: its contents are not JSON ({error})") from None
    except RecursionError:
        raise BundleError(f"{name} is damaged: its contents are nested deeper than any bundle fbbench writes") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise BundleError(f"{name} is not an fbbench bundle (no format '{FORMAT}')")
    # The checksum first: any field read before it (the version, the writer) could be an edit.
    if document.get("sha256") != hashlib.sha256(_canonical(document)).hexdigest():
        raise BundleError(f"{name} is damaged: its checksum does not match its contents")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise BundleError(f"{name} has no format version")
    if version > VERSION:
        raise BundleError(f"{name} is bundle format {version}, written by fbbench {document.get('fbbench', '?')}; "
                          f"this fbbench ({__version__}) reads format {VERSION}", hint="upgrade fbbench to import it")
    tables = document.get("tables")
    if not isinstance(tables, dict) or not all(
            isinstance(t, dict) and isinstance(t.get("columns"), list) and isinstance(t.get("rows"), list)
            for t in tables.values()):
        raise BundleError(f"{name} is damaged: its tables are not columns and rows")
    return document


def write(path: Path, document: dict[str, Any]) -> int:
    """Write the bundle (through a temporary file, so that a failed write leaves no half bundle);
    its size in bytes."""
    data = encode(document)
    target = path.expanduser()
    partial = target.with_name(target.name + ".partial")
    try:
        partial.write_bytes(data)
        partial.replace(target)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise FbbenchError(f"cannot write the bundle {path}: {error.strerror or error}") from None
    return len(data)


def read(path: Path) -> dict[str, Any]:
    target = path.expanduser()
    try:
        if target.is_dir():
            raise BundleError(f"{path} is a directory, not a bundle")
        if target.exists() and not target.is_file():  # /dev/zero, a pipe: endless, or waiting forever
            raise BundleError(f"{path} is not a regular file, not a bundle")
        with open(target, "rb") as handle:
            _check_gzip(handle.read(2), str(path))  # before reading the rest of what may be any large file
            handle.seek(0)
            data = handle.read()
    except OSError as error:
        raise BundleError(f"cannot read the bundle {path}: {error.strerror or error}") from None
    return decode(data, str(path))
