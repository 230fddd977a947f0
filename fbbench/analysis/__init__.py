"""What fbbench concludes from what it measured — one definition each, pure functions over the
stored run (``ResultsStore.load_run``) or plain numbers:

- :mod:`~fbbench.analysis.figures`: the headline, the score, TPM;
- :mod:`~fbbench.analysis.audits`: the workload's audits, judged with their sampling interval;
- :mod:`~fbbench.analysis.stats`: B/A ratios with 95 % intervals, verdicts, one series' median;
- :mod:`~fbbench.analysis.steady`: steady state, warm-up needed and trend of one run;
- :mod:`~fbbench.analysis.conditions`: a run's conditions, their diff and the comparison's axis;
- :mod:`~fbbench.analysis.lint`: the credibility lint (rules FB001…), its rule table and findings in
  :mod:`~fbbench.analysis.lint_rules`, its cache and disk rules in :mod:`~fbbench.analysis.lint_disk`;
- :mod:`~fbbench.analysis.gstat`: gstat before and after, read as an expert would (what to flag);
- :mod:`~fbbench.analysis.psql`: what a unit's SQL reaches inside the engine (for the lint);
- the documents the reports print and draw: :mod:`~fbbench.analysis.run` (one run),
  :mod:`~fbbench.analysis.comparison` (runs and series compared), :mod:`~fbbench.analysis.sweep`
  (a sweep), each passed once through :func:`~fbbench.analysis.finite.finite`.
"""
