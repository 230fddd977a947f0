"""Watching the engine during a run: MON$ counters per interval, gstat before and after, and
what firebird.log gained. Every module here runs inside the engine child process."""
