"""Assignment 05: positions, attention without the score matrix, and a key/value cache.

NumPy for the first two (sinusoidal positions, online-softmax attention), PyTorch for the cache
and the causal attention layer that generates one token at a time with it.
"""

import numpy as np
import torch
from torch import nn


def sinusoidal_positions(num_tokens, d_model):
    """(num_tokens, d_model) NumPy array of position codes, d_model even.

    Entry [p, 2i] is sin(p / 10000**(2i / d_model)) and entry [p, 2i+1] is
    cos(p / 10000**(2i / d_model)): pair i turns with angular speed 1 / 10000**(2i / d_model).
    """
    positions = np.arange(num_tokens)[:, None]                 # (T, 1)
    two_i = np.arange(0, d_model, 2)[None, :]                   # (1, d_model / 2): 0, 2, 4, ...
    angles = positions / 10000 ** (two_i / d_model)             # (T, d_model / 2)
    codes = np.zeros((num_tokens, d_model))
    codes[:, 0::2] = np.sin(angles)                             # even columns
    codes[:, 1::2] = np.cos(angles)                             # odd columns
    return codes


def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    """softmax(Q Kᵀ / sqrt(d_k)) V, reading the keys one block of block_size at a time.

    Q (..., n_q, d_k), K (..., n_k, d_k), V (..., n_k, d_v) -> (..., n_q, d_v).
    causal=True (n_q == n_k): query i attends to keys 0..i only.
    Keeps, per query, the largest score seen so far (row_max), the sum of exp(score - row_max)
    (row_sum) and the exp-weighted sum of values (acc); never an (n_q, n_k) array of any kind
    (scores, weights or a causal mask): only one block (..., n_q, block_size) at a time.
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
        row_sum = row_sum * shrink + weights.sum(axis=-1, keepdims=True)
        acc = acc * shrink + weights @ V_blk
        row_max = new_max
    return acc / row_sum


class KVCache:
    """The keys and values of every token seen so far, for generating one token at a time."""

    def __init__(self):
        self.keys = None    # (batch, T, d) once something is stored
        self.values = None

    def update(self, k_new, v_new):
        """Append k_new, v_new (batch, t, d) along the token axis; return all keys and all
        values held so far, each (batch, T, d)."""
        if self.keys is None:
            self.keys, self.values = k_new, v_new
        else:
            self.keys = torch.cat([self.keys, k_new], dim=1)
            self.values = torch.cat([self.values, v_new], dim=1)
        return self.keys, self.values

    def __len__(self):
        """T, the number of tokens held (0 when empty)."""
        return 0 if self.keys is None else self.keys.shape[1]


class CachedCausalAttention(nn.Module):
    """CausalAttention that can also take only the new tokens and a KVCache of the earlier ones.

    Attributes (the grader looks for these names), as in CausalAttention:
        W_query, W_key, W_value: nn.Linear(d_in, d_out, bias=qkv_bias) each.
        dropout: nn.Dropout(dropout), applied to the attention weights (nothing in eval mode,
            with or without a cache).
    Also keep a causal mask for context_length tokens on the module as a buffer.
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.context_length = context_length
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        mask = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)  # True = blocked (key j > query i)

    def forward(self, x, cache=None):
        """x (batch, t, d_in) -> (batch, t, d_out).

        Without a cache, x holds every token. With a KVCache, x holds only the t new tokens:
        their keys and values are appended to the cache, and they attend to all cached tokens.
        Raises ValueError, leaving the cache as it was, when the tokens would not fit in context_length.
        """
        num_new = x.shape[1]
        start = 0 if cache is None else len(cache)   # position of x's first token
        if start + num_new > self.context_length:
            raise ValueError(f"{start + num_new} tokens do not fit in context_length={self.context_length}")
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)  # (batch, t, d_out)
        if cache is not None:
            keys, values = cache.update(keys, values)  # (batch, start + t, d_out)
        scores = queries @ keys.transpose(1, 2) / keys.shape[-1] ** 0.5  # (batch, t, start + t)
        blocked = self.mask[start:start + num_new, :start + num_new]  # the rows of the new tokens
        weights = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
        return self.dropout(weights) @ values
