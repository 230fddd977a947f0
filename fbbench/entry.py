"""The ``fbbench`` command's entry point.

Loading the CLI (typer, rich, the runner) takes a few tenths of a second; Ctrl-C in that time
ends the process quietly with 130, not with a traceback from inside an import. The handler is
installed before anything else is imported — through the C module ``_signal``, since ``signal``
itself first loads ``enum`` — and the CLI gives Ctrl-C back to Python (KeyboardInterrupt) once a
command starts (:func:`fbbench.signals.commands_take_over`). An ignored SIGINT (a background
job's) stays ignored.
"""

from __future__ import annotations

import _signal
import os
from types import FrameType

from fbbench.errors import Interrupted  # imports nothing itself


def _quit(_signum: int, _frame: FrameType | None) -> None:
    os.write(2, b"interrupted while starting\n")
    os._exit(Interrupted.exit_code)


if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _quit)


def main() -> None:
    from fbbench.cli import main as cli_main

    cli_main()
