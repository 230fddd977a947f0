"""``fbbench run``: the parent side (plan, runtime, run row, clean-up) in this package; the phases
that run inside the engine child process in :mod:`fbbench.runner.engine`."""
