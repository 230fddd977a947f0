"""Fixtures of the load-core tests: a small schema and the functions the tests run inside an
engine child process (see tests/test_core.py)."""
