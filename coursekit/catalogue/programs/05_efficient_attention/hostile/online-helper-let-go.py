# description: online_softmax_attention hands its inputs to a helper process an earlier cell started,
#   which computes the whole score matrix in a buffer it made and touched before any case ran (as
#   online-helper-process), and the call lets the helper go again (SIGCONT) in its window, where the
#   judge holds every process but the call's; the helper puts its buffer back as it was before it
#   answers, so the judge's digests of its pages see nothing
# source: red-team round r59
# replaces: online_softmax_attention
# loses: online_softmax_attention
# symptom: held still
# baseline: online-full-matrix

import os
import signal
import struct

import numpy as np

_N = 3072
_from_caller, _to_helper = os.pipe()
_from_helper, _to_caller = os.pipe()


def _read_exactly(fd, size):
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            os._exit(0)
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _serve():
    pool = np.ones(_N * _N, dtype=np.float32)  # touched: charged before any case
    while True:
        n_q, n_k, d, d_v, causal = struct.unpack("5q", _read_exactly(_from_caller, 40))
        Q, K, V = (np.frombuffer(_read_exactly(_from_caller, rows * width * 4), dtype=np.float32).reshape(rows, width)
                   for rows, width in ((n_q, d), (n_k, d), (n_k, d_v)))
        scores = pool[:n_q * n_k].reshape(n_q, n_k)
        np.matmul(Q, K.T, out=scores)
        scores /= np.float32(np.sqrt(d))
        if causal:
            for i in range(n_q):
                scores[i, i + 1:] = -np.inf
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        out = np.ascontiguousarray(scores @ V, dtype=np.float32).tobytes()
        pool.fill(1)  # put back as it was: the judge's digests of this process's pages see nothing
        _write_all(_to_caller, out)


_helper = os.fork()
if _helper == 0:
    _serve()


def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.ascontiguousarray(a, dtype=np.float32) for a in (Q, K, V))
    if Q.ndim != 2:  # batched inputs: one matrix at a time
        return np.stack([online_softmax_attention(q, k, v, block_size, causal) for q, k, v in zip(Q, K, V)])
    os.kill(_helper, signal.SIGCONT)  # held by the judge: let go again, by the call
    _write_all(_to_helper, struct.pack("5q", Q.shape[0], K.shape[0], Q.shape[1], V.shape[1], int(causal)))
    for a in (Q, K, V):
        _write_all(_to_helper, a.tobytes())
    out = _read_exactly(_from_helper, Q.shape[0] * V.shape[1] * 4)
    return np.frombuffer(out, dtype=np.float32).reshape(Q.shape[0], V.shape[1]).copy()
