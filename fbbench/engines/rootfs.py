"""Runtime roots: the directory trees Firebird runs from, built by linking an installation's files.

Firebird finds its configuration, messages, plugins and libraries relative to its root. fbbench
gives every run a root of its own — an embedded runtime's (:mod:`fbbench.engines.runtime`) or a
managed server's (:mod:`fbbench.engines.managed`) — made of the installation's files plus the
run's own firebird.conf. Both are built here.

Files are hard-linked rather than symlinked: Firebird 4 refuses to load a plugin whose real path
differs from the path it asked for ("Actual module name does not match requested"). Where a
link is refused (another file system, someone else's file) the file is copied.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

# System libraries the runtimes need, and how to get them on Debian / Ubuntu.
NATIVE_FIXES = {
    "libtommath.so.1": "sudo apt-get install -y libtommath1",
    "libtommath.so.0": "sudo apt-get install -y libtommath1",
    "libncurses.so.5": "sudo apt-get install -y libncurses5",
    "libtinfo.so.5": "sudo apt-get install -y libncurses5",
}


def native_fix(library: str) -> str:
    """The command that installs a missing shared library."""
    return NATIVE_FIXES.get(library, f"install the package that provides {library}")


def link_file(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError as error:  # another filesystem, or links not allowed: copy instead
        if error.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK):
            raise
        shutil.copy2(source, target)


def link_tree(source: Path, target: Path, skip: set[str]) -> None:
    """Mirror ``source`` into ``target`` (created), leaving out the top-level names in ``skip``."""
    target.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.name in skip:
            continue
        destination = target / item.name
        if item.is_dir():
            link_tree(item, destination, set())
        else:
            link_file(item, destination)


def _system_library(name: str) -> Path | None:
    """Where the dynamic loader finds a 64-bit ``name`` (from ``ldconfig -p``)."""
    try:
        listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    except OSError:
        listing = ""
    for line in listing.splitlines():
        soname, _, location = line.strip().partition(" => ")
        if soname.split(" ")[0] == name and "x86-64" in soname:
            return Path(location)
    return next(iter(Path("/usr/lib").glob(f"*/{name}")), None)


def prepare_lib_dir(lib_dir: Path) -> None:
    """Firebird 3 and 4 were linked against libtommath.so.0, which Debian 12 no longer ships;
    its libtommath.so.1 has the same ABI for everything fbclient uses."""
    lib_dir.mkdir(parents=True, exist_ok=True)
    compat = lib_dir / "libtommath.so.0"
    if os.path.lexists(compat):  # made before (the engine cache's, asked for each templated child)
        return
    current = _system_library("libtommath.so.1")
    if current:
        compat.symlink_to(current)
