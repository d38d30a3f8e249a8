"""Assignment 01: self-attention with no trainable weights (NumPy)."""

import numpy as np


def dot_product(a, b):
    """Sum of the elementwise products of two 1-D vectors of equal length -> float."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.sum(a * b))


def cosine_similarity(a, b):
    """cos(angle between a and b) = a.b / (|a| |b|) -> float in [-1, 1]."""
    return dot_product(a, b) / float(np.linalg.norm(a) * np.linalg.norm(b))


def cosine_similarity_matrix(X):
    """Pairwise cosine similarities of the rows of X: (n, d) -> (n, n)."""
    X = np.asarray(X, dtype=float)
    unit = X / np.linalg.norm(X, axis=-1, keepdims=True)  # each row scaled to length 1
    return unit @ unit.T


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`; same shape as x."""
    x = np.asarray(x)
    # exp of a shifted input is the same ratio, and the largest entry becomes exp(0) = 1,
    # so nothing overflows however large x is.
    exps = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return exps / np.sum(exps, axis=axis, keepdims=True)


def attention_scores(X):
    """Every token's dot product with every token: (..., n, d) -> (..., n, n) = X Xᵀ."""
    X = np.asarray(X)
    return X @ np.swapaxes(X, -1, -2)


def attention_weights(scores):
    """Softmax over each row of scores: (..., n, n) -> (..., n, n), rows summing to 1."""
    return softmax(scores, axis=-1)


def context_vectors(weights, values):
    """Each row: the weighted sum of the value rows. (..., n, n) @ (..., n, d) -> (..., n, d)."""
    return np.asarray(weights) @ np.asarray(values)


def simplified_self_attention(X):
    """Context vectors of X attending to itself: (..., n, d) -> ((..., n, d), (..., n, n))."""
    weights = attention_weights(attention_scores(X))
    return context_vectors(weights, X), weights
