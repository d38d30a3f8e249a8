# description: float32 throughout, a large negative fill, torch's generator for the samples
# source: written for this catalogue

# %% replaces: project_qkv
def project_qkv(X, W_q, W_k, W_v):
    X = np.asarray(X, dtype=np.float32)
    return tuple(X @ np.asarray(W, dtype=np.float32) for W in (W_q, W_k, W_v))


# %% replaces: scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.float32(np.sqrt(K.shape[-1]))
    if mask is not None:
        scores = np.where(mask, np.float32(-1e30), scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ V, weights


# %% replaces: dot_product_variance
def dot_product_variance(d_k, num_samples=10_000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_samples, d_k, generator=g, dtype=torch.float64)
    k = torch.randn(num_samples, d_k, generator=g, dtype=torch.float64)
    dots = (q * k).sum(dim=-1)
    return dots.var(unbiased=False).item(), (dots / d_k ** 0.5).var(unbiased=False).item()
