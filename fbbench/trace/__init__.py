"""The Firebird trace as a record of an application: the replay-grade session config fbbench
writes (:mod:`fbbench.trace.config`), a parser of the trace's text that says what it cannot read
rather than guess (:mod:`fbbench.trace.parser`, into :mod:`fbbench.trace.model`), the capture of
a session into a file (:mod:`fbbench.trace.capture`, inside an engine child), and the traced
transactions grouped into their shapes (:mod:`fbbench.trace.shapes`), from which both a workload
and a replay are made."""
