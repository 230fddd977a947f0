"""Where fbbench keeps its files.

- the engine cache (downloaded runtimes; safe to delete): ``$FBBENCH_CACHE`` or
  ``$XDG_CACHE_HOME/fbbench`` (``~/.cache/fbbench``);
- the home (results store, registry of owned databases, default work directory):
  ``$FBBENCH_HOME`` or ``$XDG_DATA_HOME/fbbench`` (``~/.local/share/fbbench``).

fbbench deletes files only inside a work directory (runtime roots, run databases, the
populated-database cache) — see :func:`assert_inside`.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

from fbbench.errors import FbbenchError


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
    return target


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
