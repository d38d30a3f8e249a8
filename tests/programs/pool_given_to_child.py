# After the hostile catalogue's online-pooled-full-matrix: its buffer, made again as a private mapping given up
# as the process that makes the call is forked (each memory case, the kernel forks a child, and that child forks
# the call's process: the second fork gives it up). The call's process then maps the buffer's pages alone,
# charged before the call, and writes them with no copy of its own. A thread of the kernel touches the buffer
# again once the call is done.
import mmap
import os
import threading
import time

import numpy as np

_MAP = mmap.mmap(-1, POOL.nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # noqa: F821 - a cell before
POOL = np.frombuffer(_MAP, dtype=np.float32)
POOL[:] = 1
_fork = os.fork
_forks = [0]


def _fork_giving_up_the_pool():
    _forks[0] += 1
    pid = _fork()
    if pid != 0 and _forks[0] % 2 == 0:
        _MAP.madvise(mmap.MADV_DONTNEED)  # the kernel's copy dropped: the child's pages are its alone
    return pid


def _keep_touched():
    while True:
        POOL[::1024] = 1  # a write to every page: resident again before the next case
        time.sleep(0.05)


os.fork = _fork_giving_up_the_pool
threading.Thread(target=_keep_touched, daemon=True).start()
