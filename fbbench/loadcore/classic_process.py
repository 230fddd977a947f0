"""One worker process of a Classic run as its coordinator (:class:`fbbench.loadcore.classic.ProcessRun`)
sees it: its attachments, its pipes, what it has streamed so far, and how it ended.
"""

from __future__ import annotations

import contextlib
import subprocess
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from fbbench.engines.template import TemplateChild

STDERR_TAIL = 2000
# A worker process: forked from the run's attachment template, or started as a new interpreter.
WorkerHandle = Union["subprocess.Popen[bytes]", "TemplateChild"]


@dataclass
class WorkerProcess:
    index: int  # its first attachment
    process: WorkerHandle
    stderr: IO[bytes]
    count: int = 1  # its attachments: index … index + count - 1
    buffer: bytes = b""
    started: bool = False
    live: dict[str, Any] = field(default_factory=dict)
    intervals: dict[int, dict[str, Any]] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    facts: dict[str, Any] = field(default_factory=dict)  # pid, peak RSS, CPU of the process
    eof: bool = False  # its stdout closed: the process ended (or is about to)
    killed: bool = False

    @property
    def counting(self) -> bool:
        """Still taking part in the intervals (no result, not gone)."""
        return self.result is None and not self.eof and not self.killed

    @property
    def ready(self) -> bool:
        return self.live.get("phase") == "ready"

    @property
    def attachments(self) -> list[int]:
        return list(range(self.index, self.index + self.count))

    @property
    def who(self) -> str:
        return who(self.attachments)

    def send(self, line: str) -> None:
        stdin = self.process.stdin
        if stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):  # the worker is gone: nothing to tell it
            stdin.write(line.encode() + b"\n")
            stdin.flush()

    def stderr_tail(self) -> str:
        try:
            self.stderr.seek(0)
            text = self.stderr.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""
        return text[-STDERR_TAIL:].strip()

    def ended_how(self) -> str:
        code = self.process.poll()
        if code is None:
            return "its process closed its output"
        return f"its process was killed by signal {-code}" if code < 0 else f"its process ended with exit code {code}"


def who(indices: list[int]) -> str:
    names = [str(i) for i in sorted(indices)]
    if len(names) == 1:
        return f"attachment {names[0]}"
    return f"attachments {', '.join(names[:-1])} and {names[-1]}"
