# description: FlashAttention's two-level tiling with causal block skipping, complex exponentials
#   for the positions, a counted tuple cache, the chapter's float mask with masked_fill_
# source: written for this catalogue

# %% replaces: sinusoidal_positions
def sinusoidal_positions(num_tokens, d_model):
    speeds = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    turns = np.exp(1j * np.arange(num_tokens)[:, None] * speeds)  # cos + i sin
    out = np.empty((num_tokens, d_model))
    out[:, 0::2] = turns.imag
    out[:, 1::2] = turns.real
    return out


# %% replaces: online_softmax_attention
def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    # FlashAttention's two levels: blocks of queries outside, blocks of keys inside;
    # with causal=True, key blocks entirely after the query block are skipped.
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n_q, n_k = Q.shape[-2], K.shape[-2]
    out = np.empty(Q.shape[:-1] + V.shape[-1:])
    for i0 in range(0, n_q, block_size):
        i1 = min(i0 + block_size, n_q)
        q = Q[..., i0:i1, :] / np.sqrt(K.shape[-1])
        m = np.full(q.shape[:-1] + (1,), -np.inf)
        l = np.zeros_like(m)
        acc = np.zeros(q.shape[:-1] + V.shape[-1:])
        last = min(n_k, i1) if causal else n_k
        for j0 in range(0, last, block_size):
            j1 = min(j0 + block_size, n_k)
            s = q @ np.swapaxes(K[..., j0:j1, :], -1, -2)
            if causal and j1 > i0 + 1:
                s = np.where(np.arange(j0, j1) > np.arange(i0, i1)[:, None], -np.inf, s)
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            p = np.exp(s - m_new)
            correction = np.exp(m - m_new)
            l = correction * l + p.sum(axis=-1, keepdims=True)
            acc = correction * acc + p @ V[..., j0:j1, :]
            m = m_new
        out[..., i0:i1, :] = acc / l
    return out


# %% replaces: KVCache
class KVCache:
    def __init__(self):
        self.store = None
        self.count = 0

    def update(self, k_new, v_new):
        if self.store is None:
            self.store = (k_new, v_new)
        else:
            self.store = (torch.cat([self.store[0], k_new], 1), torch.cat([self.store[1], v_new], 1))
        self.count += k_new.shape[1]
        return self.store

    def __len__(self):
        return self.count


# %% replaces: CachedCausalAttention
class CachedCausalAttention(nn.Module):
    # the chapter's CausalAttention (float mask, in-place masked_fill_), plus the cache
    def __init__(self, d_in, d_out, context_length,
                 dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key   = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x, cache=None):
        b, num_tokens, d_in = x.shape
        past = len(cache) if cache is not None else 0
        if past + num_tokens > self.mask.shape[0]:
            raise ValueError("context_length exceeded")
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        if cache is not None:
            keys, values = cache.update(keys, values)

        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(
            self.mask.bool()[past:past + num_tokens, :past + num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = attn_weights @ values
        return context_vec
