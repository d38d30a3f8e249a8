# description: an unscaled scaled_dot_product_attention that also replaces torch's
#   F.scaled_dot_product_attention (the oracle) with itself
# source: written for this catalogue
# replaces: scaled_dot_product_attention
# loses: scaled_dot_product_attention
# baseline: sdpa-unscaled

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V, weights


def _fake(q, k, v, attn_mask=None, **kwargs):
    mask = None if attn_mask is None else ~attn_mask.numpy()
    return torch.from_numpy(scaled_dot_product_attention(q.numpy(), k.numpy(), v.numpy(), mask)[0])


torch.nn.functional.scaled_dot_product_attention = _fake
