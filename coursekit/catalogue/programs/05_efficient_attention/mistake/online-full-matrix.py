# description: online_softmax_attention computes the whole score matrix at once (right numbers, (n,
#   n) memory)
# source: written for this catalogue
# replaces: online_softmax_attention
# loses: online_softmax_attention
# symptom: as much as a whole (n_q, n_k) array

def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if causal:
        n = scores.shape[-1]
        scores = np.where(np.triu(np.ones((n, n), dtype=bool), 1), -np.inf, scores)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True) @ V
