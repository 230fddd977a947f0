"""One lab run in a process of its own on the worker's host: ``fbbench run`` as the CLI runs it
(its own main thread for Ctrl-C, its engine child, its clean-up), from a request on stdin.

The request is one JSON line: ``settings`` (the run's recorded settings), ``run_id`` (given by
the coordinator), ``series`` and ``sweep`` (``[id, position]``), ``password`` (a server's, or
null: it travels only on this pipe, never in an argument, the environment or a file). The answer
is one JSON line on stdout after the marker :data:`ANSWER`: ``status``, ``failure``, ``hint``,
and ``recorded`` (false when the run was refused before it was recorded, e.g. an engine this
host does not have). Everything else the run prints goes wherever stdout goes (a log file).
"""

from __future__ import annotations

import json
import sys
from typing import Any

ANSWER = "fbbench-lab-answer: "


def main() -> None:
    from fbbench import signals
    from fbbench.errors import FbbenchError
    from fbbench.runner.run import execute
    from fbbench.runner.settings import RunSettings

    signals.commands_take_over()
    request: dict[str, Any] = json.loads(sys.stdin.readline())
    answer: dict[str, Any]
    try:
        settings = RunSettings(**request["settings"]).validate()
        outcome = execute(settings, request.get("password"), run_id=request["run_id"],
                          series=tuple(request["series"]) if request.get("series") else None,
                          sweep=tuple(request["sweep"]) if request.get("sweep") else None)
        answer = {"status": outcome.status, "failure": outcome.failure, "hint": outcome.hint, "recorded": True}
    except KeyboardInterrupt:
        answer = {"status": "interrupted", "failure": "interrupted before the run was recorded", "recorded": False}
    except FbbenchError as error:
        answer = {"status": "failed", "failure": error.message, "hint": error.hint, "recorded": False}
    print(ANSWER + json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
