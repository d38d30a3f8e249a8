"""Assignment 01: self-attention with no trainable weights (NumPy)."""

import numpy as np


def dot_product(a, b):
    """The dot product of two 1-D vectors: sum over i of a[i] * b[i].

    a, b: arrays or lists of shape (d,) -> a Python float.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.sum(a * b))


def cosine_similarity(a, b):
    """The cosine of the angle between a and b: a.b / (|a| |b|).

    a, b: arrays or lists of shape (d,), not all zeros -> a Python float in [-1, 1].
    """
    return dot_product(a, b) / float(np.linalg.norm(a) * np.linalg.norm(b))


def cosine_similarity_matrix(X):
    """Pairwise cosine similarities of the rows of X.

    X: (n, d), one token per row -> (n, n); entry (i, j) is the cosine of rows i and j.
    """
    X = np.asarray(X, dtype=float)
    unit = X / np.linalg.norm(X, axis=-1, keepdims=True)  # each row scaled to length 1
    return unit @ unit.T


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, without overflow for large entries.

    x: array of any shape -> an array of the same shape, entries >= 0, every slice along `axis`
    summing to 1; finite for inputs like [1000, 1001] and [-1000, -1001].
    """
    x = np.asarray(x)
    # exp of a shifted input is the same ratio, and the largest entry becomes exp(0) = 1,
    # so nothing overflows however large x is.
    exps = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return exps / np.sum(exps, axis=axis, keepdims=True)


def attention_scores(X):
    """Every token's dot product with every token: X Xᵀ.

    X: (..., n, d), leading batch dimensions allowed -> (..., n, n); entry (i, j) is x_i . x_j.
    """
    X = np.asarray(X)
    return X @ np.swapaxes(X, -1, -2)


def attention_weights(scores):
    """Softmax over each row of scores (the last axis).

    scores: (..., n_q, n_k) -> (..., n_q, n_k), every row >= 0 and summing to 1; finite however
    far apart the rows lie (one near [1000, 1001], another near [-1000, -1001]).
    """
    return softmax(scores, axis=-1)


def context_vectors(weights, values):
    """Each query's weighted sum of the value rows: weights @ values.

    weights: (..., n_q, n_k), values: (..., n_k, d) -> (..., n_q, d).
    """
    return np.asarray(weights) @ np.asarray(values)


def simplified_self_attention(X):
    """Simplified self-attention: scores X Xᵀ, row-wise softmax, weighted sum of the rows of X.

    X: (..., n, d) -> a tuple (context (..., n, d), weights (..., n, n)); finite for tokens of any
    length, whose scores may pass 709, where exp overflows.
    """
    weights = attention_weights(attention_scores(X))
    return context_vectors(weights, X), weights
