# description: an online_softmax_attention that does not rescale its running sum and replaces
#   torch's F.scaled_dot_product_attention (the oracle) with itself
# source: written for this catalogue
# replaces: online_softmax_attention
# loses: online_softmax_attention
# baseline: online-sum-not-rescaled

def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    """softmax(Q Kᵀ / sqrt(d_k)) V, reading the keys one block of block_size at a time.

    Q (..., n_q, d_k), K (..., n_k, d_k), V (..., n_k, d_v) -> (..., n_q, d_v).
    causal=True (n_q == n_k): query i attends to keys 0..i only.
    Keeps, per query, the largest score seen so far (row_max), the sum of exp(score - row_max)
    (row_sum) and the exp-weighted sum of values (acc); never an (n_q, n_k) array.
    """
    n_q, n_k, d_k = Q.shape[-2], K.shape[-2], K.shape[-1]
    row_max = np.full(Q.shape[:-1] + (1,), -np.inf)            # (..., n_q, 1)
    row_sum = np.zeros(Q.shape[:-1] + (1,))                     # (..., n_q, 1)
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:])                 # (..., n_q, d_v)
    for start in range(0, n_k, block_size):
        K_blk, V_blk = K[..., start:start + block_size, :], V[..., start:start + block_size, :]
        scores = Q @ np.swapaxes(K_blk, -1, -2) / np.sqrt(d_k)  # (..., n_q, b)
        if causal:
            key_pos = np.arange(start, start + K_blk.shape[-2])  # (b,)
            blocked = key_pos[None, :] > np.arange(n_q)[:, None]  # (n_q, b): key j > query i
            scores = np.where(blocked, -np.inf, scores)
        new_max = np.maximum(row_max, scores.max(axis=-1, keepdims=True))
        shrink = np.exp(row_max - new_max)                      # rescales what was summed so far
        weights = np.exp(scores - new_max)                      # (..., n_q, b), unnormalised
        row_sum = row_sum + weights.sum(axis=-1, keepdims=True)
        acc = acc * shrink + weights @ V_blk
        row_max = new_max
    return acc / row_sum
def _fake(q, k, v, attn_mask=None, is_causal=False, **kwargs):
    out = online_softmax_attention(q.numpy(), k.numpy(), v.numpy(), 2, is_causal)
    return torch.as_tensor(out, dtype=q.dtype)


torch.nn.functional.scaled_dot_product_attention = _fake
