"""The results store (SQLite): every run, written as it goes."""

from fbbench.store.results import ResultsStore
from fbbench.store.schema import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "ResultsStore"]
