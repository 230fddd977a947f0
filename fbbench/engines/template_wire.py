"""What a template process (:mod:`fbbench.engines.template_server`) and the processes it serves
(:mod:`fbbench.engines.template`) agree on: the largest message between them, and the names
``ps`` and ``/proc/PID/comm`` show for templates and their children (a forked child's command line
is its template's). Apart from both so that a template imports neither the other's imports nor
an import circle."""

MESSAGE_BYTES = 1 << 20
# An engine's template and the engine children it forks (fbbench.engines.child).
TEMPLATE_NAME, CHILD_NAME = "fbb-engine-tmpl", "fbbench-engine"
# A Classic run's attachment template and its attachment processes (fbbench.loadcore.classic).
ATTACHMENT_TEMPLATE_NAME, ATTACHMENT_NAME = "fbb-attach-tmpl", "fbbench-attach"
