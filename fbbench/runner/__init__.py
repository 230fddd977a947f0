"""``fbbench run``: the parent side (plan, runtime, run row, clean-up) in this package; the phases
that run inside the engine child process in :mod:`fbbench.runner.engine`. Also ``fbbench doctor``,
a small run of its own that proves each engine works (:mod:`fbbench.runner.doctor`)."""
