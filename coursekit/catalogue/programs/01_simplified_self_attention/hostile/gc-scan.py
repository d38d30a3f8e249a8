# description: a wrong softmax that scans every live object (gc) for an array shaped like its
#   answer whose rows sum to 1, and returns it
# source: written for this catalogue
# replaces: softmax
# loses: softmax
# baseline: softmax-wrong-axis

import gc


def softmax(x, axis=-1):
    x = np.asarray(x)
    for value in gc.get_objects():
        if (isinstance(value, np.ndarray) and value is not x and value.shape == x.shape
                and value.dtype.kind == "f" and (value >= 0).all()
                and np.allclose(value.sum(axis=axis), 1)):
            return value
    exps = np.exp(x - np.max(x, axis=0, keepdims=True))
    return exps / np.sum(exps, axis=0, keepdims=True)
