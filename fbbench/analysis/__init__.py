"""What fbbench concludes from what it measured: figures, audits, statistics — one definition each."""
