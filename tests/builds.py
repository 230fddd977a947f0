"""Firebird builds assembled from real engine files, for the tests of ``fbbench engines add`` and
``fbbench track``: the PyPI runtimes' files copied (not linked) into the official layout
(``lib/libfbclient.so.2`` and its links, plugins/, intl/, tzdata/, firebird.msg, firebird.conf …,
as Firebird's makeInstallImage.sh lays them out) and packed the way the official tarball is (an
outer directory with install.sh and buildroot.tar.gz, whose ``./opt/firebird/`` holds the
installation). The official tarballs are not reachable from this project's machines."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path


def official_installation(runtime: Path, target: Path, version: str) -> Path:
    """The official /opt/firebird layout, made of copies of a PyPI runtime's files."""
    lib = target / "lib"
    lib.mkdir(parents=True)
    shutil.copy2(runtime / "libfbclient.so.2", lib / f"libfbclient.so.{version}")
    os.symlink(f"libfbclient.so.{version}", lib / "libfbclient.so.2")
    os.symlink("libfbclient.so.2", lib / "libfbclient.so")
    for name in ("libib_util.so", "libtomcrypt.so.1"):
        if (runtime / name).exists():
            shutil.copy2(runtime / name, lib / name)
    for folder in ("plugins", "intl", "tzdata"):
        if (runtime / folder).is_dir():
            shutil.copytree(runtime / folder, target / folder, symlinks=True)
    for name in ("firebird.msg", "firebird.conf", "plugins.conf"):
        shutil.copy2(runtime / name, target / name)
    # Beside the engine's files an installation has its own configuration and databases, which a
    # runtime root must never link (a hard link is the user's file).
    (target / "databases.conf").write_text("employee.fdb = $(dir_sampleDb)/employee.fdb\n")
    return target


def _add(archive: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    archive.addfile(info, io.BytesIO(data))


def official_tarball(installation: Path | None, target: Path, top: str,
                     extra: list[tuple[tarfile.TarInfo, bytes | None]] = (), outer_extra: list[str] = ()) -> Path:
    """A tarball with the official structure: ``top/`` with install.sh and buildroot.tar.gz, whose
    ``./opt/firebird/`` holds ``installation`` (plus ``extra`` members: the bad inputs)."""
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz", compresslevel=1) as buildroot:
        if installation is not None:
            buildroot.add(installation, arcname="./opt/firebird")
        # The image links its headers into /usr/include: outside opt/firebird, never unpacked.
        link = tarfile.TarInfo("./usr/include/ibase.h")
        link.type, link.linkname = tarfile.SYMTYPE, "/opt/firebird/include/ibase.h"
        buildroot.addfile(link)
        for member, data in extra:
            buildroot.addfile(member, io.BytesIO(data) if data is not None else None)
    with tarfile.open(target, "w:gz", compresslevel=1) as outer:
        for name in outer_extra:
            _add(outer, name, b"x\n")
        _add(outer, f"{top}/install.sh", b"#!/bin/sh\necho 'installs into /opt/firebird'\n", 0o755)
        _add(outer, f"{top}/buildroot.tar.gz", inner.getvalue())
        _add(outer, f"{top}/manifest.txt", b"./opt/firebird\n")
    return target
