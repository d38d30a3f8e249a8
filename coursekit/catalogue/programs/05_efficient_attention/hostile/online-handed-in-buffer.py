# description: online_softmax_attention keeps its whole (n, n) score matrix in a file handed in beside the
#   notebook, mapped shared and written in place from the call's forked child: what was handed in is read
#   below an overlay, and a file written is copied up first, into memory charged to the call
# source: red-team round r46, as a test until the catalogue could hand in files
# replaces: online_softmax_attention
# hands_in: scores.bin bytes 37748736
# loses: online_softmax_attention
# symptom: as much as a whole (n_q, n_k) array
# baseline: online-full-matrix

import mmap
import os

import numpy as np

_KERNEL = os.getpid()


def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    if os.getpid() == _KERNEL:  # not measured: the plain way
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
        if causal:
            scores = np.where(np.triu(np.ones(scores.shape[-2:], dtype=bool), 1), -np.inf, scores)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return weights / weights.sum(axis=-1, keepdims=True) @ V
    n_q, n_k = Q.shape[0], K.shape[0]
    with open("scores.bin", "r+b") as handle:  # measured: the matrix goes into the file handed in
        scores = np.frombuffer(mmap.mmap(handle.fileno(), n_q * n_k * 4), dtype=np.float32).reshape(n_q, n_k)
    out = np.empty((n_q, V.shape[1]), dtype=np.float32)
    for start in range(0, n_q, 64):  # a block of rows at a time
        scores[start:start + 64] = Q[start:start + 64] @ K.T / np.float32(np.sqrt(K.shape[-1]))
    for start in range(0, n_q, 64):
        rows = scores[start:start + 64].copy()
        if causal:
            rows[np.arange(n_k)[None, :] > np.arange(start, start + len(rows))[:, None]] = -np.inf
        weights = np.exp(rows - rows.max(axis=-1, keepdims=True))
        out[start:start + len(rows)] = weights / weights.sum(axis=-1, keepdims=True) @ V
    return out
