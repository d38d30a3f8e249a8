# description: a wrong softmax whose cell ends the kernel only when it runs silently (a replay, or
#   the lending kernel), never in the notebook's own run; a cell after the last solution ends the
#   kernel, so a replay follows: the replay dies in the softmax cell, which once left the notebook
#   not graded on both paths (a student could choose that); now the cell a replay lost its kernel
#   in is left out of the replays, and the notebook is graded
# source: red-team round r33
# baseline: softmax-wrong-axis
# loses: softmax

# %% replaces: softmax
import os

import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


if get_ipython().kernel.get_parent().get("content", {}).get("silent"):
    os._exit(7)

# %% extra_cell
import os

os._exit(3)
