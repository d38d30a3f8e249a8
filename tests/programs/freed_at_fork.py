# After the hostile catalogue's online-pooled-full-matrix: memory the kernel held before the call (120 MiB of arrays) is freed by the
# kernel itself just before it forks the child that makes the call, so the submission holds less than before it
# while the child writes its whole score matrix. (Each memory case forks twice, the kernel's child and the call's
# process, which was once a fork measured doing nothing and then the call: the memory is taken again at the first.)
import os

import numpy as np

_fork = os.fork
_forks = [0]
BALLAST = [np.ones(120 * 1024 * 1024 // 8)]


def _fork_giving_back():
    _forks[0] += 1
    BALLAST.clear()  # before the fork: the child shares nothing of it
    if _forks[0] % 2 == 1:
        BALLAST.append(np.ones(120 * 1024 * 1024 // 8))
    return _fork()


os.fork = _fork_giving_back
