"""Firebird's own words for firebird.conf, in one place.

What the engine means by a ServerMode spelling (the architecture it runs), what each architecture
defaults to, and how Firebird reads a value — an integer with K, M or G, a key in any case — and
a conf text. Every part of fbbench that judges, records or shows a firebird.conf setting (the
run settings, the memory check, ``--set`` validation, the lint, a run's conditions and its
report) reads it here, so that they read it as the engine that ran did.

The readers follow Firebird's own parser (``src/common/config/config_file.cpp``:
``ConfigFile::parseLine``, ``Parameter::asInteger`` and ``Parameter::asBoolean``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# fbbench's architecture names (--architecture) → ServerMode's canonical spelling.
ARCHITECTURES = {"super": "Super", "superclassic": "SuperClassic", "classic": "Classic"}
# Every ServerMode spelling Firebird accepts → the architecture it means.
SERVER_MODES = {"super": "super", "superserver": "super", "threadeddedicated": "super",
                "superclassic": "superclassic", "threadedshared": "superclassic",
                "classic": "classic", "multiprocess": "classic"}
# How a person names each architecture in a sentence.
ARCHITECTURE_NAMES = {"super": "SuperServer", "superclassic": "SuperClassic", "classic": "Classic"}
# Where every attachment has a page cache of its own (SuperServer shares one).
CACHE_PER_ATTACHMENT = frozenset({"superclassic", "classic"})
# DefaultDbCachePages' default per architecture (Firebird 3.0+).
DEFAULT_PAGE_BUFFERS = {"super": 2048, "superclassic": 256, "classic": 256}

# Keys whose values are a fixed set of words (firebird.conf documents them in prose), lower case.
CHOICES = {
    "ServerMode": frozenset(SERVER_MODES),
    "GCPolicy": frozenset({"cooperative", "background", "combined"}),
    "WireCrypt": frozenset({"required", "enabled", "disabled"}),
}
# The words Firebird reads as a boolean; any other word silently means false there.
BOOLEAN_WORDS = frozenset({"true", "false", "yes", "no", "y", "n", "1", "0"})

_INTEGER = re.compile(r"\s*(-?)(\d+)([kmg]?)\s*", re.IGNORECASE)
_MULTIPLIERS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_LEADING_NUMBER = re.compile(r"\s*[-+]?(\d+)")  # what C's atoi reads
_TRUE_WORDS = frozenset({"true", "yes", "y"})


def architecture_of_mode(mode: str | None) -> str | None:
    """super | superclassic | classic for a ServerMode value; None if it is none of Firebird's."""
    return SERVER_MODES.get((mode or "").strip().lower())


def integer(value: str | None) -> int | None:
    """A firebird.conf integer (``65536``, ``64K``, ``-1``: digits, then K, M or G times 1024,
    1024² or 1024³), or None for anything else (where Firebird reads 0; it also takes odd
    spellings such as ``- 5`` that fbbench neither writes nor accepts)."""
    match = _INTEGER.fullmatch(value or "")
    if not match:
        return None
    sign = -1 if match.group(1) else 1
    return sign * int(match.group(2)) * _MULTIPLIERS[match.group(3).lower()]


def boolean(value: str | None) -> bool | None:
    """A firebird.conf boolean as Firebird reads it: true, yes, y (any case) or a non-zero number;
    every other word is false ("on" included). None when the value is missing."""
    if value is None:
        return None
    number = _LEADING_NUMBER.match(value)
    return bool(number and int(number.group(1))) or value.strip().lower() in _TRUE_WORDS


def key_of(conf: Mapping[str, str], name: str) -> str | None:
    """The key of ``conf`` that is ``name`` in any case (firebird.conf keys are case-insensitive)."""
    wanted = name.lower()
    return next((key for key in conf if key.strip().lower() == wanted), None)


def lookup(conf: Mapping[str, str], name: str) -> str | None:
    """The value of ``name`` in ``conf``, whatever the case of its key."""
    key = key_of(conf, name)
    return None if key is None else conf[key]


def parse_conf_text(text: str) -> dict[str, str]:
    """``Key = Value`` lines of a firebird.conf text, comments dropped."""
    pairs = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        key, sep, value = line.partition("=")
        if sep and key.strip():
            pairs[key.strip()] = value.strip()
    return pairs


# ------------------------------------------------------------------------------ replication.conf
# Firebird 4.0 brought built-in replication; its primary side reads a ``database = PATH { … }``
# section of replication.conf in the root directory whenever it opens that database
# (``src/jrd/replication/Config.cpp``: ``Config::get``). The embedded wheels ship no
# replication.conf, so the keys are listed here as the engines' own file documents them, per
# version (builds/install/misc/replication.conf at v4.0.7 and v5.0.4; docs/replication.md).
#
# How the engine reads a value, which is why fbbench checks every one before a run: a number
# is taken only when it is all digits and above zero (``parseLong``: "16M", "0" and "-1" are
# silently ignored and the default stays); a boolean only as the exact words true/yes/on/1 or
# false/no/off/0 (any other word is ignored); an unknown key is ignored without a word by 4.0
# and logged to replication.log by 5.0.

REPLICATION_MODES = ("off", "async", "sync")
# The first Firebird version with built-in replication.
REPLICATION_SINCE = "4.0"

# Primary-side keys a run may set (--set-replication), with how the engine reads them.
_PRIMARY_KEYS = {
    "buffer_size": "number",  # bytes of changes kept in memory before they go to the journal / a replica
    "journal_segment_size": "number",  # bytes
    "journal_segment_count": "number",
    "journal_group_flush_delay": "number",  # milliseconds
    "journal_archive_timeout": "number",  # seconds
    "journal_file_prefix": "text",
    "include_filter": "text",  # a regular expression over table names
    "exclude_filter": "text",
    "log_errors": "boolean",
    "report_errors": "boolean",
    "disable_on_error": "boolean",
}
REPLICATION_KEYS: dict[str, dict[str, str]] = {"4.0": dict(_PRIMARY_KEYS), "5.0": dict(_PRIMARY_KEYS)}
# Keys fbbench writes itself, and why a run cannot set them.
REPLICATION_OWNED = {
    "journal_directory": "fbbench puts the journal inside the run's work directory",
    "journal_archive_directory": "fbbench puts the archive inside the run's work directory",
    "sync_replica": "fbbench creates the replica of --replication sync itself",
}
# Keys a run refuses for another reason than that fbbench sets them (what the key would do instead).
REPLICATION_REFUSED = {
    "journal_archive_command": "the engine would run that shell command for every archived segment, outside the "
                               "run's work directory; a run archives with the engine's own copy into it",
    "plugin": "a replication plugin replaces the built-in replication fbbench measures",
}
# Keys of the replica side (a server that applies journals): nothing applies them in a run.
REPLICA_SIDE_KEYS = {"4.0": ("journal_source_directory", "source_guid", "verbose_logging", "apply_idle_timeout",
                             "apply_error_timeout"),
                     "5.0": ("journal_source_directory", "source_guid", "verbose_logging", "apply_idle_timeout",
                             "apply_error_timeout", "cascade_replication")}
REPLICATION_BOOLEANS = frozenset({"true", "yes", "on", "1", "false", "no", "off", "0"})
# What fbbench writes for --replication async unless --set-replication says otherwise: the
# engine's default archive timeout is 60 s, longer than many runs, which would archive nothing.
REPLICATION_DEFAULTS = {"async": {"journal_archive_timeout": "10"}, "sync": {}}


def replication_version(major: str) -> str | None:
    """The replication.conf vocabulary of an engine version ("4.0", "5.0", "5.0.4" …), None
    where there is no built-in replication (3.0)."""
    parts = major.split(".")
    key = ".".join(parts[:2]) if len(parts) >= 2 else f"{parts[0]}.0"
    return key if key in REPLICATION_KEYS else None
def os_cache_in_play(conf: Mapping[str, str], set_keys: Iterable[str], page_buffers: int | None) -> bool:
    """Whether the OS file cache sits under Firebird's page cache (firebird.conf of 3.0 to 5.0).

    A UseFileSystemCache that was set (4.0+) decides. Otherwise FileSystemCacheThreshold does on
    3.0 (which has no UseFileSystemCache) and wherever it was set: the OS cache is used while the
    page cache is smaller than the threshold (default 65536 pages). Otherwise 4.0+'s default
    UseFileSystemCache = true holds.
    """
    explicit = {k.lower() for k in set_keys}
    use = lookup(conf, "UseFileSystemCache")
    if use is not None and "usefilesystemcache" in explicit:
        return bool(boolean(use))
    if use is None or "filesystemcachethreshold" in explicit:
        threshold = integer(lookup(conf, "FileSystemCacheThreshold"))
        return page_buffers is None or page_buffers < (65536 if threshold is None else threshold)
    return bool(boolean(use))


def file_cache_setting(engine_major: str, on: bool) -> tuple[str, str]:
    """The firebird.conf key and value that put the OS file cache under Firebird's page cache or
    take it away, for an engine version: UseFileSystemCache on 4.0 and later; on 3.0, which has
    only FileSystemCacheThreshold (the OS cache is used while the page cache is smaller than it),
    1 page turns it off for any cache and the largest value on."""
    if engine_major.startswith("3"):
        return "FileSystemCacheThreshold", "2147483647" if on else "1"
    return "UseFileSystemCache", "true" if on else "false"
