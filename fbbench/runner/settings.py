"""The settings of one run: the one place where flags and a TOML spec file become settings.

``fbbench run --spec run.toml`` reads the same settings as the flags (flags win). Every value
is checked here, by type and by range, and an error names where the value came from: the spec
file and line (``run.toml:3: connections must be a whole number, got "two"``) or the flag
(``--connections must be at least 1, got 0``). Everything here is recorded with the run, so every
number can be traced back to the conditions that produced it. Passwords are never settings.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, cast

from fbbench.engines.firebird_conf import ARCHITECTURES, REPLICATION_MODES, architecture_of_mode, key_of
from fbbench.errors import FbbenchError
from fbbench.sizes import parse_size
from fbbench.store.model import RecordedSettings

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(h|m|s|ms)?")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, None: 1.0}
MANY_CONNECTIONS = 1000  # above this, a run needs --allow-many-connections


def parse_duration(text: str | float | int, what: str) -> float:
    """``90``, ``30s``, ``5m``, ``1h``, ``1m30s`` → seconds."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise FbbenchError(f"{what} must be a duration such as 30s or 5m, got {_shown(text)}")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        value = text.strip().lower()
        if value.startswith("-"):
            raise FbbenchError(f"{what} cannot be negative: '{text}'")
        parts = _DURATION.findall(value)
        if not parts or "".join(number + (unit or "") for number, unit in parts) != value.replace(" ", ""):
            raise FbbenchError(f"{what} must be a duration such as 30s, 5m or 1h30m, got '{text}'")
        seconds = sum(float(number) * _UNIT_SECONDS[unit or None] for number, unit in parts)
    if seconds < 0:
        raise FbbenchError(f"{what} cannot be negative: '{text}'")
    return seconds


def duration_flag(seconds: float) -> str:
    """The shortest text :func:`parse_duration` reads back as ``seconds``: 300 → ``5m``, 90 → ``1m30s``."""
    hours, rest = divmod(seconds, 3600)
    minutes, rest = divmod(rest, 60)
    text = (f"{hours:g}h" if hours else "") + (f"{minutes:g}m" if minutes else "") + (f"{rest:g}s" if rest else "")
    return text or "0s"


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return repr(value)


# ------------------------------------------------------------------------------- value kinds
# Each kind turns a spec value into the setting's value or raises with what was expected.
# ``what`` is "run.toml:3: connections" or "--connections".

Kind = Callable[[Any, str], Any]


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FbbenchError(f"{what} must be a string, got {_shown(value)}",
                           hint='quote it, e.g. engine = "5.0"' if isinstance(value, int | float) else None)
    if "\n" in value or "\r" in value:
        raise FbbenchError(f"{what} must be a single line")
    return value


def _whole(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FbbenchError(f"{what} must be a whole number, got {_shown(value)}")
    return value


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FbbenchError(f"{what} must be a number, got {_shown(value)}")
    return float(value)


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise FbbenchError(f"{what} must be true or false (without quotes), got {_shown(value)}")
    return value


def _on_off(value: Any, what: str) -> bool:
    """forced_writes: true/false, or the words the flag takes (on/off)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("on", "off"):
        return value.strip().lower() == "on"
    raise FbbenchError(f"{what} must be true or false (or \"on\" / \"off\"), got {_shown(value)}")


def _architecture(value: Any, what: str) -> str:
    if not isinstance(value, str) or value.strip().lower() not in ARCHITECTURES:
        raise FbbenchError(f"{what} must be super, superclassic or classic, got {_shown(value)}",
                           hint="SuperServer (shared cache, threads), SuperClassic (a cache per attachment, "
                                "threads) or Classic (one process per attachment)")
    return value.strip().lower()


def _replication(value: Any, what: str) -> str:
    if not isinstance(value, str) or value.strip().lower() not in REPLICATION_MODES:
        raise FbbenchError(f"{what} must be off, async or sync, got {_shown(value)}",
                           hint="async: the engine journals every change (Firebird 4.0+); sync: every commit also "
                                "commits on a replica database")
    return value.strip().lower()


def _order(value: Any, what: str) -> str:
    if not isinstance(value, str) or value.strip().lower() not in ("timed", "strict"):
        raise FbbenchError(f"{what} must be timed or strict, got {_shown(value)}",
                           hint="timed: each attachment at its traced times, no order across them; strict: "
                                "every action after those traced before it (may stall; said so)")
    return value.strip().lower()


def _duration(value: Any, what: str) -> float:
    return parse_duration(value, what)


def _size(value: Any, what: str) -> int:
    return parse_size(value, what)


def _host_name(value: Any, what: str) -> str:
    """A host's stable name: what a lab worker is called and what the conditions show."""
    text = _text(value, what).strip()
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}", text):
        raise FbbenchError(f"{what} must be a name of letters, digits, '.', '_' or '-' (at most 63), got {text!r}")
    return text


def _machine(value: Any, what: str) -> str:
    """A machine shape (--machine): presets and limits, read and checked by fbbench.shape.spec."""
    from fbbench.shape.spec import parse

    text = _text(value, what).strip()
    parse(text, what)
    return text


def _names(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise FbbenchError(f'{what} must be a list of strings such as ["nightly", "nvme"], got {_shown(value)}')
    for item in value:
        if not item.strip():
            raise FbbenchError(f"{what}: a tag cannot be empty")
        single_line(item, f"{what} {_shown(item.splitlines()[0])}…")
    return list(value)


def _pairs(value: Any, what: str) -> dict[str, str]:
    """A table of name = value (scale, firebird.conf): values become single-line strings."""
    if not isinstance(value, dict):
        raise FbbenchError(f"{what} must be a table of name = value, got {_shown(value)}")
    pairs = {}
    for key, item in value.items():
        if isinstance(item, dict | list):
            raise FbbenchError(f"{what}: '{key}' must be a single value, got {_shown(item)}")
        text = str(item).lower() if isinstance(item, bool) else str(item)
        pairs[str(key)] = single_line(text, f"{what}: '{key}'")
    return pairs


def single_line(text: str, what: str) -> str:
    if "\n" in text or "\r" in text:
        raise FbbenchError(f"{what} must be a single line (it contains a line break)")
    return text.strip()


# ---------------------------------------------------------------------------------- settings


# The most runs one series (repeats) or one comparison (pairs) may ask for: 10,000 runs of even a
# few seconds each take days, and a mistyped count must be an error, not a machine out of memory.
MAX_RUNS = 10_000


@dataclass
class RunSettings:
    workload: str = "tpcc"
    engine: str = "5.0"
    scale: dict[str, str] = field(default_factory=dict)
    connections: int = 4
    warmup: float = 30.0
    duration: float = 300.0
    transactions: int | None = None
    repeat: int = 1  # runs of the same conditions, recorded as one series
    interval: float = 10.0
    seed: int | None = None
    # Whether the user gave the seed (flag or spec): a given seed is a condition of the run, a
    # drawn one is not (analysis.conditions reads it). Set by the runner, never by a spec.
    seed_fixed: bool = False
    # Set by ``compare --paired``, never by a spec: the run shared the machine with another in
    # turns (fbbench.runner.timeshare) — {"turn": seconds, "runs": 2} are a condition of the run
    # (each run got part of the machine); "pair", "side" and "first" say which pair it belongs to.
    timeshare: dict[str, Any] | None = None
    conf: dict[str, str] = field(default_factory=dict)  # --set Key=Value for firebird.conf
    # super | superclassic | classic; agrees with conf's ServerMode (either one sets the other).
    # None until the engine is known: a local engine's default is Super, Firebird's own default;
    # an external server's is whatever it runs (verified from MON$ATTACHMENTS either way).
    architecture: str | None = None
    page_size: int | None = None
    page_buffers: int | None = None
    forced_writes: bool | None = None
    # Firebird's built-in replication (4.0+): off, async (a journal and its archive in the run's
    # work directory) or sync (a replica database fbbench creates); replication_conf is
    # --set-replication key=value for the rest of the run's replication.conf.
    replication: str = "off"
    replication_conf: dict[str, str] = field(default_factory=dict)
    # The OS file cache under Firebird's page cache: None leaves firebird.conf as it is; on / off
    # write the key the engine version reads (engines.firebird_conf.file_cache_setting).
    file_cache: bool | None = None
    drop_caches: bool = False  # drop the OS page cache before the measured period (root only)
    target_size: int | None = None  # bytes: the population's size, through the workload's size_scale
    sweep: bool = True
    monitor: bool = True  # the sampler (MON$ per interval), gstat before/after
    # Validate the database after the run (Firebird's full validation, observe/validation.py);
    # None: when the load (warm-up and measured period) ran longer than a minute.
    validation: bool | None = None
    fresh: bool = False
    grow: str | None = None  # a scale name: extend a cached smaller population instead of building anew
    # A gbak backup: the run's database is restored from it (cached per checksum, engine, page size)
    # instead of built by the workload's scripts and load steps.
    database_from: str | None = None
    # A file to record a Firebird trace of the load into (warm-up and measured period), with the
    # replay-grade config of fbbench.trace.config: what fbbench workload from-trace and replay read.
    trace: str | None = None
    # Firebird 5.0+: the engine's profiler (RDB$PROFILER, the Default_Profiler plugin) on every
    # load attachment over the measured period (fbbench.observe.profiler): where the time went,
    # PSQL line by line and statement by statement.
    profile: bool = False
    # gstat's record-version statistics at this cadence while the load runs (seconds; None: only
    # before and after), as OLTP-EMUL reports record versions per table as its run goes.
    gstat_every: float | None = None
    # A trace to replay (fbbench replay) instead of the workload's drawn units: one attachment per
    # traced attachment, at the traced times divided by ``speed``, in ``order`` (timed | strict).
    replay: str | None = None
    speed: float = 1.0
    order: str = "timed"
    load_connections: int = field(default_factory=lambda: os.cpu_count() or 2)
    connect_rate: float = 0.0
    target_rate: float | None = None
    keep_database: bool = False
    allow_many_connections: bool = False
    yes: bool = False  # go ahead with what is planned to take more than a day (runner.limits.check_planned)
    fail_on_checks: bool = False
    fail_on_audits: bool = False
    user: str | None = None
    tags: list[str] = field(default_factory=list)
    # The machine's stable name in the conditions (host.name): the hostname unless given. A lab
    # worker's name (fbbench lab worker --name); a sweep's "host" axis.
    host_name: str | None = None
    # A machine shape (fbbench.shape): "memory=1GiB, disk.read_iops=150", a preset ("sata-2014"), or
    # both; the engine's processes run inside it, and the run verifies each limit took effect.
    machine: str | None = None
    # Load generators on a lab's hosts (fbbench.lab.clients): the lab's scheduler, how many of its
    # hosts drive the attachments, and its TLS (an insecure lab is recorded as such).
    lab: str | None = None
    clients: int | None = None
    lab_tls: str | None = None
    lab_insecure: bool = False
    workdir: str | None = None
    results: str | None = None
    json: str | None = None
    report: str | None = None
    # Replace an existing --json or --report file that fbbench did not write (paths.output_file).
    overwrite: bool = False
    # Where each value came from, for error messages: "run.toml:3: connections" or "--connections".
    origins: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def where(self, name: str) -> str:
        return self.origins.get(name, "--" + _FLAGS.get(name, name).replace("_", "-"))

    def validate(self) -> RunSettings:
        def at_least(name: str, minimum: float, value: float | None) -> None:
            if value is not None and value < minimum:
                shown = f"{value:g}" if isinstance(value, float) else value
                raise FbbenchError(f"{self.where(name)} must be at least {minimum:g}, got {shown}")

        at_least("connections", 1, self.connections)
        at_least("load_connections", 1, self.load_connections)
        at_least("transactions", 1, self.transactions)
        at_least("repeat", 1, self.repeat)
        if self.repeat > MAX_RUNS:
            raise FbbenchError(f"{self.where('repeat')} must be at most {MAX_RUNS:,}, got {self.repeat:,}",
                               hint="a series that long takes weeks; make a sweep or several series")
        at_least("page_buffers", 0, self.page_buffers)
        if self.transactions is None and self.duration <= 0:
            raise FbbenchError(f"{self.where('duration')} must be longer than 0 seconds")
        if self.interval <= 0:
            raise FbbenchError(f"{self.where('interval')} must be longer than 0 seconds")
        if self.seed is not None and not 0 <= self.seed < 2**63:
            raise FbbenchError(f"{self.where('seed')} must be between 0 and 2^63 - 1")
        if self.target_rate is not None and self.target_rate <= 0:
            raise FbbenchError(f"{self.where('target_rate')} must be positive")
        if self.connect_rate < 0:
            raise FbbenchError(f"{self.where('connect_rate')} cannot be negative")
        if self.gstat_every is not None and self.gstat_every < 1:
            raise FbbenchError(f"{self.where('gstat_every')} must be at least 1 s, got {self.gstat_every:g} s",
                               hint="gstat reads every data page: a cadence of minutes suits a large database")
        if self.gstat_every is not None and not self.monitor:
            raise FbbenchError(f"{self.where('gstat_every')} watches the engine, which --no-monitor turns off",
                               hint="leave out one of the two")
        if self.speed <= 0:
            raise FbbenchError(f"{self.where('speed')} must be greater than 0, got {self.speed:g}")
        self.order = _order(self.order, self.where("order"))
        if self.replay is not None and self.database_from is None:
            raise FbbenchError("a replay changes the database it runs on: it needs --database-from BACKUP "
                               "(restored into a copy fbbench owns)")
        if self.trace is not None and self.repeat > 1:
            raise FbbenchError(f"{self.where('trace')} records one run's trace; {self.where('repeat')} "
                               f"{self.repeat} runs would all write it", hint="trace one run")
        if self.database_from is not None and self.grow is not None:
            raise FbbenchError(f"{self.where('grow')} grows a population the workload builds; "
                               f"{self.where('database_from')} restores the database from a backup instead",
                               hint="give one of the two")
        if self.database_from is not None and self.target_size is not None:
            raise FbbenchError(f"{self.where('target_size')} sizes a population the workload builds; "
                               f"{self.where('database_from')} restores the database from a backup, whose size "
                               "is its own", hint="give one of the two")
        self._resolve_architecture()
        if self.replication_conf and self.replication == "off":
            raise FbbenchError(f"{self.where('replication_conf')} has no effect without replication",
                               hint="add --replication async (or sync)")
        if self.host_name is not None:
            self.host_name = _host_name(self.host_name, self.where("host_name"))
        at_least("clients", 1, self.clients)
        if (self.lab is None) != (self.clients is None):
            raise FbbenchError(f"{self.where('clients')} and {self.where('lab')} go together: the lab's hosts that "
                               "drive the attachments, and how many",
                               hint="e.g. --lab tcp://127.0.0.1:8786 --clients 2")
        if self.clients is not None and self.clients > self.connections:
            raise FbbenchError(f"{self.where('clients')} {self.clients} is more hosts than {self.connections} "
                               "attachment(s)")
        if self.connections > MANY_CONNECTIONS and not self.allow_many_connections:
            raise FbbenchError(
                f"{self.where('connections')} {self.connections:,} is more than {MANY_CONNECTIONS:,} attachments",
                hint="if you mean it, add --allow-many-connections (memory and process limits are still checked)")
        return self

    def _server_mode_key(self) -> str | None:
        return key_of(self.conf, "ServerMode")

    def _resolve_architecture(self) -> None:
        """--architecture and --set ServerMode=… must agree; either one alone sets the other."""
        if self.architecture is not None:
            self.architecture = _architecture(self.architecture, self.where("architecture"))
        key = self._server_mode_key()
        if key is None:
            return
        from_mode = architecture_of_mode(self.conf[key])
        if from_mode is None:
            return  # not a ServerMode Firebird knows: the engine's own check refuses it, with a hint
        if self.architecture is not None and from_mode != self.architecture:
            set_where = self.origins.get("conf", "--set")
            meaning = "" if self.conf[key].strip().lower() == from_mode else f" (which is {from_mode})"
            raise FbbenchError(f"{self.where('architecture')} {self.architecture} contradicts "
                               f"{set_where} ServerMode={self.conf[key]}{meaning}")
        self.architecture = from_mode

    def engine_conf(self, local: bool) -> dict[str, str]:
        """firebird.conf settings for the engine: ``conf`` plus the ServerMode of --architecture.

        ``local``: an engine fbbench configures (embedded, managed); an external server's
        firebird.conf is its own, so the architecture is then only verified."""
        conf = dict(self.conf)
        if local and self.architecture is not None and self._server_mode_key() is None:
            conf["ServerMode"] = ARCHITECTURES[self.architecture]
        return conf

    def recorded(self) -> RecordedSettings:
        """What the results store keeps (no paths of output files, no secrets, no origins)."""
        return cast(RecordedSettings, {k: v for k, v in asdict(self).items() if k not in _NOT_RECORDED})


# Where a run's outputs go, and whether they may replace a file: not conditions of the run.
_NOT_RECORDED = ("json", "report", "overwrite", "origins")

# Spec keys that differ from the setting's name, and flags that differ from it (fbbench run's parameter
# for a setting bears its flag's name: fbbench.cli.run._flags).
_SPEC_ALIASES = {"set": "conf", "rate": "target_rate", "set_replication": "replication_conf",
                 "validate": "validation", "host": "host_name"}
_FLAGS = {"conf": "set", "target_rate": "rate", "tags": "tag", "replication_conf": "set_replication",
          "validation": "validate", "lab_tls": "tls", "lab_insecure": "insecure"}

_KINDS: dict[str, Kind] = {
    "workload": _text, "engine": _text, "scale": _pairs, "connections": _whole, "warmup": _duration,
    "duration": _duration, "transactions": _whole, "repeat": _whole, "interval": _duration, "seed": _whole,
    "conf": _pairs, "architecture": _architecture,
    "page_size": _whole, "page_buffers": _whole, "forced_writes": _on_off, "replication": _replication,
    "replication_conf": _pairs, "file_cache": _on_off, "drop_caches": _flag, "target_size": _size,
    "sweep": _flag, "monitor": _flag,
    "validation": _flag, "fresh": _flag, "grow": _text, "database_from": _text, "trace": _text, "profile": _flag,
    "gstat_every": _duration,
    "replay": _text,
    "speed": _number, "order": _order,
    "load_connections": _whole, "connect_rate": _number, "target_rate": _number, "keep_database": _flag,
    "allow_many_connections": _flag, "yes": _flag, "fail_on_checks": _flag, "fail_on_audits": _flag, "user": _text,
    "tags": _names, "host_name": _host_name, "machine": _machine, "lab": _text, "clients": _whole, "lab_tls": _text,
    "lab_insecure": _flag, "workdir": _text, "results": _text, "json": _text, "report": _text, "overwrite": _flag,
}
assert set(_KINDS) == {f.name for f in fields(RunSettings)} - {"origins", "seed_fixed", "timeshare"}


def _line_of(text: str, key: str) -> int | None:
    pattern = re.compile(rf"^\s*\"?{re.escape(key)}\"?\s*=")
    return next((n for n, raw in enumerate(text.splitlines(), 1) if pattern.match(raw)), None)


def check_value(name: str, raw: Any, where: str) -> Any:
    """One setting's value, checked by its kind (``where`` names the file and line, or the flag)."""
    return _KINDS[name](raw, where)


def spec_keys() -> list[str]:
    """The keys a spec file sets run settings by (``set`` and ``rate`` for conf and target_rate)."""
    return sorted((set(_KINDS) - set(_SPEC_ALIASES.values())) | set(_SPEC_ALIASES))


def setting_name(key: str) -> str | None:
    """The setting a spec key names (``set`` → conf, ``rate`` → target_rate), or None."""
    name = _SPEC_ALIASES.get(key.replace("-", "_"), key.replace("-", "_"))
    return name if name in _KINDS and key not in _SPEC_ALIASES.values() else None


_TABLE_HEADER = re.compile(r'^\s*\[{1,2}\s*[A-Za-z_"]')


def line_of(text: str, key: str, table: str | None = None) -> int | None:
    """The line that sets ``key`` (or opens the table ``[key]``) in a TOML text; with ``table``, the
    line inside ``[table]`` (a sweep's ``[matrix]`` may vary a setting the top level also sets)."""
    if table is not None:
        lines = text.splitlines()
        start = next((n for n, raw in enumerate(lines, 1) if raw.strip() == f"[{table}]"), None)
        if start is None:
            return None
        end = next((n for n, raw in enumerate(lines[start:], start + 1) if _TABLE_HEADER.match(raw)), len(lines) + 1)
        found = _line_of("\n".join(lines[start:end - 1]), key)
        return None if found is None else start + found
    line = _line_of(text, key)
    if line is None:
        line = next((n for n, raw in enumerate(text.splitlines(), 1) if raw.strip() == f"[{key}]"), None)
    return line


def read_toml(path: Path, what: str = "spec file") -> tuple[dict[str, Any], str]:
    try:
        text = path.read_text()
    except OSError as error:
        raise FbbenchError(f"cannot read the {what} {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise FbbenchError(f"{path} is not a text file") from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as error:
        raise FbbenchError(f"{path}: invalid TOML: {error}") from None


def parse_settings(data: Mapping[str, Any], text: str, path: Path,
                   extra: Collection[str] = ()) -> tuple[dict[str, Any], dict[str, str]]:
    """Run settings from a parsed TOML file, each checked; and where each came from (file:line).

    ``extra``: further top-level keys the caller reads itself (a sweep's matrix); skipped here.
    """
    accepted = sorted(set(spec_keys()) | set(extra))
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for key, raw in data.items():
        if key in extra:
            continue
        name = setting_name(key)
        line = line_of(text, key)
        where = f"{path}:{line}" if line else str(path)
        if name is None:
            import difflib

            close = difflib.get_close_matches(key, accepted, n=1)
            raise FbbenchError(f"{where}: unknown setting '{key}'",
                               hint=(f"did you mean '{close[0]}'? " if close else "")
                               + "expected one of: " + ", ".join(accepted))
        origins[name] = f"{where}: {key}"
        values[name] = check_value(name, raw, origins[name])
    return values, origins


def read_spec(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """Settings from a TOML spec file, each checked; and where each came from (file:line)."""
    data, text = read_toml(path)
    return parse_settings(data, text, path)


def parse_pairs(items: list[str], option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise FbbenchError(f"{option} '{item}' must look like Key=Value")
        pairs[key.strip()] = single_line(value, f"{option} {key.strip()}")
    return pairs


def lay_flags(values: dict[str, Any], origins: dict[str, str], flags: Mapping[str, Any]) -> None:
    """The flags that were given (None = not given) laid over a spec file's ``values``: a flag wins,
    and its value has no file and line to name (``origins`` forgets them)."""
    for name, value in flags.items():
        if value is None:
            continue
        # A flag's value is checked by its setting's kind, as a spec file's is (typer checked its type).
        value = check_value(name, value, "--" + _FLAGS.get(name, name).replace("_", "-"))
        if name == "tags":
            value = [*values.get("tags", []), *value]
        values[name] = value
        origins.pop(name, None)


def from_sources(spec: Path | None, flags: Mapping[str, Any], scale: list[str] | None = None,
                 conf: list[str] | None = None, replication_conf: list[str] | None = None) -> RunSettings:
    """Spec file first, then the flags that were given (None = not given) on top; then checked.

    Switch flags (``--fresh``, ``--no-sweep`` …) can only turn a setting on, so they are passed
    only when present.
    """
    values, origins = read_spec(spec) if spec else ({}, {})
    lay_flags(values, origins, flags)
    if scale:
        values["scale"] = {**values.get("scale", {}), **parse_pairs(scale, "--scale")}
    if conf:
        values["conf"] = {**values.get("conf", {}), **parse_pairs(conf, "--set")}
    if replication_conf:
        values["replication_conf"] = {**values.get("replication_conf", {}),
                                      **parse_pairs(replication_conf, "--set-replication")}
    if "workload" not in values:
        from fbbench.workloads.spec import builtin_workloads

        raise FbbenchError("which workload? e.g. fbbench run tpcc",
                           hint=f"built-in: {', '.join(builtin_workloads())}; or a workload directory")
    return RunSettings(**values, origins=origins).validate()
