# description: everything in torch (float32 positions, returned as the NumPy array SPEC names, log-sum-exp
#   running state, empty-tensor cache, F.scaled_dot_product_attention with a True-means-attend mask)
# source: written for this catalogue

# %% replaces: sinusoidal_positions
import math


def sinusoidal_positions(num_tokens, d_model):
    position = torch.arange(num_tokens, dtype=torch.float32).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(num_tokens, d_model)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe.numpy()


# %% replaces: online_softmax_attention
def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    # the log-sum-exp form: keep log(sum of exp) instead of the maximum and the sum
    Q, K, V = (torch.as_tensor(a) for a in (Q, K, V))
    out = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    lse = torch.full((*Q.shape[:-1], 1), float('-inf'), dtype=Q.dtype)
    rows = torch.arange(Q.shape[-2])[:, None]
    for j in range(0, K.shape[-2], block_size):
        s = Q @ K[..., j:j + block_size, :].transpose(-2, -1) / K.shape[-1] ** 0.5
        if causal:
            s = s.masked_fill(torch.arange(j, j + s.shape[-1]) > rows, float('-inf'))
        new_lse = torch.logaddexp(lse, torch.logsumexp(s, dim=-1, keepdim=True))
        out = out * torch.exp(lse - new_lse) + torch.exp(s - new_lse) @ V[..., j:j + block_size, :]
        lse = new_lse
    return out


# %% replaces: KVCache
class KVCache:
    def __init__(self):
        self.k = None
        self.v = None

    def update(self, k_new, v_new):
        if self.k is None:
            self.k = k_new.new_empty(k_new.shape[0], 0, k_new.shape[-1])
            self.v = v_new.new_empty(v_new.shape[0], 0, v_new.shape[-1])
        self.k = torch.cat((self.k, k_new), dim=-2)
        self.v = torch.cat((self.v, v_new), dim=-2)
        return self.k, self.v

    def __len__(self):
        return 0 if self.k is None else self.k.size(-2)


# %% replaces: CachedCausalAttention
import torch.nn.functional as F


class CachedCausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        # True = may attend: the convention of F.scaled_dot_product_attention
        self.register_buffer("allowed", torch.ones(context_length, context_length, dtype=torch.bool).tril())

    def forward(self, x, cache=None):
        t = x.size(1)
        past = len(cache) if cache is not None else 0
        if past + t > self.allowed.size(0):
            raise ValueError("too many tokens for context_length")
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        if cache is not None:
            k, v = cache.update(k, v)
        mask = self.allowed[past:past + t, :past + t]
        p = self.dropout.p if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
