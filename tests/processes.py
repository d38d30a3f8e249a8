"""Helpers for tests that start servers as processes of their own (JupyterLab, dask)."""

import os
import signal
import socket
import subprocess
import time
from contextlib import suppress


def free_port():
    """A loopback port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_groups(processes, grace=15):
    """Each process and its whole process group (each was started with start_new_session):
    SIGTERM to all, then SIGKILL to whatever has not exited within `grace` seconds."""
    for process in processes:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=grace)
