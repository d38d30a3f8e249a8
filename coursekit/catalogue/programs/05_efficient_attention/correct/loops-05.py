# description: Python loops: a table filled entry by entry, explicit running max/sum/output, a list
#   of cache chunks, one query row at a time
# source: written for this catalogue

# %% replaces: sinusoidal_positions
import math


def sinusoidal_positions(num_tokens, d_model):
    table = np.zeros((num_tokens, d_model))
    for p in range(num_tokens):
        for i in range(d_model // 2):
            angle = p / 10000 ** (2 * i / d_model)
            table[p, 2 * i] = math.sin(angle)
            table[p, 2 * i + 1] = math.cos(angle)
    return table


# %% replaces: online_softmax_attention
import math


def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    n_q, n_k, d = Q.shape[-2], K.shape[-2], K.shape[-1]
    m = np.full(Q.shape[:-1], -np.inf)          # running maximum per query
    l = np.zeros(Q.shape[:-1])                  # running sum of exponentials
    o = np.zeros(Q.shape[:-1] + (V.shape[-1],))  # running weighted sum of values
    queries = np.arange(n_q)
    for j0 in range(0, n_k, block_size):
        j1 = min(j0 + block_size, n_k)
        s = np.matmul(Q, np.swapaxes(K[..., j0:j1, :], -1, -2)) / math.sqrt(d)
        if causal:
            s[..., queries[:, None] < np.arange(j0, j1)[None, :]] = -np.inf
        m_new = np.maximum(m, s.max(axis=-1))
        alpha = np.exp(m - m_new)
        p = np.exp(s - m_new[..., None])
        l = alpha * l + p.sum(axis=-1)
        o = alpha[..., None] * o + np.matmul(p, V[..., j0:j1, :])
        m = m_new
    return o / l[..., None]


# %% replaces: KVCache
class KVCache:
    def __init__(self):
        self.key_chunks = []
        self.value_chunks = []

    def update(self, k_new, v_new):
        self.key_chunks.append(k_new)
        self.value_chunks.append(v_new)
        return torch.cat(self.key_chunks, dim=1), torch.cat(self.value_chunks, dim=1)

    def __len__(self):
        total = 0
        for chunk in self.key_chunks:
            total += chunk.shape[1]
        return total


# %% replaces: CachedCausalAttention
import math


class CachedCausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.context_length = context_length
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, cache=None):
        past = 0 if cache is None else len(cache)
        new = x.shape[1]
        if past + new > self.context_length:
            raise ValueError("the context is full")
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        if cache is not None:
            k, v = cache.update(k, v)
        rows = []
        for i in range(new):
            seen = past + i + 1  # token past + i sees keys 0 .. past + i
            s = q[:, i:i + 1] @ k[:, :seen].transpose(1, 2) / math.sqrt(k.shape[-1])
            w = self.dropout(torch.softmax(s, dim=-1))
            rows.append(w @ v[:, :seen])
        return torch.cat(rows, dim=1)
