"""Engines: parsing names, runtime roots with a generated firebird.conf, child processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from fbbench.engines import EmbeddedEngine, ServerEngine, parse_engine, prepare_runtime, run_in_engine
from fbbench.engines.runtime import Runtime, found_libraries_file, missing_native_libraries
from fbbench.errors import FbbenchError
from tests.conftest import ENGINES, run_cli


def test_engine_names() -> None:
    assert parse_engine("5.0") == EmbeddedEngine("5.0.4")
    assert parse_engine("4") == EmbeddedEngine("4.0.7")
    assert parse_engine("3.0.14") == EmbeddedEngine("3.0.14")
    server = parse_engine("db.example.com/3051:/data/bench.fdb")
    assert isinstance(server, ServerEngine)
    assert (server.host, server.port, server.path) == ("db.example.com", "3051", "/data/bench.fdb")
    assert parse_engine("localhost:/data/x.fdb").port is None
    url = parse_engine("inet://127.0.0.1:3055//tmp/x.fdb")
    assert isinstance(url, ServerEngine) and url.port == "3055" and url.path == "/tmp/x.fdb"
    for bad in ("6.0", "5.0.3", "fast"):
        with pytest.raises(FbbenchError):
            parse_engine(bad)


def test_unknown_conf_key_names_the_closest(workdir: Path) -> None:
    with pytest.raises(FbbenchError) as caught:
        prepare_runtime("5.0", workdir, {"DefaultDbCachePage": "100"})
    assert "DefaultDbCachePages" in str(caught.value)
    with pytest.raises(FbbenchError, match="ServerMode"):
        prepare_runtime("5.0", workdir, {"ServerMode": "Turbo"})
    # Firebird 3 has no ReadConsistency (a 4.0 setting): the keys are the engine's own.
    with pytest.raises(FbbenchError, match="ReadConsistency"):
        prepare_runtime("3.0", workdir, {"ReadConsistency": "0"})


def test_runtime_root_is_private(workdir: Path) -> None:
    one = prepare_runtime("5.0", workdir, {"servermode": "SuperClassic"})
    two = prepare_runtime("5.0", workdir)
    assert one.root != two.root
    assert "ServerMode = SuperClassic" in one.conf_file.read_text()  # canonical spelling
    assert "ServerMode" not in two.conf_file.read_text()
    assert one.env()["FIREBIRD"] == str(one.root)
    assert one.env()["FIREBIRD_LOCK"] != two.env()["FIREBIRD_LOCK"]


def test_a_library_check_is_taken_again_only_while_what_it_found_is_there(workdir: Path) -> None:
    """ldd's answer is kept for the next runtime of the same files, but not once a library it
    resolved has gone, and never for a runtime whose own links differ."""
    def kept_for(runtime: Runtime) -> Path | None:
        return found_libraries_file(runtime, [runtime.client_library, *sorted(runtime.root.glob("plugins/libEngine*"))])

    runtime = prepare_runtime("3.0", workdir)
    kept = kept_for(runtime)
    assert kept is not None and kept.is_file()
    found = kept.read_text().split()
    assert any(path.endswith("/libc.so.6") for path in found) and "<run>/lib/libtommath.so.0" in found, found
    assert kept_for(prepare_runtime("3.0", workdir)) == kept  # the same files: the same key
    kept.write_text("/nonexistent/libgone.so.1\n")  # a library it found is gone: ldd is asked again
    assert missing_native_libraries(runtime) == {}
    assert kept.read_text().split() == found
    (runtime.lib_dir / "libtommath.so.0").unlink()  # Firebird 3 needs it: this runtime cannot load
    (runtime.lib_dir / "libtommath.so.0").symlink_to("/nonexistent/libtommath.so.1")
    assert "libtommath.so.0" in missing_native_libraries(runtime)


@pytest.mark.parametrize("version", ["4.0", "5.0"])
def test_generated_conf_is_effective(version: str, workdir: Path) -> None:
    runtime = prepare_runtime(version, workdir, {"ServerMode": "SuperClassic", "DefaultDbCachePages": "4321"})
    database = str(workdir / "conf.fdb")
    run_in_engine(runtime, "tests.foundation_child:create_foreign_database", database)
    values = run_in_engine(runtime, "tests.foundation_child:config_values", database,
                           ["ServerMode", "DefaultDbCachePages"])
    assert values == {"ServerMode": "SuperClassic", "DefaultDbCachePages": "4321"}


def test_one_process_uses_three_engines_in_turn(workdir: Path) -> None:
    versions = []
    for version in ENGINES:
        runtime = prepare_runtime(version, workdir)
        database = str(workdir / f"turn{version}.fdb")
        versions.append(run_in_engine(runtime, "fbbench.database.lifecycle:create", database, "t", None,
                                      False, None, None, {})["engine_version"])
    assert versions == ["3.0.14", "4.0.7", "5.0.4"]


def test_doctor_passes_for_installed_engines(workdir: Path) -> None:
    result = run_cli("doctor", *ENGINES, "--workdir", str(workdir))
    assert result.returncode == 0, result.stdout + result.stderr
    for version in ("3.0.14", "4.0.7", "5.0.4"):
        assert f"LI-V{version}" in result.stdout
    assert "FAILED" not in result.stdout


# The parent process of the test below: a SIGINT reaches it while an engine child starts (sent to
# itself while the stop signals are blocked, so it is delivered the moment the child is there).
STOPPED_AS_THE_CHILD_STARTS = """
import os, signal, sys
from pathlib import Path
import psutil
from fbbench.engines import child, prepare_runtime
from fbbench.engines import platform as engine_platform

runtime = prepare_runtime("5.0", Path(sys.argv[1]))
real = engine_platform.in_own_process_group
def interrupted_while_starting():
    os.kill(os.getpid(), signal.SIGINT)  # held back until the child has started
    return real()
child.platform.in_own_process_group = interrupted_while_starting
try:
    child.run_in_engine(runtime, "tests.foundation_child:config_values", "unused", ["ServerMode"])
except KeyboardInterrupt:
    print("interrupted; children left:", len(psutil.Process().children(recursive=True)))
"""


def test_a_ctrl_c_as_an_engine_child_starts_ends_it_quietly(workdir: Path) -> None:
    """A Ctrl-C raised in the parent just after an engine child started, before its request was
    sent: the child had read an empty request and printed a JSONDecodeError traceback (seen
    when `fbbench track run` was stopped). Now it ends quietly, and the parent waits for it."""
    import subprocess
    import sys

    from tests.conftest import REPO

    done = subprocess.run([sys.executable, "-c", STOPPED_AS_THE_CHILD_STARTS, str(workdir)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "interrupted; children left: 0", done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip() == "", done.stderr
