"""``fbbench doctor``: prove each engine works end to end, and say how to fix what does not.

For every engine: installed? native libraries found? Then, in a child process with a generated
firebird.conf: create a database, run a query, read the server version, check that a
generated setting is effective (RDB$CONFIG, Firebird 4+), run gstat through the services API,
and drop the database. Plus the native load core that ``fbbench run`` needs.
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fbbench.engines import install as installer
from fbbench.engines.catalog import EmbeddedEngine
from fbbench.engines.child import run_in_engine
from fbbench.engines.runtime import engine_files, missing_native_libraries, prepare_runtime
from fbbench.errors import FbbenchError
from fbbench.paths import assert_inside

# A value no default has, so seeing it in RDB$CONFIG proves the generated firebird.conf is read.
_PROBE_CACHE_PAGES = "3072"


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""
    fix: str = ""


@dataclass
class EngineReport:
    engine: str
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)


def probe(database: str) -> dict[str, Any]:
    """Runs in the engine child: the end-to-end checks that need the client library."""
    from fbbench.database import driver

    result: dict[str, Any] = {}
    with driver.create_database(database, page_size=8192, forced_writes=False) as connection:
        with connection.cursor() as cursor:
            cursor.execute("select rdb$get_context('SYSTEM', 'ENGINE_VERSION'), current_timestamp "
                           "from rdb$database")
            result["engine_version"] = cursor.fetchone()[0]
            result["server_version"] = connection.info.firebird_version
            if driver.version_tuple(connection) >= (4, 0):
                cursor.execute("select rdb$config_value from rdb$config "
                               "where rdb$config_name = 'DefaultDbCachePages'")
                result["config_cache_pages"] = cursor.fetchone()[0]
    with driver.server("") as server:
        server.database.get_statistics(database=database, flags=0)  # header statistics (gstat -h)
        report = "".join(server.readlines())
    result["gstat_page_size"] = next((line.split()[-1] for line in report.splitlines()
                                      if line.strip().startswith("Page size")), None)
    with driver.connect(database) as connection:
        connection.drop_database()
    return result


def check_core() -> Check:
    if importlib.util.find_spec("fbbench._core") is None:
        return Check("native load core", False, "fbbench._core is not built",
                     "./setup.sh (or: pip install -e . with a Rust toolchain)")
    return Check("native load core", True, "fbbench._core importable")


def check_engine(engine: EmbeddedEngine, workdir: Path) -> EngineReport:
    report = EngineReport(engine.name or engine.version)
    if engine.is_build:  # a registered build: its files still there and still the binaries registered
        try:
            report.checks.append(Check("files", True, str(engine_files(engine, install=False))))
        except FbbenchError as error:
            report.checks.append(Check("files", False, error.message, error.hint or ""))
            return report
    elif not installer.is_installed(engine):
        report.checks.append(Check("installed", False, "not installed", f"fbbench engines install {engine.major}"))
        return report
    else:
        report.checks.append(Check("installed", True, str(installer.install_dir(engine))))
    try:
        runtime = prepare_runtime(engine, workdir, {"DefaultDbCachePages": _PROBE_CACHE_PAGES},
                                  install=False, check_libraries=False)
    except FbbenchError as error:
        report.checks.append(Check("runtime root", False, error.message, error.hint or ""))
        return report
    try:
        missing = missing_native_libraries(runtime)
        if missing:
            fixes = " && ".join(sorted(set(missing.values())))
            report.checks.append(Check("native libraries", False, "missing " + ", ".join(sorted(missing)), fixes))
            return report
        report.checks.append(Check("native libraries", True, "all found"))
        database = runtime.base / "doctor.fdb"
        try:
            result = run_in_engine(runtime, "fbbench.runner.doctor:probe", str(database))
        except FbbenchError as error:
            report.checks.append(Check("create, query, gstat", False, error.message,
                                       error.hint or f"see {runtime.firebird_log}"))
            return report
        version_ok = str(result["engine_version"]).startswith(engine.version)
        report.checks.append(Check("create database and query", version_ok,
                                   f"server reports {result['server_version']}"))
        if "config_cache_pages" in result:
            applied = result["config_cache_pages"] == _PROBE_CACHE_PAGES
            report.checks.append(Check("generated firebird.conf effective", applied,
                                       f"RDB$CONFIG DefaultDbCachePages = {result['config_cache_pages']}"))
        report.checks.append(Check("gstat via services API", result["gstat_page_size"] == "8192",
                                   f"header page size {result['gstat_page_size']}"))
    finally:
        shutil.rmtree(assert_inside(runtime.base, workdir), ignore_errors=True)
    return report
