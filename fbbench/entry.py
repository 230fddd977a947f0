"""The ``fbbench`` command's entry point.

Loading the CLI (typer, rich, the runner) and building its commands takes a few tenths of a
second, and a KeyboardInterrupt there surfaces as a traceback, or inside the import machinery as
an "Exception ignored" message. Nothing has started yet at that point, so Ctrl-C simply ends the
process; the CLI gives Ctrl-C back to Python (KeyboardInterrupt) once a command starts.
"""

from __future__ import annotations

import os
import signal
from types import FrameType

INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C


def _quit_while_starting(_signum: int, _frame: FrameType | None) -> None:
    os.write(2, b"interrupted while starting\n")
    os._exit(INTERRUPTED)


def main() -> None:
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # leave an ignored SIGINT ignored
        signal.signal(signal.SIGINT, _quit_while_starting)
    from fbbench.cli import main as cli_main

    cli_main()


def commands_take_over_ctrl_c() -> None:
    """Called as a command starts: from here on Ctrl-C is a KeyboardInterrupt the command handles."""
    if signal.getsignal(signal.SIGINT) is _quit_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)
