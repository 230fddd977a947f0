"""A Firebird installation on this machine, whose server fbbench starts for each run (a managed
engine, ``--engine server:DIR``): what it is, where its pieces are, which version it holds.

What "an installation" is, and how its two layouts (official, Debian) differ: see
:mod:`fbbench.engines.managed.server`. The engine catalog (``server:DIR`` on the command line)
and the runtime (``--set`` checked against the installation's documented firebird.conf) read
installations here, below the managed server itself.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from fbbench.engines.rootfs import native_fix, prepare_lib_dir
from fbbench.errors import FbbenchError
from fbbench.paths import not_found

# In the environment of every process of a managed server instance (see managed.server).
MARKER = "FBBENCH_MANAGED_SERVER"
# fbbench sets these itself: a --set for them would break the instance's isolation.
RESERVED_KEYS = {
    "RemoteServicePort": "fbbench chooses a free port on 127.0.0.1 for each managed server",
    "RemoteServiceName": "fbbench chooses a free port on 127.0.0.1 for each managed server",
    "RemoteBindAddress": "a managed server listens on 127.0.0.1 only",
    "SecurityDatabase": "a managed server has its own security database with a random SYSDBA password",
}

WHAT_IS_AN_INSTALLATION = (
    "name the directory of a Firebird installation: /usr for Debian's firebird3.0-server "
    "(/usr/sbin/firebird), or an official install such as /opt/firebird (bin/firebird, lib/, plugins/)"
)
_DEBIAN_PACKAGE = "firebird3.0-server"
_VERSION_TEXT = re.compile(r"\b[A-Z]{2}-[A-Z](\d+)\.(\d+)\.(\d+)\.(\d+)\b")


@dataclass(frozen=True)
class ManagedEngine:
    """A Firebird installation on this machine whose server fbbench starts for each run.

    Built by :func:`inspect_installation`, which ran the server binary once to learn its version;
    the fields are plain strings so that a runtime passes it to an engine child as JSON without
    inspecting the installation again.
    """

    directory: str  # "/usr" (Debian's package) or "/opt/firebird" (an official install)
    layout: str  # "debian" | "official"
    version: str  # "3.0.11"
    build: str  # "LI-V3.0.11.33637", as the server reports itself

    @property
    def major(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def label(self) -> str:
        where = "Debian" if self.layout == "debian" else self.directory
        return f"Firebird {self.version} server (managed, {where})"

    @property
    def spec(self) -> str:
        """How to name this engine on the command line."""
        return f"server:{self.directory}"

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class Layout:
    """Where the pieces of one installation are."""

    directory: Path
    debian: bool
    server: Path  # the server binary in the installation
    isql: Path
    libdir: Path  # Debian: DIR/lib/<triplet>/firebird/<major>; official: DIR
    conf_docs: Path  # the directory whose firebird.conf documents the keys
    log_name: str  # the log file's name in its directory
    security_name: str  # security3.fdb, security4.fdb, …


def _layout(directory: Path, debian: bool, major: str) -> Layout:
    major_number = major.split(".")[0]
    if debian:
        candidates = sorted(directory.glob(f"lib/*/firebird/{major}"))
        libdir = next((c for c in candidates if (c / "plugins").is_dir()),
                      candidates[0] if candidates else directory / "lib" / "firebird" / major)
        return Layout(directory, True, directory / "sbin" / "firebird", directory / "bin" / "isql-fb", libdir,
                      libdir, f"firebird{major}.log", f"security{major_number}.fdb")
    return Layout(directory, False, directory / "bin" / "firebird", directory / "bin" / "isql", directory,
                  directory, "firebird.log", f"security{major_number}.fdb")


def layout_of(engine: ManagedEngine) -> Layout:
    return _layout(Path(engine.directory), engine.layout == "debian", engine.major)


def inspect_installation(text: str | Path) -> ManagedEngine:
    """The managed engine for the installation in ``text``, or a one-line reason it is not one."""
    given = Path(text).expanduser()
    if not given.exists():
        raise FbbenchError(not_found(given), hint=WHAT_IS_AN_INSTALLATION)
    if not given.is_dir():
        where = given.parent.parent if given.name == "firebird" else None
        hint = f"name the installation, not the binary: server:{where}" if where else WHAT_IS_AN_INSTALLATION
        raise FbbenchError(f"{given} is a file, not a Firebird installation directory", hint=hint)
    directory = given.resolve()
    if (directory / "bin" / "firebird").is_file():
        debian = False
        binary = directory / "bin" / "firebird"
    elif (directory / "sbin" / "firebird").is_file():
        debian = True
        binary = directory / "sbin" / "firebird"
    else:
        raise not_an_installation(directory)
    try:
        stamp = binary.stat().st_mtime_ns
    except OSError as error:
        raise FbbenchError(f"cannot read {binary}: {error.strerror}") from None
    return _inspect(str(directory), debian, stamp)


@functools.lru_cache(maxsize=16)
def _inspect(directory_text: str, debian: bool, _binary_mtime: int) -> ManagedEngine:
    directory = Path(directory_text)
    binary = directory / ("sbin" if debian else "bin") / "firebird"
    build = _server_build(binary, directory, debian)
    numbers = _VERSION_TEXT.search(build)
    assert numbers is not None  # _server_build checked it
    version = ".".join(numbers.groups()[:3])
    engine = ManagedEngine(str(directory), "debian" if debian else "official", version, build)
    layout = layout_of(engine)
    if debian:
        needed = [layout.libdir / "firebird.msg", layout.libdir / "plugins", layout.libdir / "intl"]
        fix = f"as root: apt-get install --reinstall {_DEBIAN_PACKAGE}"
    else:
        needed = [directory / "firebird.msg", directory / "plugins", directory / "intl", directory / "lib"]
        fix = "reinstall Firebird from the official tarball (its install.sh)"
    needed += [layout.isql, layout.conf_docs / "firebird.conf"]
    for path in needed:
        if not path.exists():
            raise FbbenchError(f"the Firebird {version} installation in {directory} is incomplete: {path} is missing",
                               hint=fix)
    return engine


def not_an_installation(directory: Path) -> FbbenchError:
    """Explain why ``directory`` is not an installation, pointing at the likely right one."""
    if (directory / "firebird").is_file() and directory.name in ("bin", "sbin"):
        return FbbenchError(f"{directory} holds the server binary but is not the installation directory",
                            hint=f"name the installation: server:{directory.parent}")
    if (directory / "firebird.msg").is_file() and directory.parent.name == "firebird" \
            and directory.parent.parent.parent.name == "lib":
        prefix = directory.parent.parent.parent.parent
        return FbbenchError(f"{directory} is the library directory of Debian's Firebird package",
                            hint=f"name the installation: server:{prefix}")
    if list(directory.glob("lib/*/firebird/*/plugins")):
        return FbbenchError(f"{directory} has Firebird's libraries but no server ({directory / 'sbin/firebird'} "
                            "is missing)", hint=f"as root: apt-get install {_DEBIAN_PACKAGE}")
    if list(directory.glob("plugins/libEngine*.so")) or (directory / "libfbclient.so.2").exists():
        return FbbenchError(f"{directory} is a Firebird client or embedded runtime: it has no server binary "
                            "(bin/firebird)", hint=WHAT_IS_AN_INSTALLATION)
    return FbbenchError(f"{directory} is not a Firebird installation: neither bin/firebird (an official install) "
                        "nor sbin/firebird (Debian's package) is there", hint=WHAT_IS_AN_INSTALLATION)


def _server_build(binary: Path, directory: Path, debian: bool) -> str:
    """What ``firebird -z`` says (e.g. LI-V3.0.11.33637), or a one-line reason it does not run."""
    with tempfile.TemporaryDirectory(prefix="fbbench-probe-") as scratch:
        env = clean_environment()
        if not debian:
            env["LD_LIBRARY_PATH"] = official_library_path(directory, Path(scratch))
        try:
            probe = subprocess.run([str(binary), "-z"], capture_output=True, text=True, timeout=20, env=env,
                                   stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise FbbenchError(f"{binary} -z did not answer within 20 s",
                               hint="check that the binary is a Firebird server") from None
        except OSError as error:
            raise FbbenchError(f"{binary} cannot be run: {error.strerror}",
                               hint="check the file's permissions (it must be executable) and its architecture"
                               ) from None
    output = (probe.stdout + probe.stderr).strip()
    found = _VERSION_TEXT.search(probe.stdout)
    if probe.returncode == 0 and found:
        return found.group(0)
    first = next((line.strip() for line in output.splitlines() if line.strip()), f"exit status {probe.returncode}")
    missing = re.search(r"error while loading shared libraries: (\S+?):", output)
    if missing:
        name = missing.group(1)
        raise FbbenchError(f"{binary} cannot start: {name} is missing",
                           hint=native_fix(name))
    raise FbbenchError(f"{binary} -z did not report a Firebird server version: {first[:200]}",
                       hint="check that the binary is a Firebird 3.0 or later server")


def official_library_path(directory: Path, compat: Path) -> str:
    """LD_LIBRARY_PATH for an official build: a libtommath.so.0 link (3.0 builds were linked
    against it, Debian 12 only has .so.1 with the same ABI) and the install's own bundled
    libtommath (``lib/.tm``), which its install.sh would otherwise link into the system."""
    prepare_lib_dir(compat)
    entries = [str(compat)]
    if (directory / "lib" / ".tm").is_dir():
        entries.append(str(directory / "lib" / ".tm"))
    return os.pathsep.join(entries)


def conf_docs(engine: ManagedEngine) -> Path:
    """The directory holding the installation's documented firebird.conf (what ``--set`` is checked
    against)."""
    docs = layout_of(engine).conf_docs
    if not (docs / "firebird.conf").is_file():
        raise FbbenchError(f"cannot read {docs / 'firebird.conf'}, which documents the keys of {engine.label}",
                           hint=f"reinstall that Firebird installation ({engine.directory})")
    return docs


def check_reserved(conf: Mapping[str, str]) -> None:
    """Refuse ``--set`` keys fbbench sets itself for a managed server, and authentication settings
    that would lock out the SYSDBA it creates (an SRP user)."""
    for key, value in conf.items():
        reason = RESERVED_KEYS.get(key)
        if reason:
            raise FbbenchError(f"{key} cannot be set for a managed server", hint=reason)
        plugins = [name.lower() for name in re.split(r"[\s,;]+", value) if name]
        if key == "AuthServer" and not any(name.startswith("srp") for name in plugins):
            raise FbbenchError(f"AuthServer = {value} would refuse fbbench's SYSDBA on a managed server",
                               hint="keep an Srp plugin in the list, e.g. AuthServer = Srp256, Srp, Legacy_Auth")
        if key == "UserManager" and "srp" not in plugins:
            raise FbbenchError(f"UserManager = {value} cannot create fbbench's SYSDBA on a managed server",
                               hint="keep Srp in the list, e.g. UserManager = Srp, Legacy_UserManager")


def clean_environment() -> dict[str, str]:
    # fbbench may carry another engine's setup (a Firebird 5 runtime on LD_LIBRARY_PATH,
    # FIREBIRD=its root, ISC_PASSWORD for an external server): the server would then load the
    # wrong libfbclient.so.2, read the wrong firebird.conf, or hold someone's password.
    return {key: value for key, value in os.environ.items()
            if not key.startswith(("FIREBIRD", "ISC_", MARKER)) and key not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
