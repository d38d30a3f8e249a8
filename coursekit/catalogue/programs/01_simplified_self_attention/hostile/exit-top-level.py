# description: a wrong softmax, then os._exit at the top level of its cell: the kernel ends in an
#   ordinary cell, which once left the whole notebook not graded on both paths (a student could
#   choose that); now the cell says so, a fresh kernel replays the cells before it, and the
#   notebook is graded without what that cell defined
# source: red-team round r27
# replaces: softmax
# loses: softmax
# baseline: softmax-wrong-axis

import os

import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


os._exit(3)
