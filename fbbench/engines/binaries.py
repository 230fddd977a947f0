"""``engine.binaries``: which files an engine is, as one sha256 over its binaries.

A version string names a release, not the files: two builds of 5.0.4 (a release and a QA
engineer's rebuild with a fix) both say ``LI-V5.0.4.1812``. The binaries say which one ran. The
digest covers the engine's ELF files — the client library, everything under ``plugins/`` and
``intl/``, and ``bin/`` where the build has one — each as its path relative to the engine's root
and its content's sha256, sorted by path. The client library counts as ``lib/libfbclient.so.2``
wherever it lies (PyPI's runtimes keep it at the top), so the same files in the flat and the
official layout are the same build; symbolic links are not files of their own (the client
library's chain ends in the one file counted). Anything else — firebird.conf, firebird.msg,
tzdata — is not a binary: the run's effective configuration is a condition of its own.

Debian's package spreads the same pieces over /usr: its server ``sbin/firebird`` (counted as
``bin/firebird``), the plugins and intl of ``lib/<triplet>/firebird/<major>/`` and the client
library beside them; its other programs in /usr/bin are not counted.

Hashing 20 to 60 MB takes a fraction of a second; each file's digest is kept in the engine cache
(``binaries.json``), keyed by its real path, size and modification time, so it is computed once
per build.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from fbbench import paths
from fbbench.engines import elf
from fbbench.engines.builds import CLIENT_NAME
from fbbench.engines.catalog import EmbeddedEngine, Engine, ManagedEngine
from fbbench.engines.install import wheel_root
from fbbench.engines.installation import layout_of

CLIENT_KEY = f"lib/{CLIENT_NAME}"
_FOLDERS = ("plugins", "intl", "bin")


def cache_file() -> Path:
    return paths.engines_dir() / "binaries.json"


def official_binaries(root: Path) -> list[tuple[str, Path]]:
    """(path as hashed, file) for an engine in the official or the flat layout."""
    found: list[tuple[str, Path]] = []
    client = next((path for path in (root / "lib" / CLIENT_NAME, root / CLIENT_NAME) if path.is_file()), None)
    if client is not None:
        found.append((CLIENT_KEY, client))
    for folder in _FOLDERS:
        found += [(f"{folder}/{name}", path) for name, path in _elf_files(root / folder)]
    return found


def debian_binaries(directory: Path, libdir: Path) -> list[tuple[str, Path]]:
    """The same for Debian's package: see the module."""
    found = [("bin/firebird", directory / "sbin" / "firebird")]
    client = libdir.parent.parent / CLIENT_NAME  # lib/<triplet>/libfbclient.so.2
    if client.is_file():
        found.append((CLIENT_KEY, client))
    for folder in ("plugins", "intl"):
        found += [(f"{folder}/{name}", path) for name, path in _elf_files(libdir / folder)]
    return found


def _elf_files(folder: Path) -> list[tuple[str, Path]]:
    """ELF files under ``folder`` (symbolic links not followed), by path relative to it."""
    found = []
    for top, directories, names in os.walk(folder):
        directories.sort()
        for name in names:
            path = Path(top) / name
            if not path.is_symlink() and path.is_file() and elf.is_elf(path):
                found.append((path.relative_to(folder).as_posix(), path))
    return found


def digest(root: Path, files: list[tuple[str, Path]]) -> dict[str, Any]:
    """``{"sha256", "files", "source"}`` for ``files`` (see the module); file digests cached."""
    cache = _read_cache()
    changed = False
    lines = []
    for name, path in sorted(files):
        real = path.resolve()
        stat = real.stat()
        known = cache.get(str(real))
        if known is None or known[:2] != [stat.st_size, stat.st_mtime_ns]:
            known = [stat.st_size, stat.st_mtime_ns, _file_sha256(real)]
            cache[str(real)] = known
            changed = True
        lines.append(f"{name}\0{known[2]}\n")
    if changed:
        cache = {key: value for key, value in cache.items() if Path(key).exists()}  # removed builds' files go
        # Only a cache: a file system that refuses it costs the next run a second of hashing.
        with contextlib.suppress(OSError):
            paths.write_whole(cache_file(), json.dumps(cache, indent=0, sort_keys=True) + "\n")
    total = hashlib.sha256("".join(lines).encode()).hexdigest()
    return {"sha256": total, "files": len(lines), "source": str(root)}


def _file_sha256(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            sha.update(chunk)
    return sha.hexdigest()


def _read_cache() -> dict[str, list[Any]]:
    try:
        data = json.loads(cache_file().read_text())
    except (OSError, ValueError):
        return {}
    return {key: value for key, value in data.items() if isinstance(value, list) and len(value) == 3} \
        if isinstance(data, dict) else {}


def engine_binaries(engine: Engine) -> dict[str, Any] | None:
    """The binaries of ``engine`` (None for an external server: its files are not visible)."""
    if isinstance(engine, EmbeddedEngine):
        root = Path(engine.root) if engine.root else wheel_root(engine)
        return digest(root, official_binaries(root))
    if isinstance(engine, ManagedEngine):
        directory = Path(engine.directory)
        if engine.layout == "debian":
            return digest(directory, debian_binaries(directory, layout_of(engine).libdir))
        return digest(directory, official_binaries(directory))
    return None
