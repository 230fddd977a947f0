"""``fbbench run``: its settings (flags and spec files read once, :mod:`fbbench.runner.settings`), the
parent side (plan, runtime, run row, clean-up) in this package; the phases
that run inside the engine child process in :mod:`fbbench.runner.engine`. Also ``fbbench doctor``,
a small run of its own that proves each engine works (:mod:`fbbench.runner.doctor`)."""
