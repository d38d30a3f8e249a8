"""Assignment 02: scaled dot-product attention with trainable projections (NumPy, then PyTorch)."""

import numpy as np
import torch
from torch import nn


def project_qkv(X, W_q, W_k, W_v):
    """Queries, keys and values of the tokens X: Q = X @ W_q, K = X @ W_k, V = X @ W_v.

    X: (..., n, d_in); W_q, W_k, W_v: (d_in, d_out) each -> a tuple (Q, K, V), each (..., n, d_out).
    """
    return X @ W_q, X @ W_k, X @ W_v


def scaled_attention_scores(Q, K):
    """Every query's dot product with every key, divided by sqrt(d_k): Q Kᵀ / sqrt(d_k).

    Q: (..., n_q, d_k), K: (..., n_k, d_k) -> (..., n_q, n_k); d_k is K's last dimension.
    """
    d_k = np.shape(K)[-1]
    return (Q @ np.swapaxes(K, -1, -2)) / np.sqrt(d_k)


def scaled_dot_product_attention(Q, K, V, mask=None):
    """softmax(Q Kᵀ / sqrt(d_k)) V, with mask == True blocking a query from a key.

    Q (..., n_q, d_k), K (..., n_k, d_k), V (..., n_k, d_v), mask broadcastable to
    (..., n_q, n_k) -> (context (..., n_q, d_v), weights (..., n_q, n_k)); finite for scores in
    the thousands, also where a blocked key scores far above the open ones.
    """
    scores = scaled_attention_scores(Q, K)
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)  # exp(-inf) = 0: blocked keys get no weight
    scores = scores - np.max(scores, axis=-1, keepdims=True)
    exps = np.exp(scores)
    weights = exps / np.sum(exps, axis=-1, keepdims=True)
    return weights @ V, weights


def dot_product_variance(d_k, num_samples=10_000, seed=0):
    """Sample variances of q.k and of q.k / sqrt(d_k) for q, k with i.i.d. standard normal entries.

    d_k: int, the length of q and k; num_samples: how many (q, k) pairs; seed: for
    np.random.default_rng, which draws all queries (num_samples, d_k) first, then all keys.
    -> a tuple (var_unscaled, var_scaled) of two Python floats. The first grows like d_k, the
    second stays near 1: the reason attention scales its scores.
    """
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((num_samples, d_k))
    k = rng.standard_normal((num_samples, d_k))
    dots = np.sum(q * k, axis=-1)  # one dot product per sample
    return float(np.var(dots)), float(np.var(dots / np.sqrt(d_k)))


class SelfAttention(nn.Module):
    """Single-head self-attention with learned query, key and value projections.

    Attributes (the grader looks for these names):
        W_query, W_key, W_value: nn.Linear(d_in, d_out, bias=qkv_bias) each.
    forward uses torch operations only, so gradients reach all three layers, and computes in the
    dtype of its layers and input (float64 after module.double()).
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        """x (..., num_tokens, d_in) -> context vectors (..., num_tokens, d_out)."""
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1)  # (..., T, T)
        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        return weights @ values
