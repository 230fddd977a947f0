"""Firebird's firebird.conf vocabulary (fbbench.engines.firebird_conf), read as the engine reads it."""

from __future__ import annotations

from fbbench.engines import firebird_conf


def test_every_server_mode_spelling_means_one_architecture() -> None:
    for architecture, mode in firebird_conf.ARCHITECTURES.items():
        assert firebird_conf.architecture_of_mode(mode) == architecture
    assert firebird_conf.architecture_of_mode(" ThreadedShared ") == "superclassic"
    assert firebird_conf.architecture_of_mode("MultiProcess") == "classic"
    assert firebird_conf.architecture_of_mode("ThreadedDedicated") == "super"
    assert firebird_conf.architecture_of_mode("Dedicated") is None and firebird_conf.architecture_of_mode(None) is None
    assert set(firebird_conf.CHOICES["ServerMode"]) == set(firebird_conf.SERVER_MODES)


def test_integers_with_multipliers_and_keys_in_any_case() -> None:
    assert [firebird_conf.integer(text) for text in ("65536", " 64K ", "2m", "1G", "-1")] == [
        65536, 65536, 2 << 20, 1 << 30, -1]
    assert [firebird_conf.integer(text) for text in ("", None, "64 KB", "1kk", "ten")] == [None] * 5
    conf = {"defaultdbcachepages": "2K"}
    assert firebird_conf.key_of(conf, "DefaultDbCachePages") == "defaultdbcachepages"
    assert firebird_conf.lookup(conf, "DEFAULTDBCACHEPAGES") == "2K" and firebird_conf.lookup(conf, "X") is None


def test_booleans_are_read_as_firebird_reads_them() -> None:
    # Parameter::asBoolean: a non-zero number, or true / yes / y in any case; anything else is false.
    assert [firebird_conf.boolean(text) for text in ("true", "YES", "y", "1", "2", " -1")] == [True] * 6
    assert [firebird_conf.boolean(text) for text in ("false", "no", "n", "0", "on", "enabled", "")] == [False] * 7
    assert firebird_conf.boolean(None) is None
