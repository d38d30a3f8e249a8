"""Ctrl-C in the terminal of `coursekit autograde` stops the driver, which stops its workers.

The embedded cluster's worker processes share the terminal's process group, so each would get
the SIGINT too and print a traceback; `Cluster` registers `IgnoreInterrupt` on them. (Workers
of your own `dask worker` are not touched: Ctrl-C in their terminal stops them as usual.)
"""

import signal
import threading

from distributed.diagnostics.plugin import WorkerPlugin


class IgnoreInterrupt(WorkerPlugin):
    """Ctrl-C is the driver's: the embedded cluster's workers, in the terminal's process group,
    would each print a traceback. The driver stops them itself (`Cluster.close`)."""

    name = "coursekit-ignore-interrupt"

    def setup(self, worker):
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
