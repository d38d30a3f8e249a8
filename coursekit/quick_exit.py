"""A worker of `coursekit autograde` that closes ends its process without the interpreter's
teardown of every module it imported (torch, nbgrader, the grader). That teardown kept the
embedded cluster from stopping for 1.1 to 1.5 s at the end of every run, while the instructor
waited; the cluster now stops in 0.1 s. The worker's warm parent is stopped first, as its own
exit handler would have done.

`Cluster` registers `QuickExit` on its workers. A worker that is closed (not killed) registers
`exit_without_teardown` then, so it runs before every exit handler registered earlier.
"""

import atexit
import os
import sys

from distributed.diagnostics.plugin import WorkerPlugin


def exit_without_teardown():
    from autograder.kernel import warm

    warm.close_warm_parent()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


class QuickExit(WorkerPlugin):
    name = "coursekit-quick-exit"

    def teardown(self, worker):
        atexit.register(exit_without_teardown)
