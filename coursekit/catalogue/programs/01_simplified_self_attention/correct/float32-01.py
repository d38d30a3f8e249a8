# description: every computation in float32
# source: written for this catalogue

# %% replaces: softmax
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float32)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# %% replaces: attention_scores
def attention_scores(X):
    X = np.asarray(X, dtype=np.float32)
    return X @ np.swapaxes(X, -1, -2)


# %% replaces: context_vectors
def context_vectors(weights, values):
    return np.asarray(weights, dtype=np.float32) @ np.asarray(values, dtype=np.float32)


# %% replaces: cosine_similarity_matrix
def cosine_similarity_matrix(X):
    X = np.asarray(X, dtype=np.float32)
    unit = X / np.linalg.norm(X, axis=-1, keepdims=True)
    return unit @ unit.T
