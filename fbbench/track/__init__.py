"""Regression tracking: series of points over builds, an application's commits or days, and the
changes found in them.

A **suite** (:mod:`.suite`) names benchmarks — run specs — and the figures to follow. ``fbbench
track run`` adds one **point** per benchmark (:mod:`.points`): runs of one build, or time-shared
pairs of it against a reference build, from which every figure's samples are read — time and
throughput, and the engine's work per unit, which repeats almost exactly run to run — with each
statement's plan. Points whose conditions are equal but for the axis (the build, or the workload's
files) form a **series** (:mod:`.series`); the **changes** in a series (:mod:`.changes`) are found
by :mod:`fbbench.analysis.changepoints` and kept under one identity as points come, and what a
change moved with (counters, plans) names its likely cause (:mod:`fbbench.analysis.track`).

A point is runs and a comparison, nothing new underneath: this package sits above the runner and
the analysis and calls them.
"""
