"""A gbak backup restored through the services API into a database fbbench owns (engine child side).

The backup is only read. The restored database is a new database, so fbbench marks it like every
database it creates (:mod:`fbbench.database.ownership`) and may then change or drop it.

gbak inside an embedded engine writes to the process's own terminal, and a backup cut short does
not fail the service: it prints "Done with volume #0 … Press return to reopen that file" and
"ERROR: Backup incomplete" on stdout, waits for an answer on stdin, and the service then ends as
if all went well, with a database holding part of the data. So the restore runs with stdin on
/dev/null and stdout/stderr captured, and it counts as done only when gbak's verbose output says
it finished ("finishing, closing, and going home").
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fbbench.database import driver, ownership
from fbbench.errors import FbbenchError

FINISHED = "finishing, closing, and going home"


@contextlib.contextmanager
def _terminal_captured(directory: Path) -> Iterator[Callable[[], str]]:
    """stdin from /dev/null, stdout and stderr into a file; yields a reader of what was written."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=directory) as captured, open(os.devnull, "rb") as nothing:
        saved = [os.dup(fd) for fd in (0, 1, 2)]
        try:
            os.dup2(nothing.fileno(), 0)
            os.dup2(captured.fileno(), 1)
            os.dup2(captured.fileno(), 2)

            def text() -> str:
                captured.seek(0)
                return captured.read().decode(errors="replace")

            yield text
        finally:
            for fd, copy in zip((0, 1, 2), saved, strict=True):
                os.dup2(copy, fd)
                os.close(copy)


def _one_line(text: str) -> str:
    return "; ".join(" ".join(line.lstrip("-").split()) for line in text.strip().splitlines() if line.strip())


# What gbak prints to a terminal when a backup ends early: a prompt for the next volume, which
# means nothing to someone who did not run gbak (and nobody can answer it).
_PROMPT = re.compile(r"Done with volume|Press return|name followed by return|^\s*Name:\s*$", re.IGNORECASE)
_VERSION = re.compile(r"Expected backup version (\d+)\.\.(\d+)\. Found (\d+)")


def _gbak_said(text: str) -> str:
    """What gbak printed, on one line, without its prompt for another volume."""
    return _one_line("\n".join(line for line in text.splitlines() if not _PROMPT.search(line)))


def _refusal(name: str, error: Exception, printed: str) -> FbbenchError:
    """Why the engine's gbak refused a backup, in one line: a newer backup format said as such."""
    said = _one_line(str(error))
    newer = _VERSION.search(said)
    if newer is not None:
        low, high, found = newer.groups()
        return FbbenchError(f"cannot restore {name}: this backup is from a newer Firebird (backup format {found}; "
                            f"this engine reads formats {low} to {high})",
                            hint="restore it with the Firebird version that made it, or a newer one (--engine)")
    return FbbenchError(f"cannot restore {name}: {said}" + (f" ({printed})" if printed else ""),
                        hint="is it a gbak backup (not a database file or an nbackup copy), whole and made by this "
                             "Firebird version or an older one?")


def restore(backup: str, location: str, services_host: str, server_path: str, page_size: int | None,
            details: dict[str, Any], scratch: Path, stream: bool = False) -> dict[str, Any]:
    """gbak -c of ``backup`` into ``location`` (no database may be there), marked as fbbench's.

    ``server_path``: the database as the services API names it (the path on its server);
    ``stream``: send the backup through the services connection (a server on another machine
    cannot read this machine's file). Returns the restore's facts."""
    name = Path(backup).name
    lines: list[str] = []
    started = time.monotonic()
    with driver.server(services_host, location) as server, _terminal_captured(scratch) as terminal:
        try:
            if stream:
                with open(backup, "rb") as source:
                    server.database.local_restore(backup_stream=source, database=server_path, page_size=page_size)
                lines.append(FINISHED)  # a streamed restore has no verbose output: an error raises
            else:
                server.database.restore(backup=backup, database=server_path, page_size=page_size, verbose=True,
                                        callback=lines.append)
        except Exception as error:
            if not type(error).__module__.startswith("firebird.driver"):
                raise
            raise _refusal(name, error, _gbak_said(terminal())) from None
        printed = _gbak_said(terminal())
    seconds = time.monotonic() - started
    if not any(FINISHED in line for line in lines):
        last = next((line.strip() for line in reversed(lines) if line.strip()), "nothing")
        raise FbbenchError(f"cannot restore {name}: the backup is incomplete or damaged (gbak stopped after "
                           f"'{last.removeprefix('gbak:')}'" + (f"; it said: {printed}" if printed else "") + ")",
                           hint="a backup cut short (a copy that did not finish, a full disk) cannot be restored; "
                                "take the backup again")
    token = ownership.new_token()
    with driver.connect(location) as connection:
        ownership.write_mark(connection, token, {"purpose": "restored", **details})
        with connection.cursor() as cursor:
            cursor.execute("select mon$page_size, mon$pages * mon$page_size, mon$ods_major, mon$ods_minor "
                           "from mon$database")
            page, size, ods_major, ods_minor = cursor.fetchone()
        connection.commit()
    ownership.register(location, token, {"purpose": "restored", "backup": name})
    return {"restore_seconds": seconds, "page_size": int(page), "size_bytes": int(size),
            "ods": f"{ods_major}.{ods_minor}", "gbak_lines": len(lines)}


def drop_unmarked(location: str) -> None:
    """Drop a database this process itself just restored, before it could be marked (a restore
    that failed half-way on a server): best effort, the error that ended the restore stands."""
    with contextlib.suppress(Exception):
        with driver.connect(location) as connection:
            if ownership.read_mark(connection) is None:
                connection.drop_database()
