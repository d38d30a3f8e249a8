# description: np.einsum, math.sqrt and a boolean-index fill
# source: written for this catalogue

# %% replaces: scaled_attention_scores
def scaled_attention_scores(Q, K):
    import math
    return np.einsum('...qd,...kd->...qk', Q, K) / math.sqrt(K.shape[-1])


# %% replaces: scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = np.array(scaled_attention_scores(Q, K), dtype=float)
    if mask is not None:
        scores[np.broadcast_to(mask, scores.shape)] = -np.inf
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum('...qk,...kd->...qd', weights, V), weights


# %% replaces: dot_product_variance
def dot_product_variance(d_k, num_samples=10_000, seed=0):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, num_samples, d_k))
    dots = np.einsum('nd,nd->n', q, k)
    return float(dots.var()), float((dots / d_k ** 0.5).var())
