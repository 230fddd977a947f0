"""Where fbbench keeps its files.

- the engine cache (downloaded runtimes; safe to delete): ``$FBBENCH_CACHE`` or
  ``$XDG_CACHE_HOME/fbbench`` (``~/.cache/fbbench``);
- the home (results store, registry of owned databases, default work directory):
  ``$FBBENCH_HOME`` or ``$XDG_DATA_HOME/fbbench`` (``~/.local/share/fbbench``).

fbbench deletes files only inside a work directory it made (runtime roots, run databases, the
populated-database cache): see :func:`own_workdir` and :func:`assert_inside`.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fbbench import __version__
from fbbench.errors import FbbenchError

# The file that makes a directory fbbench's work directory; written when fbbench makes the
# directory or adopts it empty.
WORKDIR_MARKER = "fbbench-workdir.json"
# What an fbbench from before the marker made in its default work directory (and nothing else).
_UNMARKED_DEFAULT_ENTRIES = frozenset({"databases", "dbcache", "runtimes", "doctor"})
_UNMARKED_DEFAULT_PREFIX = "pair-"  # compare --paired's start barriers, left by a killed comparison


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / default


def cache_dir() -> Path:
    explicit = os.environ.get("FBBENCH_CACHE")
    return Path(explicit) if explicit else _xdg("XDG_CACHE_HOME", ".cache") / "fbbench"


def home_dir() -> Path:
    explicit = os.environ.get("FBBENCH_HOME")
    return Path(explicit) if explicit else _xdg("XDG_DATA_HOME", ".local/share") / "fbbench"


def engines_dir() -> Path:
    return cache_dir() / "engines"


def default_workdir() -> Path:
    return home_dir() / "work"


def default_results() -> Path:
    return home_dir() / "results.sqlite"


def default_report(results: Path, name: str) -> Path:
    """Where an HTML report goes when --report names no file: ``reports/NAME.html`` beside the
    results store (a run's, a sweep's or a comparison's)."""
    return results.parent / "reports" / f"{name}.html"


def registry_file() -> Path:
    return home_dir() / "owned-databases.json"


@dataclass(frozen=True)
class WorkDir:
    """A work directory that fbbench made (or adopted empty): ``ident`` is its marker's id, which
    the runs made in it record with the files they create."""

    path: Path
    ident: str


def own_workdir(given: Path | str | None) -> WorkDir:
    """The work directory ``given`` (None: the default), made fbbench's or refused.

    A directory that does not exist is made, and an empty one adopted, by writing the marker
    into it. A directory with the marker is fbbench's. Any other directory is refused, since
    fbbench deletes what its runs leave in its work directory: a user's directory (their home,
    ``/``, a symlink to ``/etc``) never becomes one because files in it happen to exist. The one
    exception is the default work directory of an older fbbench, see :func:`_unmarked_default`.
    """
    path = check_workdir(given)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise FbbenchError(f"cannot create the work directory {path}: {error.strerror}") from None
    ident = _marked_or_adoptable(path, path)
    return WorkDir(path, ident if ident is not None else _write_marker(path / WORKDIR_MARKER))


def check_workdir(given: Path | str | None) -> Path:
    """The work directory ``given`` resolved, refused if :func:`own_workdir` would refuse it;
    nothing is written (for checks before a run starts)."""
    named = Path(given or default_workdir()).expanduser()
    path = named.resolve()
    if path.exists():
        if not path.is_dir():
            raise FbbenchError(f"the work directory {_shown(named, path)} is not a directory",
                               hint="give --workdir a new or empty directory")
        _marked_or_adoptable(path, named)
    return path


def _shown(named: Path, path: Path) -> str:
    """The work directory as the user named it, and where that leads when it is elsewhere (a link)."""
    return str(path) if named.absolute() == path else f"{named} (which is {path})"


def _marked_or_adoptable(path: Path, named: Path) -> str | None:
    """The id of the existing directory ``path``'s marker; None when it has none but may be
    adopted; otherwise a refusal saying why."""
    ident = _read_marker(path / WORKDIR_MARKER)
    if ident is not None:
        return ident
    try:
        entries = sorted(entry.name for entry in path.iterdir())
    except OSError as error:
        raise FbbenchError(f"cannot read the work directory {path}: {error.strerror}") from None
    if entries and not _unmarked_default(path, entries):
        shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
        raise FbbenchError(f"the work directory {_shown(named, path)} is not empty and fbbench did not make it "
                           f"(it holds {shown})",
                           hint="fbbench deletes what its runs leave in its work directory, so it only uses one it "
                           "made: give --workdir a new or empty directory")
    return None


def _unmarked_default(path: Path, entries: list[str]) -> bool:
    """Whether ``path`` is the default work directory as an fbbench from before the marker left
    it: the default location (inside fbbench's home, which the user did not name) holding only
    the folders fbbench made there. Such a directory is adopted as it is; anything else in it,
    or another location, and it is treated like any directory of the user's."""
    if path != default_workdir().expanduser().resolve():
        return False
    return all((name in _UNMARKED_DEFAULT_ENTRIES or name.startswith(_UNMARKED_DEFAULT_PREFIX))
               and (path / name).is_dir() and not (path / name).is_symlink() for name in entries)


def _read_marker(marker: Path) -> str | None:
    """The id in ``marker``; None when there is none. A marker being written by another fbbench
    at this moment is waited for, briefly; a damaged one is refused."""
    deadline = time.monotonic() + 2.0
    while True:
        try:
            return str(json.loads(marker.read_text())["id"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as error:
            if time.monotonic() > deadline:
                raise FbbenchError(f"the work directory marker {marker} cannot be read ({error})",
                                   hint="if it is fbbench's work directory, empty it and fbbench marks it anew; "
                                   "otherwise give --workdir another directory") from None
            time.sleep(0.05)


def _write_marker(marker: Path) -> str:
    ident = secrets.token_hex(8)
    text = json.dumps({"id": ident, "created_at": time.time(), "fbbench": __version__, "path": str(marker.parent),
                       "note": "fbbench's work directory: fbbench deletes the files its runs leave here"}, indent=2)
    try:
        with open(marker, "x") as handle:
            handle.write(text + "\n")
    except FileExistsError:  # another fbbench adopted it at the same moment
        found = _read_marker(marker)
        assert found is not None
        return found
    except OSError as error:
        raise FbbenchError(f"cannot use {marker.parent} as the work directory: {error.strerror}",
                           hint="give --workdir a directory you can write") from None
    return ident


def assert_inside(path: Path, root: Path) -> Path:
    """Refuse to touch ``path`` unless it lies inside ``root`` (symlinks resolved)."""
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise FbbenchError(f"refusing to delete {path}: it is outside fbbench's work directory {root}")
    return resolved


def writable_file(path: Path, what: str) -> Path:
    """Check, before anything runs, that ``path`` can be written (its directory may be created).

    Refuses a directory, a read-only file, and a path under a file or an unwritable directory,
    so that a run never ends by losing its output.
    """
    target = path.expanduser().absolute()
    if target.is_dir():
        raise FbbenchError(f"{what} {path} is a directory", hint="give a file name")
    if os.path.lexists(target) and not target.exists():
        raise FbbenchError(f"{what} {path} is a symbolic link to nothing (or a loop of links): it is left as it is",
                           hint="give the name of a file to write")
    if target.exists():
        if not os.access(target, os.W_OK):
            raise FbbenchError(f"{what} {path} is not writable")
        return target
    ancestor = target.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise FbbenchError(f"{what} {path} cannot be created: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise FbbenchError(f"{what} {path} cannot be created: {ancestor} is not writable")
    # Some directories say they may be written and refuse every new file (/proc, /sys): try one.
    probe = ancestor / f".fbbench-probe-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        probe.touch(exist_ok=False)
    except OSError as error:
        raise FbbenchError(f"{what} {path} cannot be created in {ancestor}: {error.strerror or error}") from None
    probe.unlink(missing_ok=True)
    return target


# What marks a file as one fbbench wrote, so that an output flag may replace it: the first bytes
# of a JSON document (its format and schema keys), of an HTML page (the generator line in its
# head) and of a bundle (gzip'd JSON whose first key is its format).
HTML_GENERATOR = '<meta name="generator" content="fbbench">'
MARKDOWN_GENERATOR = "<!-- written by fbbench -->"  # the first line of a Markdown summary (track check)
_JSON_START = re.compile(rb'\A\s*\{\s*"format"\s*:\s*"fbbench-[a-z-]+"\s*,\s*"schema_version"\s*:\s*\d')
_BUNDLE_START = re.compile(rb'\A\{\s*"format"\s*:\s*"fbbench-bundle"')
_HTML_START = re.compile(rb'\A<!DOCTYPE html>\s*<html[^>]*>\s*<head>\s*(?:<meta [^>]*>\s*){0,3}'
                         + re.escape(HTML_GENERATOR.encode()), re.IGNORECASE)
_SNIFF = 4096


def written_by_fbbench(path: Path) -> bool:
    """Whether the file ``path`` is one of fbbench's outputs — a JSON document, an HTML page, a
    Markdown summary or a bundle — judged by its content (never by its name)."""
    try:
        with open(path, "rb") as handle:
            start = handle.read(_SNIFF)
    except OSError:
        return False
    if _JSON_START.match(start) or _HTML_START.match(start) or start.startswith(MARKDOWN_GENERATOR.encode()):
        return True
    if start[:2] == b"\x1f\x8b":
        try:
            inflated = zlib.decompressobj(wbits=31).decompress(start, 256)
        except zlib.error:
            return False
        return _BUNDLE_START.match(inflated) is not None
    return False


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def output_file(path: Path, what: str, overwrite: bool = False) -> Path:
    """Check, before anything runs, that an output (``what``: the flag that names it) may be
    written to ``path``: a new file, or one that fbbench wrote (:func:`written_by_fbbench`),
    which it replaces. Any other file is refused, saying why, unless ``overwrite``: an output
    flag must never replace a user's (or the system's) file by mistake. Not a regular file (a
    device, a pipe): refused always, since writing replaces the directory entry.
    Then as :func:`writable_file`."""
    target = path.expanduser().absolute()
    if target.exists() and not target.is_dir():
        if not target.is_file():
            raise FbbenchError(f"{what} {path} is not a regular file", hint="give the name of a file to write")
        if _is_sqlite(target):
            # No output of fbbench is a database: this is a results store (or someone's database),
            # and --overwrite is not meant to trade one for a report.
            raise FbbenchError(f"{what} {path} is an SQLite database (a results store?): an output never replaces "
                               "one, --overwrite or not", hint=f"give {what} another file")
        if not overwrite and not written_by_fbbench(target):
            raise FbbenchError(f"{what} {path} already exists and is not a file fbbench wrote: it is left as it is",
                               hint="choose a new file name, or add --overwrite to replace it")
    return writable_file(path, what)


def distinct_outputs(outputs: Mapping[str, Path | None], inputs: Mapping[str, Path | None]) -> None:
    """Refuse, --overwrite or not, an output that is one of the command's inputs (its suite, its
    results store …) or the same file as another output: one would be lost to the other."""
    def identity(path: Path) -> tuple[object, ...]:
        """The file a path names: its device and inode where it exists (hard links, bind mounts),
        else its resolved path."""
        resolved = path.expanduser().absolute().resolve()
        try:
            found = resolved.stat()
        except OSError:
            return ("path", str(resolved))
        return ("inode", found.st_dev, found.st_ino)

    read = {identity(given): source for source, given in inputs.items() if given is not None}
    written: dict[tuple[object, ...], str] = {}
    for what, path in outputs.items():
        if path is None:
            continue
        key = identity(path)
        if key in read:
            raise FbbenchError(f"{what} {path} is {read[key]}: writing it would destroy what this command reads",
                               hint=f"give {what} another file")
        if key in written:
            raise FbbenchError(f"{written[key]} and {what} name the same file {path}: one would be lost",
                               hint="give each output a file of its own")
        written[key] = what


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: it goes to a new file beside ``path`` that
    then replaces it, so a full disk leaves neither a truncated file nor a lost earlier one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.part")
    try:
        with open(partial, "x", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def not_found(path: Path) -> str:
    """Why a path the user named is not there, in the words that help: a symbolic link that points
    nowhere or into a loop of links, a directory on the way that may not be entered, or plainly
    nothing (``os.stat``'s own reason, the link's target named)."""
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return f"{path} is a loop of symbolic links"
        if error.errno in (errno.EACCES, errno.EPERM):
            return f"{path} cannot be reached: {error.strerror} (a directory on the way may not be entered)"
        if error.errno == errno.ENOTDIR:
            return f"{path} does not exist: a part of it before the last is a file, not a directory"
        if os.path.islink(path):
            return f"{path} is a symbolic link to {os.readlink(path)}, which does not exist"
        return f"{path} does not exist"
    return f"{path} exists"  # not asked of a path that exists; said plainly if it is


def file_error(error: OSError, action: str, where: Path | None = None, elsewhere: str | None = None) -> FbbenchError:
    """An operating system's refusal as one line, ``cannot ACTION: reason``, with what to do when the
    file system of ``where`` is full or read-only (``elsewhere``: the option that moves the files)."""
    reason = error.strerror or str(error)
    place = where if where is not None else (Path(error.filename).parent if error.filename else None)
    hint = None
    if place is not None and error.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = f"free space on the file system of {place}" + (f", or {elsewhere}" if elsewhere else "")
    elif place is not None and error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = f"{place} cannot be written" + (f": {elsewhere}" if elsewhere else "")
    elif error.errno == errno.EFBIG:
        hint = "a file grew past the size this process may write (ulimit -f)"
    return FbbenchError(f"cannot {action}: {reason}", hint=hint)
