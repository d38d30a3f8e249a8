# A softmax that normalises along axis 0 whatever `axis` says: a typical mistake, which the
# judge must score below full marks with the symptom "normalises along axis".
import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
