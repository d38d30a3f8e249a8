# description: online_softmax_attention computes the whole score matrix in a forked child and
#   pipes the answer back, so that the memory the call holds is in another process than the
#   kernel (the judge once read the peak of the kernel's process alone)
# source: written for this catalogue
# replaces: online_softmax_attention
# loses: online_softmax_attention
# symptom: held
# baseline: online-full-matrix

import os


def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
        if causal:
            n = scores.shape[-1]
            scores = np.where(np.triu(np.ones((n, n), dtype=bool), 1), -np.inf, scores)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        out = (weights / weights.sum(axis=-1, keepdims=True) @ V).astype(np.float64)
        with os.fdopen(write, "wb") as pipe:
            pipe.write(out.tobytes())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(child, 0)
    return np.frombuffer(data, dtype=np.float64).reshape(Q.shape[:-1] + (V.shape[-1],))
