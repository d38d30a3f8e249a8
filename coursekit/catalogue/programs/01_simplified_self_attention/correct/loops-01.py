# description: every function written with Python loops, no matrix products
# source: written for this catalogue

# %% replaces: dot_product
def dot_product(a, b):
    total = 0.0
    for x, y in zip(a, b):
        total += float(x) * float(y)
    return total


# %% replaces: cosine_similarity
def cosine_similarity(a, b):
    return dot_product(a, b) / (dot_product(a, a) ** 0.5 * dot_product(b, b) ** 0.5)


# %% replaces: cosine_similarity_matrix
def cosine_similarity_matrix(X):
    n = len(X)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = cosine_similarity(X[i], X[j])
    return out


# %% replaces: attention_scores
def attention_scores(X):
    X = np.asarray(X)
    flat = X.reshape(-1, X.shape[-2], X.shape[-1])
    out = np.zeros((flat.shape[0], X.shape[-2], X.shape[-2]))
    for b in range(flat.shape[0]):
        for i in range(X.shape[-2]):
            for j in range(X.shape[-2]):
                out[b, i, j] = dot_product(flat[b, i], flat[b, j])
    return out.reshape(*X.shape[:-1], X.shape[-2])


# %% replaces: context_vectors
def context_vectors(weights, values):
    weights, values = np.asarray(weights, dtype=float), np.asarray(values, dtype=float)
    out = np.zeros(weights.shape[:-1] + values.shape[-1:])
    for index in np.ndindex(*weights.shape[:-1]):
        for j in range(weights.shape[-1]):
            out[index] += weights[index][j] * values[index[:-1]][j]
    return out
