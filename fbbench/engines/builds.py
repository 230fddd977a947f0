"""The Firebird files of a build a user brings: an installation directory (the official
``/opt/firebird`` layout), a build's output directory (``gen/Release/firebird``: the same
layout), or the ``opt/firebird`` unpacked from an official tarball (:mod:`fbbench.engines.unpack`).

What is read here, before anything runs: where the client library, the engine plugin and the
server binary are; which CPU they were built for (the ELF header: a build of another
architecture is refused naming it); and which version they are, from the engine plugin's own
bytes (``LI-V5.0.4.1812 Firebird 5.0`` is compiled into it and into libfbclient.so.2). fbbench
verifies that version with a real attach when it registers a build (:mod:`fbbench.runner.builds`).

The official layout, from Firebird's ``makeInstallImage.sh``: ``bin/`` (firebird, isql, gbak …),
``lib/libfbclient.so.2`` (a symbolic link chain to ``libfbclient.so.X.Y.Z``; bundled libtommath in
``lib/.tm`` on some builds), ``plugins/libEngine1x.so``, ``intl/fbintl``, ``firebird.msg``,
``firebird.conf`` (every key documented), ``tzdata/`` (4.0+). The embedded runtimes from PyPI
hold the same files with the client library at the top (``libfbclient.so.2``); that flat layout
is read too.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from fbbench.engines import elf
from fbbench.errors import FbbenchError

CLIENT_NAME = "libfbclient.so.2"
SERVER_BINARY = Path("bin") / "firebird"
# What the engine reads from its root besides the libraries (checked when a build is registered).
EMBEDDED_NEEDS = ("firebird.conf", "firebird.msg", "plugins", "intl")
# The engine's version as compiled into its plugin and client library; the InterBase-compatible
# string beside it (LI-V6.3.4.1812 Firebird 5.0) names another version, so the major.minor of both
# parts must agree.
_VERSION_BYTES = re.compile(rb"\b([A-Z]{2}-[A-Z](\d+)\.(\d+)\.(\d+)\.(\d+)) Firebird (\d+)\.(\d+)")

WHAT_A_BUILD_IS = ("name an official Linux tarball (Firebird-X.Y.Z.NNNN-0-linux-x64.tar.gz), an installation "
                   "directory such as /opt/firebird, or a build's output directory (gen/Release/firebird)")


@dataclass(frozen=True)
class BuildFiles:
    """Where the pieces of one build are (None: not there)."""

    root: Path
    client: Path | None  # lib/libfbclient.so.2, or libfbclient.so.2 at the top (PyPI's layout)
    engine_plugin: Path | None  # plugins/libEngine1x.so
    server: Path | None  # bin/firebird

    @property
    def embeddable(self) -> bool:
        """A client library and an engine plugin: what an embedded run loads."""
        return self.client is not None and self.engine_plugin is not None

    def elf_files(self) -> list[Path]:
        return [path for path in (self.client, self.engine_plugin, self.server) if path is not None]


def find_files(root: Path) -> BuildFiles:
    """The pieces of the build in ``root`` (an existing directory), none of them checked yet."""
    client = next((path for path in (root / "lib" / CLIENT_NAME, root / CLIENT_NAME) if path.is_file()), None)
    plugins = sorted((root / "plugins").glob("libEngine*.so"))
    server = root / SERVER_BINARY
    return BuildFiles(root, client, plugins[-1] if plugins else None, server if server.is_file() else None)


def kind_of(directory: Path) -> str:
    """``build`` for a build's output directory (…/gen/Release/firebird, …/gen/Debug/firebird),
    otherwise ``installation``: the two have the same layout, only their place tells them apart."""
    parts = directory.parts
    return "build" if len(parts) >= 3 and parts[-3] == "gen" and parts[-1] == "firebird" else "installation"


def check_architecture(files: BuildFiles, where: str) -> None:
    """Refuse a build this machine cannot load: another CPU, or 32-bit on a 64-bit machine."""
    host = elf.host_header()
    for path in files.elf_files():
        header = elf.read_header(path)
        if header is None:
            raise FbbenchError(f"{where}: {path.relative_to(files.root)} is not a program or shared library (ELF)",
                               hint="the build is damaged or incomplete: unpack, install or build it again")
        if host is not None and (header.machine, header.bits) != (host.machine, host.bits):
            raise FbbenchError(f"{where} is a build for {header.name} ({path.relative_to(files.root)}), and this "
                               f"machine runs {host.name} programs",
                               hint=f"use the {host.name} build of that Firebird version "
                               "(the official Linux x64 tarball is …-linux-x64.tar.gz, 3.0's …amd64.tar.gz)")


@dataclass(frozen=True)
class VersionMark:
    """The version compiled into a build's engine plugin (or client library)."""

    version: str  # "5.0.4"
    build: str  # "LI-V5.0.4.1812 Firebird 5.0": what the engine reports as its server version


def build_number(build: str) -> str:
    """The build number in a version string (LI-V5.0.4.1812 Firebird 5.0 → 1812); "" when none."""
    found = re.search(r"\d+\.\d+\.\d+\.(\d+)\b", build)
    return found.group(1) if found else ""


def version_mark(path: Path) -> VersionMark | None:
    """The version a Firebird binary carries, read from its bytes (None: it carries none)."""
    stat = path.stat()
    return _version_mark(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _version_mark(path_text: str, _size: int, _mtime: int) -> VersionMark | None:
    data = Path(path_text).read_bytes()
    for match in _VERSION_BYTES.finditer(data):
        major, minor, patch = (int(match.group(n)) for n in (2, 3, 4))
        if (major, minor) == (int(match.group(6)), int(match.group(7))):
            return VersionMark(f"{major}.{minor}.{patch}", match.group(0).decode("ascii"))
    return None


def read_version(files: BuildFiles, where: str) -> VersionMark:
    """The build's version from its engine plugin (else its client library), or a refusal."""
    for path in (files.engine_plugin, files.client, files.server):
        if path is None:
            continue
        try:
            mark = version_mark(path)
        except OSError as error:
            raise FbbenchError(f"{where}: cannot read {path}: {error.strerror}") from None
        if mark is not None:
            return mark
    raise FbbenchError(f"{where} holds no Firebird version string (LI-V…) in its engine plugin or client library",
                       hint="is it a Firebird 3.0 or later build? " + WHAT_A_BUILD_IS)


def inspect_build(root: Path, where: str, embedded: bool) -> tuple[BuildFiles, VersionMark]:
    """The build in ``root`` read and checked for the use asked (``embedded``: its client library
    and engine plugin; otherwise its server). ``where`` names it as the user gave it."""
    files = find_files(root)
    if files.engine_plugin is None and files.server is None:
        raise FbbenchError(f"{where} is not a Firebird build: it has neither an engine plugin (plugins/libEngine*.so) "
                           "nor a server (bin/firebird)", hint=WHAT_A_BUILD_IS)
    check_architecture(files, where)
    mark = read_version(files, where)
    if embedded:
        if files.client is None:
            raise FbbenchError(f"{where} has an engine plugin but no client library (lib/{CLIENT_NAME}), which an "
                               "embedded engine is loaded through",
                               hint="the build is incomplete: unpack, install or build it again")
        if files.engine_plugin is None:
            raise FbbenchError(f"{where} has no engine plugin (plugins/libEngine*.so): it cannot run embedded",
                               hint="run its server instead: fbbench engines add NAME PATH --server")
        missing = [name for name in EMBEDDED_NEEDS if not (root / name).exists()]
        if missing:
            raise FbbenchError(f"the Firebird {mark.version} build in {where} is incomplete: {', '.join(missing)} "
                               f"missing", hint="unpack, install or build it again")
    return files, mark
