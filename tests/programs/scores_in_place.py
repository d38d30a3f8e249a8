# A first cell the memory attacks share: the whole (n, n) attention of one matrix, its scores written into the
# buffer the attack chose (memory it hopes goes uncharged) rather than a fresh array, so that only where the
# scores live differs between attacks.
import numpy as np


def _attend_in(scores, Q, K, V, causal):
    np.matmul(Q, K.T, out=scores)
    scores /= np.float32(np.sqrt(Q.shape[1]))
    if causal:
        for i in range(Q.shape[0]):
            scores[i, i + 1:] = -np.inf
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores @ V
