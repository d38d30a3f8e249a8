"""Catalogue entries of assignment 05 (efficient attention), for the lead to merge.

Same rules as the course catalogue (`coursekit.catalogue`):

- MISTAKES: the reference cell as a student types it, with small edits (`_edit`: each old text
  must occur exactly once), or a whole program where the mistake is no small edit. Every step in
  `loses` must lose points with `symptom` in its report; every other step keeps full marks.
- CORRECT: styles written independently of the reference (Python loops, einsum and a
  preallocated cache, everything in torch with F.scaled_dot_product_attention, FlashAttention's
  two-level tiling with complex exponentials and the chapter's float mask). Full marks.
- HOSTILE: attacks and breakage that must cost the attacked step its points and nothing else.
"""

import dataclasses
import textwrap

from autograder.steps import A05
from coursekit.catalogue import Variant

POS, ONLINE, CACHE, CACHED = "sinusoidal_positions", "online_softmax_attention", "KVCache", "CachedCausalAttention"


def _src(text):
    return textwrap.dedent(text).strip("\n") + "\n"


def _reference(name):
    from coursekit.samples import reference_cell

    return reference_cell([name]) + "\n"


def _edit(name, *pairs):
    """{name: the reference cell of `name` with each (old, new) applied in order}."""
    text = _reference(name)
    for old, new in pairs:
        if text.count(old) != 1:
            raise ValueError(f"{name}: {old!r} occurs {text.count(old)} times in the reference cell")
        text = text.replace(old, new)
    return {name: text}


def _variant(*args, baseline="", **kwargs):
    """A Variant; `baseline` only where this version of Variant knows it."""
    if baseline and "baseline" in {f.name for f in dataclasses.fields(Variant)}:
        kwargs["baseline"] = baseline
    return Variant(*args, **kwargs)


# --- MISTAKES ---------------------------------------------------------------------------------

MISTAKES = [
    Variant("positions-sin-cos-swapped", A05, "sinusoidal_positions puts the cosines in the even columns",
            _edit(POS, ("codes[:, 0::2] = np.sin(angles)", "codes[:, 0::2] = np.cos(angles)"),
                  ("codes[:, 1::2] = np.cos(angles)", "codes[:, 1::2] = np.sin(angles)")),
            loses=(POS,), symptom="sin and cos are swapped"),
    Variant("positions-exponent-i", A05, "sinusoidal_positions uses the exponent i/d_model instead of 2i/d_model",
            _edit(POS, ("two_i = np.arange(0, d_model, 2)[None, :]", "two_i = np.arange(d_model // 2)[None, :]")),
            loses=(POS,), symptom="the exponent is i / d_model"),
    Variant("positions-halves", A05, "sinusoidal_positions puts all sines first, then all cosines",
            _edit(POS, ("codes[:, 0::2] = np.sin(angles)                             # even columns\n"
                        "    codes[:, 1::2] = np.cos(angles)                             # odd columns",
                        "codes = np.concatenate([np.sin(angles), np.cos(angles)], axis=1)")),
            loses=(POS,), symptom="interleave them"),
    Variant("positions-own-column", A05, "sinusoidal_positions gives each column its own exponent j/d_model",
            {POS: _src("""
                def sinusoidal_positions(num_tokens, d_model):
                    p = np.arange(num_tokens)[:, None]
                    j = np.arange(d_model)[None, :]
                    angles = p / 10000 ** (j / d_model)
                    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))
                """)},
            loses=(POS,), symptom="(2i+1) / d_model"),
    Variant("online-sum-not-rescaled", A05, "online_softmax_attention does not rescale the running sum when "
            "the maximum grows",
            _edit(ONLINE, ("row_sum = row_sum * shrink + weights.sum(axis=-1, keepdims=True)",
                           "row_sum = row_sum + weights.sum(axis=-1, keepdims=True)")),
            loses=(ONLINE,), symptom="running sum is not rescaled"),
    Variant("online-causal-off-by-one", A05, "online_softmax_attention's causal block mask also blocks the "
            "diagonal (j >= i)",
            _edit(ONLINE, ("blocked = key_pos[None, :] > np.arange(n_q)[:, None]",
                           "blocked = key_pos[None, :] >= np.arange(n_q)[:, None]")),
            loses=(ONLINE,), symptom="off by one"),
    Variant("online-causal-block-offset", A05, "online_softmax_attention's causal block mask uses the key's "
            "index inside the block",
            _edit(ONLINE, ("key_pos = np.arange(start, start + K_blk.shape[-2])", "key_pos = np.arange(K_blk.shape[-2])")),
            loses=(ONLINE,), symptom="inside the block"),
    Variant("online-unscaled", A05, "online_softmax_attention does not divide the scores by sqrt(d_k)",
            _edit(ONLINE, ("scores = Q @ np.swapaxes(K_blk, -1, -2) / np.sqrt(d_k)",
                           "scores = Q @ np.swapaxes(K_blk, -1, -2)")),
            loses=(ONLINE,), symptom="not scaled"),
    Variant("online-full-matrix", A05, "online_softmax_attention computes the whole score matrix at once "
            "(right numbers, (n, n) memory)",
            {ONLINE: _src("""
                def online_softmax_attention(Q, K, V, block_size=64, causal=False):
                    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
                    if causal:
                        n = scores.shape[-1]
                        scores = np.where(np.triu(np.ones((n, n), dtype=bool), 1), -np.inf, scores)
                    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                    return weights / weights.sum(axis=-1, keepdims=True) @ V
                """)},
            loses=(ONLINE,), symptom="held"),
    Variant("cache-wrong-axis", A05, "KVCache appends along dim 0 (the batch) instead of the token axis",
            _edit(CACHE, ("self.keys = torch.cat([self.keys, k_new], dim=1)", "self.keys = torch.cat([self.keys, k_new], dim=0)"),
                  ("self.values = torch.cat([self.values, v_new], dim=1)",
                   "self.values = torch.cat([self.values, v_new], dim=0)")),
            loses=(CACHE,), symptom="dim 0, the batch axis"),
    Variant("cache-len-batch", A05, "KVCache.__len__ returns len(self.keys), the batch size",
            _edit(CACHE, ("return 0 if self.keys is None else self.keys.shape[1]",
                          "return 0 if self.keys is None else len(self.keys)")),
            loses=(CACHE,), symptom="batch size"),
    Variant("cache-class-storage", A05, "KVCache keeps its lists in class attributes, shared by every cache",
            {CACHE: _src("""
                class KVCache:
                    keys = []
                    values = []

                    def __init__(self):
                        pass

                    def update(self, k_new, v_new):
                        self.keys.append(k_new)
                        self.values.append(v_new)
                        return torch.cat(self.keys, dim=1), torch.cat(self.values, dim=1)

                    def __len__(self):
                        return sum(k.shape[1] for k in self.keys)
                """)},
            loses=(CACHE,), symptom="share"),
    Variant("cached-mask-no-offset", A05, "CachedCausalAttention takes the new tokens' mask rows from the top, "
            "ignoring the cache's offset",
            _edit(CACHED, ("blocked = self.mask[start:start + num_new, :start + num_new]",
                           "blocked = self.mask[:num_new, :start + num_new]")),
            loses=(CACHED,), symptom="ignores the cache's offset"),
    Variant("cached-never-read", A05, "CachedCausalAttention fills the cache but attends only to the new tokens",
            _edit(CACHED, ("keys, values = cache.update(keys, values)", "cache.update(keys, values)"),
                  ("blocked = self.mask[start:start + num_new, :start + num_new]",
                   "blocked = self.mask[:num_new, :num_new]")),
            loses=(CACHED,), symptom="filled but never read"),
    Variant("cached-no-length-check", A05, "CachedCausalAttention never checks context_length",
            _edit(CACHED, ("        if start + num_new > self.context_length:\n            raise ValueError(f\"{start + num_new} "
                           "tokens do not fit in context_length={self.context_length}\")\n", "")),
            loses=(CACHED,), symptom="ValueError"),
    Variant("cached-length-off-by-one", A05, "CachedCausalAttention refuses a cache that exactly fills "
            "context_length",
            _edit(CACHED, ("if start + num_new > self.context_length:", "if start + num_new >= self.context_length:")),
            loses=(CACHED,), symptom="context_length fits"),
    Variant("cached-if-cache", A05, "CachedCausalAttention tests `if cache:`, which is False for an empty cache",
            _edit(CACHED, ("if cache is not None:\n            keys, values", "if cache:\n            keys, values")),
            loses=(CACHED,), symptom="stays empty"),
]


# --- CORRECT ----------------------------------------------------------------------------------

LOOPS = {
    POS: _src("""
        import math


        def sinusoidal_positions(num_tokens, d_model):
            table = np.zeros((num_tokens, d_model))
            for p in range(num_tokens):
                for i in range(d_model // 2):
                    angle = p / 10000 ** (2 * i / d_model)
                    table[p, 2 * i] = math.sin(angle)
                    table[p, 2 * i + 1] = math.cos(angle)
            return table
        """),
    ONLINE: _src("""
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
        """),
    CACHE: _src("""
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
        """),
    CACHED: _src("""
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
        """),
}

EINSUM = {
    POS: _src("""
        def sinusoidal_positions(num_tokens, d_model):
            inv_freq = 1.0 / 10000 ** (np.arange(0, d_model, 2) / d_model)
            angles = np.outer(np.arange(num_tokens), inv_freq)
            return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(num_tokens, d_model)
        """),
    ONLINE: _src("""
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
        """),
    CACHE: _src("""
        class KVCache:
            \"\"\"Preallocated buffers that double when full.\"\"\"

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
        """),
    CACHED: _src("""
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
        """),
}

TORCH = {
    POS: _src("""
        import math


        def sinusoidal_positions(num_tokens, d_model):
            position = torch.arange(num_tokens, dtype=torch.float32).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
            pe = torch.zeros(num_tokens, d_model)
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            return pe
        """),
    ONLINE: _src("""
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
        """),
    CACHE: _src("""
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
        """),
    CACHED: _src("""
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
        """),
}

FLASH = {
    POS: _src("""
        def sinusoidal_positions(num_tokens, d_model):
            speeds = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
            turns = np.exp(1j * np.arange(num_tokens)[:, None] * speeds)  # cos + i sin
            out = np.empty((num_tokens, d_model))
            out[:, 0::2] = turns.imag
            out[:, 1::2] = turns.real
            return out
        """),
    ONLINE: _src("""
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
        """),
    CACHE: _src("""
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
        """),
    CACHED: _src("""
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
        """),
}

CORRECT = [
    Variant("loops-05", A05, "Python loops: a table filled entry by entry, explicit running max/sum/output, "
            "a list of cache chunks, one query row at a time", LOOPS),
    Variant("einsum-05", A05, "einsum everywhere, sin/cos stacked and reshaped, a preallocated cache buffer "
            "that doubles, torch.where on positions", EINSUM),
    Variant("torch-05", A05, "everything in torch (float32 positions, log-sum-exp running state, empty-tensor "
            "cache, F.scaled_dot_product_attention with a True-means-attend mask)", TORCH),
    Variant("flash-05", A05, "FlashAttention's two-level tiling with causal block skipping, complex exponentials "
            "for the positions, a counted tuple cache, the chapter's float mask with masked_fill_", FLASH),
]


# --- HOSTILE ----------------------------------------------------------------------------------

HOSTILE = [
    _variant("online-patch-F-sdpa", A05, "an online_softmax_attention that does not rescale its running sum and "
             "replaces torch's F.scaled_dot_product_attention (the oracle) with itself",
             {ONLINE: _reference(ONLINE).replace(
                 "row_sum = row_sum * shrink + weights.sum(axis=-1, keepdims=True)",
                 "row_sum = row_sum + weights.sum(axis=-1, keepdims=True)") + _src("""


                def _fake(q, k, v, attn_mask=None, is_causal=False, **kwargs):
                    out = online_softmax_attention(q.numpy(), k.numpy(), v.numpy(), 2, is_causal)
                    return torch.as_tensor(out, dtype=q.dtype)


                torch.nn.functional.scaled_dot_product_attention = _fake
                """)},
             loses=(ONLINE,), baseline="online-sum-not-rescaled"),
    Variant("cache-endless-update", A05, "KVCache.update never returns: only KVCache may pay, CachedCausalAttention "
            "is graded with the reference cache",
            {CACHE: _src("""
                import time


                class KVCache:
                    def __init__(self):
                        self.keys = None

                    def update(self, k_new, v_new):
                        while True:
                            time.sleep(0.01)

                    def __len__(self):
                        return 0
                """)},
            loses=(CACHE,), symptom="did not finish"),
    Variant("online-huge-allocation", A05, "online_softmax_attention allocates 32 GB when called",
            {ONLINE: _src("""
                def online_softmax_attention(Q, K, V, block_size=64, causal=False):
                    waste = np.ones((40_000, 100_000))
                    return waste[:Q.shape[-2], :V.shape[-1]]
                """)},
            loses=(ONLINE,), symptom="ran out of memory"),
    Variant("positions-import-solutions", A05, "sinusoidal_positions imports the reference and returns its answer",
            {POS: _src("""
                def sinusoidal_positions(num_tokens, d_model):
                    from solutions import sinusoidal_positions as reference
                    return reference(num_tokens, d_model)
                """)},
            loses=(POS,)),
]
