"""The phases of a run inside the engine child process: database, before, measure, after."""
