"""An official Firebird Linux tarball, unpacked into fbbench's own home, safely.

The tarball (``Firebird-5.0.4.1812-0-linux-x64.tar.gz``; 3.0's ``…-0.amd64.tar.gz``) holds one top
directory with ``install.sh``, scripts and ``buildroot.tar.gz``, an image of the installed system
whose ``./opt/firebird/`` is the installation (Firebird's ``makeInstallImage.sh``). fbbench takes
only that ``opt/firebird`` and never runs ``install.sh``; the tarball is read, never changed.

The copy goes to ``<engine cache>/builds/<first 16 hex digits of the tarball's sha256>/firebird``,
so a tarball registered under two names is unpacked once. It is unpacked into a temporary
directory beside it and renamed into place only when complete (with ``unpacked.json``, what it
came from): a full disk or a kill leaves no half copy where a registration could point.

What is refused, before or while unpacking, with nothing left behind: a file that is not a tar
archive, or a damaged one (truncated, corrupt); a tar archive that is not an official Firebird
tarball (no ``buildroot.tar.gz``, or one without ``opt/firebird``); any member whose path is
absolute or climbs out with ``..``, a symbolic or hard link pointing out of the installation,
device files and fifos; more than :data:`MAX_UNPACKED_BYTES` unpacked (an official build is
about 100 MB, a debug build a few hundred). Python's ``data`` extraction filter is applied on
top, and sets safe permissions (no set-uid, no group or other write).
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import gzip
import hashlib
import io
import json
import lzma
import os
import posixpath
import secrets
import shutil
import tarfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from fbbench import paths
from fbbench.engines.builds import WHAT_A_BUILD_IS
from fbbench.errors import FbbenchError

MAX_UNPACKED_BYTES = 4 * 2**30
MAX_MEMBERS = 200_000
BUILDROOT = "buildroot.tar.gz"
INSTALLATION = "opt/firebird"
COMPLETE = "unpacked.json"
_STAGING = ".unpacking-"
# What a damaged archive raises while it is read (gzip's BadGzipFile is an OSError without errno).
_DAMAGED = (tarfile.ReadError, tarfile.CompressionError, tarfile.StreamError, EOFError, zlib.error,
            gzip.BadGzipFile, lzma.LZMAError)


def builds_dir() -> Path:
    # Beside the registry of names (engines.json in the home), not in the shared engine cache: the
    # names that use a copy are then all in one registry, and removing the last of them in one home
    # never takes a copy from under a name another home registered.
    return paths.home_dir() / "builds"


@dataclass(frozen=True)
class Unpacked:
    directory: Path  # builds/<key>: fbbench's, removed with the last name registered for it
    sha256: str  # the tarball's

    @property
    def root(self) -> Path:
        """The installation: what the tarball's buildroot holds under opt/firebird."""
        return self.directory / "firebird"


def unpack(tarball: Path) -> Unpacked:
    """The copy of ``tarball``'s installation in fbbench's home (unpacked now unless it is there)."""
    sha = _sha256(tarball)
    place = builds_dir()
    directory = place / sha[:16]
    if (directory / COMPLETE).is_file():
        return Unpacked(directory, sha)
    try:
        place.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(place)
        staging = place / f"{_STAGING}{os.getpid()}-{secrets.token_hex(4)}"
        staging.mkdir()
    except OSError as error:
        raise paths.file_error(error, f"make a directory in {place}", place,
                               "set FBBENCH_CACHE to a directory on another one") from None
    try:
        _extract(tarball, staging / "firebird")
        (staging / COMPLETE).write_text(json.dumps({"tarball": str(tarball), "sha256": sha,
                                                    "unpacked_at": time.time()}, indent=2) + "\n")
        try:
            staging.rename(directory)
        except OSError as error:  # unpacked meanwhile by another fbbench: keep that one
            if error.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not (directory / COMPLETE).is_file():
                raise
    except OSError as error:
        raise paths.file_error(error, f"unpack {tarball} into {place}", place,
                               "set FBBENCH_CACHE to a directory on another one") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Unpacked(directory, sha)


def _sha256(tarball: Path) -> str:
    sha = hashlib.sha256()
    try:
        with open(tarball, "rb") as handle:
            while chunk := handle.read(1 << 20):
                sha.update(chunk)
    except OSError as error:
        raise FbbenchError(f"cannot read {tarball}: {error.strerror}") from None
    return sha.hexdigest()


def _remove_abandoned(place: Path) -> None:
    """Temporary directories of unpacking processes that are gone (killed while unpacking)."""
    for staging in place.glob(f"{_STAGING}*"):
        with contextlib.suppress(ValueError, IndexError):
            pid = int(staging.name[len(_STAGING):].split("-")[0])
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                shutil.rmtree(staging, ignore_errors=True)
            except PermissionError:  # another user's process: alive
                pass


def _refuse(tarball: Path, what: str) -> FbbenchError:
    return FbbenchError(f"{tarball} {what}; fbbench unpacks nothing from it", hint=WHAT_A_BUILD_IS)


def _extract(tarball: Path, target: Path) -> None:
    """Read ``tarball`` front to back once, unpacking its buildroot's installation into ``target``.

    Both archives are read as streams through the decompressor's own file object and drained to
    their end, where gzip checks its CRC and length: tar stops reading at its end-of-archive
    marker, before the gzip trailer, and deflate decodes most damage into garbage without a word
    (a corrupt download would otherwise be unpacked as a build that crashes the engine)."""
    compression = _compression(tarball)
    try:
        with open(tarball, "rb") as raw, _decompressing(raw, compression) as decompressed, \
                tarfile.open(fileobj=decompressed, mode="r|") as outer:
            buildroots = 0
            for count, member in enumerate(outer, 1):
                if count > MAX_MEMBERS:
                    raise _refuse(tarball, f"has more than {MAX_MEMBERS:,} members")
                _check_name(tarball, member.name)
                if member.isdev():
                    raise _refuse(tarball, f"holds a device file or fifo ({member.name})")
                parts = _normal(member.name).split("/")
                if member.isfile() and parts[-1] == BUILDROOT and len(parts) <= 2:
                    buildroots += 1
                    stream = outer.extractfile(member)
                    if buildroots > 1 or stream is None:
                        raise _refuse(tarball, f"is not an official Firebird tarball: it has more than one "
                                      f"{BUILDROOT}")
                    _extract_installation(tarball, stream, target)
            if buildroots == 0:
                raise _refuse(tarball, f"is not an official Firebird tarball: it has no {BUILDROOT} (the official "
                              f"Linux tarball's top directory holds install.sh and {BUILDROOT})")
            _drain(decompressed)
    except tarfile.FilterError as error:  # Python's own filter agreeing with the checks below
        raise _refuse(tarball, f"has a member fbbench will not unpack ({error})") from None
    except _DAMAGED as error:
        reason = (str(error) or type(error).__name__).splitlines()[0]
        raise FbbenchError(f"{tarball} is damaged (or holds no tar archive): {reason}",
                           hint="download it again: the release page lists each file's size and checksum") from None


def _drain(stream: io.BufferedIOBase) -> None:
    while stream.read(1 << 20):
        pass


_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bzip2"))


def _compression(tarball: Path) -> str:
    """How ``tarball`` is compressed (what its first bytes say: gzip, xz, bzip2, or none for a
    plain tar), or a refusal: it is not an archive at all."""
    try:
        with open(tarball, "rb") as handle:
            head = handle.read(512)
    except OSError as error:
        raise FbbenchError(f"cannot read {tarball}: {error.strerror}") from None
    for magic, compression in _MAGIC:
        if head.startswith(magic):
            return compression
    if head[257:262] == b"ustar":
        return "none"
    raise _refuse(tarball, "is not a tarball (neither a gzip, xz or bzip2 file nor a tar archive)")


@contextlib.contextmanager
def _decompressing(raw: io.BufferedIOBase, compression: str) -> Iterator[io.BufferedIOBase]:
    if compression == "gzip":
        with gzip.GzipFile(fileobj=raw, mode="rb") as gzipped:
            yield gzipped
    elif compression == "xz":
        with lzma.LZMAFile(cast(IO[bytes], raw), mode="rb") as xz:
            yield xz
    elif compression == "bzip2":
        with bz2.BZ2File(raw, mode="rb") as bzipped:
            yield bzipped
    else:
        yield raw


def _normal(name: str) -> str:
    """A member's path without "./" and trailing slashes (tar writes both)."""
    while name.startswith("./"):
        name = name[2:]
    return name.rstrip("/")


def _check_name(tarball: Path, name: str) -> None:
    if name.startswith("/") or ".." in name.split("/"):
        raise _refuse(tarball, f"has a member that would land outside the directory it is unpacked into: {name}")


def _extract_installation(tarball: Path, stream: IO[bytes], target: Path) -> None:
    """Unpack what ``stream`` (buildroot.tar.gz) holds under opt/firebird/ into ``target``."""
    prefix = INSTALLATION + "/"
    total, found = 0, False
    target.mkdir()
    # A stream: the buildroot is read once, front to back, without a temporary copy.
    with gzip.GzipFile(fileobj=stream, mode="rb") as decompressed, \
            tarfile.open(fileobj=decompressed, mode="r|") as inner:
        for count, member in enumerate(inner, 1):
            if count > MAX_MEMBERS:
                raise _refuse(tarball, f"has more than {MAX_MEMBERS:,} members in its {BUILDROOT}")
            _check_name(tarball, member.name)
            name = _normal(member.name)
            if name == INSTALLATION:
                found = True
            if not name.startswith(prefix):
                continue  # the image's /usr/include links and the like: not the installation
            found = True
            relative = name[len(prefix):]
            if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
                raise _refuse(tarball, f"holds a device file or fifo ({name})")
            if member.issym():
                _check_symlink(tarball, name, relative, member.linkname)
            elif member.islnk():
                link = _normal(member.linkname)
                if not link.startswith(prefix) or ".." in link.split("/"):
                    raise _refuse(tarball, f"has a hard link pointing out of {INSTALLATION}: "
                                  f"{name} -> {member.linkname}")
                member.linkname = link[len(prefix):]
            total += max(member.size, 0)
            if total > MAX_UNPACKED_BYTES:
                raise _refuse(tarball, f"would unpack to more than {MAX_UNPACKED_BYTES / 2**30:.0f} GiB")
            member.name = relative
            inner.extract(member, target, filter="data")
        _drain(decompressed)
    if not found:
        raise _refuse(tarball, f"is not an official Firebird tarball: its {BUILDROOT} has no {INSTALLATION}/")


def _check_symlink(tarball: Path, name: str, relative: str, link: str) -> None:
    """A symbolic link must point inside the installation (lib/libfbclient.so.2 -> libfbclient.so.5.0.4)."""
    landing = posixpath.normpath(posixpath.join(posixpath.dirname(relative), link))
    if link.startswith("/") or landing == ".." or landing.startswith("../"):
        raise _refuse(tarball, f"has a symbolic link pointing out of {INSTALLATION}: {name} -> {link}")
