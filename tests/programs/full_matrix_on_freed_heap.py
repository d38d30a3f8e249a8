# online_softmax_attention that builds the whole (n_q, n_k) score matrix row by row, each row a
# small array, after this cell freed 1 GiB of small arrays: glibc keeps their free chunks, resident,
# for the next allocations, so the rows (and a first call's, freed, for the second) are written into
# memory the kernel held before the call.
import numpy as np

_kept = [np.ones(8192) for _ in range(16384)]  # 64 KiB each, below malloc's mmap threshold: on the heap
del _kept


def online_softmax_attention(Q, K, V, block_size, causal=False):
    rows = [Q[i] @ K.T / np.sqrt(Q.shape[1]) for i in range(Q.shape[0])]
    if causal:
        for i, row in enumerate(rows):
            row[i + 1:] = -np.inf
    weights = [np.exp(row - row.max()) for row in rows]
    return np.stack([w / w.sum() @ V for w in weights]).astype(Q.dtype)
