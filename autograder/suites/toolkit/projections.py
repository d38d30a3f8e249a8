"""Shapes of project_qkv's result that say how it was put together: the three projections stacked into one array
where a tuple is meant (the step's suite and the notes' worked examples both ask)."""

import numpy as np

from autograder.errors import CaseFailure
from autograder.suites.toolkit import checks

# np.stack([Q, K, V]) (or np.array of the three) unpacks as Q, K, V = ..., but it is one array, not the tuple the
# docstring names, and it cannot hold projections of different widths.
STACKED = ("returns one array, Q, K and V stacked on a new first axis (np.stack, or np.array of the three): "
           "return the tuple (Q, K, V) its docstring names, each projection an array of its own")


def explain_stacked(out, X, Ws, what):
    """Raise where `out`, which is no tuple or list of three, is the three projections X @ W stacked; quiet
    otherwise."""
    if not isinstance(out, np.ndarray) or out.ndim < 1 or out.shape[0] != 3:
        return
    try:
        stacked = np.stack([np.asarray(X, dtype=np.float64) @ np.asarray(W, dtype=np.float64) for W in Ws])
    except ValueError:  # widths that differ cannot be stacked: nothing to compare
        return
    if checks.named_mistake(checks.to_array(out, what), [(stacked, STACKED)]) is not None:
        raise CaseFailure(f"{what} {STACKED}")
