"""Install the official embedded runtimes from PyPI, each into its own directory.

All ``firebird-embedded`` versions share the import package ``firebird.embedded``, so they can
never live in fbbench's own environment: each goes to ``<cache>/engines/<version>`` through
``pip install --target``. Installation is atomic (a temporary directory renamed into place), so
an interrupted download never leaves a half-installed engine behind.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from fbbench import paths
from fbbench.engines.catalog import EmbeddedEngine
from fbbench.errors import FbbenchError

_COMPLETE = ".fbbench-installed"


def install_dir(engine: EmbeddedEngine) -> Path:
    # A registered build is never installed from PyPI: its files are its root (engines/runtime.py).
    assert not engine.is_build, f"{engine.label} is a registered build"
    return paths.engines_dir() / engine.version


def wheel_root(engine: EmbeddedEngine) -> Path:
    """The runtime root inside the installed wheel (never modified: runs link to it)."""
    return install_dir(engine) / "firebird" / "embedded" / "runtime"


def is_installed(engine: EmbeddedEngine) -> bool:
    return (install_dir(engine) / _COMPLETE).is_file() and (wheel_root(engine) / "libfbclient.so.2").is_file()


def install(engine: EmbeddedEngine, quiet: bool = False) -> Path:
    """Install ``engine`` unless present; returns its runtime root."""
    if is_installed(engine):
        return wheel_root(engine)
    target = install_dir(engine)
    target.parent.mkdir(parents=True, exist_ok=True)
    spec = f"firebird-embedded=={engine.package_version}"
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
               "--no-warn-script-location", "--quiet", "--target"]
    with tempfile.TemporaryDirectory(prefix=f".{engine.version}-", dir=target.parent) as tmp:
        staging = Path(tmp) / "engine"
        if quiet:
            completed = subprocess.run([*command, str(staging), spec], capture_output=True, text=True)
        else:
            from rich.console import Console

            with Console(stderr=True).status(f"Installing {engine.label} ({spec}) from PyPI…"):
                completed = subprocess.run([*command, str(staging), spec], capture_output=True, text=True)
        if completed.returncode != 0:
            detail = (completed.stderr or completed.stdout).strip().splitlines()
            raise FbbenchError(
                f"could not install {spec}: {detail[-1] if detail else 'pip failed'}",
                hint=f"check network access to PyPI, then run: fbbench engines install {engine.major}",
            )
        (staging / _COMPLETE).write_text(spec + "\n")
        if target.exists():  # installed meanwhile by another fbbench process, or a broken leftover
            if is_installed(engine):
                return wheel_root(engine)
            shutil.rmtree(target)
        staging.rename(target)
    return wheel_root(engine)
