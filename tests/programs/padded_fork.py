# A cell that made the judge's measure of what forking the kernel costs doing nothing large: the judge forked
# twice for each memory case, first to hold nothing (what a fork costs, left out of the call's peak up to an
# allowance), then to make the call, and every first child here touches 80 MiB. Nothing is left out now: the
# call's window opens after its process is forked (`KernelChannel.apart`).
import os

import numpy as np

_fork = os.fork
_forks = [0]


def _padded_fork():
    _forks[0] += 1
    pid = _fork()
    if pid == 0 and _forks[0] % 2 == 1:
        np.ones(80 * 1024 * 1024 // 8)
    return pid


os.fork = _padded_fork
