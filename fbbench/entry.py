"""The ``fbbench`` command's entry point.

Loading the CLI (typer, rich, the runner) takes a few tenths of a second; Ctrl-C in that time
ends the process quietly (see :mod:`fbbench.signals`), and the CLI gives Ctrl-C back to Python
(KeyboardInterrupt) once a command starts.
"""

from __future__ import annotations

from fbbench import signals


def main() -> None:
    signals.quit_while_starting()
    from fbbench.cli import main as cli_main

    cli_main()
