"""A runtime root per run: the wheel's files linked in, plus the run's own firebird.conf.

Firebird reads its configuration, messages, plugins and lock files relative to the directory in
``$FIREBIRD``. Giving every run its own root means every run has its own firebird.conf (built
from ``--set Key=Value``), its own firebird.log (so a run can show what the engine logged during
it) and its own lock directory (so two engine versions never share lock files). The root is
built of hard links to the wheel's files (:mod:`fbbench.engines.rootfs` says why).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from fbbench import __version__
from fbbench.engines import install as installer
from fbbench.engines.binaries import engine_binaries
from fbbench.engines.builds import CLIENT_NAME, find_files
from fbbench.engines.catalog import (
    SERVER_CLIENT_VERSION,
    EmbeddedEngine,
    Engine,
    ManagedEngine,
    ServerEngine,
    parse_engine,
)
from fbbench.engines.firebird_conf import (
    BOOLEAN_WORDS,
    CHOICES,
    REPLICA_SIDE_KEYS,
    REPLICATION_BOOLEANS,
    REPLICATION_DEFAULTS,
    REPLICATION_KEYS,
    REPLICATION_OWNED,
    REPLICATION_REFUSED,
    REPLICATION_SINCE,
    integer,
    replication_version,
)
from fbbench.engines.installation import check_reserved, conf_docs
from fbbench.engines.rootfs import link_file, link_tree, native_fix, prepare_lib_dir
from fbbench.errors import FbbenchError
from fbbench.paths import assert_inside, cache_dir, file_error, write_whole

_CONF_KEY = re.compile(r"^#?\s*([A-Z][A-Za-z0-9]+)\s*=", re.MULTILINE)
REPLICATION_CONF = "replication.conf"
REPLICATION_LOG = "replication.log"  # where the engine logs replication's errors (the root directory)
_ULONG_MAX = 2**32 - 1  # Firebird keeps replication.conf's numbers in 32-bit words

@dataclass
class Runtime:
    """Everything a child process needs to use one engine."""

    engine: Engine
    client_version: str  # version of the runtime files (the client, for a server engine)
    root: Path
    conf: dict[str, str] = field(default_factory=dict)
    # Only ever handed to engine children in their request (a pipe: fbbench.engines.child), never
    # put in an environment or written anywhere.
    user: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    @property
    def base(self) -> Path:
        return self.root.parent

    @property
    def lock_dir(self) -> Path:
        return self.base / "lock"

    @property
    def tmp_dir(self) -> Path:
        return self.base / "tmp"

    @property
    def lib_dir(self) -> Path:
        return self.base / "lib"

    @property
    def client_library(self) -> Path:
        return self.root / "libfbclient.so.2"

    @property
    def firebird_log(self) -> Path:
        return self.root / "firebird.log"

    @property
    def conf_file(self) -> Path:
        return self.root / "firebird.conf"

    @property
    def replication_conf(self) -> Path:
        return self.root / REPLICATION_CONF

    @property
    def replication_log(self) -> Path:
        return self.root / REPLICATION_LOG

    @property
    def embedded(self) -> bool:
        return isinstance(self.engine, EmbeddedEngine)

    @property
    def managed(self) -> bool:
        """A server fbbench started for this run (``conf`` is then that server's firebird.conf)."""
        return isinstance(self.engine, ManagedEngine)

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a process that uses this engine (read by the loader at start).

        Without credentials: an environment is readable by every process of the user
        (/proc/PID/environ) and inherited by whatever the process starts. Engine children get
        theirs in their request; ISC_USER / ISC_PASSWORD the user exported are not passed on.
        """
        env = {key: value for key, value in (os.environ if base is None else base).items()
               if key not in ("ISC_USER", "ISC_PASSWORD")}
        library_path = _library_path(self.root, self.lib_dir, isinstance(self.engine, EmbeddedEngine)
                                     and self.engine.is_build)
        if env.get("LD_LIBRARY_PATH"):
            library_path.append(env["LD_LIBRARY_PATH"])
        env.update(
            FIREBIRD=str(self.root),
            FIREBIRD_LOCK=str(self.lock_dir),
            FIREBIRD_TMP=str(self.tmp_dir),
            LD_LIBRARY_PATH=os.pathsep.join(library_path),
            FBBENCH_CLIENT_LIBRARY=str(self.client_library),
        )
        return env

    def template_env(self) -> dict[str, str]:
        """The environment of a template that forks this engine's children
        (:mod:`fbbench.engines.template`), and what tells templates apart: what a process's start
        reads from a run's environment — the dynamic loader (``LD_*``), the interpreter
        (``PYTHON*``, ``HOME`` for its user site), the locale — with a library path that holds for
        every run of the engine: its installed files, where a run's root links them from, and the
        engine cache's compatibility links. The rest of a run's environment is its forked child's
        own (``os.environ``, set after the fork), as is what the child reads as it goes (``TZ``,
        ``TMPDIR``: :mod:`fbbench.engines.template_server` makes it read them again)."""
        client = self.engine if isinstance(self.engine, EmbeddedEngine) else EmbeddedEngine(SERVER_CLIENT_VERSION)
        compat = cache_dir() / "lib"
        prepare_lib_dir(compat)
        env = {key: value for key, value in self.env().items()
               if key.startswith(("LD_", "PYTHON", "LC_")) or key in ("LANG", "LANGUAGE", "HOME")}
        library_path = _library_path(engine_files(client, install=False), compat, client.is_build)
        if os.environ.get("LD_LIBRARY_PATH"):
            library_path.append(os.environ["LD_LIBRARY_PATH"])
        env["LD_LIBRARY_PATH"] = os.pathsep.join(library_path)
        return env

    def to_json(self) -> str:
        engine: dict[str, object]
        if isinstance(self.engine, EmbeddedEngine):
            engine = {"embedded": self.engine.version}
            if self.engine.is_build:
                engine["build"] = {"root": self.engine.root, "name": self.engine.name, "ods": self.engine.ods,
                                   "binaries": self.engine.binaries}
        elif isinstance(self.engine, ManagedEngine):
            engine = {"managed": self.engine.to_dict()}
        else:
            engine = {"dsn": self.engine.dsn}
        return json.dumps({"engine": engine, "client_version": self.client_version,
                           "root": str(self.root), "conf": self.conf})

    @classmethod
    def from_json(cls, text: str) -> Runtime:
        data = json.loads(text)
        spec = data["engine"]
        engine: Engine
        if "embedded" in spec:
            engine = EmbeddedEngine(spec["embedded"], **spec.get("build", {}))
        elif "managed" in spec:  # as inspected by the parent: the child does not run the server binary again
            engine = ManagedEngine(**spec["managed"])
        else:
            engine = parse_engine(spec["dsn"])
        return cls(engine, data["client_version"], Path(data["root"]), data["conf"])

    def remove(self, workdir: Path) -> None:
        shutil.rmtree(assert_inside(self.base, workdir), ignore_errors=True)


@dataclass(frozen=True)
class ConfKey:
    """A firebird.conf key as the engine's own firebird.conf documents it."""

    name: str
    kind: str  # integer | boolean | string | … (the "Type:" line, first word)
    negative_allowed: bool  # its documentation mentions -1 (e.g. MaxUnflushedWrites)


_CHOICE_HINTS = {"ServerMode": "use Super (SuperServer), SuperClassic or Classic"}


def documented_keys(wheel_root: Path) -> dict[str, ConfKey]:
    """firebird.conf keys the engine documents, lower-case name → key with its documented type."""
    path = wheel_root / "firebird.conf"
    stat = path.stat()
    return dict(_documented_keys(path, stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=16)
def _documented_keys(path: Path, _mtime_ns: int, _size: int) -> dict[str, ConfKey]:
    # Keyed by the file's stat too: a sweep checks each cell's settings (10,000 cells read it once).
    keys: dict[str, ConfKey] = {}
    kind, block = "", list[str]()
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("# ---"):
            kind, block = "", list[str]()
            continue
        block.append(line)
        if match := re.match(r"#\s*Type:\s*([a-z]+)", line):
            kind = match.group(1)
            continue
        if match := _CONF_KEY.match(line):
            name = match.group(1)
            known = keys.get(name.lower())
            if known is None or (kind and not known.kind):
                keys[name.lower()] = ConfKey(name, kind, any("-1" in text for text in block))
    return keys


def check_value(key: ConfKey, value: str) -> str:
    """The value as firebird.conf takes it, or a clear refusal (type, sign, allowed words)."""
    value = value.strip()
    if "\n" in value or "\r" in value or "#" in value:
        raise FbbenchError(f"firebird.conf value for {key.name} must be a single line without '#': {value!r}")
    if not value:
        raise FbbenchError(f"firebird.conf value for {key.name} is empty")
    if key.name in CHOICES:
        if value.lower() not in CHOICES[key.name]:
            raise FbbenchError(f"invalid {key.name} '{value}'", hint=_CHOICE_HINTS.get(
                key.name, "use one of " + ", ".join(sorted(CHOICES[key.name]))))
    elif key.kind == "integer":
        if integer(value) is None:
            raise FbbenchError(f"{key.name} must be a whole number (optionally with K, M or G), got '{value}'")
        if value.startswith("-") and not (key.negative_allowed and value == "-1"):
            raise FbbenchError(f"{key.name} cannot be negative, got '{value}'")
    elif key.kind == "boolean" and value.lower() not in BOOLEAN_WORDS:
        raise FbbenchError(f"{key.name} must be true or false, got '{value}'",
                           hint="Firebird reads true/false, yes/no or 1/0; any other word would mean false")
    return value


def validate_conf(settings: dict[str, str], wheel_root: Path, label: str) -> dict[str, str]:
    """Check ``--set`` keys and values against the engine's own firebird.conf; canonical spellings."""
    known = documented_keys(wheel_root)
    checked: dict[str, str] = {}
    for key, value in settings.items():
        documented = known.get(key.strip().lower())
        if documented is None:
            names = [k.name for k in known.values()]
            close = difflib.get_close_matches(key.strip(), names, n=1, cutoff=0.5)
            hint = f"did you mean {close[0]}?" if close else "see the keys documented in firebird.conf"
            raise FbbenchError(f"unknown firebird.conf key '{key}' for {label}", hint=hint)
        checked[documented.name] = check_value(documented, str(value))
    return checked


def check_conf(engine: Engine, conf: dict[str, str]) -> dict[str, str]:
    """``--set`` checked before anything runs (installing the engine if needed to read its docs)."""
    if isinstance(engine, ServerEngine):
        if conf:
            raise FbbenchError(
                "firebird.conf settings (--set) apply to embedded engines only",
                hint="for an external server, set them in the server's own firebird.conf and restart it",
            )
        return {}
    if isinstance(engine, ManagedEngine):
        checked = validate_conf(conf, conf_docs(engine), engine.label)
        check_reserved(checked)
        return checked
    return validate_conf(conf, engine_files(engine), engine.label)


def engine_files(engine: EmbeddedEngine, install: bool = True) -> Path:
    """Where an embedded engine's files are: the PyPI runtime (installed when ``install``), or a
    registered build's root, refused when its files are gone or are no longer the binaries
    ``fbbench engines add`` verified."""
    if not engine.is_build:
        if not installer.is_installed(engine):
            if not install:
                raise FbbenchError(f"{engine.label} is not installed",
                                   hint=f"run: fbbench engines install {engine.major}")
            installer.install(engine)
        return installer.wheel_root(engine)
    root = Path(engine.root or "")
    again = (f"register it again: fbbench engines remove {engine.name} && fbbench engines add {engine.name} PATH "
             "(fbbench engines list shows its path)")
    if not (root / "firebird.conf").is_file() or not find_files(root).embeddable:
        raise FbbenchError(f"the files of {engine.label} are gone from {root}", hint=again)
    try:
        found = engine_binaries(engine)
    except OSError as error:
        raise FbbenchError(f"the files of {engine.label} cannot be read in {root}: {error.strerror}",
                           hint=again) from None
    if engine.binaries and found and found["sha256"] != engine.binaries:
        raise FbbenchError(f"the binaries of {engine.label} in {root} changed since it was registered "
                           f"({engine.binaries[:12]} then, {found['sha256'][:12]} now)",
                           hint=f"register the new build (its version is verified again): fbbench engines add "
                           f"{engine.name} PATH")
    return root


# A build's files the engine reads from its root; its databases (the security database, the
# examples'), its log and its configuration files are never linked: a hard link is the user's file.
_BUILD_DIRECTORIES = {"lib", "plugins", "intl", "tzdata", "UDF", "udf"}
_BUILD_CONF_FILES = {"plugins.conf", "fbtrace.conf"}


def _link_build(source: Path, root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.is_dir():
            if item.name in _BUILD_DIRECTORIES:
                _link_resolved(item, root / item.name)
        elif item.is_file() and (item.name in _BUILD_CONF_FILES
                                 or not item.name.endswith((".conf", ".fdb", ".log", ".FDB"))):
            link_file(item.resolve(), root / item.name)
    # The client library at the top, where every runtime has it (Runtime.client_library).
    if not (root / CLIENT_NAME).exists():
        link_file((source / "lib" / CLIENT_NAME).resolve(), root / CLIENT_NAME)


def _link_resolved(source: Path, target: Path) -> None:
    """``link_tree`` with symbolic links replaced by the files they name (libfbclient.so.2 ->
    libfbclient.so.5.0.4): a link to a link would resolve outside the root, and Firebird 4+ refuses
    a plugin whose real path is not the one it asked for. Dangling links are left out."""
    target.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.is_dir():
            _link_resolved(item, target / item.name)
        elif item.is_file():
            link_file(item.resolve(), target / item.name)


def check_replication(engine: Engine, mode: str, conf: dict[str, str], where: str = "--set-replication",
                      mode_where: str = "--replication") -> dict[str, str]:
    """--replication and --set-replication checked before anything runs: the replication.conf keys
    the run writes besides the paths fbbench chooses (the mode's defaults, then the run's own),
    each checked against the keys Firebird's replication.conf documents for the engine's version
    and read the way the engine reads it (:data:`fbbench.engines.firebird_conf.REPLICATION_KEYS`)."""
    if mode == "off":
        return {}
    if not isinstance(engine, EmbeddedEngine):
        raise FbbenchError(f"{mode_where} {mode} needs an embedded engine: fbbench writes replication.conf only into "
                           f"the runtime roots of the engines it runs itself, and {engine.label} reads its own",
                           hint="use --engine 4.0 or 5.0 (embedded), or set up the server's replication.conf yourself")
    version = replication_version(engine.version)
    if version is None:
        raise FbbenchError(f"{mode_where} {mode}: Firebird {engine.major} has no built-in replication "
                           f"(it came with Firebird {REPLICATION_SINCE})", hint="use --engine 4.0 or 5.0")
    known = REPLICATION_KEYS[version]
    checked = dict(REPLICATION_DEFAULTS[mode])
    for key, value in conf.items():
        # The engine compares keys as written, in lower case: "Buffer_Size" would be ignored.
        name = key.strip().lower()
        if name in REPLICATION_OWNED:
            raise FbbenchError(f"{where} {key}: fbbench sets it itself ({REPLICATION_OWNED[name]})")
        if name in REPLICATION_REFUSED:
            raise FbbenchError(f"{where} {key} is not taken in a run: {REPLICATION_REFUSED[name]}")
        if name in REPLICA_SIDE_KEYS[version]:
            raise FbbenchError(f"{where} {key} is a replica-side key: nothing applies the journal in a run "
                               "(an embedded engine has no replication server)")
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.5)
            raise FbbenchError(f"unknown replication.conf key '{key}' for {engine.label}",
                               hint=(f"did you mean {close[0]}? " if close else "") + "keys: " + ", ".join(known))
        checked[name] = _replication_value(name, known[name], str(value), where)
    return checked


def _replication_value(name: str, kind: str, value: str, where: str) -> str:
    value = value.strip()
    if not value or "\n" in value or "\r" in value or "#" in value or "{" in value or "}" in value:
        raise FbbenchError(f"{where} {name} must be a single line without '#', '{{' or '}}', got {value!r}")
    if kind == "number":
        # The engine takes only digits above zero; "16M", "0" or "-1" would silently leave the default.
        if not value.isdigit() or not 0 < int(value) <= _ULONG_MAX:
            raise FbbenchError(f"{where} {name} must be a whole number from 1 to {_ULONG_MAX:,} (no K or M), "
                               f"got '{value}'",
                               hint="Firebird ignores any other value in replication.conf without a word")
        return str(int(value))
    if kind == "boolean":
        if value.lower() not in REPLICATION_BOOLEANS:
            raise FbbenchError(f"{where} {name} must be true or false, got '{value}'",
                               hint="Firebird reads true/yes/on/1 and false/no/off/0; any other word is ignored")
        return value.lower()  # the engine compares the words in lower case
    return value


def check_replication_path(path: Path) -> None:
    """A path replication.conf can name: the engine's conf reader takes '#' for a comment, braces
    for a section and '$(' for a macro."""
    if any(mark in str(path) for mark in ("#", "{", "}", "$(", "\n")):
        raise FbbenchError(f"replication needs a work directory whose path has no '#', '{{', '}}' or '$(': {path}",
                           hint="give --workdir another directory")


def write_replication_conf(runtime: Runtime, database: Path, paths: dict[str, Path], settings: dict[str, str]) -> str:
    """The run's replication.conf in its runtime root: one section for the run's database, with the
    paths fbbench chose (``paths``: key → directory or replica) and the checked ``settings``."""
    for path in (database, *paths.values()):
        check_replication_path(path)
    lines = [f"# Generated by fbbench {__version__} for {runtime.engine.label}.",
             "# Replication of the run's database only; keys not listed have the engine's defaults.", "",
             f"database = {database}", "{"]
    lines += [f"    {key} = {path}" for key, path in paths.items()]
    lines += [f"    {key} = {value}" for key, value in settings.items()]
    text = "\n".join([*lines, "}"]) + "\n"
    runtime.replication_conf.write_text(text)
    return text


def _library_path(top: Path, compat: Path, is_build: bool) -> list[str]:
    """Where the loader finds the libraries of an engine whose files are at ``top`` (a run's root,
    or the installed files it links), with fbbench's compatibility links in ``compat``."""
    if is_build:
        # The official layout's libraries, then its bundled libtommath, which its install.sh
        # would put into the system only where the system has none.
        return [str(top), str(top / "lib"), str(compat), str(top / "lib" / ".tm")]
    return [str(top), str(compat)]


_RUN = "<run>"  # the runtime's base directory, in what is kept: each run has its own


def missing_native_libraries(runtime: Runtime) -> dict[str, str]:
    """Shared libraries the runtime cannot find → the command that installs them.

    ``ldd`` answers (a shell script and the dynamic loader, twice for each object); when it found
    everything, the answer is kept in the engine cache under a key of the objects' files, the
    system's loader cache and where the runtime looks, with the libraries it resolved — and taken
    again only while each of them is still there. The suite prepares a runtime for every run."""
    objects = [runtime.client_library, *sorted((runtime.root / "plugins").glob("libEngine*.so"))]
    kept = found_libraries_file(runtime, objects)
    if kept is not None and _still_found(kept, runtime):
        return {}
    missing: dict[str, str] = {}
    resolved: set[str] = set()
    for obj in objects:
        result = subprocess.run(["ldd", str(obj)], capture_output=True, text=True, env=runtime.env(),
                                check=False)
        for line in result.stdout.splitlines():
            if "not found" in line:
                name = line.strip().split(" ")[0]
                missing[name] = native_fix(name)
            elif " => /" in line:
                resolved.add(line.split(" => ", 1)[1].rsplit(" (", 1)[0].strip())
    if not missing and kept is not None:
        text = "".join(f"{path.replace(str(runtime.base), _RUN)}\n" for path in sorted(resolved))
        with contextlib.suppress(OSError):  # a cache: a read-only one only costs the ldd next time
            write_whole(kept, text)
    return missing


def found_libraries_file(runtime: Runtime, objects: list[Path]) -> Path | None:
    """The engine cache's file for this check, named by what decides its answer (None where an
    object cannot be read: ldd will say why)."""
    inside = str(runtime.base)
    key: list[object] = [runtime.env({}).get("LD_LIBRARY_PATH", "").replace(inside, _RUN)]
    try:
        for path in (*objects, Path("/etc/ld.so.cache")):
            found = path.stat()
            # Not the inode: a runtime on another file system than the engine's is a copy (with
            # the same size and times), and each run's copy would be a key of its own.
            key.append([os.path.realpath(path).replace(inside, _RUN), found.st_size, found.st_mtime_ns])
        for entry in sorted(runtime.lib_dir.iterdir()):  # the compatibility links fbbench made
            same = os.readlink(entry) if entry.is_symlink() else [entry.stat().st_size, entry.stat().st_mtime_ns]
            key.append([entry.name, same])
    except OSError:
        return None
    digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:32]
    return cache_dir() / "libraries-found" / digest


def _still_found(kept: Path, runtime: Runtime) -> bool:
    try:
        paths = kept.read_text().split()
    except OSError:
        return False
    return bool(paths) and all(os.path.exists(path.replace(_RUN, str(runtime.base))) for path in paths)


def runtime_base(workdir: Path, name: str) -> Path:
    """The directory of the runtime named ``name`` (a run's id) in fbbench's work directory."""
    return workdir / "runtimes" / name


def prepare_runtime(engine: Engine | str, workdir: Path, conf: dict[str, str] | None = None,
                    name: str | None = None, install: bool = True, check_libraries: bool = True,
                    user: str | None = None, password: str | None = None) -> Runtime:
    """Build a fresh runtime root for one run of ``engine`` under ``workdir/runtimes``."""
    if isinstance(engine, str):
        engine = parse_engine(engine)
    client = engine if isinstance(engine, EmbeddedEngine) else EmbeddedEngine(SERVER_CLIENT_VERSION)
    source = engine_files(client, install)
    checked = check_conf(engine, dict(conf or {}))

    base = runtime_base(workdir, name or f"{client.version}-{uuid.uuid4().hex[:12]}")
    root = base / "root"
    runtime = Runtime(engine, client.version, root, checked, user=user, password=password)
    lines = [f"# Generated by fbbench {__version__} for {client.label}.",
             "# Settings not listed here have the engine's defaults.", ""]
    # A managed server's settings are the server's (its own firebird.conf): in the client's they
    # would change the client (RemoteServicePort, WireCrypt, AuthClient…).
    lines += [f"{key} = {value}" for key, value in checked.items() if runtime.embedded]
    try:
        if base.exists():
            shutil.rmtree(assert_inside(base, workdir))
        if client.is_build:
            _link_build(source, root)
        else:
            link_tree(source, root, skip={"firebird.conf", "firebird.log", REPLICATION_CONF, REPLICATION_LOG})
        runtime.conf_file.write_text("\n".join(lines) + "\n")
        runtime.firebird_log.touch()
        runtime.lock_dir.mkdir(parents=True, exist_ok=True)
        runtime.tmp_dir.mkdir(parents=True, exist_ok=True)
        prepare_lib_dir(runtime.lib_dir)
    except OSError as error:
        raise file_error(error, f"build the runtime root {root}", base.parent,
                         "give --workdir on another one") from None
    if check_libraries:
        missing = missing_native_libraries(runtime)
        if missing:
            fixes = sorted(set(missing.values()))
            raise FbbenchError(
                f"{client.label} cannot load: missing {', '.join(sorted(missing))}",
                hint="run: " + " && ".join(fixes),
            )
    return runtime
