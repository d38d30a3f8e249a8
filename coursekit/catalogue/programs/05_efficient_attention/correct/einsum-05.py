# description: einsum everywhere, sin/cos stacked and reshaped, a preallocated cache buffer that
#   doubles, torch.where on positions
# source: written for this catalogue

# %% replaces: sinusoidal_positions
def sinusoidal_positions(num_tokens, d_model):
    inv_freq = 1.0 / 10000 ** (np.arange(0, d_model, 2) / d_model)
    angles = np.outer(np.arange(num_tokens), inv_freq)
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(num_tokens, d_model)


# %% replaces: online_softmax_attention
def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    n_q, n_k = Q.shape[-2], K.shape[-2]
    scale = K.shape[-1] ** -0.5
    m = np.full(Q.shape[:-1], -np.inf)
    l = np.zeros(Q.shape[:-1])
    acc = np.zeros(Q.shape[:-1] + (V.shape[-1],))
    q_pos = np.arange(n_q)[:, None]
    for j in range(0, n_k, block_size):
        Kj, Vj = K[..., j:j + block_size, :], V[..., j:j + block_size, :]
        s = np.einsum('...id,...jd->...ij', Q, Kj) * scale
        if causal:
            s = np.where(np.arange(j, j + Kj.shape[-2]) > q_pos, -np.inf, s)
        m_new = np.maximum(m, s.max(axis=-1))
        c = np.exp(m - m_new)
        p = np.exp(s - m_new[..., None])
        l = l * c + p.sum(axis=-1)
        acc = acc * c[..., None] + np.einsum('...ij,...jd->...id', p, Vj)
        m = m_new
    return acc / l[..., None]


# %% replaces: KVCache
class KVCache:
    """Preallocated buffers that double when full."""

    def __init__(self):
        self.k = None
        self.v = None
        self.size = 0

    def update(self, k_new, v_new):
        need = self.size + k_new.shape[1]
        if self.k is None or need > self.k.shape[1]:
            capacity = max(16, 2 * need)
            k_buf = k_new.new_zeros(k_new.shape[0], capacity, k_new.shape[2])
            v_buf = v_new.new_zeros(v_new.shape[0], capacity, v_new.shape[2])
            if self.k is not None:
                k_buf[:, :self.size] = self.k[:, :self.size]
                v_buf[:, :self.size] = self.v[:, :self.size]
            self.k, self.v = k_buf, v_buf
        self.k[:, self.size:need] = k_new
        self.v[:, self.size:need] = v_new
        self.size = need
        return self.k[:, :need], self.v[:, :need]

    def __len__(self):
        return self.size


# %% replaces: CachedCausalAttention
import math


class CachedCausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.context_length = context_length

    def forward(self, x, cache=None):
        offset = 0 if cache is None else len(cache)
        t = x.shape[1]
        if offset + t > self.context_length:
            raise ValueError(f"{offset + t} tokens exceed context_length={self.context_length}")
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        if cache is not None:
            k, v = cache.update(k, v)
        s = torch.einsum('bid,bjd->bij', q, k) / math.sqrt(k.shape[-1])
        q_pos = torch.arange(offset, offset + t, device=x.device)
        k_pos = torch.arange(k.shape[1], device=x.device)
        s = torch.where(k_pos[None, :] > q_pos[:, None], float('-inf'), s)
        w = self.dropout(torch.softmax(s, dim=-1))
        return torch.einsum('bij,bjd->bid', w, v)
