# After the hostile catalogue's online-pooled-full-matrix: its buffer, made again as a shared mapping (what Python's mmap.mmap(-1, n)
# makes). A forked child writes the very pages the kernel holds, with no copy of its own to count.
import mmap

import numpy as np

_SHARED = mmap.mmap(-1, POOL.nbytes)  # noqa: F821 - online-pooled-full-matrix's, a cell before
POOL = np.frombuffer(_SHARED, dtype=np.float32)
POOL[:] = 1  # every page touched: held before any case runs
