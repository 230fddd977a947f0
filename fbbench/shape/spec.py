"""What ``--machine`` says: a shape's limits, read from text and named presets, checked.

``--machine "memory=1GiB, cpus=1, disk.read_iops=150"``, ``--machine sata-2014`` or both at
once (``"sata-2014, memory=1GiB"``: a preset's numbers, then the keys given after it); ``none``
is the machine as it is (a sweep's ``machine`` axis may hold it beside shapes). Every
value needs its unit, so that ``memory=1024`` (bytes? MiB?) is never guessed. The presets and
the sources of their numbers are in ``presets.toml`` beside this module.

Nothing here touches the kernel: :func:`parse` reads and checks the text; whether this machine
can apply it is :mod:`fbbench.shape.kernel`'s question.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any

import psutil

from fbbench.errors import FbbenchError
from fbbench.sizes import given_size_text

PRESETS_FILE = Path(__file__).with_name("presets.toml")

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|tb|kib|mib|gib|tib)(?:/s)?", re.IGNORECASE)
_SIZE_FACTORS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
                 "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_RATE = re.compile(r"(\d+(?:\.\d+)?)\s*(bit|kbit|mbit|gbit)(?:/s)?", re.IGNORECASE)
_RATE_FACTORS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}
_TIME = re.compile(r"(\d+(?:\.\d+)?)\s*(us|µs|ms|s)", re.IGNORECASE)
_TIME_FACTORS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_LOSS = re.compile(r"(\d+(?:\.\d+)?)\s*%")
_WHOLE = re.compile(r"\d+")

MIN_MEMORY = 1 << 20  # below a MiB no process starts: refused as a typo rather than run into an OOM kill
MAX_RTT = 10.0  # seconds: beyond this every TCP timeout of the client library fires instead


@dataclass(frozen=True)
class Shape:
    """The limits of one machine shape (None: not limited). Sizes in bytes, rates in bytes or bits
    per second, the round trip in seconds, loss as a fraction."""

    memory: int | None = None
    cpus: int | None = None
    disk_read_iops: int | None = None
    disk_write_iops: int | None = None
    disk_read_bps: int | None = None
    disk_write_bps: int | None = None
    net_rtt: float | None = None
    net_rate: int | None = None  # bits per second
    net_loss: float | None = None
    preset: str | None = None  # the preset it started from, if any

    @property
    def disk(self) -> bool:
        return any(getattr(self, f"disk_{name}") is not None for name in ("read_iops", "write_iops", "read_bps",
                                                                           "write_bps"))

    @property
    def network(self) -> bool:
        return any(value is not None for value in (self.net_rtt, self.net_rate, self.net_loss))

    @property
    def empty(self) -> bool:
        return not self.limits()

    def limits(self) -> dict[str, Any]:
        """The limits set, by their ``--machine`` key (``disk.read_iops`` …)."""
        return {key_of(field.name): getattr(self, field.name) for field in fields(self)
                if field.name != "preset" and getattr(self, field.name) is not None}

    def text(self) -> str:
        """The canonical text: every limit in its units, in a fixed order (a preset is named and
        its numbers written out, so the record says what was applied even if a preset changes)."""
        parts = [f"{key}={shown(key, value)}" for key, value in self.limits().items()]
        return ", ".join(parts)


def key_of(field_name: str) -> str:
    return field_name.replace("_", ".", 1) if field_name.startswith(("disk_", "net_")) else field_name


def shown(key: str, value: Any) -> str:
    """One limit as the user writes it: 1 GiB → ``1GiB``, 0.002 s → ``2ms``, 1e9 bits → ``1gbit``."""
    if key == "memory" or key.endswith("_bps"):
        return given_size_text(int(value)).replace(" ", "").replace(",", "")
    if key == "net.rtt":
        return f"{value * 1000:g}ms"
    if key == "net.rate":
        for unit, factor in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
            if value >= factor and value % factor == 0:
                return f"{value // factor}{unit}"
        return f"{value}bit"
    if key == "net.loss":
        return f"{value * 100:g}%"
    return str(value)


@cache
def presets() -> dict[str, dict[str, Any]]:
    """The named presets of ``presets.toml``: name → its keys, description and source."""
    return tomllib.loads(PRESETS_FILE.read_text())


_KEYS = {key_of(field.name): field.name for field in fields(Shape) if field.name != "preset"}


def _value(key: str, text: str, where: str) -> Any:
    """One ``key=value`` item's value, checked; every error names the key and what it takes."""
    value = text.strip()
    if re.fullmatch(r"0+(\.0*)?\s*[a-zA-Z%/]*", value):
        raise FbbenchError(f"{where}: {key} must be more than 0, got '{value}'")
    if key == "memory" or key.endswith("_bps"):
        match = _SIZE.fullmatch(value)
        if not match:
            example = "memory=1GiB" if key == "memory" else f"{key}=150MB (bytes per second)"
            raise FbbenchError(f"{where}: {key} needs a size with its unit, such as {example}; got '{value}'",
                               hint="units: B, KB, MB, GB, TB (10³…) or KiB, MiB, GiB, TiB (2¹⁰…)")
        size = int(float(match.group(1)) * _SIZE_FACTORS[match.group(2).lower()])
        if size <= 0:
            raise FbbenchError(f"{where}: {key} must be more than 0, got '{value}'")
        return size
    if key in ("cpus", "disk.read_iops", "disk.write_iops"):
        if not _WHOLE.fullmatch(value) or int(value) < 1:
            raise FbbenchError(f"{where}: {key} must be a whole number of at least 1, got '{value}'")
        return int(value)
    if key == "net.rtt":
        match = _TIME.fullmatch(value)
        if not match:
            raise FbbenchError(f"{where}: net.rtt needs a time with its unit, such as 1ms or 200us; got '{value}'")
        seconds = float(match.group(1)) * _TIME_FACTORS[match.group(2).lower()]
        if not 0 < seconds <= MAX_RTT:
            raise FbbenchError(f"{where}: net.rtt must be more than 0 and at most {MAX_RTT:g}s, got '{value}'")
        return seconds
    if key == "net.rate":
        match = _RATE.fullmatch(value)
        if not match:
            raise FbbenchError(f"{where}: net.rate needs a rate with its unit, such as 1gbit or 100mbit; got '{value}'",
                               hint="units: bit, kbit, mbit, gbit (per second, as tc writes them)")
        bits = int(float(match.group(1)) * _RATE_FACTORS[match.group(2).lower()])
        if bits < 8000:
            raise FbbenchError(f"{where}: net.rate must be at least 8kbit, got '{value}'")
        return bits
    match = _LOSS.fullmatch(value)  # net.loss
    if not match:
        raise FbbenchError(f"{where}: net.loss needs a percentage, such as 0.1%; got '{value}'")
    percent = float(match.group(1))
    if not 0 < percent < 100:
        raise FbbenchError(f"{where}: net.loss must be more than 0% and less than 100%, got '{value}'")
    return percent / 100


def parse(text: str, where: str = "--machine") -> Shape:
    """A shape from ``--machine`` text: presets and ``key=value`` items, separated by commas or
    spaces, later items overriding earlier ones. Raises FbbenchError naming the item at fault."""
    if not isinstance(text, str) or not text.strip():
        raise FbbenchError(f"{where} must name a preset or limits such as memory=1GiB, got {text!r}",
                           hint="presets: " + ", ".join(presets()))
    if text.strip().lower() == "none":  # the machine as it is: a sweep's axis may compare it with shapes
        return Shape()
    values: dict[str, Any] = {}
    preset = None
    for item in (part for part in re.split(r"[,\s]+", text.strip()) if part):
        key, sep, raw = item.partition("=")
        key = key.strip().lower()
        if not sep:
            if key not in presets():
                raise FbbenchError(f"{where}: '{item}' is neither a preset nor key=value",
                                   hint="presets: " + ", ".join(presets()) + "; keys: " + ", ".join(_KEYS))
            chosen = presets()[key]
            values |= {_KEYS[name]: _value(name, str(value), f"{where} ({key}, {PRESETS_FILE.name})")
                       for name, value in chosen.items() if name in _KEYS}
            preset = key
            continue
        if key not in _KEYS:
            import difflib

            close = difflib.get_close_matches(key, list(_KEYS), n=1)
            raise FbbenchError(f"{where}: unknown limit '{key}'",
                               hint=(f"did you mean {close[0]}? " if close else "") + "keys: " + ", ".join(_KEYS))
        values[_KEYS[key]] = _value(key, raw, where)
    return Shape(**values, preset=preset)


def check_against_host(shape: Shape, where: str = "--machine") -> None:
    """Refuse limits this machine cannot be shaped to: more memory than it has, more CPUs than
    this process may use, too little memory for any process."""
    if shape.memory is not None:
        total = psutil.virtual_memory().total
        if shape.memory > total:
            raise FbbenchError(f"{where}: memory={shown('memory', shape.memory)} is more than this machine has "
                               f"({given_size_text(total)})",
                               hint="a shape can only make a machine smaller")
        if shape.memory < MIN_MEMORY:
            raise FbbenchError(f"{where}: memory={shown('memory', shape.memory)} is below 1 MiB: no process starts "
                               "in that", hint="did you mean MiB or GiB?")
    if shape.cpus is not None:
        usable = len(os.sched_getaffinity(0))
        if shape.cpus > usable:
            raise FbbenchError(f"{where}: cpus={shape.cpus} is more CPUs than this process may use ({usable})",
                               hint="a shape can only make a machine smaller")
