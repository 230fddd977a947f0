"""The results store (SQLite): every run, written as it goes."""

from fbbench.store.results import SCHEMA_VERSION, ResultsStore

__all__ = ["SCHEMA_VERSION", "ResultsStore"]
