# description: online_softmax_attention computes the whole score matrix, but writes it into a
#   buffer its cell made and touched before any case ran, so that the memory the call writes was
#   held before the call (the memory cases count what a call holds above what the submission held
#   just before it; such a call now runs in a forked child, whose every written page is its own)
# source: written for this catalogue (found in the sixteenth session)
# replaces: online_softmax_attention
# loses: online_softmax_attention
# symptom: as much as a whole (n_q, n_k) array
# baseline: online-full-matrix

POOL = np.ones(3072 * 3072 + 64, dtype=np.float32)  # one float32 (3072, 3072) score matrix


def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    shape = Q.shape[:-1] + (K.shape[-2],)
    scores = POOL[:int(np.prod(shape))].reshape(shape)
    np.matmul(Q, np.swapaxes(K, -1, -2), out=scores)
    scores /= np.sqrt(K.shape[-1])
    if causal:
        n = scores.shape[-1]
        scores[..., np.triu(np.ones((scores.shape[-2], n), dtype=bool), 1)] = -np.inf
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores @ V
