"""This process's own figures, from /proc/self (Linux): its peak resident set, its proportional
set and its threads.

Apart from :mod:`fbbench.engines.platform` because each of a Classic run's attachment processes
reads them, and importing that module's own imports (pathlib, subprocess, shutil, tempfile) cost
each of those processes 35–50 ms of CPU at its start (importing the worker in 20 interpreters,
one after the other: 0.11–0.12 s each with it, 0.07 s without): about 1.3 s of CPU for 32
attachments, before the load.
"""

from __future__ import annotations

import contextlib


def peak_rss_bytes() -> int | None:
    """This process's peak resident set (VmHWM). Not getrusage's ru_maxrss: that one survives exec
    and would be the peak of the process that spawned this one; psutil has no peak RSS on Linux
    (it reports one on Windows only)."""
    return _own_figure("/proc/self/status", "VmHWM:", 1024)


def reset_peak_rss() -> None:
    """Make this process's peak resident set (:func:`peak_rss_bytes`) its current one, so that
    the peak counts from now (/proc/PID/clear_refs, Linux 4.0+; where refused, it counts from the
    process's start)."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def proportional_set_bytes() -> int | None:
    """This process's proportional set size (smaps_rollup's Pss, what psutil's memory_full_info
    reads too): its share of memory, the pages it shares with other processes (the engine's code,
    Python's) divided among them. Read here, not through psutil, for a Classic attachment
    process: importing psutil costs each of them about 50 ms of CPU at its start."""
    return _own_figure("/proc/self/smaps_rollup", "Pss:", 1024)


def thread_count() -> int | None:
    """This process's threads (the Threads line of /proc/self/status)."""
    return _own_figure("/proc/self/status", "Threads:", 1)


def _own_figure(path: str, key: str, unit: int) -> int | None:
    try:
        with open(path) as lines:
            return next(int(line.split()[1]) * unit for line in lines if line.startswith(key))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
