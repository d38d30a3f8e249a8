# description: simplified_self_attention written out in one function, softmax with np.max and a copy
# source: written for this catalogue

# %% replaces: softmax
def softmax(x, axis=-1):
    shifted = np.array(x, dtype=float, copy=True)
    shifted -= shifted.max(axis=axis, keepdims=True)
    np.exp(shifted, out=shifted)
    shifted /= shifted.sum(axis=axis, keepdims=True)
    return shifted


# %% replaces: simplified_self_attention
def simplified_self_attention(X):
    X = np.asarray(X, dtype=float)
    scores = np.matmul(X, np.swapaxes(X, -1, -2))
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
    return np.matmul(weights, X), weights
