# description: a cell that allocates 32 GB after defining a correct softmax
# source: written for this catalogue
# replaces: softmax

def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


cache = np.ones((40_000, 100_000))
