"""The Dask cluster `coursekit autograde` grades on: an embedded `LocalCluster` of one
single-threaded worker process per core, or an existing scheduler (`--scheduler`). Each worker's
first task warms it up (`grading_task.warm_up`): the grader's imports and the judge's warm parent.
"""

import logging
import os
import threading
import time

from coursekit.grading_task import warm_up
from coursekit.sandbox_warning import keep_quiet

ALLOWED_FAILURES = 2  # a submission whose worker died this many times is given up as failing


def default_workers():
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


class Cluster:
    """A Dask client: on an embedded LocalCluster, or on the scheduler at `address`."""

    def __init__(self, workers=None, address=None):
        import dask
        from distributed import Client, LocalCluster

        self.cluster = None
        if address:
            self.client = Client(address, timeout="30s")
        else:
            with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                                  "distributed.worker.daemon": False}):
                # No dashboard; its HTTP server (which the scheduler starts anyway) on a free port,
                # not 8787 ("Port 8787 is already in use" when another cluster runs). Worker logs
                # below CRITICAL (a heartbeat's CommClosedError while a run stops) are noise: a
                # submission's failure reaches the instructor as its outcome.
                self.cluster = LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1,
                                            processes=True, memory_limit=0, dashboard_address=None,
                                            scheduler_kwargs={"dashboard_address": ":0"},
                                            silence_logs=logging.CRITICAL)
            self.client = Client(self.cluster)
        from coursekit.interrupt import IgnoreInterrupt
        from coursekit.quick_exit import QuickExit

        self.client.register_plugin(QuickExit())  # the workers stop in 0.1 s, not 1.1 s
        if self.cluster is not None:
            self.client.register_plugin(IgnoreInterrupt())
            self.client.run(keep_quiet)  # the driver says the no-sandbox warning (sandbox_warning.py)
        self.warming = [self.client.submit(warm_up, pure=False, workers=[address], allow_other_workers=False,
                                           key=f"warm-up-{address}-{time.time_ns()}")
                        for address in self.client.scheduler_info(n_workers=-1).get("workers", {})]

    @property
    def workers(self):
        return len(self.client.scheduler_info(n_workers=-1).get("workers", {}))

    def close(self):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


class StartingCluster:
    """A `Cluster` started in a thread: `get()` waits for it, `discard()` closes it."""

    def __init__(self, workers, address):
        self.cluster, self.error = None, None
        self.thread = threading.Thread(target=self._start, args=(workers, address), name="start-cluster",
                                       daemon=True)
        self.thread.start()

    def _start(self, workers, address):
        try:
            self.cluster = Cluster(workers, address)
        except BaseException as error:  # noqa: BLE001 - raised again by get()
            self.error = error

    def get(self):
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.cluster

    def discard(self, later):
        """Close the cluster, in a thread that is returned if `later` (its workers take seconds to stop)."""
        def close():
            self.thread.join()
            if self.cluster is not None:
                self.cluster.close()

        if not later:
            close()
            return None
        closing = threading.Thread(target=close, name="close-cluster")
        closing.start()
        return closing
