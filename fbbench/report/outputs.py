"""Where a run's (or a comparison's) document goes: the JSON file and the HTML report.

One routine for every command that writes them. Writing never loses the rest: a JSON file that
cannot be written does not stop the HTML report, and the caller learns what failed. Each file is
written only where :func:`fbbench.paths.output_file` allows it (a new file, or one fbbench wrote,
unless ``overwrite``): the commands check that before they start, and it is checked again here,
since a run takes minutes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fbbench.errors import FbbenchError
from fbbench.paths import output_file, write_whole
from fbbench.report import html


def write_outputs(document: Mapping[str, Any], json_file: Path | None, report: Path | None,
                  firebird_log: str = "",
                  write_report: Callable[[Mapping[str, Any], Path], Path] | None = None,
                  overwrite: bool = False) -> tuple[list[str], list[str]]:
    """Write what was asked; returns (lines saying what was written, errors). ``write_report``
    draws another page than the run report (a comparison's)."""
    written: list[str] = []
    errors: list[str] = []
    if json_file is not None:
        target = json_file.expanduser()
        try:
            output_file(target, "--json", overwrite)
            write_whole(target, json.dumps(document, indent=2, default=str))
            written.append(f"JSON: {target.resolve()}")
        except FbbenchError as refusal:
            errors.append(refusal.message)
        except OSError as error:
            errors.append(f"cannot write the JSON file {target}: {error.strerror or error}")
    if report is not None:
        try:
            output_file(report, "--report", overwrite)
            path = (write_report(document, report) if write_report is not None
                    else html.write(dict(document), report, firebird_log))
            written.append(f"report: {path}")
        except FbbenchError as refusal:
            errors.append(refusal.message)
        except OSError as error:
            errors.append(f"cannot write the HTML report {report}: {error.strerror or error}")
    return written, errors
