"""``fbbench sweep``: a matrix of run settings with repeats, run in an order that spreads drift
and reuses populated databases; resumable; with a report of the pattern."""
